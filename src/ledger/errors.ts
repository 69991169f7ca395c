/** Ledger failures (ledger-rules.md §11): an error name, its module, and for `InvalidPolicyScope` a reason. */

export type LedgerModule = 'DidRegistry' | 'DeliveryPolicy' | 'ApplicationRegistry' | 'Ledger';

export class LedgerFailure extends Error {
  constructor(
    readonly errorName: string,
    readonly module: LedgerModule,
    readonly reason?: string,
  ) {
    super(errorName);
    this.name = 'LedgerFailure';
  }
}

export function isLedgerFailure(e: unknown): e is LedgerFailure {
  return e instanceof LedgerFailure;
}

/** A thrower bound to one module. */
export function failer(module: LedgerModule) {
  return (errorName: string, reason?: string): never => {
    throw new LedgerFailure(errorName, module, reason);
  };
}
