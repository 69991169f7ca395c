/**
 * What remarks cost on a chain, from its own fee rules (`estimateFee`: TransactionPaymentApi on a remark of that
 * size, nothing submitted):
 *
 *     node --import tsx scripts/chain-fees.ts ws://127.0.0.1:9944 dir-a.key.json
 *
 * prints one JSON line: the chain, its token, the largest remark, and the fee of 1 KiB, 16 KiB and the largest.
 */
import pino from 'pino';
import { createSubstrateClient } from '../src/chain/substrate-client.js';

const [url, keyFile] = process.argv.slice(2);
if (url === undefined || keyFile === undefined) {
  process.stderr.write('usage: node --import tsx scripts/chain-fees.ts <ws-url> <key-file>\n');
  process.exit(1);
}
const client = createSubstrateClient({ urls: [url], keyFile, logger: pino({ level: 'silent' }) });
try {
  await client.connect(60_000);
  const info = client.info();
  const fees: Record<string, string> = {};
  for (const bytes of [1024, 16 * 1024, info.maxRemarkBytes]) fees[bytes] = (await client.estimateFee(bytes)).toString();
  const line = { spec_name: info.specName, token: info.tokenSymbol, decimals: info.tokenDecimals, max_remark_bytes: info.maxRemarkBytes, fees };
  process.stdout.write(`${JSON.stringify(line)}\n`);
} finally {
  await client.close();
}
