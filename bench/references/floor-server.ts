/**
 * Floor references: the least a server must do for a figure's request — the same durable write, signature or
 * verification, and HTTP hops — with nothing else (no validation, no lookups, no routing), on node:http,
 * better-sqlite3 and the service's Ed25519 module (libsodium where it loads) as the service uses them. A figure
 * measured beside its floor tells how much of the machine's reachable rate the service keeps; a floor whose own
 * ratio misses a target shows the target out of reach for any server doing that work on this machine.
 *
 * `node --import tsx bench/references/floor-server.ts <mode> <data dir> [<config JSON>]` prints `{"port":…}` and
 * runs until SIGTERM. Modes:
 * - `store`: `POST` a JSON envelope → parse it, insert it (`message_id`, raw body) into SQLite (WAL,
 *   `synchronous = FULL`), group-committed per event-loop turn → `202`.
 * - `retrieval`: `GET` with signed retrieval-proof headers (http-api.md §11.4) → verify the Ed25519 signature
 *   over the proof text (on the verifier thread, as the Cache), record the nonce (group-committed as above) → `200` with a small JSON body.
 * - `relay`: `POST` a JSON envelope → parse it, sign a node-request text (SHA-256 of the body) with Ed25519 (the
 *   PKCS#8 PEM key in `DDN_FLOOR_KEY`), forward the body over a keep-alive connection to a `store-signed` floor
 *   (`config.next`) → its status.
 * - `store-signed`: `store`, after verifying that signature.
 */
import { createHash, createPrivateKey } from 'node:crypto';
import http from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { utf8 } from '../../src/base/bytes.js';
import { keyPairFromPrivateKey, verifyEd25519 } from '../../src/crypto/ed25519.js';
import { verifyOnThread } from '../../src/crypto/verify-thread.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { retrievalProofText, type ProofOperation } from '../../src/protocol/retrieval-proof.js';

type Mode = 'store' | 'retrieval' | 'relay' | 'store-signed';

/** For `retrieval`: whose proofs to accept. For `relay`: where to forward, and the signing key's public half. */
interface FloorConfig {
  profile?: string;
  did?: string;
  publicKeyHex?: string;
  next?: string;
  /** `store-signed`: the relay floor's public key (32 bytes, hex). */
  signerKeyHex?: string;
}

const [modeArg, dir, configText] = process.argv.slice(2);
const mode = modeArg as Mode;
const config = (configText === undefined ? {} : JSON.parse(configText)) as FloorConfig;

/** Group commit on the event loop: rows queued during one turn are inserted and committed (one fsync) together. */
function groupCommit(path: string, table: string): (key: string, value: Buffer | null, done: () => void) => void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (k TEXT PRIMARY KEY, v BLOB)`);
  const insert = db.prepare(`INSERT INTO ${table} (k, v) VALUES (?, ?)`);
  type Row = [key: string, value: Buffer | null, done: () => void];
  const batch = db.transaction((rows: Row[]) => {
    for (const [k, v] of rows) insert.run(k, v);
  });
  let queue: Row[] = [];
  return (key, value, done) => {
    if (queue.length === 0) {
      setImmediate(() => {
        const rows = queue;
        queue = [];
        batch(rows);
        for (const [, , answered] of rows) answered();
      });
    }
    queue.push([key, value, done]);
  };
}

function readBody(req: http.IncomingMessage, then: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => then(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
}

function answer(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const bodyHashHex = (body: Buffer) => createHash('sha256').update(body).digest('hex');

function storeHandler(verifySigner: Uint8Array | null): http.RequestListener {
  const write = groupCommit(join(dir!, 'floor-store.sqlite'), 'envelopes');
  return (req, res) =>
    readBody(req, (body) => {
      if (verifySigner !== null) {
        const text = `${String(req.headers['x-node-timestamp'])}\n${bodyHashHex(body)}`;
        if (!verifyEd25519(verifySigner, utf8(text), Buffer.from(String(req.headers['x-node-signature']), 'base64'))) return answer(res, 403, '{"code":"invalid_node_signature"}');
      }
      const env = JSON.parse(body.toString('utf8')) as { message_id: string };
      write(env.message_id, body, () => answer(res, 202, '{"status":"stored"}'));
    });
}

function retrievalHandler(): http.RequestListener {
  const profile = makeProfile(config.profile!);
  const publicKey = Buffer.from(config.publicKeyHex!, 'hex');
  const write = groupCommit(join(dir!, 'floor-nonces.sqlite'), 'nonces');
  return (req, res) => {
    const h = (name: string) => String(req.headers[name] ?? '');
    const operation = (req.url ?? '').includes('/summary/') ? 'summary' : 'pull';
    const text = retrievalProofText(profile, {
      operation: operation as ProofOperation,
      did: config.did!,
      deviceId: '',
      serviceId: h('x-service-id'),
      cacheEndpoint: h('x-cache-endpoint'),
      keyId: h('x-key-id'),
      timestamp: h('x-timestamp'),
      nonce: h('x-nonce'),
      subject: '*',
    });
    const then = (ok: boolean) => {
      if (!ok) return answer(res, 403, '{"code":"invalid_signature"}');
      write(h('x-nonce'), null, () => answer(res, 200, '{"count":0,"messages":[]}'));
    };
    // off the event loop as the Cache does it, a turn's signatures in one message to one thread
    void verifyOnThread(publicKey, [utf8(text)], Buffer.from(h('x-signature'), 'base64')).then(then);
  };
}

function relayHandler(): http.RequestListener {
  const key = keyPairFromPrivateKey(createPrivateKey(process.env.DDN_FLOOR_KEY ?? ''));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const next = new URL(config.next!);
  return (req, res) =>
    readBody(req, (body) => {
      JSON.parse(body.toString('utf8'));
      const timestamp = new Date().toISOString();
      const signature = Buffer.from(key.sign(utf8(`${timestamp}\n${bodyHashHex(body)}`))).toString('base64');
      const out = http.request(
        next,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': body.length, 'x-node-timestamp': timestamp, 'x-node-signature': signature },
        },
        (r) => {
          r.resume();
          r.on('end', () => answer(res, r.statusCode ?? 502, '{"status":"delivered"}'));
        },
      );
      out.on('error', () => answer(res, 502, '{"code":"upstream_failed"}'));
      out.end(body);
    });
}

{
  const handler =
    mode === 'store'
      ? storeHandler(null)
      : mode === 'store-signed'
        ? storeHandler(Buffer.from(config.signerKeyHex!, 'hex'))
        : mode === 'retrieval'
          ? retrievalHandler()
          : relayHandler();
  const server = http.createServer(handler);
  server.keepAliveTimeout = 72_000;
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
