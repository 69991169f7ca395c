/** `ddn send`: encrypt a file for a DID (or alias, or `…@persona`) and hand it to a Relay; resumable. */
import { sendFile, type SendReport } from '../client/file-sender.js';
import { RelayClient } from '../client/relay-client.js';
import { transferKeys } from '../client/send-keys.js';
import { senderRecord } from '../client/sender-check.js';
import { toHex } from '../base/bytes.js';
import { parseDurationSeconds } from '../codec/duration.js';
import type { EnvelopeSigner } from '../protocol/file-envelopes.js';
import { resolveSigningKey } from '../protocol/keys.js';
import { leaf, UsageError, type CommandContext } from './command.js';
import { commandFetch, directoryContext, DIRECTORY_OPTIONS, positiveInt, timeoutMs, type DirectoryContext } from './common.js';
import { fileSource, stdinSource } from './file-input.js';
import { progressBar, type Progress } from './progress.js';
import type { DeadlineValues } from './request-deadlines.js';
import { recipientRef, resolveRecipient, type RecipientRef } from './recipient.js';
import { countdownTiming, retryLine } from './retry-notice.js';
import { sendStateDir, sendStateKey, SendStateFile } from './send-state.js';
import { signerOf } from './signer-options.js';
import { findIdentity, readBook, usable } from './identity-book.js';
import { bookHere } from './identity-options.js';

/** The signer of `--from` / `--key` / `--signer-key-id`, checked against the sender's published keys. */
async function senderOf(
  dir: DirectoryContext,
  from: RecipientRef | undefined,
  o: { key?: string; 'signer-key-id'?: string },
): Promise<EnvelopeSigner | undefined> {
  if (from === undefined || o.key === undefined) return undefined;
  const did = (await resolveRecipient(dir.client, from)).did;
  const signer = signerOf({ key: o.key, 'signer-key-id': o['signer-key-id'] }, did);
  const record = await senderRecord(dir.client, did);
  if (record === null || record.deactivated)
    throw Object.assign(new Error(`--from ${did} has no active record at the Directory`), { code: 'sender_not_found' });
  const published = resolveSigningKey(did, record.rootPubkey, record.document, signer.keyId);
  if (published === undefined || toHex(published) !== toHex(signer.key.publicKey)) {
    throw new UsageError(`--key is not the key '${signer.keyId}' of ${did}`);
  }
  return { did, keyId: signer.keyId, sign: (b) => signer.key.sign(b) };
}

/** The key of the book's identity `ref` (DID or alias) in the network of the Directory of `o`. */
async function bookKey(
  env: NodeJS.ProcessEnv,
  o: Parameters<typeof directoryContext>[0],
  info: (line: string) => void,
  ref: string,
): Promise<string | undefined> {
  const dir = await directoryContext(o, info);
  const { local } = await bookHere(env, async () => ({ network: await dir.network(), directory: dir.client.baseUrl }));
  return findIdentity(usable(local), ref)?.key;
}

/** An Error marking the end of a send by a signal (named AbortError so no retry loop swallows it). */
function interruption(signal: string): Error {
  return Object.assign(new Error(`interrupted by ${signal}`), { name: 'AbortError', code: 'interrupted' });
}

function mib(n: number): string {
  return `${(n / 1_048_576).toFixed(1)} MiB`;
}

