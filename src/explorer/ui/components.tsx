/** Shared pieces of the explorer's pages: layout, data loading, key/value lists, history. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { getJson, link, reads, str, subjectLink, type Read, type Reply } from './api.js';
import type { HistoryEntryJson } from '../../wire/history.js';
import { navigate } from './navigation.js';

/** Loads a Directory route (null: nothing to load); reloads when its path changes. */
export function useJson<T>(read: Read<T> | null): Reply<T> | undefined {
  const path = read?.path ?? null;
  const [reply, setReply] = useState<{ path: string; reply: Reply<T> } | undefined>(undefined);
  useEffect(() => {
    if (read === null || path === null) return;
    let live = true;
    void getJson(read).then((r) => {
      if (live) setReply({ path, reply: r });
    });
    return () => {
      live = false;
    };
  }, [path]);
  return reply !== undefined && reply.path === path ? reply.reply : undefined;
}

export function Layout(props: { title: string; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · ddn explorer`;
  }, [props.title]);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={link()}>
          ddn explorer
        </a>
        <nav aria-label="Explorer">
          <ul>
            <li>
              <a href={link('blocks')}>Blocks</a>
            </li>
            <li>
              <a href={link('status')}>Node status</a>
            </li>
          </ul>
        </nav>
        <SearchForm />
      </header>
      <main id="main" tabIndex={-1}>
        <h1>{props.title}</h1>
        {props.children}
      </main>
      <footer class="bottom">
        <p>Read from this Directory's public routes. Finalized state only.</p>
      </footer>
    </>
  );
}

export function SearchForm(props: { initial?: string }) {
  const [q, setQ] = useState(props.initial ?? '');
  return (
    <form
      role="search"
      class="search"
      onSubmit={(e) => {
        e.preventDefault();
        if (q.trim() !== '') navigate(`${link('search')}?q=${encodeURIComponent(q.trim())}`);
      }}
    >
      <label for="q">Search</label>
      <input
        id="q"
        name="q"
        type="search"
        value={q}
        placeholder="DID, alias, persona, application id or tx hash"
        onInput={(e) => setQ((e.target as HTMLInputElement).value)}
      />
      <button type="submit">Search</button>
    </form>
  );
}

export function Loading() {
  return (
    <p class="muted" role="status">
      Loading…
    </p>
  );
}

/** The §0.6 error body of a failed read. */
export function Problem(props: { reply: Reply; what?: string }) {
  if (props.reply.ok) return null;
  const { status, body } = props.reply;
  return (
    <div class="problem" role="alert">
      <p>
        <strong>{props.what ?? 'Could not load this'}</strong>: {status === 0 ? 'the Directory did not answer' : `${status} ${str(body.code)}`}
      </p>
      {body.message !== undefined && <p class="muted">{str(body.message)}</p>}
    </div>
  );
}

/** A hash shown short, whole in its title and to screen readers. */
export function Hash(props: { value: unknown; href?: string }) {
  const v = str(props.value);
  const short = v.length > 20 ? `${v.slice(0, 10)}…${v.slice(-8)}` : v;
  const inner = (
    <code title={v} aria-label={v}>
      {short}
    </code>
  );
  return props.href ? <a href={props.href}>{inner}</a> : inner;
}

export function Fields(props: { rows: [string, ComponentChildren][]; label?: string }) {
  return (
    <dl class="fields" aria-label={props.label}>
      {props.rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v === '' || v === null || v === undefined ? <span class="muted">—</span> : v}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Section(props: { title: string; id: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby={props.id}>
      <h2 id={props.id}>{props.title}</h2>
      {props.children}
    </section>
  );
}

/** What a history entry changed, one `key: value` per field. */
export function Changes(props: { changes: HistoryEntryJson['changes'] }) {
  if (props.changes === null) return <span class="muted">not recorded</span>;
  const entries = Object.entries(props.changes);
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <ul class="changes">
      {entries.map(([k, v]) => (
        <li key={k}>
          <span class="k">{k.replace(/_/g, ' ')}</span> <code>{str(v)}</code>
        </li>
      ))}
    </ul>
  );
}

/** A subject's history (`…/history`), a page at a time, older pages on request. */
export function History(props: { path: string; id: string }) {
  const [pages, setPages] = useState<HistoryEntryJson[][]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [problem, setProblem] = useState<Reply | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const load = async (cursor: string | null, reset: boolean) => {
    setLoading(true);
    const r = await getJson(reads.history(`${props.path}?limit=20${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`));
    setLoading(false);
    if (!r.ok) return setProblem(r);
    setProblem(undefined);
    const page = r.body.history;
    setPages((p) => (reset ? [page] : [...p, page]));
    setNext(r.body.next_cursor ?? null);
  };
  useEffect(() => {
    void load(null, true);
  }, [props.path]);
  const rows = pages.flat();
  return (
    <Section title="History" id={props.id}>
      {problem && <Problem reply={problem} what="History" />}
      {rows.length > 0 && (
        <div class="scroll">
          <table class="history">
            <caption class="sr-only">Finalized operations, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Block</th>
                <th scope="col">Time</th>
                <th scope="col">Action</th>
                <th scope="col">Signer</th>
                <th scope="col">Changes</th>
                <th scope="col">Transaction</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((e) => (
                <tr key={str(e.tx_hash)}>
                  <td>
                    <a href={link('block', str(e.block_number))}>#{str(e.block_number)}</a>
                  </td>
                  <td>
                    <time dateTime={str(e.timestamp_iso)}>
                      {str(e.timestamp_iso)
                        .replace('T', ' ')
                        .replace(/\.\d+Z$/, 'Z')}
                    </time>
                  </td>
                  <td>
                    <span class="action">{str(e.action)}</span>
                  </td>
                  <td>{e.signer_key_id === null ? <span class="muted">root key</span> : <code>{str(e.signer_key_id)}</code>}</td>
                  <td>
                    <Changes changes={e.changes} />
                  </td>
                  <td>
                    <Hash value={e.tx_hash} href={link('tx', str(e.tx_hash))} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {loading && <Loading />}
      {next !== null && !loading && (
        <button type="button" onClick={() => void load(next, false)}>
          Older operations
        </button>
      )}
    </Section>
  );
}

/** What an operation is about: its kind and id, linked to its page. */
export function Subject(props: { kind: unknown; id: unknown }) {
  const href = subjectLink(props.kind, props.id);
  const id = str(props.id);
  if (id === '') return <span class="muted">—</span>;
  const label = typeof props.kind === 'string' ? <span class="kind">{props.kind === 'did' ? 'DID' : props.kind}</span> : null;
  return (
    <span class="subject">
      {label} {href ? <a href={href}>{id}</a> : <code>{id}</code>}
    </span>
  );
}
