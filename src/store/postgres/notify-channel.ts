/** The names of the NOTIFY channels a schema's processes talk on. */
import { createHash } from 'node:crypto';

/** PostgreSQL's longest identifier, in bytes: `pg_notify` refuses a longer channel name, `LISTEN` truncates it. */
const MAX_CHANNEL_BYTES = 63;

/**
 * `prefix` and the schema (a lowercase identifier of up to 63 bytes); when that is longer than a channel name may
 * be, `prefix` and 40 hex digits of the schema's SHA-256 instead, so that every schema has its own channel.
 */
export function schemaChannel(prefix: string, schema: string): string {
  const plain = `${prefix}${schema}`;
  return Buffer.byteLength(plain) <= MAX_CHANNEL_BYTES ? plain : `${prefix}${createHash('sha256').update(schema).digest('hex').slice(0, 40)}`;
}
