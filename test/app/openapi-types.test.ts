/**
 * The served OpenAPI documents per profile, from live nodes of `platform` and `openpayload` (every role, SQLite):
 * the committed types generated from them (test/support/openapi-types/, which type the openapi-fetch clients of
 * test/app/openapi-client.test.ts) are exactly those of today's documents — a route, schema or code changed without
 * `npm run openapi:types` fails here — and the documents differ by profile only where the profiles' answers do.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { documentsByProfile, servedTypes, TYPES_DIR, type TypedRole } from '../support/openapi-typegen.js';

type Doc = { info: Record<string, unknown>; paths: Record<string, unknown> };

/** `doc` without its profile label. */
const unlabelled = (doc: object): object => {
  const { info, ...rest } = doc as Doc;
  const { 'x-ddn-profile': _label, ...bare } = info;
  void _label;
  return { ...rest, info: bare };
};

describe('OpenAPI documents per profile and their generated types', () => {
  let docs: Record<string, Record<TypedRole, object>>;

  before(async () => {
    docs = await documentsByProfile();
  });

  it('the committed files are exactly what openapi-typescript makes of the documents live nodes serve (every role, each profile)', async () => {
    const expected = await servedTypes(docs);
    assert.deepEqual(readdirSync(TYPES_DIR).sort(), [...expected.keys()].sort(), 'one file per role and differing profile, no stale file');
    for (const [file, text] of expected) {
      const held = readFileSync(join(TYPES_DIR, file), 'utf8');
      // the first differing line, rather than two 30 000-line strings
      const a = held.split('\n');
      const b = text.split('\n');
      const first = a.findIndex((line, i) => line !== b[i]);
      const at = first === -1 ? a.length : first;
      assert.ok(
        held === text,
        `${file} differs from the served document at line ${at + 1} (committed ${JSON.stringify(a[at])}, served ${JSON.stringify(b[at])}): run \`npm run openapi:types\``,
      );
    }
  });

  it("labels every role's document with its profile; the Cache's is the same on both profiles apart from the label", () => {
    for (const profile of ['platform', 'openpayload']) {
      for (const role of ['directory', 'relay', 'cache'] as const)
        assert.equal((docs[profile]![role] as Doc).info['x-ddn-profile'], profile, `${role} ${profile}`);
    }
    // no Cache route answers, status or code differs by profile (docs/api.md, "OpenAPI documents per profile")
    assert.deepEqual(unlabelled(docs.platform!.cache), unlabelled(docs.openpayload!.cache));
  });

  it("the Relay's documents are the same on both profiles apart from the label: 507 insufficient_storage on both", () => {
    // either profile answers the Relay's own storage failure 507 insufficient_storage (docs/api.md, "A full Cache
    // through the Relay"); only platform answers so for a delivery every Cache refused, which is behaviour, not a code
    assert.deepEqual(unlabelled(docs.platform!.relay), unlabelled(docs.openpayload!.relay));
    assert.match(JSON.stringify((docs.openpayload!.relay as Doc).paths['/relay']), /insufficient_storage/);
  });
});
