/**
 * chopsticks' `dev_setStorage` for the dev chain: sets accounts' free balance in place (no block is built). Used by
 * scripts/dev-chain.ts at start and by test/support/dev-chain.ts to drain or refill an account.
 */
import { WsProvider } from '@polkadot/api';

/** What the dev chain funds an account with unless told otherwise: 1,000,000 tokens of 12 decimals. */
export const GENEROUS_BALANCE = 10n ** 18n;

/** Opens `url`, runs `f` on a quiet provider (no auto-reconnect), closes. */
export async function withProvider<T>(url: string, f: (p: WsProvider) => Promise<T>): Promise<T> {
  const provider = new WsProvider(url, false);
  try {
    await provider.connect();
    await provider.isReady;
    return await f(provider);
  } finally {
    await provider.disconnect().catch(() => undefined);
  }
}

/** Sets the free balance of every account in `addresses` to `free` (the token's smallest unit). */
export function setBalances(url: string, addresses: readonly string[], free: bigint): Promise<void> {
  const entries = addresses.map((a) => [[a], { providers: 1, data: { free: free.toString() } }]);
  return withProvider(url, async (p) => {
    await p.send('dev_setStorage', [{ System: { Account: entries } }]);
  });
}
