/**
 * Waiting for something another process or a background loop does: polls `probe` until it yields a value. A
 * bound on the attempts, never a timing assertion: a probe that never succeeds fails the test with `what`.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  o: { tries?: number; everyMs?: number; ignoreErrors?: boolean } = {},
): Promise<T> {
  const tries = o.tries ?? 400;
  for (let i = 0; i < tries; i++) {
    const v = o.ignoreErrors === true ? await probe().catch(() => undefined) : await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, o.everyMs ?? 25));
  }
  throw new Error(`never happened: ${what}`);
}
