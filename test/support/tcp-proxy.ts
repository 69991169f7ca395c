/**
 * A loopback TCP proxy that can be cut and restored: `cut()` drops every connection and stops listening (new
 * connections are refused), `restore()` listens again on the same port. Tests put it in front of a chain endpoint
 * to play "the chain is unreachable, then back".
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Drops every connection and refuses new ones. */
  cut(): Promise<void>;
  /** Accepts connections again (on the same port). */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function tcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  const serve = (): Server =>
    createServer((inbound) => {
      const outbound = createConnection({ host: targetHost, port: targetPort });
      track(inbound);
      track(outbound);
      inbound.on('error', () => outbound.destroy());
      outbound.on('error', () => inbound.destroy());
      inbound.pipe(outbound).pipe(inbound);
    });
  const listen = (server: Server, port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  let server: Server | undefined = serve();
  const port = await listen(server, 0);
  const cut = async (): Promise<void> => {
    const s = server;
    server = undefined;
    for (const sock of sockets) sock.destroy();
    if (s !== undefined) await new Promise<void>((r) => s.close(() => r()));
  };
  return {
    port,
    cut,
    restore: async () => {
      if (server !== undefined) return;
      server = serve();
      await listen(server, port);
    },
    close: cut,
  };
}
