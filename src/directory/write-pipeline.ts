/**
 * The one Directory write pipeline (http-api.md §2.2, §5.1): every change kind — DID registration and actions,
 * personas, delivery policies v2 / v3, applications — is a descriptor (src/directory/changes/*.ts): an object of
 * steps (read the request, pre-check, build, map errors, answer) that hold only the kind's own rules. The two
 * engines below run every kind in the same order with the same error mapping, submission and answers.
 *
 * Prepare (200): read the path and body → state pre-checks → build the payload → dry run against the pool
 * (no signatures; ledger errors mapped per §1.1) → the prepared body.
 *
 * Submit (202): read the path and body (field syntax in the kind's order, and any check that must interleave
 * with it) → rebuild the signed bytes and compare (`invalid_canonical_payload`, `canonical_payload_mismatch`)
 * → build the extrinsic → state pre-checks, skipped for an identical pending extrinsic (answered as a duplicate)
 * → pool admission (ledger errors mapped per §1.1, nonce details added) → the 202 body (§2.4) → follow-up.
 */
import type { Call } from '../ledger/extrinsic.js';
import type { DirectoryDeps } from './deps.js';
import type { LedgerErrorContext } from './ledger-errors.js';
import { accepted, assertCanonical, dryRun, submitToLedger, type AcceptedFields, type Body } from './submission.js';

/** What a submit kind answers besides the fields every 202 carries (the engine adds those). */
export type KindFields<T> = Omit<T, keyof AcceptedFields>;

/** What a prepare builds: the bytes to sign and the extrinsic to dry-run (none: no dry run). */
export interface Prepared {
  payload: Uint8Array;
  probe?: Call;
}

/** What a prepare of a nonce-carrying payload builds. */
export interface NoncePrepared extends Prepared {
  nonce: bigint;
}

/** The steps of a prepare route. `E` is what the kind needs (Directory deps, plus e.g. the DNS challenges); `A` its 200 body. */
export interface PrepareSteps<E extends DirectoryDeps, R, In, B extends Prepared, A extends Body> {
  /** Path binding, action and field syntax, in the order the spec pins. */
  read(env: E, req: R): In | Promise<In>;
  /** Checks against the pool state that give better codes than the ledger (§2.2 step 5). */
  precheck(env: E, input: In): void;
  /** The payload (with the current nonce) and the extrinsic carrying it with a placeholder signature. */
  build(env: E, input: In): B;
  /** How ledger errors of the dry run are mapped (§1.1). */
  errors?(input: In): LedgerErrorContext;
  /** The 200 body. */
  answer(env: E, input: In, built: B): A;
}

/** A prepare whose `read` is synchronous (its route answers without awaiting). */
export type SyncPrepareSteps<E extends DirectoryDeps, R, In, B extends Prepared, A extends Body> = PrepareSteps<E, R, In, B, A> & {
  read(env: E, req: R): In;
};

/** The bytes a submission carries and the bytes rebuilt from its fields (§2.2 steps 3–4). */
export interface Rebuilt {
  canonical: Uint8Array;
  rebuilt: Uint8Array;
  /** True when `canonical` strictly decodes as the kind's payload type. */
  decodes(bytes: Uint8Array): boolean;
}

/** How a submission enters the pool: its pending marker, pool limit key, nonce and error mapping. */
export interface Admission {
  subject: string;
  action: string;
  /** Pool limit key, e.g. `<did>|<nonce domain>`. */
  limitKey: string;
  /** The nonce consumed; `current` (the pool's) fills `nonce_mismatch` details. */
  nonce?: { domain: string; value: bigint; current?: bigint };
  /** Registration and document replacement: document-structure failures are `invalid_document`. */
  fullDocument?: boolean;
}

