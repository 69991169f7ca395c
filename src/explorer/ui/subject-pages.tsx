/** Persona and application pages, the search results and the home page. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ApplicationResponse } from '../../wire/applications.js';
import type { OverviewResponse } from '../../wire/explorer.js';
import type { PersonaRecordResponse } from '../../wire/personas.js';
import { getJson, link, reads, str, timeText, type Read, type Reply } from './api.js';
import { Fields, Hash, History, Layout, Loading, Problem, Section, Subject, useJson } from './components.js';
import { navigate } from './navigation.js';

const yesNo = (v: unknown): string => (v === true ? 'yes' : 'no');

function DidLink(props: { did: unknown }) {
  const did = str(props.did);
  return did === '' ? <span class="muted">none</span> : <a href={link('did', did)}>{did}</a>;
}

function DidList(props: { dids: unknown }) {
  const dids = Array.isArray(props.dids) ? (props.dids as unknown[]).map(str) : [];
  if (dids.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="inline">
      {dids.map((d) => (
        <li key={d}>
          <a href={link('did', d)}>{d}</a>
        </li>
      ))}
    </ul>
  );
}

function Codes(props: { values: unknown }) {
  const values = Array.isArray(props.values) ? (props.values as unknown[]).map(str) : [];
  if (values.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="inline">
      {values.map((v) => (
        <li key={v}>
          <code>{v}</code>
        </li>
      ))}
    </ul>
  );
}

const asOf = (b: { block_number: number }): ComponentChildren => <a href={link('block', str(b.block_number))}>#{str(b.block_number)}</a>;

/** A persona's record in words: what kind it is, who operates it, whether it delivers, when it was proven. */
function personaRows(b: PersonaRecordResponse): [string, ComponentChildren][] {
  const named = b.kind === 'named';
  const status = b.active !== true ? 'revoked' : b.expired === true ? 'expired' : 'active';
  return [
    ['Kind', named ? 'Named (registered without a DNS proof)' : 'DNS-proven domain'],
    ['Status', status],
    ['Receives deliveries', yesNo(b.deliverable)],
    ['Operator', <DidLink did={b.operator_did} />],
    ['Controller keys', <Codes values={b.controller_keys} />],
    ['Signatures required', `${str(b.controller_threshold)} of ${Array.isArray(b.controller_keys) ? b.controller_keys.length : 0}`],
    ['DNS proof required', yesNo(b.dns_required)],
    ['DNS proof', b.dns_proof_hash ? <Hash value={b.dns_proof_hash} /> : <span class="muted">none</span>],
    ['Last verified', <time dateTime={str(b.verified_at)}>{timeText(b.verified_at)}</time>],
    ['Verification expires', <time dateTime={str(b.verification_expires_at)}>{timeText(b.verification_expires_at)}</time>],
    ['Delivery constraints', b.delivery_constraints ? <code>{JSON.stringify(b.delivery_constraints)}</code> : <span class="muted">none</span>],
    ['Revision', str(b.revision)],
    ['As of block', asOf(b)],
  ];
}

