// Reference: the smallest useful node:http JSON server. Prints its port on stdout, runs until SIGTERM.
import http from 'node:http';

const body = Buffer.from(JSON.stringify({ hello: 'world' }));
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
