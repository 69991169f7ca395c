/**
 * Regenerates test/support/openapi-types/ from the documents live nodes serve (every role, each profile):
 * `npm run openapi:types`. test/app/openapi-types.test.ts fails when the committed files differ.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { documentsByProfile, servedTypes, TYPES_DIR } from '../test/support/openapi-typegen.js';

mkdirSync(TYPES_DIR, { recursive: true });
for (const [file, text] of await servedTypes(await documentsByProfile())) {
  writeFileSync(join(TYPES_DIR, file), text);
  process.stdout.write(`wrote ${join(TYPES_DIR, file)}\n`);
}
