/**
 * The leader shape's hop, prototyped outside the server for `bench/pg-write-cpu.ts` (loaded into the Directory
 * processes with `node --import`): a request carrying `x-hand-to: <url>` is handed on raw, before any route parses
 * it, to that URL over a keep-alive agent, and the answer is relayed as it came (status, headers, bytes); a hop
 * that fails answers 503. Every other request goes to the server as usual. Not part of ddn: a built leader shape
 * would publish the producer's address in PostgreSQL and hand over only writes (docs/deployment.md).
 */
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const emit = http.Server.prototype.emit;

http.Server.prototype.emit = function (event, ...args) {
  const [req, res] = args;
  const to = event === 'request' ? req.headers['x-hand-to'] : undefined;
  if (typeof to !== 'string') return emit.call(this, event, ...args);
  const u = new URL(to);
  const headers = { ...req.headers };
  delete headers['x-hand-to'];
  const out = http.request({ host: u.hostname, port: u.port, path: req.url, method: req.method, headers, agent }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  out.on('error', () => {
    if (!res.headersSent) res.writeHead(503, { 'content-type': 'application/json' });
    res.end('{"error":"service_unavailable","code":"service_unavailable","message":"the hop failed"}');
  });
  req.pipe(out);
  return true;
};
