/**
 * The application SDK (http-api.md §9): reads, registration and the authorization actions (domain, status,
 * control DID, linked DIDs). Application nonces are JSON integers; the tuple to sign is checked locally
 * (ledger-rules.md §4.10) before the control key — and for link/unlink the linked DID's key — signs it.
 */
import { toBase64 } from '../base/bytes.js';
import type { ApplicationAuthorization } from '../protocol/payloads/application.js';
import { DirectoryApi } from './directory-api.js';
import { encodePath } from './http.js';
import type { Signer } from './persona-client.js';
import { checkApplicationPayload, preparedBytes, type PreparedBytes } from './signed-checks.js';
import type { ApplicationPolicyResponse, ApplicationResponse, ApplicationSubmitResponse } from './types.js';

type Json = Record<string, unknown>;

interface PreparedApplication extends PreparedBytes {
  request: Json;
  nonce: number;
  control_did?: string;
}

/** An authorization action of §9 and its fields. */
export type ApplicationChange =
  | { action: 'set_domain'; domain: string }
  | { action: 'clear_domain' }
  | { action: 'set_status'; status: 'active' | 'suspended' | 'tombstoned' }
  | { action: 'update_control'; newControlDid: string }
  | { action: 'link_did' | 'unlink_did'; linkedDid: string; linkedSigner: Signer };

const STATUS = { active: 'Active', suspended: 'Suspended', tombstoned: 'Tombstoned' } as const;

/** What the tuple of a change must contain (ledger-rules.md §4.10). */
function expectedTuple(c: ApplicationChange): Partial<ApplicationAuthorization> & { action: ApplicationAuthorization['action'] } {
  switch (c.action) {
    case 'set_domain':
      return { action: 'domain', domain: c.domain };
    case 'clear_domain':
      return { action: 'domain', domain: null };
    case 'set_status':
      return { action: 'status', newStatus: STATUS[c.status] };
    case 'update_control':
      return { action: 'update', newControlDid: c.newControlDid };
    case 'link_did':
    case 'unlink_did':
      return { action: 'linked_did', linkedDid: c.linkedDid, enabled: c.action === 'link_did' };
  }
}

export class ApplicationClient extends DirectoryApi {
  /** `GET /applications/{id}`. */
  read(id: string): Promise<ApplicationResponse> {
    return this.call('GET', encodePath`/applications/${id}`);
  }
  /** `GET /applications/{id}/policy`. */
  policy(id: string): Promise<ApplicationPolicyResponse> {
    return this.call('GET', encodePath`/applications/${id}/policy`);
  }

  /** Registration: prepare, check the `register` tuple, sign with the control DID's key, submit. */
  async register(id: string, a: { controlDid: string; signer: Signer }): Promise<ApplicationSubmitResponse> {
    const prepared = await this.call<PreparedApplication>('POST', encodePath`/applications/${id}/registration/prepare`, {
      control_did: a.controlDid,
      signer_key_id: a.signer.keyId,
    });
    const bytes = preparedBytes(prepared);
    checkApplicationPayload(this.profile, bytes, { action: 'register', applicationId: id, controlDid: a.controlDid, nonce: BigInt(prepared.nonce) });
    return this.call('PUT', encodePath`/applications/${id}/registration`, { ...prepared.request, signature: toBase64(a.signer.key.sign(bytes)) });
  }

  /** An authorization change signed by the control DID (and by the linked DID for link/unlink). */
  async authorize(id: string, change: ApplicationChange, control: Signer): Promise<ApplicationSubmitResponse> {
    const body: Json = { action: change.action, control_signer_key_id: control.keyId };
    if (change.action === 'set_domain') body.domain = change.domain;
    if (change.action === 'set_status') body.status = change.status;
    if (change.action === 'update_control') body.new_control_did = change.newControlDid;
    if (change.action === 'link_did' || change.action === 'unlink_did')
      Object.assign(body, { linked_did: change.linkedDid, linked_signer_key_id: change.linkedSigner.keyId });
    const prepared = await this.call<PreparedApplication>('POST', encodePath`/applications/${id}/authorization/prepare`, body);
    const bytes = preparedBytes(prepared);
    checkApplicationPayload(this.profile, bytes, { ...expectedTuple(change), applicationId: id, nonce: BigInt(prepared.nonce) });
    const submit: Json = { ...prepared.request, control_signature: toBase64(control.key.sign(bytes)) };
    if (change.action === 'link_did' || change.action === 'unlink_did') submit.linked_signature = toBase64(change.linkedSigner.key.sign(bytes));
    return this.call('PUT', encodePath`/applications/${id}/authorization`, submit);
  }
}