/** The steps of a submit route; `A`: the kind's fields of its 202 body. */
export interface SubmitSteps<E extends DirectoryDeps, R, In, A extends Body> {
  /** Path binding, action and field syntax in the order the spec pins, with checks that interleave with them. */
  read(env: E, req: R): In | Promise<In>;
  /** The submitted and rebuilt bytes; omitted (or undefined) where `read` or `precheck` compares them itself. */
  rebuild?(env: E, input: In): Rebuilt | undefined;
  /** The extrinsic as submitted. */
  call(input: In): Call;
  /** Whether the pre-checks are skipped; default: the identical extrinsic is already pending (a duplicate). */
  skipsPrechecks?(input: In, pending: boolean): boolean;
  /** Checks against the pool state that give better codes than the ledger (§2.2 step 5). */
  precheck(env: E, input: In): void;
  admission(env: E, input: In): Admission;
  /** The kind's fields of the 202 body (the engine adds status, tx hash, duplicate and message). */
  answer(input: In): A;
  /** After admission, e.g. marking a DNS challenge used. */
  after?(env: E, input: In, txHash: string): Promise<void>;
}

/** Runs a prepare route. */
export async function prepareChange<E extends DirectoryDeps, R, In, B extends Prepared, A extends Body>(
  env: E,
  kind: PrepareSteps<E, R, In, B, A>,
  req: R,
): Promise<A> {
  return prepareFrom(env, kind, await kind.read(env, req));
}

/** {@link prepareChange} for kinds whose `read` is synchronous (their routes answer without awaiting). */
export function prepareChangeSync<E extends DirectoryDeps, R, In, B extends Prepared, A extends Body>(
  env: E,
  kind: SyncPrepareSteps<E, R, In, B, A>,
  req: R,
): A {
  return prepareFrom(env, kind, kind.read(env, req));
}

function prepareFrom<E extends DirectoryDeps, R, In, B extends Prepared, A extends Body>(env: E, kind: PrepareSteps<E, R, In, B, A>, input: In): A {
  kind.precheck(env, input);
  const built = kind.build(env, input);
  if (built.probe) dryRun(env.ledger, built.probe, kind.errors?.(input));
  return kind.answer(env, input, built);
}

/** A submission's request read and checked against the pool, up to its admission (§2.2 steps 1–5). */
async function checkedSubmission<E extends DirectoryDeps, R, In, A extends Body>(
  env: E,
  kind: SubmitSteps<E, R, In, A>,
  req: R,
): Promise<{ input: In; call: Call; a: Admission }> {
  const input = await kind.read(env, req);
  const bytes = kind.rebuild?.(env, input);
  if (bytes) assertCanonical(bytes.canonical, bytes.rebuilt, bytes.decodes);
  const call = kind.call(input);
  const pending = env.ledger.isPending(call);
  if (!(kind.skipsPrechecks ? kind.skipsPrechecks(input, pending) : pending)) kind.precheck(env, input);
  return { input, call, a: kind.admission(env, input) };
}

/** Runs a submit route. */
export async function submitChange<E extends DirectoryDeps, R, In, A extends Body>(
  env: E,
  kind: SubmitSteps<E, R, In, A>,
  req: R,
): Promise<AcceptedFields & A> {
  const { input, call, a } = await checkedSubmission(env, kind, req).catch(async (e: unknown) => {
    // Refused on a pool that lacks changes another process announced (a shared ledger copies them when a read
    // needs them): checked again once they are copied, so the refusal is the one a fresh pool gives.
    const fresh = env.ledger.freshPool();
    if (fresh === undefined) throw e;
    await fresh;
    return checkedSubmission(env, kind, req);
  });
  const { txHash, duplicate } = await submitToLedger(
    env.ledger,
    call,
    {
      subject: a.subject,
      action: a.action,
      ...(a.nonce ? { nonceDomain: a.nonce.domain, nonce: a.nonce.value.toString() } : {}),
      limitKey: a.limitKey,
    },
    {
      ...(a.fullDocument ? { fullDocument: true } : {}),
      ...(a.nonce?.current !== undefined ? { expectedNonce: a.nonce.current, receivedNonce: a.nonce.value } : {}),
    },
  );
  const body = accepted(txHash, duplicate, kind.answer(input));
  await kind.after?.(env, input, txHash);
  return body;
}
