/**
 * ARCHITECTURE.md's layer table against layers.cjs, the table the boundary check is built from: every folder of
 * src/ has a row there and an entry here, and the "May import" column says exactly what layers.cjs allows.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const layers = createRequire(import.meta.url)(join(root, 'layers.cjs')) as { MAY_IMPORT: Record<string, string[]> };
const folders = Object.keys(layers.MAY_IMPORT);

/** Folder → the "May import" cell of its row in ARCHITECTURE.md, as a set of folder names. */
function documented(): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8').split('\n')) {
    const m = /^\| `src\/([a-z]+)` \|[^|]*\| ([^|]*) \|[^|]*\|$/.exec(line);
    if (!m) continue;
    const cell = m[2]!.trim();
    const names =
      cell === '—'
        ? []
        : cell === 'every folder'
          ? folders.filter((f) => f !== m[1])
          : cell.startsWith('every folder but ')
            ? folders.filter((f) => f !== m[1] && !cell.slice('every folder but '.length).split(', ').includes(f))
            : cell.split(', ');
    rows.set(m[1]!, names);
  }
  return rows;
}

describe("ARCHITECTURE.md's layer table", () => {
  it('has a folder of layers.cjs for every folder of src/, and a row for each', () => {
    const onDisk = readdirSync(join(root, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    assert.deepEqual([...folders].sort(), onDisk);
    assert.deepEqual([...documented().keys()].sort(), onDisk);
  });

  it('says for every folder exactly what layers.cjs lets it import', () => {
    for (const [folder, names] of documented()) {
      assert.deepEqual([...names].sort(), [...layers.MAY_IMPORT[folder]!].sort(), `the row of src/${folder}`);
    }
  });
});