/** The `send` command. */
export const sendCommand = leaf('ddn send', {
  summary: 'encrypt a file for a DID and send it through a Relay',
  synopsis: '--to DID|ALIAS[@PERSONA] --input FILE|- [--from DID --key FILE] [--relay URL] [--tag TAG] [--ttl 24h]',
  description:
    'Resolves the recipient (an alias through GET /aliases/{alias}) and its delivery (GET /delivery-resolution/{did}:\n' +
    'its X25519 key agreement and effective limits), splits the file into chunks when it exceeds\n' +
    'max_unchunked_message_bytes, encrypts every part for the recipient (profile\n' +
    '<p>:cbor-chunk:x25519-hkdf-sha256-chacha20poly1305:v1) and posts the envelopes to the Relay. Nothing is sent\n' +
    'unencrypted unless --plaintext. With --from and --key every envelope carries the sender signature, and the\n' +
    'recipient sees who sent it; without them the message is anonymous.\n' +
    'Retries: 408, 429, 502, 503, 507, timeouts and dropped connections are retried with the identical bytes (the\n' +
    'reason is printed, with a countdown on a terminal), up to 8 attempts started within --retry-for (120 s) of an\n' +
    'envelope’s first; a Relay that refuses the connection, does not resolve, sits on a port fetch refuses or\n' +
    'fails TLS, and any other 4xx, fail at once. Worst case for a Relay that never answers: --retry-for plus one\n' +
    'attempt (10 s + 30 s), about 160 s with the defaults, then exit 3.\n' +
    'Resuming: a send that stops (Ctrl-C, a failure) keeps a small state file under $XDG_STATE_HOME/ddn/sends;\n' +
    'running the same command again continues the staged set where it stopped. --restart starts over.',
  options: {
    to: { type: 'string', arg: 'DID', help: 'recipient DID or alias, optionally followed by @persona', required: true },
    input: { type: 'string', arg: 'FILE', help: "the file to send, or '-' for standard input", required: true },
    relay: { type: 'string', arg: 'URL', help: 'Relay base URL', env: 'DDN_RELAY_URL', default: 'http://127.0.0.1:8081' },
    from: { type: 'string', arg: 'DID', help: 'sign the envelopes as this sender DID (or alias); its key from --key or the identity book' },
    key: { type: 'string', arg: 'FILE', help: 'Ed25519 private key file of the sender (with --from)' },
    'signer-key-id': { type: 'string', arg: 'ID', help: "the sender's key: 'root' or a verification-method id", default: 'root' },
    name: { type: 'string', arg: 'NAME', help: "file name given to the recipient (default: the input's base name, or 'stdin')" },
    'media-type': { type: 'string', arg: 'TYPE', help: 'media type of the file', default: 'application/octet-stream' },
    tag: { type: 'string', arg: 'TAG', help: 'public tag (delivery policies may route on it)' },
    ttl: { type: 'string', arg: 'DURATION', help: 'how long the message may wait in a Cache (24h, 90m, PT2H, …)', default: '24h' },
    'chunk-size': { type: 'string', arg: 'BYTES', help: 'file bytes per chunk (capped by the limits)', default: '1048576' },
    'retry-for': { type: 'string', arg: 'SECONDS', help: 'start no new attempt of an envelope later than this after its first', default: '120' },
    restart: { type: 'boolean', help: 'ignore what an interrupted run of the same send staged, and start over' },
    plaintext: {
      type: 'boolean',
      help: 'send WITHOUT encryption: every Relay and Cache can read the file (nodes on profile platform refuse it unless run with --cache-allow-plaintext)',
    },
    ...DIRECTORY_OPTIONS,
  },
  async run(ctx, o) {
    const partBytes = positiveInt('chunk-size', o['chunk-size']);
    if (parseDurationSeconds(o.ttl!) === undefined) {
      throw new UsageError(`--ttl '${o.ttl}' is not a duration from 1 s to 10 years (24h, 90m, 1d12h, PT2H, P2W or seconds)`);
    }
    const retryFor = timeoutMs(o['retry-for'], '--retry-for');
    const toRef = recipientRef(o.to, '--to', true);
    if (o.from === undefined && o.key !== undefined) throw new UsageError('--key signs as the sender: give --from DID too');
    // --from names an identity of the book (its DID or alias) of this network: its key signs unless --key says otherwise
    const key = o.key ?? (o.from === undefined || readBook(ctx.io.env).length === 0 ? undefined : await bookKey(ctx.io.env, o, ctx.info, o.from));
    if (o.from !== undefined && key === undefined)
      throw new UsageError('--from needs --key (the Ed25519 key that signs as the sender), or an identity of the book');
    const dir = await directoryContext(o, ctx.info);
    const fromRef = o.from === undefined ? undefined : recipientRef(o.from, '--from');
    const to = await resolveRecipient(dir.client, toRef);
    const sender = await senderOf(dir, fromRef, { key, 'signer-key-id': o['signer-key-id'] });
    const source = o.input === '-' ? await stdinSource(ctx.io.stdin, o.name) : await fileSource(o.input, o.name);
    if (o.plaintext) ctx.info('warning: --plaintext sends the file unencrypted; every Relay and Cache on the way can read it');

    const stateKey = sendStateKey([
      toHex(source.sha256),
      to.did,
      to.persona,
      o.relay,
      source.name,
      o['media-type'],
      o.tag,
      o.ttl,
      partBytes,
      o.plaintext,
      sender?.did,
      sender?.keyId,
      dir.profile.p,
    ]);
    const state = new SendStateFile(sendStateDir(ctx.io.env), stateKey, Date.now(), o.restart);
    const interrupt = new AbortController();
    void ctx.io.shutdownSignal().then((signal) => interrupt.abort(interruption(signal)));
    const bar = progressBar(ctx.io, 'sending');
    const relay = relayClient(ctx, o.relay!, { deadlines: o, retryForMs: retryFor, signal: interrupt.signal, bar });
    const recipientText = `${o.to === to.did ? to.did : `${o.to} (${to.did})`}`;
    if (state.resumed) ctx.info(`resuming: the Relay confirmed ${state.state.confirmed} envelope(s) of this send before (state ${state.path})`);
    ctx.info(`sending ${source.name} (${source.size} bytes) to ${recipientText} through ${o.relay}${sender ? ` as ${sender.did}` : ' anonymously'}`);
    let sent = { envelopes: 0, total: 0, bytes: 0 };
    try {
      const report: SendReport & { persona?: string; alias?: string } = await sendFile({
        profile: dir.profile,
        directory: dir.client,
        relay,
        to: to.did,
        source,
        mediaType: o['media-type'],
        tag: o.tag,
        ttl: o.ttl,
        plaintext: o.plaintext,
        partBytes,
        ...(to.persona === undefined ? {} : { persona: to.persona }),
        ...(sender === undefined ? {} : { sender }),
        keys: transferKeys(state.secret),
        timestamp: state.state.timestamp,
        skip: state.state.confirmed,
        onPosted: (seq, result) => {
          state.posted(seq, result);
          if (interrupt.signal.aborted) throw interrupt.signal.reason;
        },
        onProgress: (p) => {
          sent = { envelopes: p.sentEnvelopes, total: p.totalEnvelopes, bytes: p.sentBytes };
          bar.update(p.sentBytes, p.totalBytes, `${p.sentEnvelopes}/${p.totalEnvelopes} envelopes`);
        },
      });
      bar.finish();
      state.remove();
      if (to.persona !== undefined) report.persona = to.persona;
      if (to.alias !== undefined) report.alias = to.alias;
      ctx.info(`sent ${report.total_chunks} envelope(s): ${report.code} (${report.delivery_mode})`);
      return report;
    } catch (e) {
      bar.finish();
      throw stopped(e, interrupt.signal, state, sent);
    }
  },
});

