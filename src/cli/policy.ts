/** `ddn policy …`: delivery policies (http-api.md §8), v3 by default, v2 with `--v2`. */
import { PolicyClient, type PolicyV2Action, type ScopeRef } from '../client/policy-client.js';
import { didOfUrl } from '../protocol/did.js';
import { group, leaf, UsageError } from './command.js';
import { directoryContext, DIRECTORY_OPTIONS, readJsonObject, WAIT_OPTIONS } from './common.js';
import { finish } from './did-submit.js';
import { SIGNER_OPTIONS, signerOf } from './signer-options.js';

const P = 'ddn policy';
const SCOPE = {
  scope: { type: 'string', arg: 'TYPE', help: 'did, persona or application', required: true },
  id: { type: 'string', arg: 'ID', help: 'the DID, persona or application id', required: true },
} as const;
const V2 = { v2: { type: 'boolean', help: 'use the version 2 routes (DID and persona scopes only)' } } as const;
const OPERATOR = { operator: { type: 'string', arg: 'DID', help: 'the owner DID (default: the DID scope, or the DID of --signer-key-id)' } } as const;
const WRITE = { ...SCOPE, ...OPERATOR, ...SIGNER_OPTIONS, ...V2, ...DIRECTORY_OPTIONS, ...WAIT_OPTIONS } as const;

function scopeOf(o: { scope: string; id: string }, v2: boolean): ScopeRef {
  const allowed = v2 ? ['did', 'persona'] : ['did', 'persona', 'application'];
  if (!allowed.includes(o.scope)) throw new UsageError(`--scope must be ${allowed.join(', ')}`);
  return { type: o.scope as ScopeRef['type'], id: o.id };
}

async function policies(o: { directory?: string; profile?: string }) {
  const dir = await directoryContext(o);
  return { dir, client: new PolicyClient(dir.client.baseUrl, dir.profile, dir.fetch) };
}

/** The operator DID of a write: `--operator`, else a DID scope, else the DID of a full signer key id. */
function operatorOf(o: { operator?: string; 'signer-key-id'?: string }, scope: ScopeRef): string | undefined {
  const signer = o['signer-key-id'] ?? 'root';
  return o.operator ?? (scope.type === 'did' ? scope.id : signer.startsWith('did:') ? didOfUrl(signer) : undefined);
}

/** The policy file with `scope` and `operator_did` filled in when it leaves them out. */
function policyFile(path: string, scope: ScopeRef, operator: string | undefined): Record<string, unknown> {
  const policy = readJsonObject(path, 'the policy');
  if (policy.scope === undefined) policy.scope = { type: scope.type.toUpperCase(), id: scope.id };
  if (policy.operator_did === undefined) {
    if (operator === undefined) throw new UsageError('the policy has no operator_did; give --operator');
    policy.operator_did = operator;
  }
  return policy;
}

const show = leaf(`${P} show`, {
  summary: 'print the policy of a scope',
  synopsis: '--scope TYPE --id ID [--v2]',
  options: { ...SCOPE, ...V2, ...DIRECTORY_OPTIONS },
  async run(_ctx, o) {
    const scope = scopeOf(o, o.v2);
    const { client } = await policies(o);
    return o.v2 ? client.readV2(scope) : client.readV3(scope);
  },
});

const nonce = leaf(`${P} nonce`, {
  summary: 'print the owner and next v3 nonce of a scope',
  synopsis: '--scope TYPE --id ID',
  options: { ...SCOPE, ...DIRECTORY_OPTIONS },
  async run(_ctx, o) {
    return (await policies(o)).client.nonceV3(scopeOf(o, false));
  },
});

const set = leaf(`${P} set`, {
  summary: 'set the policy of a scope from a JSON file',
  synopsis: '--scope TYPE --id ID --file POLICY.json [--key FILE]',
  description:
    'Sets a delivery policy from a JSON file: `ruleset` (rules with id, priority, conditions and an action) and, in\n' +
    'version 3, `policy_ttl_seconds` (1-300); with --v2 leave that out (profile platform refuses it there; a v2\n' +
    'policy holds 60). `scope` and `operator_did` are filled in when the file leaves them out; `policy_id` and\n' +
    '`revision` are filled by the Directory and checked here before signing. --key defaults to the root key of the\n' +
    'owner (--operator, or the DID of a DID scope) when the identity book holds it. A worked example and every\n' +
    'field: docs/policies.md.',
  options: { ...WRITE, file: { type: 'string', arg: 'FILE', help: 'the policy (JSON)', required: true } },
  async run(ctx, o) {
    const scope = scopeOf(o, o.v2);
    const { dir, client } = await policies(o);
    const operator = operatorOf(o, scope);
    const signer = signerOf(o, operator);
    const policy = policyFile(o.file, scope, operator);
    const submitted = o.v2
      ? await client.writeV2(scope.type === 'did' ? 'set_did_policy_v2' : 'set_persona_policy_v2', scope.id, { policy, signer, operatorDid: operator })
      : await client.writeV3(scope, { policy, signer, operatorDid: operator });
    return finish(ctx, dir, o, submitted, { scope, operation: 'SetPolicy', version: o.v2 ? 2 : 3 });
  },
});

const clear = leaf(`${P} clear`, {
  summary: 'remove the policy of a scope',
  synopsis: '--scope TYPE --id ID --key FILE',
  options: WRITE,
  async run(ctx, o) {
    const scope = scopeOf(o, o.v2);
    const { dir, client } = await policies(o);
    const operator = operatorOf(o, scope);
    const signer = signerOf(o, operator);
    const submitted = o.v2
      ? await client.writeV2(scope.type === 'did' ? 'clear_did_policy_v2' : 'clear_persona_policy_v2', scope.id, { signer, operatorDid: operator })
      : await client.writeV3(scope, { signer, operatorDid: operator });
    return finish(ctx, dir, o, submitted, { scope, operation: 'ClearPolicy', version: o.v2 ? 2 : 3 });
  },
});

const constraints = leaf(`${P} constraints`, {
  summary: 'store the delivery constraints of a DID or persona (v2 route)',
  synopsis: '--scope did|persona --id ID --file CONSTRAINTS.json --key FILE',
  options: {
    ...SCOPE,
    ...OPERATOR,
    ...SIGNER_OPTIONS,
    ...DIRECTORY_OPTIONS,
    ...WAIT_OPTIONS,
    file: { type: 'string', arg: 'FILE', help: 'the constraints (JSON)', required: true },
  },
  async run(ctx, o) {
    const scope = scopeOf(o, true);
    const { dir, client } = await policies(o);
    const operator = operatorOf(o, scope);
    const action: PolicyV2Action = scope.type === 'did' ? 'set_did_constraints' : 'set_persona_constraints';
    const submitted = await client.writeV2(action, scope.id, {
      constraints: readJsonObject(o.file, 'constraints'),
      signer: signerOf(o, operator),
      operatorDid: operator,
    });
    return finish(ctx, dir, o, submitted, { scope, operation: scope.type === 'did' ? 'SetDidConstraints' : 'SetPersonaConstraints' });
  },
});

/** The `policy` command. */
export const policyCommand = group(P, 'delivery policies of DIDs, personas and applications', { show, nonce, set, clear, constraints });
