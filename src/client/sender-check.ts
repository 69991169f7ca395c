/**
 * The recipient's own check of an envelope's sender signature (http-api.md §10.2), against the sender's finalized
 * record at the Directory: the same rule the Relay and the Cache apply, so a message is reported "from" a DID only
 * when that DID's key signed it.
 */
import { parseBase64 } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { parseDidDocument } from '../protocol/document-json.js';
import type { DidDocument } from '../protocol/document.js';
import { parseRootPubkey } from '../protocol/keys.js';
import type { Profile } from '../protocol/profile.js';
import { verifySenderSignature, type SenderRecord } from '../protocol/sender-signature.js';
import type { DirectoryClient } from './directory-client.js';
import type { SenderCheck } from './file-receiver.js';
import { DirectoryApiError } from './http.js';

/** Records kept per check (one receive run); more senders than this are looked up again. */
const MAX_RECORDS = 256;

/** The finalized record of `did` as the §10.2 check needs it; null when it has none. */
export async function senderRecord(directory: Pick<DirectoryClient, 'resolve'>, did: string): Promise<SenderRecord | null> {
  let r;
  try {
    r = await directory.resolve(did);
  } catch (e) {
    if (e instanceof DirectoryApiError && e.status === 404) return null;
    throw e;
  }
  const rootPubkey = parseRootPubkey(r.root_pubkey);
  if (rootPubkey === undefined) return null;
  let document: DidDocument | null;
  try {
    document = r.document === null ? null : parseDidDocument(r.document, did, 'document');
  } catch {
    document = null;
  }
  return { deactivated: r.deactivated, rootPubkey, document };
}

/** A {@link SenderCheck} resolving senders at `directory` (each sender once per check). */
export function directorySenderCheck(profile: Profile, directory: Pick<DirectoryClient, 'resolve'>): SenderCheck {
  const records = new Map<string, Promise<SenderRecord | null>>();
  return async (envelope) => {
    const { sender, sender_key_id: keyId, sender_signature: sig } = envelope;
    const signature = typeof sig === 'string' ? parseBase64(sig) : undefined;
    if (typeof sender !== 'string' || typeof keyId !== 'string' || signature === undefined || signature.length !== 64) {
      throw new DdnError('invalid_sender_signature', 'the sender fields are malformed', { reason: 'bad_signature' });
    }
    if (!records.has(sender)) {
      if (records.size >= MAX_RECORDS) records.clear();
      const loading = senderRecord(directory, sender);
      records.set(sender, loading);
      loading.catch(() => records.delete(sender));
    }
    verifySenderSignature(profile, envelope as Record<string, unknown>, { did: sender, keyId, signature }, await records.get(sender)!);
    return { did: sender, key_id: keyId };
  };
}
