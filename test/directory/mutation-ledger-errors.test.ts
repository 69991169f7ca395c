/**
 * The ledger's semantic errors for DID mutations (ledger-rules.md §5.1–§5.6) with their http-api.md §1.1 codes:
 * reported at prepare (dry run without signature) and again at submit (dry run with a valid signature).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import {
  assertAccepted,
  assertError,
  kaOf,
  keyOf,
  kid,
  localSubmission,
  mutate,
  nonceFor,
  prepare,
  prepareSigned,
  registerDid,
  registerFixture,
  resolve,
  submit,
  submitRoute,
  vmOf,
  type Fixture,
} from '../support/directory-flows.js';

type Body = Record<string, unknown>;

describe('DID mutations: ledger semantic errors', () => {
  let h: DirectoryHarness;
  let seed = 60;
  let otherAlias: string;
  before(async () => {
    h = await startDirectory();
    otherAlias = 'belongs-to-other';
    await registerDid(h, 50, { alias: otherAlias });
  });
  after(() => h.close());

  const fixture = (): Promise<Fixture> => registerFixture(h, seed++);

  /** The same error at prepare and at submit of a correctly signed, locally built body. */
  async function refused(f: Fixture, action: string, fields: Body, status: number, code: string, ledgerError: string) {
    const prep = await prepare(h, f.did, action, fields);
    assertError(prep, status, code);
    assert.equal((prep.body.details as Body).ledger_error, ledgerError, `prepare ${action}`);
    const nonce = await nonceFor(h, f.did, action);
    const sub = localSubmission(h.profile, f.did, f.key, action, fields, { nonce, validUntil: BigInt(h.clock.nowMs() + 60_000) });
    const res = await h.call(sub.route.method, sub.route.url, sub.body);
    assertError(res, status, code);
    assert.equal((res.body.details as Body).ledger_error, ledgerError, `submit ${action}`);
  }

  it('aliases: alias_taken, alias_already_exists, alias_not_found', async () => {
    const f = await fixture();
    await refused(f, 'add_alias', { alias: otherAlias }, 409, 'alias_taken', 'AliasTaken');
    await refused(f, 'add_alias', { alias: f.alias.toUpperCase() }, 409, 'alias_already_exists', 'AliasAlreadyExists');
    await refused(f, 'update_alias', { old_alias: f.alias, new_alias: f.alias }, 409, 'alias_already_exists', 'AliasAlreadyExists');
    await refused(f, 'update_alias', { old_alias: f.alias, new_alias: otherAlias }, 409, 'alias_taken', 'AliasTaken');
    await refused(f, 'update_alias', { old_alias: 'absent', new_alias: 'fresh' }, 404, 'alias_not_found', 'AliasNotFound');
    await refused(f, 'remove_alias', { alias: 'absent' }, 404, 'alias_not_found', 'AliasNotFound');
    await mutate(h, f.did, f.key, 'add_alias', { alias: 'second' });
    await refused(f, 'update_alias', { old_alias: f.alias, new_alias: 'second' }, 409, 'alias_already_exists', 'AliasAlreadyExists');
    assert.deepEqual((await resolve(h, f.did)).aliases, [f.alias, 'second']);
  });

  it('aliases: too_many_aliases beyond 8', async () => {
    const f = await fixture();
    for (let i = 2; i <= 8; i++) await mutate(h, f.did, f.key, 'add_alias', { alias: `many-${f.alias}-${i}` }, { pending: true });
    h.settle();
    assert.equal(((await resolve(h, f.did)).aliases as string[]).length, 8);
    await refused(f, 'add_alias', { alias: `many-${f.alias}-9` }, 409, 'too_many_aliases', 'TooManyAliases');
  });

  it('aliases: a race lost between prepare and submit is reported at submit (alias_taken)', async () => {
    const a = await fixture();
    const b = await fixture();
    const pa = await prepareSigned(h, a.did, a.key, 'add_alias', { alias: 'contested' });
    await mutate(h, b.did, b.key, 'add_alias', { alias: 'contested' });
    const res = await submit(h, pa);
    assertError(res, 409, 'alias_taken');
    assert.equal((res.body.details as Body).ledger_error, 'AliasTaken');
  });

  it('aliases: invalid aliases are 400 invalid_alias at prepare and submit', async () => {
    const f = await fixture();
    for (const bad of ['bad alias', 'a@b', 'ünicode', '   ', 'x'.repeat(65)]) {
      const prep = await prepare(h, f.did, 'add_alias', { alias: bad });
      assertError(prep, 400, 'invalid_alias');
      const body = {
        did: f.did,
        action: 'add_alias',
        alias: bad,
        nonce: '0',
        valid_until: String(h.clock.nowMs() + 60_000),
        signature: '0x' + '11'.repeat(64),
      };
      assertError(await h.call('POST', submitRoute('add_alias', f.did, body).url, body), 400, 'invalid_alias');
    }
    assertError(await prepare(h, f.did, 'update_alias', { old_alias: f.alias, new_alias: 'no way' }), 400, 'invalid_alias');
    assertError(await prepare(h, f.did, 'add_alias', {}), 400, 'invalid_request');
  });

  it('devices: device_not_found, device_already_exists, too_many_devices', async () => {
    const f = await fixture();
    await refused(f, 'update_device', { device_id: 'dev-1', new_device_id: 'dev-1' }, 409, 'device_already_exists', 'DeviceAlreadyExists');
    await refused(f, 'update_device', { device_id: 'absent', new_device_id: 'other' }, 404, 'device_not_found', 'DeviceNotFound');
    await refused(f, 'remove_device', { device_id: 'absent' }, 404, 'device_not_found', 'DeviceNotFound');
    await refused(f, 'tombstone_device', { device_id: 'absent' }, 404, 'device_not_found', 'DeviceNotFound');
    for (let i = 2; i <= 10; i++) await mutate(h, f.did, f.key, 'add_device', { device_id: `dev-${i}` }, { pending: true });
    h.settle();
    await refused(f, 'update_device', { device_id: 'dev-1', new_device_id: 'dev-2' }, 409, 'device_already_exists', 'DeviceAlreadyExists');
    await refused(f, 'add_device', { device_id: 'dev-11' }, 409, 'too_many_devices', 'TooManyDevices');
    // re-adding a known device un-tombstones it and is not an 11th device
    await mutate(h, f.did, f.key, 'tombstone_device', { device_id: 'dev-3' });
    await mutate(h, f.did, f.key, 'add_device', { device_id: 'dev-3' });
    const devices = (await resolve(h, f.did)).devices as Body[];
    assert.equal(devices.length, 10);
    assert.equal(devices[2]!.tombstoned, false);
  });

  it('devices: malformed device ids are invalid_request', async () => {
    const f = await fixture();
    assertError(await prepare(h, f.did, 'add_device', {}), 400, 'invalid_request');
    assertError(await prepare(h, f.did, 'add_device', { device_id: 'd'.repeat(65) }), 400, 'invalid_request');
    assertError(await prepare(h, f.did, 'add_device', { device_id: '' }), 400, 'invalid_request');
  });

  it('verification methods: already_exists, not_found, in_use, a 6th method', async () => {
    const f = await fixture();
    const k = keyOf(201);
    await refused(
      f,
      'AddVerificationMethod',
      { verification_method: vmOf(f.did, 'key-1', k) },
      409,
      'verification_method_already_exists',
      'VerificationMethodAlreadyExists',
    );
    await refused(
      f,
      'UpdateVerificationMethod',
      { verification_method: vmOf(f.did, 'absent', k) },
      404,
      'verification_method_not_found',
      'VerificationMethodNotFound',
    );
    await refused(f, 'RemoveVerificationMethod', { id: kid(f.did, 'absent') }, 404, 'verification_method_not_found', 'VerificationMethodNotFound');
    await refused(f, 'RemoveVerificationMethod', { id: kid(f.did, 'key-1') }, 409, 'verification_method_in_use', 'VerificationMethodInUse');
    for (const n of [3, 4, 5]) await mutate(h, f.did, f.key, 'AddVerificationMethod', { verification_method: vmOf(f.did, `key-${n}`, k) }, { pending: true });
    h.settle();
    await refused(f, 'AddVerificationMethod', { verification_method: vmOf(f.did, 'key-6', k) }, 400, 'invalid_document', 'InvalidDocument');
  });

  it('verification methods and key agreements: HTTP-level shape errors are invalid_document', async () => {
    const f = await fixture();
    const vm = vmOf(f.did, 'key-3', keyOf(202));
    const cases: [string, Body, string][] = [
      ['AddVerificationMethod', { verification_method: { ...vm, controller: 'did:platform:11111111111111111111' } }, 'controller_mismatch'],
      ['AddVerificationMethod', { verification_method: { ...vm, extra: 1 } }, 'unsupported_key'],
      ['AddVerificationMethod', { verification_method: { ...vm, type: '' } }, 'missing_or_empty'],
      ['AddVerificationMethod', { verification_method: { ...vm, id: 'i'.repeat(65) } }, 'too_long'],
      ['AddKeyAgreement', { key_agreement: { ...kaOf(f.did, 'ka-2', 4), publicKeyMultibase: undefined } }, 'missing_or_empty'],
      ['AddService', { service: { id: kid(f.did, 'svc-2'), type: 'T' } }, 'missing_or_invalid'],
      ['AddService', { service: { id: kid(f.did, 'svc-2'), type: 'T', serviceEndpoint: [] } }, 'endpoint_count'],
      ['AddService', { service: { id: kid(f.did, 'svc-2'), type: 'T', serviceEndpoint: 'https://e', priority: -1 } }, 'invalid_priority'],
      ['AddService', { service: { id: kid(f.did, 'svc-2'), type: 'T', serviceEndpoint: 'https://e', authorization: [''] } }, 'missing_or_empty'],
    ];
    for (const [action, fields, reason] of cases) {
      const res = await prepare(h, f.did, action, fields);
      assertError(res, 400, 'invalid_document');
      assert.equal((res.body.details as Body).reason, reason, `${action} ${JSON.stringify(fields)}`);
    }
  });

  it('authentication: already_exists, not_found, unknown method, a 5th entry', async () => {
    const f = await fixture();
    await refused(f, 'AddAuthentication', { id: kid(f.did, 'key-1') }, 409, 'authentication_already_exists', 'AuthenticationAlreadyExists');
    await refused(f, 'AddAuthentication', { id: kid(f.did, 'absent') }, 404, 'verification_method_not_found', 'VerificationMethodNotFound');
    await refused(f, 'RemoveAuthentication', { id: kid(f.did, 'key-2') }, 404, 'authentication_not_found', 'AuthenticationNotFound');
    const k = keyOf(203);
    for (const n of [3, 4, 5]) await mutate(h, f.did, f.key, 'AddVerificationMethod', { verification_method: vmOf(f.did, `key-${n}`, k) }, { pending: true });
    for (const n of [2, 3, 4]) await mutate(h, f.did, f.key, 'AddAuthentication', { id: kid(f.did, `key-${n}`) }, { pending: true });
    h.settle();
    assert.equal((((await resolve(h, f.did)).document as Body).authentication as string[]).length, 4);
    await refused(f, 'AddAuthentication', { id: kid(f.did, 'key-5') }, 400, 'invalid_document', 'InvalidDocument');
  });

  it('key agreements: already_exists, not_found', async () => {
    const f = await fixture();
    await refused(f, 'AddKeyAgreement', { key_agreement: kaOf(f.did, 'ka-1', 9) }, 409, 'key_agreement_already_exists', 'KeyAgreementAlreadyExists');
    await refused(f, 'UpdateKeyAgreement', { key_agreement: kaOf(f.did, 'absent', 9) }, 404, 'key_agreement_not_found', 'KeyAgreementNotFound');
    await refused(f, 'RemoveKeyAgreement', { id: kid(f.did, 'absent') }, 404, 'key_agreement_not_found', 'KeyAgreementNotFound');
  });

  it('services: already_exists, not_found, too_many_services', async () => {
    const f = await fixture();
    const svc = (n: number) => ({ id: kid(f.did, `svc-${n}`), type: 'T', serviceEndpoint: [`https://s${n}.example`] });
    await refused(f, 'AddService', { service: svc(1) }, 409, 'service_already_exists', 'ServiceAlreadyExists');
    await refused(f, 'UpdateService', { service: svc(7) }, 404, 'service_not_found', 'ServiceNotFound');
    await refused(f, 'RemoveService', { id: kid(f.did, 'svc-7') }, 404, 'service_not_found', 'ServiceNotFound');
    for (const n of [2, 3, 4]) await mutate(h, f.did, f.key, 'AddService', { service: svc(n) }, { pending: true });
    h.settle();
    await refused(f, 'AddService', { service: svc(5) }, 409, 'too_many_services', 'ServiceTooLong');
  });

  it('root key: invalid_root_pubkey', async () => {
    const f = await fixture();
    for (const bad of ['xyz', '0x1234', `0x${'ab'.repeat(33)}`, 'z111']) {
      assertError(await prepare(h, f.did, 'UpdateRootPubkey', { new_root_pubkey: bad }), 400, 'invalid_root_pubkey');
      const body = {
        did: f.did,
        action: 'UpdateRootPubkey',
        new_root_pubkey: bad,
        nonce: '0',
        valid_until: String(h.clock.nowMs() + 60_000),
        signature: '0x' + '11'.repeat(64),
      };
      assertError(await h.call('PUT', submitRoute('UpdateRootPubkey', f.did, body).url, body), 400, 'invalid_root_pubkey');
    }
    assertError(await prepare(h, f.did, 'UpdateRootPubkey', {}), 400, 'invalid_root_pubkey');
  });

  it('document replacement: unsupported keys and structure errors are invalid_document (with ledger_error)', async () => {
    const f = await fixture();
    const ctx = await prepare(h, f.did, 'replace_document', { document: { '@context': ['https://www.w3.org/ns/did/v1'], id: f.did } });
    assertError(ctx, 400, 'invalid_document');
    assert.equal((ctx.body.details as Body).reason, 'unsupported_key');
    assertError(await prepare(h, f.did, 'replace_document', { document: { id: f.did, controller: f.did } }), 400, 'invalid_document');
    assertError(await prepare(h, f.did, 'replace_document', { document: { id: 'did:platform:11111111111111111111' } }), 400, 'invalid_document');
    const vm = vmOf(f.did, 'key-1', f.key);
    const structural: [Body, string][] = [
      [{ id: f.did, verificationMethod: [vm], authentication: [kid(f.did, 'absent')] }, 'VerificationMethodNotFound'],
      [{ id: f.did, verificationMethod: [vm, vm] }, 'VerificationMethodAlreadyExists'],
      [{ id: f.did, verificationMethod: [vm], authentication: [vm.id, vm.id] }, 'AuthenticationAlreadyExists'],
      [{ id: f.did, keyAgreement: [kaOf(f.did, 'k', 1), kaOf(f.did, 'k', 2)] }, 'KeyAgreementAlreadyExists'],
    ];
    for (const [document, ledgerError] of structural) await refused(f, 'replace_document', { document }, 400, 'invalid_document', ledgerError);
  });

  it('a replacement may leave the document empty and later patches still apply', async () => {
    const f = await fixture();
    await mutate(h, f.did, f.key, 'replace_document', { document: { id: f.did } });
    assert.deepEqual((await resolve(h, f.did)).document, { id: f.did, verificationMethod: [], authentication: [], keyAgreement: [], service: [] });
    // the root key still signs; a VM-signed change is now refused (the VM is gone)
    assertError(await prepare(h, f.did, 'add_alias', { alias: 'x1', signer_key_id: kid(f.did, 'key-2') }), 403, 'signer_not_authorized');
    const p = await prepareSigned(h, f.did, f.key, 'AddService', { service: { id: kid(f.did, 's'), type: 'T', serviceEndpoint: 'https://e' } });
    assertAccepted(await submit(h, p));
    h.settle();
    assert.equal((((await resolve(h, f.did)).document as Body).service as Body[]).length, 1);
  });
});
