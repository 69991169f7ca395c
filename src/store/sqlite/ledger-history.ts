/**
 * The history index of the SQLite ledger (`GET /dids/{did}/history` and friends): `ledger_txs_history`, a subject's
 * included transactions newest first — except a registration that its DID's current record names. A DID record
 * (`did/<did>`) holds the hash of the registration that made it (`registrationTx`), so that row is found through
 * the record and the transaction hash index instead ({@link historySql}); the history index would otherwise take
 * one more random leaf a registration — at a million DIDs the most of the three a registration writes (13,376
 * leaves: ledger_current's key index 12,920, the hash index 4,541), and a page of the block's commit and of the
 * checkpoint's copy each (bench/HISTORY.md, session 49).
 *
 * The rule, kept by the block's commit: an included row is left out of the index (`history_via_record = 1`) exactly
 * while `did/<its subject>` names it. A block that deletes the record, or registers the identifier again
 * (profile `openpayload`), puts the registration the record named back into the index; a registration deleted in
 * its own block is indexed at once. A ledger written before this (all its rows indexed) needs nothing: the
 * record's registration is then in the index and not found twice.
 */
import { keys } from '../../ledger/records.js';
import type { StateValue } from '../../ledger/state.js';
import type { Migration } from './database.js';

/** In its own namespace so it composes with the ledger's numbered migrations: the store applies it when it opens a database. */
export const LEDGER_HISTORY_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `CREATE INDEX IF NOT EXISTS ledger_txs_history ON ledger_txs (subject, block_number DESC, block_index DESC)
            WHERE status = 'included';`,
  },
  {
    // Rebuilds the index (seconds at a million transactions, once). An older version beside it still writes
    // indexed rows; its own history query no longer matches the index's condition and reads the table.
    version: 2,
    sql: `
      ALTER TABLE ledger_txs ADD COLUMN history_via_record INTEGER;
      DROP INDEX IF EXISTS ledger_txs_history;
      CREATE INDEX ledger_txs_history ON ledger_txs (subject, block_number DESC, block_index DESC)
        WHERE status = 'included' AND history_via_record IS NULL;`,
  },
];
export const LEDGER_HISTORY_NAMESPACE = 'ledger_history';

const DID_KEY_PREFIX = keys.did('');

/** The registration a DID record names (`registrationTx`), if `value` is one that does. */
function namedRegistration(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || !('registrationTx' in value)) return undefined;
  const tx = value.registrationTx;
  return typeof tx === 'string' ? tx : undefined;
}

/**
 * For a block's write of `key` that became its current value: the registration the new value names and its DID
 * (its row is left out of the index), and the one the replaced value (`oldText`, as stored) named that the new one
 * no longer does (its row goes back into the index). Only DID records name registrations; an update of a record keeps
 * its registration, read without parsing the old value.
 */
export function registrationsOfWrite(key: string, next: StateValue | undefined, oldText: string | null | undefined): { named?: string; left?: string } {
  if (!key.startsWith(DID_KEY_PREFIX)) return {};
  const named = namedRegistration(next);
  if (oldText === null || oldText === undefined) return named === undefined ? {} : { named };
  if (named !== undefined && oldText.includes(`"registrationTx":"${named}"`)) return { named };
  const left = namedRegistration(JSON.parse(oldText) as unknown);
  return { ...(named === undefined ? {} : { named }), ...(left === undefined ? {} : { left }) };
}

/** The DID whose record key is `key` (a key {@link registrationsOfWrite} named a registration for). */
export function didOfKey(key: string): string {
  return key.slice(DID_KEY_PREFIX.length);
}

/**
 * One page of a subject's history (named parameters: subject, block, index, all, extrinsics, limit): the index's
 * rows, and the registration the subject's DID record names (left out of the index), merged newest first.
 * `hashKey` builds the hash index's key of an SQL expression (the store's `txHashKey`).
 */
export function historySql(hashKey: (sql: string) => string): string {
  const page = `(block_number, block_index) < (@block, @index) AND (@all = 1 OR extrinsic IN (SELECT value FROM json_each(@extrinsics)))`;
  return `WITH named (h) AS (SELECT value ->> '$.registrationTx' FROM ledger_current WHERE key = '${DID_KEY_PREFIX}' || @subject)
    SELECT * FROM (
      SELECT * FROM ledger_txs WHERE subject = @subject AND status = 'included' AND history_via_record IS NULL AND ${page}
      ORDER BY block_number DESC, block_index DESC LIMIT @limit)
    UNION ALL
    SELECT ledger_txs.* FROM named, ledger_txs WHERE ${hashKey('ledger_txs.tx_hash')} = ${hashKey('named.h')} AND tx_hash = named.h
      AND history_via_record = 1 AND subject = @subject AND status = 'included' AND ${page}
    ORDER BY block_number DESC, block_index DESC LIMIT @limit`;
}
