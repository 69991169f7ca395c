/** `ddn send`: encrypt a file for a DID and hand it to a Relay. */
import { sendFile } from '../client/file-sender.js';
import { RelayClient } from '../client/relay-client.js';
import { isDid } from '../protocol/did.js';
import { leaf, UsageError } from './command.js';
import { directoryContext, DIRECTORY_OPTIONS, positiveInt, timedFetch } from './common.js';
import { fileSource, stdinSource } from './file-input.js';
import { progressBar } from './progress.js';

/** The `send` command. */
export const sendCommand = leaf('ddn send', {
  summary: 'encrypt a file for a DID and send it through a Relay',
  synopsis: '--to DID --input FILE|- [--relay URL] [--tag TAG] [--ttl 24h]',
  description:
    "Resolves the recipient's delivery (GET /delivery-resolution/{did}: its X25519 key agreement and effective\n" +
    'limits), splits the file into chunks when it exceeds max_unchunked_message_bytes, encrypts every part for the\n' +
    'recipient (profile <p>:cbor-chunk:x25519-hkdf-sha256-chacha20poly1305:v1) and posts the envelopes to the\n' +
    'Relay, retrying the identical bytes on 429, 502, 503 and 507. Nothing is sent unencrypted unless --plaintext.',
  options: {
    to: { type: 'string', arg: 'DID', help: 'recipient DID', required: true },
    input: { type: 'string', arg: 'FILE', help: "the file to send, or '-' for standard input", required: true },
    relay: { type: 'string', arg: 'URL', help: 'Relay base URL', env: 'DDN_RELAY_URL', default: 'http://127.0.0.1:8081' },
    name: { type: 'string', arg: 'NAME', help: "file name given to the recipient (default: the input's base name, or 'stdin')" },
    'media-type': { type: 'string', arg: 'TYPE', help: 'media type of the file', default: 'application/octet-stream' },
    tag: { type: 'string', arg: 'TAG', help: 'public tag (delivery policies may route on it)' },
    ttl: { type: 'string', arg: 'DURATION', help: 'how long the message may wait in a Cache (24h, 90m, PT2H, …)', default: '24h' },
    'chunk-size': { type: 'string', arg: 'BYTES', help: 'file bytes per chunk (capped by the limits)', default: '1048576' },
    plaintext: {
      type: 'boolean',
      help: 'send WITHOUT encryption: every Relay and Cache can read the file (nodes on profile platform refuse it unless run with --cache-allow-plaintext)',
    },
    ...DIRECTORY_OPTIONS,
  },
  async run(ctx, o) {
    if (!isDid(o.to)) throw new UsageError('--to must be a DID');
    const dir = await directoryContext(o);
    const source = o.input === '-' ? await stdinSource(ctx.io.stdin, o.name) : await fileSource(o.input, o.name);
    if (o.plaintext) ctx.info('warning: --plaintext sends the file unencrypted; every Relay and Cache on the way can read it');
    const relay = new RelayClient(o.relay!, { fetch: timedFetch() });
    const bar = progressBar(ctx.io, 'sending');
    ctx.info(`sending ${source.name} (${source.size} bytes) to ${o.to} through ${o.relay}`);
    try {
      const report = await sendFile({
        profile: dir.profile, directory: dir.client, relay, to: o.to, source, mediaType: o['media-type'], tag: o.tag, ttl: o.ttl,
        plaintext: o.plaintext, partBytes: positiveInt('chunk-size', o['chunk-size']),
        onProgress: (p) => bar.update(p.sentBytes, p.totalBytes, `${p.sentEnvelopes}/${p.totalEnvelopes} envelopes`),
      });
      bar.finish();
      ctx.info(`sent ${report.total_chunks} envelope(s): ${report.code} (${report.delivery_mode})`);
      return report;
    } finally {
      bar.finish();
    }
  },
});
