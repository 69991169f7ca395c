/**
 * `GET /search?q=` (docs/explorer.md): every record of the finalized ledger a query names — a DID (deleted ones
 * too: their history stays), an alias, a persona, an application, a transaction, a block — in one answer, so the
 * explorer asks once and nothing answers 404 for the kinds the query is not.
 */
import { DdnError } from '../base/errors.js';
import type { LedgerReads } from '../ledger/ports.js';
import { getAliasOwner, getDidRecord, isDeletedDid } from '../ledger/records.js';
import { getApplication } from '../ledger/runtime/application-state.js';
import { getPersona } from '../ledger/runtime/persona-state.js';
import { normalizeAlias } from '../protocol/alias.js';
import { isApplicationId } from '../protocol/payloads/application.js';
import { isDid } from '../protocol/did.js';
import { canonicalPersona } from '../protocol/persona-name.js';
import type { SearchResponse } from '../wire/explorer.js';

type Hit = SearchResponse['hits'][number];
const MAX_QUERY = 300;

export function search(ledger: LedgerReads, raw: string | undefined): SearchResponse {
  if (raw === undefined) throw new DdnError('invalid_request', 'q is required', { field: 'q' });
  const q = raw.trim();
  if (q.length === 0 || q.length > MAX_QUERY) throw new DdnError('invalid_request', `q must be 1–${MAX_QUERY} characters`, { field: 'q' });
  const view = ledger.finalizedView();
  const hits: Hit[] = [];
  if (isDid(q)) {
    const known =
      getDidRecord(view, q) !== undefined ||
      isDeletedDid(view, q) ||
      ledger.subjectHistory({ subject: q, maxBlock: ledger.finalizedRefNow().number, limit: 1 }).length > 0;
    if (known) hits.push({ kind: 'did', id: q, label: q });
  }
  if (/^0x[0-9a-fA-F]{64}$/.test(q)) {
    const tx = ledger.txView(q.toLowerCase());
    if (tx !== undefined) hits.push({ kind: 'transaction', id: tx.tx.txHash, label: `${tx.tx.extrinsic} (${tx.status})` });
  }
  if (/^[0-9]{1,10}$/.test(q) && Number(q) <= ledger.headRef().number) hits.push({ kind: 'block', id: String(Number(q)), label: `block #${Number(q)}` });
  const alias = normalizeAlias(q);
  if (alias.ok) {
    const owner = getAliasOwner(view, alias.alias);
    if (owner !== undefined) hits.push({ kind: 'alias', id: owner, label: `${alias.alias} → ${owner}` });
  }
  const persona = canonicalPersona(q);
  if (persona !== undefined && getPersona(view, persona) !== undefined) hits.push({ kind: 'persona', id: persona, label: persona });
  if (isApplicationId(q) && getApplication(view, q) !== undefined) hits.push({ kind: 'application', id: q, label: q });
  return { query: q, hits };
}
