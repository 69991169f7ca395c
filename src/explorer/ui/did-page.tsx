/** A DID: record, document (keys, services), devices, aliases, delivery policy and history. */
import type { ServiceJson, VerificationMethodJson } from '../../wire/json-forms.js';
import { link, reads, safeHref, str } from './api.js';
import { Fields, Hash, History, Layout, Loading, Problem, Section, useJson } from './components.js';

function Keys(props: { title: string; id: string; methods: VerificationMethodJson[]; authentication?: string[] }) {
  if (props.methods.length === 0) return null;
  return (
    <Section title={props.title} id={props.id}>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th scope="col">Id</th>
              <th scope="col">Type</th>
              <th scope="col">Public key</th>
              {props.authentication && <th scope="col">Authentication</th>}
            </tr>
          </thead>
          <tbody>
            {props.methods.map((m) => (
              <tr key={m.id}>
                <td>
                  <code>{str(m.id)}</code>
                </td>
                <td>{str(m.type)}</td>
                <td>
                  <Hash value={m.publicKeyMultibase} />
                </td>
                {props.authentication && <td>{props.authentication.includes(m.id) ? 'yes' : 'no'}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Section>
  );
}

function Services(props: { services: ServiceJson[] }) {
  return (
    <Section title="Services" id="services">
      {props.services.length === 0 ? (
        <p class="muted">No services.</p>
      ) : (
        <ul class="cards">
          {props.services.map((s) => (
            <li key={s.id} class="card">
              <h3>
                <code>{str(s.id)}</code>
              </h3>
              <p>{str(s.type)}</p>
              <ul>
                {(typeof s.serviceEndpoint === 'string' ? [s.serviceEndpoint] : s.serviceEndpoint).map((e) => {
                  const href = safeHref(e);
                  return (
                    <li key={str(e)}>
                      {href ? (
                        <a href={href} rel="noopener noreferrer external">
                          {str(e)}
                        </a>
                      ) : (
                        <code>{str(e)}</code>
                      )}
                    </li>
                  );
                })}
              </ul>
              {s.priority !== undefined && s.priority !== null && <p class="muted">priority {str(s.priority)}</p>}
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

export function DidPage(props: { did: string }) {
  const rec = useJson(reads.did(`/resolve/${encodeURIComponent(props.did)}`));
  const historyPath = `/dids/${encodeURIComponent(props.did)}/history`;
  const body = rec?.ok === true ? rec.body : undefined;
  const doc = body?.document ?? null;
  return (
    <Layout title={props.did}>
      <p class="kind">DID</p>
      {rec === undefined && <Loading />}
      {rec !== undefined && <Problem reply={rec} what="The DID's record" />}
      {body !== undefined && (
        <>
          <Section title="Record" id="record">
            <Fields
              rows={[
                ['Status', body.deactivated ? 'deactivated' : 'active'],
                ['Version', str(body.version)],
                ['Root public key', <Hash value={body.root_pubkey} />],
                ['Document nonce', str(body.document_nonce)],
                ['Registered in', body.tx_id ? <Hash value={body.tx_id} href={link('tx', str(body.tx_id))} /> : ''],
                ['As of block', <a href={link('block', str(body.block_number))}>#{str(body.block_number)}</a>],
                ['Delivery policy', <a href={link('policy', 'did', props.did)}>view the delivery policy</a>],
              ]}
            />
          </Section>
          <Section title="Aliases" id="aliases">
            {body.aliases.length === 0 ? (
              <p class="muted">No aliases.</p>
            ) : (
              <ul class="inline">
                {body.aliases.map((a) => (
                  <li key={a}>
                    <code>{a}</code>
                  </li>
                ))}
              </ul>
            )}
          </Section>
          <Services services={doc?.service ?? []} />
          <Keys title="Verification methods" id="keys" methods={doc?.verificationMethod ?? []} authentication={doc?.authentication ?? []} />
          <Keys title="Key agreement" id="key-agreement" methods={doc?.keyAgreement ?? []} />
          <Section title="Devices" id="devices">
            {body.devices.length === 0 ? (
              <p class="muted">No devices.</p>
            ) : (
              <ul class="inline">
                {body.devices.map((d) => (
                  <li key={d.deviceId}>
                    <code>{d.deviceId}</code>
                    {d.tombstoned && <span class="muted"> (tombstoned)</span>}
                  </li>
                ))}
              </ul>
            )}
          </Section>
          <details>
            <summary>DID document (JSON)</summary>
            <pre>{JSON.stringify(doc ?? {}, null, 2)}</pre>
          </details>
        </>
      )}
      <History path={historyPath} id="history" />
    </Layout>
  );
}
