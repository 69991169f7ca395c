/** Ledger failures (ledger-rules.md §11): an error name, its module, and for `InvalidPolicyScope` a reason. */

export type LedgerModule = 'DidRegistry' | 'DeliveryPolicy' | 'ApplicationRegistry' | 'Ledger';

/** Where in a delivery policy a validation error was found (http-api.md §1.1: `details.rule_id` / `step_id`). */
export interface LedgerFailureDetail {
  ruleId?: string;
  stepId?: string;
}

export class LedgerFailure extends Error {
  constructor(
    readonly errorName: string,
    readonly module: LedgerModule,
    readonly reason?: string,
    /** Not part of the consensus result (`results_root` carries only the name). */
    readonly detail?: LedgerFailureDetail,
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

/** Runs `fn`; a LedgerFailure escaping it gains `detail` (inner detail wins, so the innermost location is kept). */
export function withDetail<T>(detail: LedgerFailureDetail, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof LedgerFailure) throw new LedgerFailure(e.errorName, e.module, e.reason, { ...detail, ...e.detail });
    throw e;
  }
}

/** A block that does not verify against this ledger (see `Ledger.importBlock`). */
export class BlockImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlockImportError';
  }
}
