/**
 * Stand-in primaries for mirror tests: an HTTP server that answers `/export/genesis` with a real Directory's
 * genesis and does what a test asks with each upgrade of `/export/stream` — never answer it, answer it and then
 * stay silent, or hand it to a real WebSocket server that sends what the test wants.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export interface StandInPrimary {
  url: string;
  /** Upgrades of `/export/stream` received so far. */
  readonly upgrades: number;
  close(): Promise<void>;
}

/** What the stand-in does with the `n`-th upgrade (0-based): a ws connection handler, or `hang` / `silent`. */
export type UpgradeBehaviour = ((ws: WebSocket, cursor: number) => void) | 'hang' | 'silent';

export async function standInPrimary(genesis: string, behaviour: (n: number) => UpgradeBehaviour): Promise<StandInPrimary> {
  const server = http.createServer((req, res) => {
    if (req.url === '/export/genesis') res.writeHead(200, { 'content-type': 'application/json' }).end(genesis);
    else res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":"not_found"}');
  });
  const wss = new WebSocketServer({ noServer: true });
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  let upgrades = 0;
  server.on('upgrade', (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const b = behaviour(upgrades++);
    if (b === 'hang') return; // accepted, never answered
    if (b === 'silent') {
      // a valid 101, then nothing: no frame, no pong, nothing read
      const accept = createHash('sha1')
        .update(`${String(req.headers['sec-websocket-key'])}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
        .digest('base64');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      socket.pause();
      return;
    }
    const cursor = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('cursor') ?? 0);
    wss.handleUpgrade(req, socket, head, (ws) => b(ws, cursor));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get upgrades() {
      return upgrades;
    },
    close: async () => {
      for (const c of wss.clients) c.terminate();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => wss.close(() => r()));
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Sends the lines whose seq is above `cursor`, one per frame. */
export function sendFeed(ws: WebSocket, lines: readonly string[], cursor: number): void {
  for (const line of lines) if ((JSON.parse(line) as { seq: number }).seq > cursor) ws.send(line);
}

/** A Directory's genesis and its whole finalized feed, as lines. */
export async function feedOf(url: string): Promise<{ genesis: string; lines: string[] }> {
  const genesis = await (await fetch(`${url}/export/genesis`)).text();
  const lines = (await (await fetch(`${url}/export?after=0&count=1000`)).text()).split('\n').filter((l) => l.length > 0);
  return { genesis, lines };
}
