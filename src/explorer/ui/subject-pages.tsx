/** Persona and application pages, the search results and the home page. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { getJson, link, str, type Json, type Reply } from './api.js';
import { Fields, Hash, History, Layout, Loading, Problem, Section, useJson } from './components.js';
import { navigate } from './navigation.js';

const SKIP = new Set(['pending_operations', 'block_hash', 'block_number']);

/** A record's fields: DIDs link to their page, lists and objects show as JSON. */
function recordRows(body: Json): [string, ComponentChildren][] {
  return Object.entries(body)
    .filter(([k]) => !SKIP.has(k))
    .map(([k, v]) => {
      const words = k.replace(/_/g, ' ');
      const label = words.charAt(0).toUpperCase() + words.slice(1);
      if (typeof v === 'string' && v.startsWith('did:')) return [label, <a href={link('did', v)}>{v}</a>];
      if (typeof v === 'string' && /^0x[0-9a-f]{40,}$/.test(v)) return [label, <Hash value={v} />];
      if (Array.isArray(v) && v.every((x) => typeof x === 'string' && x.startsWith('did:'))) {
        return [
          label,
          v.length === 0 ? (
            ''
          ) : (
            <ul class="inline">
              {(v as string[]).map((d) => (
                <li key={d}>
                  <a href={link('did', d)}>{d}</a>
                </li>
              ))}
            </ul>
          ),
        ];
      }
      return [label, typeof v === 'object' && v !== null ? <code>{JSON.stringify(v)}</code> : str(v)];
    });
}

function SubjectPage(props: { kind: string; title: string; read: string; history: string; policy: string; what: string }) {
  const r = useJson(props.read);
  return (
    <Layout title={props.title}>
      <p class="kind">{props.kind}</p>
      {r === undefined && <Loading />}
      {r !== undefined && r.status !== 200 && <Problem reply={r} what={props.what} />}
      {r?.status === 200 && (
        <Section title="Record" id="record">
          <Fields rows={[...recordRows(r.body), ['Delivery policy', <a href={props.policy}>view the delivery policy</a>]]} />
        </Section>
      )}
      <History path={props.history} id="history" />
    </Layout>
  );
}

export function PersonaPage(props: { persona: string }) {
  const p = encodeURIComponent(props.persona);
  return (
    <SubjectPage
      kind="Persona"
      title={props.persona}
      read={`/personas/${p}`}
      history={`/personas/${p}/history`}
      policy={link('policy', 'persona', props.persona)}
      what="The persona"
    />
  );
}

export function ApplicationPage(props: { id: string }) {
  const a = encodeURIComponent(props.id);
  return (
    <SubjectPage
      kind="Application"
      title={props.id}
      read={`/applications/${a}`}
      history={`/applications/${a}/history`}
      policy={link('policy', 'application', props.id)}
      what="The application"
    />
  );
}

interface Hit {
  kind: string;
  label: string;
  href: string;
}

/** Where a query points without asking: a DID, a transaction hash, a block number. */
function directHit(q: string): string | undefined {
  if (q.startsWith('did:')) return link('did', q);
  if (/^0x[0-9a-fA-F]{64}$/.test(q)) return link('tx', q.toLowerCase());
  if (/^[0-9]{1,10}$/.test(q)) return link('block', q);
  return undefined;
}

async function lookUp(q: string): Promise<Hit[]> {
  const e = encodeURIComponent(q);
  const [alias, persona, app] = await Promise.all([getJson(`/aliases/${e}`), getJson(`/personas/${e}`), getJson(`/applications/${e}`)]);
  const hits: Hit[] = [];
  const ok = (r: Reply) => r.status === 200;
  if (ok(alias)) hits.push({ kind: 'Alias', label: `${str(alias.body.alias)} → ${str(alias.body.did)}`, href: link('did', str(alias.body.did)) });
  if (ok(persona)) hits.push({ kind: 'Persona', label: str(persona.body.name), href: link('persona', str(persona.body.name)) });
  if (ok(app)) hits.push({ kind: 'Application', label: str(app.body.application_id), href: link('application', str(app.body.application_id)) });
  return hits;
}

export function SearchPage(props: { q: string }) {
  const q = props.q.trim();
  const [hits, setHits] = useState<Hit[] | undefined>(undefined);
  useEffect(() => {
    setHits(undefined);
    const direct = directHit(q);
    if (direct !== undefined) return navigate(direct, true);
    let live = true;
    void lookUp(q).then((h) => {
      if (!live) return;
      if (h.length === 1) navigate(h[0]!.href, true);
      else setHits(h);
    });
    return () => {
      live = false;
    };
  }, [q]);
  return (
    <Layout title={`Search: ${q}`}>
      {hits === undefined && <Loading />}
      {hits !== undefined && hits.length === 0 && <p role="status">Nothing found for “{q}”: no alias, persona or application has this name.</p>}
      {hits !== undefined && hits.length > 1 && (
        <ul class="hits">
          {hits.map((h) => (
            <li key={h.href}>
              <span class="kind">{h.kind}</span> <a href={h.href}>{h.label}</a>
            </li>
          ))}
        </ul>
      )}
    </Layout>
  );
}

export function HomePage() {
  const health = useJson('/health');
  const h = health?.body ?? {};
  const head = (h.head ?? {}) as Json;
  const fin = (h.finalized ?? {}) as Json;
  return (
    <Layout title="ddn explorer">
      <p>Look up a DID, an alias, a persona, an application or a transaction on this Directory's ledger with the search box above.</p>
      <Section title="This Directory" id="directory">
        {health === undefined && <Loading />}
        {health !== undefined && health.status !== 200 && <Problem reply={health} what="The node's health" />}
        {health?.status === 200 && (
          <Fields
            rows={[
              ['Chain', str(h.chain_id)],
              ['Profile', str(h.profile)],
              ['Head', <a href={link('block', str(head.number))}>#{str(head.number)}</a>],
              ['Finalized', <a href={link('block', str(fin.number))}>#{str(fin.number)}</a>],
              ['Version', str(h.version)],
            ]}
          />
        )}
        <p>
          <a href={link('blocks')}>Latest blocks</a> · <a href={link('status')}>Node status</a>
        </p>
      </Section>
    </Layout>
  );
}

export function NotFoundPage() {
  return (
    <Layout title="Not found">
      <p>This explorer has no such page.</p>
      <p>
        <a href={link()}>Back to the start</a>
      </p>
    </Layout>
  );
}
