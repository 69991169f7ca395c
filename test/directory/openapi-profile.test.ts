/**
 * One OpenAPI document per profile: the Directory's served document names its profile, and on `platform` states
 * the spec's request forms (`canonical_payload` required on DID changes, `valid_until` Unix ms, a named persona's
 * controller fields required, service ids DID URLs) that `openpayload` relaxes for the deployed clients.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startDirectory } from '../support/directory-harness.js';

type Json = Record<string, unknown>;
type Schema = Json & { properties: Record<string, Json & { properties?: Record<string, Json> }>; required?: string[] };

async function documentOf(profile: string): Promise<{ info: Json; body: (method: string, path: string) => Schema }> {
  const h = await startDirectory({ profile });
  try {
    const doc = (await h.call('GET', '/openapi.json')).body as {
      info: Json;
      paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: Schema }> } }>>;
    };
    return { info: doc.info, body: (method, path) => doc.paths[path]![method]!.requestBody.content['application/json']!.schema };
  } finally {
    await h.close();
  }
}

describe('the Directory OpenAPI document per profile', () => {
  it('platform: the spec forms; openpayload: the deployed clients’ too', async () => {
    const platform = await documentOf('platform');
    const openpayload = await documentOf('openpayload');
    assert.equal(platform.info['x-ddn-profile'], 'platform');
    assert.equal(openpayload.info['x-ddn-profile'], 'openpayload');

    const alias = platform.body('post', '/dids/{did}/aliases');
    assert.ok(alias.required?.includes('canonical_payload'));
    assert.equal(openpayload.body('post', '/dids/{did}/aliases').required?.includes('canonical_payload'), false);
    assert.equal(alias.properties.valid_until!.description, 'Unix ms');
    assert.notEqual(openpayload.body('post', '/dids/{did}/aliases').properties.valid_until!.description, 'Unix ms');
    assert.ok(platform.body('put', '/personas/{persona}/named').required?.includes('controller_keys'));
    assert.equal(openpayload.body('put', '/personas/{persona}/named').required?.includes('controller_keys'), false);
    const service = platform.body('post', '/dids/{did}/document/services').properties.service!.properties!.id!;
    assert.equal(service.pattern, '^did:[a-z0-9]+:[^#]+#.+$');
    assert.equal(openpayload.body('post', '/dids/{did}/document/services').properties.service!.properties!.id!.pattern, undefined);
    // a body of one of several forms (one per action): each form in the spec's terms
    const forms = (b: Schema): Schema[] => (b as Schema & { anyOf: Schema[] }).anyOf;
    const v2 = forms(platform.body('post', '/delivery-policies/prepare'));
    assert.equal(v2.length, 6);
    assert.ok(v2.every((f) => f.properties.valid_until!.description === 'Unix ms'));
    assert.ok(forms(openpayload.body('post', '/delivery-policies/prepare')).every((f) => f.properties.valid_until!.description !== 'Unix ms'));
    // preparations are not signed bodies
    assert.equal(platform.body('post', '/dids/{did}/prepare').required?.includes('canonical_payload') ?? false, false);
  });
});
