/**
 * Clients of `GET /export/stream` for fairness tests: a raw one that upgrades from a chosen loopback address and
 * then never reads (its socket buffers absorb the feed, it never answers a ping), and the upgrade's answer.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { checkAnswer } from './contract-check.js';

export interface RawUpgrade {
  status: number;
  headers: string;
  /** The JSON body of a refusal. */
  body?: { code: string; details?: Record<string, unknown> };
  socket: Socket;
}

/** Upgrades `/export/stream?cursor=0` at `port` from `localAddress`; after a 101 it never reads again. */
export function nonReadingClient(port: number, localAddress: string, cursor = 0): Promise<RawUpgrade> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    socket.on('error', reject);
    let got = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      got = Buffer.concat([got, chunk]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = got.subarray(0, end).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
      if (status === 101) {
        // from here on nothing is read: what the server sends stays in the socket buffers
        socket.off('data', onData);
        socket.pause();
        resolve({ status, headers: head, socket });
        return;
      }
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      const body = got.subarray(end + 4);
      if (body.length < length) return;
      socket.off('data', onData);
      socket.destroy();
      const refusal = JSON.parse(body.subarray(0, length).toString('utf8')) as RawUpgrade['body'];
      // a refusal carries a code the route's OpenAPI entry lists for its status
      checkAnswer(`http://127.0.0.1:${port}/export/stream`, 'GET', status, refusal);
      resolve({ status, headers: head, body: refusal, socket });
    };
    socket.on('data', onData);
    socket.on('connect', () =>
      socket.write(
        `GET /export/stream?cursor=${cursor} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
          `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`,
      ),
    );
  });
}

/** Writes a (masked, as a client must) WebSocket pong frame with `payload` — one that answers no ping. */
export function writePong(socket: Socket, payload: Buffer): void {
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  socket.write(Buffer.concat([Buffer.from([0x8a, 0x80 | payload.length]), mask, masked]));
}