/** An application's record in words. */
function applicationRows(b: ApplicationResponse): [string, ComponentChildren][] {
  return [
    ['Status', str(b.status)],
    ['Controlled by', <DidLink did={b.control_did} />],
    ['Domain', b.domain ? <code>{str(b.domain)}</code> : <span class="muted">none</span>],
    ['Domain verified', yesNo(b.domain_verified)],
    ['Linked DIDs', <DidList dids={b.linked_dids} />],
    ['Registered in block', <a href={link('block', str(b.registered_at))}>#{str(b.registered_at)}</a>],
    ['Last changed in block', <a href={link('block', str(b.updated_at))}>#{str(b.updated_at)}</a>],
    ['Revision', str(b.application_revision)],
    ['Policy revision', b.policy_revision === null ? <span class="muted">no policy</span> : str(b.policy_revision)],
    ['As of block', asOf(b)],
  ];
}

function SubjectPage<T>(props: {
  kind: string;
  title: string;
  read: Read<T>;
  history: string;
  policy: string;
  what: string;
  rows: (b: T) => [string, ComponentChildren][];
}) {
  const r = useJson(props.read);
  return (
    <Layout title={props.title}>
      <p class="kind">{props.kind}</p>
      {r === undefined && <Loading />}
      {r !== undefined && <Problem reply={r} what={props.what} />}
      {r?.ok === true && (
        <Section title="Record" id="record">
          <Fields rows={[...props.rows(r.body), ['Delivery policy', <a href={props.policy}>view the delivery policy</a>]]} />
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
      read={reads.persona(`/personas/${p}`)}
      history={`/personas/${p}/history`}
      policy={link('policy', 'persona', props.persona)}
      what="The persona"
      rows={personaRows}
    />
  );
}

export function ApplicationPage(props: { id: string }) {
  const a = encodeURIComponent(props.id);
  return (
    <SubjectPage
      kind="Application"
      title={props.id}
      read={reads.application(`/applications/${a}`)}
      history={`/applications/${a}/history`}
      policy={link('policy', 'application', props.id)}
      what="The application"
      rows={applicationRows}
    />
  );
}

interface Hit {
  kind: string;
  label: string;
  href: string;
}

const HIT_PAGES: Record<string, [string, string]> = {
  did: ['DID', 'did'],
  alias: ['Alias', 'did'],
  persona: ['Persona', 'persona'],
  application: ['Application', 'application'],
  transaction: ['Transaction', 'tx'],
  block: ['Block', 'block'],
};

/** One read (`GET /search`): every kind of record the query names. */
async function lookUp(q: string): Promise<Hit[] | Reply> {
  const r = await getJson(reads.search(q));
  if (!r.ok) return r;
  return r.body.hits.flatMap((h) => {
    const page = HIT_PAGES[h.kind];
    return page === undefined ? [] : [{ kind: page[0], label: h.label, href: link(page[1], h.id) }];
  });
}

export function SearchPage(props: { q: string }) {
  const q = props.q.trim();
  const [hits, setHits] = useState<Hit[] | Reply | undefined>(undefined);
  useEffect(() => {
    setHits(undefined);
    let live = true;
    void lookUp(q).then((h) => {
      if (!live) return;
      if (Array.isArray(h) && h.length === 1) navigate(h[0]!.href, true);
      else setHits(h);
    });
    return () => {
      live = false;
    };
  }, [q]);
  return (
    <Layout title={`Search: ${q}`}>
      {hits === undefined && <Loading />}
      {hits !== undefined && !Array.isArray(hits) && <Problem reply={hits} what="The search" />}
      {Array.isArray(hits) && hits.length === 0 && (
        <p role="status">Nothing found for “{q}”: no DID, alias, persona, application, transaction or block has this name.</p>
      )}
      {Array.isArray(hits) && hits.length > 1 && (
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

function Counts(props: { counts: OverviewResponse['counts'] }) {
  const c = props.counts;
  const items: [string, unknown][] = [
    ['DIDs', c.dids],
    ['Personas', c.personas],
    ['Applications', c.applications],
    ['Operations', c.operations],
  ];
  return (
    <ul class="counts">
      {items.map(([label, n]) => (
        <li key={label}>
          <strong>{str(n)}</strong> {label}
        </li>
      ))}
    </ul>
  );
}

function RecentOperations(props: { ops: OverviewResponse['recent_operations'] }) {
  if (props.ops.length === 0)
    return (
      <p class="muted">
        No operations yet: register a DID (<code>npx ddn did create</code>) and it shows here.
      </p>
    );
  return (
    <div class="scroll">
      <table class="recent-operations">
        <caption class="sr-only">The latest finalized operations, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Block</th>
            <th scope="col">Time</th>
            <th scope="col">Action</th>
            <th scope="col">Subject</th>
            <th scope="col">Outcome</th>
            <th scope="col">Transaction</th>
          </tr>
        </thead>
        <tbody>
          {props.ops.map((o) => (
            <tr key={str(o.tx_hash)}>
              <td>
                <a href={link('block', str(o.block_number))}>#{str(o.block_number)}</a>
              </td>
              <td>
                <time dateTime={str(o.timestamp_iso)}>{timeText(o.timestamp)}</time>
              </td>
              <td>
                <span class="action">{str(o.action)}</span>
              </td>
              <td>
                <Subject kind={o.subject_kind} id={o.subject} />
              </td>
              <td>{o.success === true ? 'success' : 'failed'}</td>
              <td>
                <Hash value={o.tx_hash} href={link('tx', str(o.tx_hash))} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function RecentBlocks(props: { blocks: OverviewResponse['recent_blocks'] }) {
  return (
    <div class="scroll">
      <table class="recent-blocks">
        <caption class="sr-only">The latest finalized blocks, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Number</th>
            <th scope="col">Time</th>
            <th scope="col">Operations</th>
            <th scope="col">Hash</th>
          </tr>
        </thead>
        <tbody>
          {props.blocks.map((b) => (
            <tr key={str(b.number)}>
              <td>
                <a href={link('block', str(b.number))}>#{str(b.number)}</a>
              </td>
              <td>
                <time dateTime={str(b.timestamp_iso)}>{timeText(b.timestamp)}</time>
              </td>
              <td>{str(b.operations)}</td>
              <td>
                <Hash value={b.hash} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function HomePage() {
  const health = useJson(reads.health());
  const overview = useJson(reads.overview(10));
  const h = health?.ok === true ? health.body : undefined;
  const o = overview?.ok === true ? overview.body : undefined;
  return (
    <Layout title="ddn explorer">
      <p>The DIDs, personas and applications of this Directory's ledger. Look one up with the search box above, or start from the latest operations.</p>
      {overview === undefined && <Loading />}
      {overview !== undefined && <Problem reply={overview} what="The ledger's overview" />}
      {o !== undefined && (
        <>
          <Section title="On the ledger" id="counts">
            <Counts counts={o.counts} />
          </Section>
          <Section title="Latest operations" id="recent-operations">
            <RecentOperations ops={o.recent_operations} />
          </Section>
          <Section title="Latest blocks" id="recent-blocks">
            <RecentBlocks blocks={o.recent_blocks} />
            <p>
              <a href={link('blocks')}>More blocks</a>
            </p>
          </Section>
        </>
      )}
      <Section title="This Directory" id="directory">
        {health === undefined && <Loading />}
        {health !== undefined && <Problem reply={health} what="The node's health" />}
        {h !== undefined && (
          <Fields
            rows={[
              ['Chain', str(h.chain_id)],
              ['Profile', str(h.profile)],
              ['Head', <a href={link('block', str(h.head?.number))}>#{str(h.head?.number)}</a>],
              ['Finalized', <a href={link('block', str(h.finalized?.number))}>#{str(h.finalized?.number)}</a>],
              ['Version', str(h.version)],
            ]}
          />
        )}
        <p>
          <a href={link('status')}>Node status</a>
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
