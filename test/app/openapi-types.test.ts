/**
 * The committed types of the served OpenAPI documents (test/support/openapi-types/, which type the openapi-fetch
 * clients of test/app/openapi-client.test.ts) are those live nodes serve today, on every profile: a route, schema or
 * code changed without `npm run openapi:types` fails here.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { servedTypes, TYPES_DIR } from '../support/openapi-typegen.js';

describe('generated OpenAPI types', () => {
  it('the committed files are exactly what openapi-typescript makes of the documents live nodes serve (every role, each profile)', async () => {
    const expected = await servedTypes();
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
});