/** The Relay client of a send: the command's deadlines, retries for `retryForMs` with a countdown, stopped by `signal`. */
function relayClient(ctx: CommandContext, url: string, o: { deadlines: DeadlineValues; retryForMs: number; signal: AbortSignal; bar: Progress }): RelayClient {
  return new RelayClient(url, {
    fetch: commandFetch(o.deadlines, 'the Relay', ctx.info, o.signal),
    retryForMs: o.retryForMs,
    timing: countdownTiming(ctx.io, o.signal),
    onRetry: (r) => {
      o.bar.finish();
      ctx.info(retryLine(r));
    },
  });
}

/** The error of a send that did not finish: how far it got and how to go on. */
function stopped(e: unknown, signal: AbortSignal, state: SendStateFile, sent: { envelopes: number; total: number; bytes: number }): unknown {
  const confirmed = state.state.confirmed;
  if (confirmed === 0 && !signal.aborted) {
    state.remove();
    return e;
  }
  const how = `${confirmed} of ${state.state.total ?? (sent.total || '?')} envelopes (${mib(Math.min(sent.bytes, Number.MAX_SAFE_INTEGER))} sent) are staged at the Relay`;
  const resume = `run the same command again to resume (state ${state.path}); --restart starts over`;
  const err = (signal.aborted ? signal.reason : e) as Error & { code?: string; details?: Record<string, unknown> };
  // printed once, by the command's error line: `ddn send: interrupted by SIGINT: 37 of 100 envelopes …`
  const out = Object.assign(new Error(`${err.message}: ${how}; ${resume}`), { code: err.code ?? 'send_failed' });
  return Object.assign(out, {
    details: { ...(err.details ?? {}), confirmed_envelopes: confirmed, total_envelopes: state.state.total, state_file: state.path },
  });
}
