import { it } from 'node:test';
import { pgLedgerDeployment } from '../test/support/pg-ledger.js';
import { didOf, metaOf, registerCall, seedKey } from '../test/ledger/harness.js';

it('rate', async () => {
  const d = await pgLedgerDeployment({ blockIntervalMs: 100 });
  const procs = [await d.start(0), await d.start(1)];
  const calls = Array.from({ length: 400 }, (_, i) => registerCall(didOf(2000 + i), seedKey(1 + (i % 200))));
  const t0 = performance.now();
  await Promise.all(calls.map((c, i) => procs[i % 2]!.ledger.admit(c, metaOf(c)).catch((e) => console.log(String(e)))));
  const t1 = performance.now();
  console.log('admissions/s', (400 / ((t1 - t0) / 1000)).toFixed(0));
  for (const p of procs) await p.close();
  await d.drop();
});
