/**
 * `npx tsx bench/resolve-miss.ts <data dir of bench:bigledger>`: what a resolve that misses the cache costs, in
 * parts — reading its two state rows (record, document nonce) through the store, with the record's decoding;
 * decoding the record alone; rendering and serialising the answer — in µs per DID over 20,000 random DIDs of the
 * ledger (medians of 4 rounds); then the record decoding of this tree against the JSON.parse reviver it replaced
 * (same values, checked), alternated. The store reads a key's newest value from `ledger_current` (ledger migration
 * 2; `ledger_state`'s descent, which this tool compared before session 32, finds no registered DID's rows since
 * migration 5). Opening the ledger applies the tree's migrations: run it on a copy of a ledger others use.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../src/store/sqlite/ledger-store.js';
import { deserializeStateValue } from '../src/ledger/state.js';
import { renderDidRecordPart } from '../src/directory/record-view.js';
import type { DidRecord } from '../src/ledger/records.js';
const dir = process.argv[2] ?? '';
if (dir === '') throw new Error('usage: npx tsx bench/resolve-miss.ts <data dir of bench:bigledger>');
const db = openSqlite(join(dir, 'ledger.sqlite'), LEDGER_MIGRATIONS, 'ledger');
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const dids = readFileSync(join(dir, 'bench-dids.tsv'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => l.split('\t')[0]!);
// a key's newest value: where a registered DID's record is
const current = db.prepare('SELECT value FROM ledger_current WHERE key = ?');
const store = new SqliteLedgerStore(db);
const N = 20000;
const draw = () => Array.from({ length: N }, () => dids[Math.floor(Math.random() * dids.length)]!);
const reads: number[] = [];
for (let round = 0; round < 4; round++) {
  const set = draw();
  const t0 = performance.now();
  for (const d of set) void (store.readState(`did/${d}`, 1e9), store.readState(`nonce/document_nonce/${d}`, 1e9));
  reads.push(((performance.now() - t0) / N) * 1000);
}
const pick = draw();
const raws = pick.map((d) => (current.get(`did/${d}`) as { value: string }).value);
let t = performance.now();
const recs = raws.map((r) => deserializeStateValue(r) as DidRecord);
const decode = (performance.now() - t) / N;
t = performance.now();
let len = 0;
for (let i = 0; i < N; i++) len += JSON.stringify(renderDidRecordPart(pick[i]!, recs[i]!, 0n, [])).length;
const render = (performance.now() - t) / N;
console.log(
  JSON.stringify({
    // the median of 4 rounds, with the record's decoding (the store's read decodes)
    read_decode_2_rows_store_us: +median(reads).toFixed(1),
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
const med = (a: number[]) => median(a).toFixed(1);
console.log('decode us: reviver', med(res[0]!), 'walk', med(res[1]!));
