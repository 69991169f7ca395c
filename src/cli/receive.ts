/** `ddn receive`: fetch, decrypt, verify and write every message waiting for a DID, then acknowledge it. */
import { errorCodeOf } from '../base/guards.js';
import { statSync } from 'node:fs';
import { CacheClient } from '../client/cache-client.js';
import { cacheTargetsFor } from '../client/cache-targets.js';
import { FileReceiver, type ReceiveFailure, type ReceiveReport } from '../client/file-receiver.js';
import { readEd25519KeyFile, readX25519KeyFile } from '../client/key-files.js';
import { LiveReceiver, liveProofServiceFor } from '../client/live-receiver.js';
import { directorySenderCheck } from '../client/sender-check.js';
import { leaf, UsageError, type CommandContext, type OptionValues } from './command.js';
import { commandFetch, directoryContext, DIRECTORY_OPTIONS, didUrl, positiveInt } from './common.js';
import { directorySink } from './file-output.js';
import { lockOutputDir } from './receive-lock.js';
import { ReceiveTally, type ReceiveResult } from './receive-result.js';
import { memoryBound } from './memory.js';
import { progressBar, type Progress } from './progress.js';
import { recipientRef, resolveRecipient } from './recipient.js';

function errorOf(e: unknown): ReceiveFailure {
  return { code: errorCodeOf(e) ?? 'receive_failed', message: e instanceof Error ? e.message : String(e) };
}

function report(ctx: CommandContext, r: ReceiveReport): void {
  for (const e of r.errors) ctx.info(`error ${e.code}${e.message_key ? ` (${e.message_key})` : ''}${e.endpoint ? ` at ${e.endpoint}` : ''}: ${e.message}`);
}

/**
 * The end of a run: parts kept for files that stopped part-way are named (the next run continues them); once
 * every Cache answered its summary, the parts of this DID for messages no Cache lists any more are removed.
 */
async function finish(ctx: CommandContext, result: ReceiveResult, last: ReceiveReport, sink: ReturnType<typeof directorySink>): Promise<ReceiveResult> {
  for (const f of result.suspended ?? []) {
    ctx.info(`kept ${f.received_bytes} of ${f.total_bytes} bytes of ${f.name}${f.partial ? ` in ${f.partial}` : ''}; run the same command again to continue`);
  }
  if (last.caches.every((c) => c.pending !== null)) {
    const removed = await sink.sweepParts(new Set((result.suspended ?? []).map((f) => f.message_key)));
    for (const path of removed) ctx.info(`removed ${path}: no Cache lists its message any more`);
  }
  return result;
}

/** The `receive` command. */
const RECEIVE_OPTIONS = {
  did: {
    type: 'string',
    arg: 'DID',
    help: "the recipient DID (default: the identity book's only identity; an alias of the book works too)",
    required: true,
    identity: 'did',
  },
  key: {
    type: 'string',
    arg: 'FILE',
    help: 'Ed25519 private key file that signs retrieval proofs (default: from the identity book)',
    required: true,
    identity: 'key',
  },
  'decryption-key': {
    type: 'string',
    arg: 'FILE',
    help: 'X25519 private key file of the key agreement, needed for encrypted messages (default: from the identity book)',
    identity: 'decryption-key',
  },
  'key-id': { type: 'string', arg: 'ID', help: 'the verification method of --key (default: found in the document)' },
  device: { type: 'string', arg: 'ID', help: 'device id bound into the proofs and the live session', default: '' },
  'output-dir': { type: 'string', arg: 'DIR', help: 'where files are written', default: '.' },
  follow: { type: 'boolean', help: 'stay connected: live delivery over WebSocket plus periodic Cache sweeps' },
  relay: { type: 'string', arg: 'URL', help: "Relay for --follow (default: the DID's relay service)", env: 'DDN_RELAY_URL' },
  interval: { type: 'string', arg: 'SECONDS', help: 'Cache sweep interval with --follow', default: '10' },
  ...DIRECTORY_OPTIONS,
} as const;

