/** The latest blocks, one block with its operations, and one transaction. */
import { useEffect, useState } from 'preact/hooks';
import type { BlockResponse } from '../../wire/directory.js';
import { getJson, link, reads, str } from './api.js';
import { Fields, Hash, Layout, Loading, Problem, Section, Subject, useJson } from './components.js';

const LIST_SIZE = 20;

export function BlocksPage() {
  const [blocks, setBlocks] = useState<BlockResponse[] | undefined>(undefined);
  const latest = useJson(reads.block('latest'));
  useEffect(() => {
    if (latest?.ok !== true) return;
    const head = latest.body.number;
    const numbers = Array.from({ length: Math.min(LIST_SIZE, head + 1) }, (_, i) => head - i);
    void Promise.all(numbers.map((n) => (n === head ? Promise.resolve(latest) : getJson(reads.block(n))))).then((rs) =>
      setBlocks(rs.flatMap((r) => (r.ok ? [r.body] : []))),
    );
  }, [latest]);
  return (
    <Layout title="Latest blocks">
      {latest !== undefined && <Problem reply={latest} what="The latest block" />}
      {blocks === undefined ? (
        <Loading />
      ) : (
        <div class="scroll">
          <table>
            <caption class="sr-only">The {blocks.length} latest blocks, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Number</th>
                <th scope="col">Hash</th>
                <th scope="col">Time</th>
                <th scope="col">Operations</th>
                <th scope="col">Finalized</th>
              </tr>
            </thead>
            <tbody>
              {blocks.map((b) => (
                <tr key={str(b.number)}>
                  <td>
                    <a href={link('block', str(b.number))}>#{str(b.number)}</a>
                  </td>
                  <td>
                    <Hash value={b.hash} />
                  </td>
                  <td>
                    <time dateTime={str(b.timestamp_iso)}>{str(b.timestamp_iso)}</time>
                  </td>
                  <td>{b.extrinsics.length}</td>
                  <td>{b.finalized === true ? 'yes' : 'no'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Layout>
  );
}

export function BlockPage(props: { which: string }) {
  const r = useJson(reads.block(props.which));
  const b = r?.ok === true ? r.body : undefined;
  const n = b?.number ?? 0;
  return (
    <Layout title={`Block ${props.which === 'latest' ? 'latest' : `#${props.which}`}`}>
      {r === undefined && <Loading />}
      {r !== undefined && <Problem reply={r} what="The block" />}
      {b !== undefined && (
        <>
          <nav aria-label="Neighbouring blocks" class="pager">
            {n > 0 && <a href={link('block', n - 1)}>← Block #{n - 1}</a>}
            {n < b.finalized_number && <a href={link('block', n + 1)}>Block #{n + 1} →</a>}
          </nav>
          <Section title="Header" id="header">
            <Fields
              rows={[
                ['Number', str(b.number)],
                ['Hash', <Hash value={b.hash} />],
                ['Parent', n > 0 ? <Hash value={b.parent_hash} href={link('block', n - 1)} /> : <Hash value={b.parent_hash} />],
                ['Time', <time dateTime={str(b.timestamp_iso)}>{str(b.timestamp_iso)}</time>],
                ['Finalized', b.finalized === true ? 'yes' : `no (finalized up to #${str(b.finalized_number)})`],
                ['Extrinsics root', <Hash value={b.extrinsics_root} />],
                ['Results root', <Hash value={b.results_root} />],
              ]}
            />
          </Section>
          <Section title="Operations" id="operations">
            {b.extrinsics.length === 0 ? (
              <p class="muted">No operations in this block.</p>
            ) : (
              <div class="scroll">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">#</th>
                      <th scope="col">Transaction</th>
                      <th scope="col">Action</th>
                      <th scope="col">Subject</th>
                      <th scope="col">Call</th>
                      <th scope="col">Outcome</th>
                    </tr>
                  </thead>
                  <tbody>
                    {b.extrinsics.map((x, i) => (
                      <tr key={str(x.tx_hash)}>
                        <td>{i}</td>
                        <td>
                          <Hash value={x.tx_hash} href={link('tx', str(x.tx_hash))} />
                        </td>
                        <td>
                          <span class="action">{str(x.action)}</span>
                        </td>
                        <td>
                          <Subject kind={x.subject_kind} id={x.subject} />
                        </td>
                        <td>
                          <code>{str(x.extrinsic)}</code>
                        </td>
                        <td>{x.success === true ? 'success' : `failed: ${str(x.error?.code)}`}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </Section>
        </>
      )}
    </Layout>
  );
}

export function TxPage(props: { hash: string }) {
  const r = useJson(reads.transaction(props.hash));
  const t = r?.ok === true ? r.body : undefined;
  return (
    <Layout title="Transaction">
      <p>
        <Hash value={props.hash} />
      </p>
      {r === undefined && <Loading />}
      {r !== undefined && <Problem reply={r} what="The transaction" />}
      {t !== undefined && (
        <Fields
          rows={[
            ['Hash', <code class="wrap">{str(t.tx_hash)}</code>],
            ['Status', str(t.status)],
            ['Call', <code>{str(t.extrinsic)}</code>],
            ['Submitted', str(t.submitted_at)],
            ['Block', t.block_number === undefined ? '' : <a href={link('block', str(t.block_number))}>#{str(t.block_number)}</a>],
            ['Error', t.error === undefined ? '' : `${t.error.code}: ${t.error.message}`],
          ]}
        />
      )}
    </Layout>
  );
}
