/**
 * `npx tsx bench/resolve-miss.ts <data dir of bench:bigledger>`: what a resolve that misses the cache costs, in
 * parts — reading its two state rows (record, document nonce), decoding the record, rendering and serialising the
 * answer — in µs per DID over 20,000 random DIDs of the ledger; then the record decoding of this tree against the
 * JSON.parse reviver it replaced (same values, checked), alternated.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS } from '../src/store/sqlite/ledger-store.js';
import { deserializeStateValue } from '../src/ledger/state.js';
import { renderDidRecordPart } from '../src/directory/record-view.js';
import type { DidRecord } from '../src/ledger/records.js';
const dir = process.argv[2] ?? '';
if (dir === '') throw new Error('usage: npx tsx bench/resolve-miss.ts <data dir of bench:bigledger>');
const db = openSqlite(join(dir, 'ledger.sqlite'), LEDGER_MIGRATIONS, 'ledger');
const dids = readFileSync(join(dir, 'bench-dids.tsv'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => l.split('\t')[0]!);
const q = db.prepare('SELECT value FROM ledger_state WHERE key = ? AND block <= ? ORDER BY block DESC LIMIT 1');
const N = 20000;
const pick = Array.from({ length: N }, () => dids[Math.floor(Math.random() * dids.length)]!);
let t = performance.now();
const raws: string[] = [];
for (const d of pick) {
  raws.push((q.get(`did/${d}`, 1e9) as { value: string }).value);
  q.get(`nonce/document_nonce/${d}`, 1e9);
}
const read = (performance.now() - t) / N;
t = performance.now();
const recs = raws.map((r) => deserializeStateValue(r) as DidRecord);
const decode = (performance.now() - t) / N;
t = performance.now();
let len = 0;
for (let i = 0; i < N; i++) len += JSON.stringify(renderDidRecordPart(pick[i]!, recs[i]!, 0n, [])).length;
const render = (performance.now() - t) / N;
console.log(
  JSON.stringify({
    read_2_rows_us: +(read * 1000).toFixed(1),
    decode_us: +(decode * 1000).toFixed(1),
    render_stringify_us: +(render * 1000).toFixed(1),
    body_bytes: Math.round(len / N),
    raw_bytes: Math.round(raws.reduce((a, r) => a + r.length, 0) / N),
  }),
);
const oldDecode = (s: string) =>
  JSON.parse(s, (_k, x: unknown) => {
    if (x !== null && typeof x === 'object' && !Array.isArray(x)) {
      const o = x as Record<string, unknown>;
      if (typeof o.$n === 'string' && Object.keys(o).length === 1) return BigInt(o.$n);
      if (typeof o.$x === 'string' && Object.keys(o).length === 1) return new Uint8Array(Buffer.from(o.$x, 'hex'));
    }
    return x;
  });
const { isDeepStrictEqual } = await import('node:util');
for (const r of raws.slice(0, 200)) if (!isDeepStrictEqual(oldDecode(r), deserializeStateValue(r))) throw new Error('differs');
const res: number[][] = [[], []];
for (let round = 0; round < 6; round++) {
  for (const [i, f] of [oldDecode, deserializeStateValue].entries()) {
    const t0 = performance.now();
    for (const r of raws) f(r);
    res[i]!.push(((performance.now() - t0) / raws.length) * 1000);
  }
}
const med = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)]!.toFixed(1);
console.log('decode us: reviver', med(res[0]!), 'walk', med(res[1]!));
