/**
 * A small authoritative DNS server on loopback UDP for tests (RFC 1035 wire format): answers TXT queries from a
 * map, NOERROR with no answers for other types of a known name, NXDOMAIN for unknown names, and a chosen RCODE
 * (e.g. SERVFAIL) for names set to fail. Point a resolver at `server` (`127.0.0.1:<port>`).
 */
import { createSocket, type RemoteInfo } from 'node:dgram';

const TYPE_TXT = 16;
const CLASS_IN = 1;
export const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 } as const;

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, as `dns.Resolver#setServers` takes it. */
  readonly server: string;
  /** Replaces the TXT records of `name`; each record is one string or its character-strings. */
  setTxt(name: string, ...records: (string | string[])[]): void;
  /** Forgets `name` (NXDOMAIN again). */
  remove(name: string): void;
  /** Answers every query for `name` with `rcode`. */
  failWith(name: string, rcode: number): void;
  /** Queries received, lowercase names. */
  readonly queries: string[];
  close(): Promise<void>;
}

interface Question {
  name: string;
  type: number;
  /** Offset just past the question section. */
  end: number;
}

function parseQuestion(msg: Buffer): Question | undefined {
  if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let o = 12;
  for (;;) {
    if (o >= msg.length) return undefined;
    const len = msg[o]!;
    o += 1;
    if (len === 0) break;
    if (len > 63 || o + len > msg.length) return undefined;
    labels.push(msg.subarray(o, o + len).toString('ascii'));
    o += len;
  }
  if (o + 4 > msg.length) return undefined;
  return { name: labels.join('.').toLowerCase(), type: msg.readUInt16BE(o), end: o + 4 };
}

/** `<length><bytes>` character-strings of at most 255 bytes each. */
function txtRdata(chunks: string[]): Buffer {
  const parts: Buffer[] = [];
  for (const c of chunks) {
    const b = Buffer.from(c, 'utf8');
    if (b.length > 255) throw new Error('a TXT character-string holds at most 255 bytes');
    parts.push(Buffer.of(b.length), b);
  }
  return Buffer.concat(parts);
}

function answer(query: Buffer, q: Question, rcode: number, records: string[][]): Buffer {
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  const opcode = query.readUInt16BE(2) & 0x7800;
  const rd = query.readUInt16BE(2) & 0x0100;
  header.writeUInt16BE(0x8000 | opcode | 0x0400 | rd | rcode, 2); // QR, AA
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(records.length, 6);
  const rrs = records.map((chunks) => {
    const rdata = txtRdata(chunks);
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0); // pointer to the question name
    rr.writeUInt16BE(TYPE_TXT, 2);
    rr.writeUInt16BE(CLASS_IN, 4);
    rr.writeUInt32BE(60, 6);
    rr.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([rr, rdata]);
  });
  return Buffer.concat([header, query.subarray(12, q.end), ...rrs]);
}

export async function startDnsServer(): Promise<TestDnsServer> {
  const zone = new Map<string, string[][]>();
  const failures = new Map<string, number>();
  const queries: string[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (msg: Buffer, from: RemoteInfo) => {
    const q = parseQuestion(msg);
    if (!q) return;
    queries.push(q.name);
    const fail = failures.get(q.name);
    const records = zone.get(q.name);
    const reply =
      fail !== undefined
        ? answer(msg, q, fail, [])
        : records === undefined
          ? answer(msg, q, RCODE.NXDOMAIN, [])
          : answer(msg, q, RCODE.NOERROR, q.type === TYPE_TXT ? records : []);
    socket.send(reply, from.port, from.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve());
  });
  const { port } = socket.address();
  return {
    server: `127.0.0.1:${port}`,
    queries,
    setTxt(name, ...records) {
      failures.delete(name.toLowerCase());
      zone.set(
        name.toLowerCase(),
        records.map((r) => (typeof r === 'string' ? [r] : r)),
      );
    },
    remove(name) {
      zone.delete(name.toLowerCase());
      failures.delete(name.toLowerCase());
    },
    failWith(name, rcode) {
      failures.set(name.toLowerCase(), rcode);
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
