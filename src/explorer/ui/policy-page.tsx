/** A delivery policy (v3, else v2) of a DID, persona or application: its rules, each plan drawn as a graph. */
import { useEffect, useState } from 'preact/hooks';
import { arr, getJson, link, obj, reads, str, type Json, type Reply } from './api.js';
import { Fields, Layout, Loading, Problem, Section } from './components.js';
import { PlanGraph } from './plan-graph.js';

const SUBJECT_PAGE: Record<string, string> = { did: 'did', persona: 'persona', application: 'application' };

/** One read (`GET /policies/{scope}/{id}`): the v3 policy, else the v2 one, else none — 200 whenever the subject exists. */
async function loadPolicy(scope: string, id: string): Promise<{ reply: Reply; policy: Json | null; version: number }> {
  const r = await getJson(reads.policy(scope, id));
  // the policy's members are §8.1's forms, declared as a JSON object (src/wire/explorer.ts): read field by field
  return r.ok ? { reply: r, policy: r.body.policy, version: r.body.version ?? 0 } : { reply: r, policy: null, version: 0 };
}

/** A read that found the subject but no policy. */
const none = (r: Reply): boolean => r.ok;

function Conditions(props: { conditions: Json[] }) {
  if (props.conditions.length === 0) return <p class="muted">Applies to every message.</p>;
  return (
    <ul class="conditions">
      {props.conditions.map((c, i) => (
        <li key={i}>
          <code>{str(c.type)}</code> {c.value !== undefined ? <code>{str(c.value)}</code> : c.values !== undefined ? <code>{str(c.values)}</code> : null}
        </li>
      ))}
    </ul>
  );
}

export function PolicyPage(props: { scope: string; id: string }) {
  const [state, setState] = useState<{ reply: Reply; policy: Json | null; version: number } | undefined>(undefined);
  useEffect(() => {
    setState(undefined);
    void loadPolicy(props.scope, props.id).then(setState);
  }, [props.scope, props.id]);
  const subject = SUBJECT_PAGE[props.scope];
  const p = state?.policy ?? null;
  const rules = arr(p?.ruleset).sort((a, b) => Number(a.priority) - Number(b.priority));
  return (
    <Layout title={`Delivery policy of ${props.id}`}>
      <p class="kind">
        Delivery policy · {props.scope}
        {subject !== undefined && (
          <>
            {' '}
            · <a href={link(subject, props.id)}>back to the {props.scope}</a>
          </>
        )}
      </p>
      {state === undefined && <Loading />}
      {state !== undefined && p === null && none(state.reply) && <p role="status">This {props.scope} has no delivery policy.</p>}
      {state !== undefined && p === null && !none(state.reply) && <Problem reply={state.reply} what="The delivery policy" />}
      {p !== null && (
        <>
          <Section title="Policy" id="policy">
            <Fields
              rows={[
                ['Version', `v${state!.version}`],
                ['Scope', `${str(obj(p.scope).type)} ${str(obj(p.scope).id)}`],
                ['Revision', str(p.revision)],
                ['Operator', <a href={link('did', str(p.operator_did))}>{str(p.operator_did)}</a>],
                ['TTL', `${str(p.policy_ttl_seconds)} s`],
                ['Policy id', <code class="wrap">{str(p.policy_id)}</code>],
              ]}
            />
          </Section>
          {rules.map((r, i) => {
            const action = obj(r.action);
            const id = `rule-${i}`;
            return (
              <Section key={str(r.id)} title={`Rule ${str(r.id)} (priority ${str(r.priority)})`} id={id}>
                <h3>Conditions</h3>
                <Conditions conditions={arr(r.conditions)} />
                <h3>Action: {str(action.type)}</h3>
                {action.type === 'DeliveryPlan/v1' ? (
                  <>
                    <PlanGraph plan={action} id={`${id}-plan`} label={`Delivery plan of rule ${str(r.id)}`} />
                    <details>
                      <summary>Steps and transitions (JSON)</summary>
                      <pre>{JSON.stringify({ steps: action.steps, transitions: action.transitions }, null, 2)}</pre>
                    </details>
                  </>
                ) : action.type === 'Reject/v1' ? (
                  <p>Rejects with reason code {str(action.reason_code)}.</p>
                ) : (
                  <p>Delivers as the DID's own document says.</p>
                )}
                {r.constraint_overrides !== undefined && (
                  <p class="muted">
                    Constraint overrides: <code>{JSON.stringify(r.constraint_overrides)}</code>
                  </p>
                )}
              </Section>
            );
          })}
        </>
      )}
    </Layout>
  );
}