export const receiveCommand = leaf('ddn receive', {
  summary: 'receive, decrypt and acknowledge the messages waiting for a DID',
  synopsis: '[--did DID|ALIAS] [--key FILE] [--decryption-key FILE] [--output-dir DIR] [--follow]',
  description:
    'Asks every Cache service of the DID that authorizes --key for a summary (signed retrieval proofs), downloads\n' +
    'each message once, one chunk at a time, decrypting, checking and writing each part as it arrives (memory stays\n' +
    'a few chunks whatever the file size), checks the whole file (size and SHA-256), then gives it its name in\n' +
    '--output-dir without replacing anything, and only then acknowledges it at every Cache holding a copy. A copy\n' +
    'that fails to decrypt or verify is neither kept nor acknowledged. A run that stops part-way (Ctrl-C, a Cache\n' +
    'that stops answering) keeps the chunks it wrote in a hidden .ddn-partial-… file and says how far it got;\n' +
    'the same command run again checks them and continues from there (docs/sending-files.md). A finished run\n' +
    'leaves no partial file of the DID behind. One run at a time writes into a directory: a second is refused\n' +
    '(output_dir_in_use). A signed message is reported with its\n' +
    "sender once the signature verified against the sender's DID document; an unsigned one as anonymous.\n" +
    '--follow keeps a WebSocket to the Relay open, writes live messages as they come and sweeps the Caches every\n' +
    '--interval seconds, until SIGINT or SIGTERM. The session proves control of the DID with --key (signed by a\n' +
    'key that a Relay or Cache service of the DID authorizes), as Relays with --relay-live-auth required demand;\n' +
    'a DID with no Cache service but a Relay service authorizing --key is received from live only.\n' +
    'Without --did, --key and --decryption-key, the identity of the book (in the network of --directory) is used.',
  options: RECEIVE_OPTIONS,
  exitCode: (r) => ((r as ReceiveResult).errors.length > 0 ? 1 : 0),
  async run(ctx, o) {
    try {
      if (!statSync(o['output-dir']!).isDirectory()) throw new Error('not a directory');
    } catch {
      throw new UsageError(`--output-dir ${o['output-dir']} is not a directory`);
    }
    const lock = lockOutputDir(ctx.io.env, o['output-dir']!);
    try {
      return await receive(ctx, o);
    } finally {
      lock.release();
    }
  },
});

