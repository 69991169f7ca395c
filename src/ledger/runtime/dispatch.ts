/** Routes a decoded call to its module (ledger-rules.md §5). Each extrinsic runs atomically in a child overlay. */
import { LedgerFailure } from '../errors.js';
import type { Call } from '../extrinsic.js';
import { Overlay, type StateReader } from '../state.js';
import type { ExecContext } from './context.js';
import {
  executeAliasCall,
  executeControlCall,
  executeDocumentReplacement,
  executePatchCall,
  executeRegistration,
  executeRootKeyCall,
  isPatchCall,
} from './did-registry.js';
import {
  executeRegisterApplication,
  executeSetApplicationDomain,
  executeSetApplicationLinkedDid,
  executeSetApplicationStatus,
  executeUpdateApplication,
} from './applications.js';
import { executePersona } from './personas.js';
import { executePolicyV2 } from './policy-v2.js';
import { executePolicyV3 } from './policy-v3.js';

/** Injected handlers (`LedgerOptions.handlers`): they take precedence over the built-in modules (tests stub calls). */
export type CallHandler = (s: Overlay, ctx: ExecContext, call: Call) => void;
export type ModuleHandlers = Partial<Record<Call['name'], CallHandler>>;

export function executeCall(s: Overlay, ctx: ExecContext, call: Call, extra: ModuleHandlers = {}): void {
  const injected = extra[call.name];
  if (injected) return injected(s, ctx, call);
  switch (call.name) {
    case 'add_alias':
    case 'update_alias':
    case 'remove_alias':
      return executeAliasCall(s, ctx, call);
    case 'update_root_pubkey':
      return executeRootKeyCall(s, ctx, call);
    case 'apply_control_with_proof':
      return executeControlCall(s, ctx, call);
    case 'register_with_proof_v2':
      return executeRegistration(s, ctx, call);
    case 'set_document_with_proof_v2':
      return executeDocumentReplacement(s, ctx, call);
    case 'apply_policy_v2_with_proof':
      return executePolicyV2(s, ctx, call);
    case 'apply_policy_v3_with_proof':
      return executePolicyV3(s, ctx, call);
    case 'apply_persona_with_proof':
      return executePersona(s, ctx, call);
    case 'register_application':
      return executeRegisterApplication(s, ctx, call);
    case 'update_application':
      return executeUpdateApplication(s, ctx, call);
    case 'set_application_status':
      return executeSetApplicationStatus(s, ctx, call);
    case 'set_application_domain':
      return executeSetApplicationDomain(s, ctx, call);
    case 'set_application_linked_did':
      return executeSetApplicationLinkedDid(s, ctx, call);
    default:
      if (isPatchCall(call.name)) return executePatchCall(s, ctx, call as Parameters<typeof executePatchCall>[2]);
  }
  throw new LedgerFailure('MalformedExtrinsic', 'Ledger', 'call_not_supported');
}

/**
 * Runs `call` against `s` atomically: on failure nothing is written and the failure is returned. `reads`, when
 * given, is what the call reads instead of `s`: `s` as it is, read another way.
 */
export function applyAtomically(s: Overlay, ctx: ExecContext, call: Call, extra?: ModuleHandlers, reads: StateReader = s): LedgerFailure | null {
  const child = new Overlay(reads);
  try {
    executeCall(child, ctx, call, extra);
  } catch (e) {
    if (e instanceof LedgerFailure) return e;
    throw e;
  }
  child.commitInto(s);
  return null;
}
