/**
 * The identity book keyed by network (issue 42 item 3), in-process through `main()` against two real nodes (two
 * chains): `did create --alias carol` at each keeps two entries that do not collide, and `--did carol` means the
 * carol of the network the command talks to; a deleted DID is marked and never picked; `did list` shows each
 * identity's network; a book written before networks were recorded is migrated without loss.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/app/config.js';
import { startNode, type RunningNode } from '../../src/app/node.js';
import { bookPath } from '../../src/cli/identity-book.js';
import { inProcess } from './in-process.js';
import { checkedNode } from '../support/contract-check.js';

const dir = mkdtempSync(join(tmpdir(), 'ddn-cli-networks-'));
const env: NodeJS.ProcessEnv = { XDG_CONFIG_HOME: join(dir, 'config') };
let a: RunningNode;
let b: RunningNode;

const { run, ok } = inProcess(() => env);

async function node(name: string): Promise<RunningNode> {
  const cfg = loadConfig(
    ['--data-dir', join(dir, name), '--directory-port', '0', '--relay-port', '0', '--cache-port', '0', '--block-time-ms', '20', '--allow-private-endpoints'],
    {},
  );
  return checkedNode(await startNode(cfg, { logger: pino({ level: 'silent' }) }));
}

interface Listed {
  did: string;
  alias?: string;
  directory: string;
  network: { chain_id: string; genesis_hash: string } | null;
  status?: string;
}

const listed = async (): Promise<Listed[]> => (await ok(['did', 'list'])).identities as Listed[];

before(async () => {
  a = await node('a');
  b = await node('b');
});
after(async () => {
  await a?.close();
  await b?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('one identity book, several networks', () => {
  let carolA: string;
  let carolB: string;

  it('did create --alias carol at two Directories keeps two entries, each with its network', async () => {
    carolA = (await ok(['did', 'create', '--alias', 'carol', '--cache', a.urls.cache!, '--directory', a.urls.directory!])).did as string;
    carolB = (await ok(['did', 'create', '--alias', 'carol', '--cache', b.urls.cache!, '--directory', b.urls.directory!])).did as string;
    assert.notEqual(carolA, carolB);
    const ids = await listed();
    assert.deepEqual(
      ids.map((i) => [i.alias, i.did, i.directory]),
      [
        ['carol', carolA, a.urls.directory],
        ['carol', carolB, b.urls.directory],
      ],
    );
    const [na, nb] = [ids[0]!.network!, ids[1]!.network!];
    assert.match(na.genesis_hash, /^0x[0-9a-f]{64}$/);
    assert.notEqual(na.genesis_hash, nb.genesis_hash, 'two chains');
  });

  it('--did carol means the carol of the network the command talks to', async () => {
    const inbox = join(dir, 'inbox');
    mkdirSync(inbox);
    assert.equal((await ok(['receive', '--did', 'carol', '--output-dir', inbox, '--directory', b.urls.directory!])).did, carolB);
    assert.equal((await ok(['receive', '--did', 'carol', '--output-dir', inbox, '--directory', a.urls.directory!])).did, carolA);
    // without --did: the only identity of that network
    assert.equal((await ok(['receive', '--output-dir', inbox, '--directory', b.urls.directory!])).did, carolB);
  });

  it('a deleted DID is marked in the book and never picked again', async () => {
    const del = await ok(['did', 'delete', '--did', 'carol', '--directory', a.urls.directory!]);
    assert.equal(del.did, carolA);
    const ids = await listed();
    assert.equal(ids.find((i) => i.did === carolA)?.status, 'deleted');
    assert.equal(ids.find((i) => i.did === carolB)?.status, undefined);
    const inbox = join(dir, 'inbox');
    const r = await run(['receive', '--did', 'carol', '--output-dir', inbox, '--directory', a.urls.directory!]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(String(r.json.message), /'carol' in the identity book is did:.* of another network/);
  });

  it('a book written before networks were recorded is migrated without loss', async () => {
    const path = bookPath(env);
    const current = JSON.parse(readFileSync(path, 'utf8')) as { identities: Record<string, unknown>[] };
    const legacy = current.identities.map(({ network: _network, status: _status, status_at: _at, ...rest }) => rest);
    writeFileSync(path, `${JSON.stringify({ identities: legacy }, null, 2)}\n`);
    const ids = await listed();
    assert.equal(ids.length, 2);
    assert.deepEqual(
      ids.map((i) => [i.did, i.alias, i.network !== null]),
      [
        [carolA, 'carol', true],
        [carolB, 'carol', true],
      ],
    );
    const saved = JSON.parse(readFileSync(path, 'utf8')) as { version: number; identities: Listed[] };
    assert.equal(saved.version, 2);
    assert.notEqual(saved.identities[0]!.network!.genesis_hash, saved.identities[1]!.network!.genesis_hash);
  });

  it('policy set and persona register-named sign with the book key of the owner, without --key', async () => {
    const erin = (await ok(['did', 'create', '--alias', 'erin', '--directory', b.urls.directory!])).did as string;
    const named = await ok(['persona', 'register-named', 'erinshop', '--operator', 'erin', '--directory', b.urls.directory!]);
    assert.equal(named.operator_did, erin, 'the alias of the book became the DID');
    const policy = join(dir, 'erin-policy.json');
    writeFileSync(
      policy,
      JSON.stringify({ policy_ttl_seconds: 60, ruleset: [{ id: 'd', priority: 1, conditions: [], action: { type: 'BaseDidDelivery/v1' } }] }),
    );
    const set = await ok(['policy', 'set', '--scope', 'did', '--id', 'erin', '--file', policy, '--directory', b.urls.directory!]);
    assert.deepEqual(set.scope, { type: 'did', id: erin });
    const persona = await ok([
      'policy',
      'set',
      '--scope',
      'persona',
      '--id',
      'erinshop',
      '--operator',
      'erin',
      '--file',
      policy,
      '--directory',
      b.urls.directory!,
    ]);
    assert.equal(persona.status, 'finalized');
  });
});