/** The receive itself (a sweep of every Cache, then `--follow`'s live session and sweeps), holding the output directory. */
async function receive(ctx: CommandContext, o: OptionValues<typeof RECEIVE_OPTIONS>): Promise<ReceiveResult> {
  const ref = recipientRef(o.did, '--did');
  const dir = await directoryContext(o, ctx.info);
  const signer = readEd25519KeyFile(o.key);
  const decryption = o['decryption-key'] === undefined ? null : readX25519KeyFile(o['decryption-key']).privateKey;
  const did = (await resolveRecipient(dir.client, ref)).did;
  const record = await dir.client.resolve(did);
  if (record.document === null || record.deactivated) throw Object.assign(new Error(`${did} has no active document`), { code: 'did_deactivated' });
  const device = o.device ?? '';
  const targets = cacheTargetsFor(dir.profile, record.document, signer.publicKey, {
    ...(o['key-id'] === undefined ? {} : { keyId: didUrl(did, o['key-id']) }),
    deviceId: device,
  });
  // The proof of the live session: a Relay or Cache service of the DID that authorizes this key.
  const liveService = liveProofServiceFor(dir.profile, record.document, signer.publicKey, o['key-id'] === undefined ? undefined : didUrl(did, o['key-id']));
  // A DID without a Cache service is received from only live (--follow), when a Relay service authorizes the key.
  if (targets.length === 0 && !(o.follow && liveService !== undefined)) {
    throw Object.assign(new Error(`no Cache service of ${did} authorizes this key for retrieval`), { code: 'no_cache_service' });
  }
  const cacheFetch = commandFetch(o, 'the Cache', ctx.info);
  const caches = targets.map((t) => new CacheClient(dir.profile, t, signer, { fetch: cacheFetch }));
  const bar = progressBar(ctx.io, 'receiving');
  const sink = directorySink(o['output-dir']!, did);
  const receiver = new FileReceiver(
    dir.profile,
    caches,
    decryption,
    sink,
    (l) => {
      bar.finish();
      ctx.info(l);
    },
    {
      checkSender: directorySenderCheck(dir.profile, dir.client),
      onProgress: receiveProgress(ctx, bar),
    },
  );
  const tally = new ReceiveTally(did);
  const result = tally.result;
  ctx.info(`checking ${caches.length} Cache endpoint(s) for ${did}`);
  const first = await receiver.sweep();
  report(ctx, first);
  tally.add(first);
  ctx.progress({ received: result.received, receiving: undefined, resume: undefined });
  if (!o.follow) return finish(ctx, result, first, sink);

  const relayUrl =
    o.relay ?? record.document.service.filter((s) => s.type === dir.profile.relayServiceType).flatMap((s) => serviceEndpoints(s.serviceEndpoint))[0];
  if (relayUrl === undefined) throw new UsageError(`--follow needs --relay: ${did} publishes no relay service`);
  const stop = ctx.io.shutdownSignal();
  const onReport = (r: ReceiveReport): void => {
    report(ctx, r);
    tally.add(r);
  };
  const onFailure = (e: unknown): void => onReport({ files: [], errors: [errorOf(e)], caches: [] });
  const live = new LiveReceiver({
    relayUrl,
    did,
    device: device === '' ? 'cli' : device,
    ...(liveService === undefined ? {} : { proof: { profile: dir.profile, ...liveService, signer } }),
    onStatus: (l) => ctx.info(l),
    onEnvelope: (env) => void receiver.acceptLive(env).then(onReport, onFailure),
  });
  try {
    await live.start();
  } catch (e) {
    // Files already written stay reported; the run fails.
    onFailure(Object.assign(e instanceof Error ? e : new Error(String(e)), { code: 'live_session_failed' }));
    return result;
  }
  const intervalMs = (positiveInt('interval', o.interval) ?? 10) * 1000;
  const timer = setInterval(() => void receiver.sweep().then(onReport, onFailure), intervalMs);
  ctx.info('following; stop with Ctrl-C');
  await stop;
  clearInterval(timer);
  await live.stop();
  // Lets a live message still being handled finish, and picks up what arrived meanwhile.
  const last = await receiver.sweep();
  onReport(last);
  return finish(ctx, result, last, sink);
}

/** A service's endpoints, one or several. */
function serviceEndpoints(endpoint: string | readonly string[]): readonly string[] {
  return typeof endpoint === 'string' ? [endpoint] : endpoint;
}

/**
 * What a receive shows and records of each file's progress: the bar, the memory bound of the file being received,
 * and what an interrupted run reports (the part is kept: the next run continues from there).
 */
function receiveProgress(ctx: CommandContext, bar: Progress): (p: { key: string; name: string; receivedBytes: number; totalBytes: number }) => void {
  let current = '';
  let done = 0;
  const bound = memoryBound();
  return (p) => {
    if (p.key !== current) {
      bar.finish();
      done = 0;
    }
    current = p.key;
    bound(p.receivedBytes - done);
    done = p.receivedBytes;
    ctx.progress({
      receiving: { message_key: p.key, name: p.name, received_bytes: p.receivedBytes, total_bytes: p.totalBytes },
      resume: 'run the same command again to continue where it stopped',
    });
    bar.update(p.receivedBytes, p.totalBytes, p.name);
  };
}
