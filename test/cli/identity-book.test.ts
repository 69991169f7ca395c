/**
 * The local identity book (issue 25, item 7), in-process through `main()` against a real node: `ddn did create`
 * without --key makes both keys under $XDG_CONFIG_HOME/ddn/keys and records the DID; `ddn did list` shows it;
 * --did/--key default from the book (its only identity, or the one named by DID or alias); a second DID for a key
 * the book holds is refused unless --new; `ddn key generate` without --out writes into the book's keys/.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/app/config.js';
import { startNode, type RunningNode } from '../../src/app/node.js';
import { bookPath, configDir } from '../../src/cli/identity-book.js';
import { inProcess } from './in-process.js';
import { checkedNode } from '../support/contract-check.js';

const dir = mkdtempSync(join(tmpdir(), 'ddn-cli-book-'));
const config = join(dir, 'config');
let node: RunningNode;
let env: NodeJS.ProcessEnv;

const { run, ok } = inProcess(() => env);

const pems = (d: string): string[] => (existsSync(d) ? readdirSync(d).filter((f) => f.endsWith('.pem')) : []);

before(async () => {
  const cfg = loadConfig(
    ['--data-dir', join(dir, 'node'), '--directory-port', '0', '--relay-port', '0', '--cache-port', '0', '--block-time-ms', '20', '--allow-private-endpoints'],
    {},
  );
  node = await checkedNode(await startNode(cfg, { logger: pino({ level: 'silent' }) }));
  env = { XDG_CONFIG_HOME: config, DDN_DIRECTORY_URL: node.urls.directory! };
});
after(async () => {
  await node?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the config directory', () => {
  it('is $XDG_CONFIG_HOME/ddn, else ~/.config/ddn (a relative XDG_CONFIG_HOME is ignored, as the XDG spec says)', () => {
    assert.equal(configDir({ XDG_CONFIG_HOME: '/x/conf', HOME: '/home/a' }), '/x/conf/ddn');
    assert.equal(configDir({ HOME: '/home/a' }), '/home/a/.config/ddn');
    assert.equal(configDir({ XDG_CONFIG_HOME: 'rel', HOME: '/home/a' }), '/home/a/.config/ddn');
    assert.equal(bookPath({ XDG_CONFIG_HOME: '/x' }), '/x/ddn/identities.json');
  });
});

describe('the identity book', () => {
  let alice: string;

  it('did create without --key makes both keys in the book, never in the working directory, and records the DID', async () => {
    const before = pems(process.cwd());
    const r = await ok(['did', 'create', '--alias', 'alice', '--relay', node.urls.relay!, '--cache', node.urls.cache!]);
    alice = r.did as string;
    assert.equal(r.registration_status, 'confirmed');
    const keys = join(config, 'ddn', 'keys');
    assert.equal(r.key, join(keys, `${alice.replaceAll(':', '_')}.pem`));
    assert.equal(r.key_agreement, join(keys, `${alice.replaceAll(':', '_')}-x25519.pem`));
    for (const f of [r.key, r.key_agreement] as string[]) assert.equal(statSync(f).mode & 0o777, 0o600, f);
    assert.equal(statSync(keys).mode & 0o777, 0o700);
    assert.deepEqual(pems(process.cwd()), before, 'no key file in the working directory');
    const doc = r.document as { keyAgreement: { id: string }[] };
    assert.deepEqual(
      doc.keyAgreement.map((k) => k.id),
      [`${alice}#x25519-1`],
    );

    const list = await ok(['did', 'list']);
    assert.equal(list.book, join(config, 'ddn', 'identities.json'));
    const ids = list.identities as Record<string, unknown>[];
    assert.equal(ids.length, 1);
    assert.deepEqual(
      [ids[0]!.did, ids[0]!.alias, ids[0]!.key, ids[0]!.key_agreement, ids[0]!.directory],
      [alice, 'alice', r.key, r.key_agreement, node.urls.directory],
    );
    assert.equal(statSync(join(config, 'ddn', 'identities.json')).mode & 0o777, 0o600);
    assert.doesNotMatch(readFileSync(join(config, 'ddn', 'identities.json'), 'utf8'), /PRIVATE KEY/);
  });

  it('the only identity is the default --did and --key of the DID changes and of receive', async () => {
    const r = await ok(['did', 'alias', 'add', '--alias', 'alice-2']);
    assert.equal(r.did, alice);
    assert.equal(r.status, 'finalized');
    const inbox = join(dir, 'inbox');
    mkdirSync(inbox);
    const got = await ok(['receive', '--output-dir', inbox]);
    assert.equal(got.did, alice);
    assert.equal(got.received, 0);
  });

  it('key generate without --out writes into the book; a key the book holds is refused a second DID unless --new', async () => {
    const k = await ok(['key', 'generate']);
    const file = k.file as string;
    assert.equal(file.startsWith(join(config, 'ddn', 'keys') + '/'), true, file);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const bob = await ok(['did', 'create', '--key', file, '--alias', 'bob', '--cache', node.urls.cache!]);
    const again = await run(['did', 'create', '--key', file]);
    assert.equal(again.code, 1, again.stderr);
    assert.equal(again.json.code, 'key_already_registered');
    assert.match(String(again.json.message), /bob \(did:platform:.*--new/);
    assert.equal(((await ok(['did', 'list'])).identities as unknown[]).length, 2, 'nothing recorded');
    const second = await ok(['did', 'create', '--key', file, '--new']);
    assert.notEqual(second.did, bob.did);
    assert.equal(((await ok(['did', 'list'])).identities as unknown[]).length, 3);
  });

  it('with several identities --did names one (by DID or alias); without it the command says which exist', async () => {
    const none = await run(['did', 'alias', 'add', '--alias', 'x-1']);
    assert.equal(none.code, 2);
    assert.equal(none.json.code, 'invalid_usage');
    assert.match(String(none.json.message), /3 identities of this network \(alice \(did:.*\), bob \(did:.*\), did:.*\): give --did DID\|ALIAS/);
    const byAlias = await ok(['did', 'alias', 'add', '--did', 'bob', '--alias', 'bob-2']);
    const bob = ((await ok(['did', 'list'])).identities as { did: string; alias?: string }[]).find((i) => i.alias === 'bob')!;
    assert.equal(byAlias.did, bob.did);
    const byDid = await ok(['did', 'alias', 'add', '--did', alice, '--alias', 'alice-3']);
    assert.equal(byDid.did, alice);
    assert.deepEqual((await ok(['did', 'resolve', alice])).aliases, ['alice', 'alice-2', 'alice-3']);
  });

  it('a DID outside the book still needs --key', async () => {
    const r = await run(['did', 'alias', 'add', '--did', 'did:platform:8DfbjXLth7APvt3qQPgtf', '--alias', 'zed']);
    assert.equal(r.code, 2);
    assert.match(String(r.json.message), /--key is required \(or an identity of the book/);
  });

  it('a registration that fails removes the keys it made and records nothing', async () => {
    const keys = join(config, 'ddn', 'keys');
    const before = readdirSync(keys).sort();
    const r = await run(['did', 'create', '--alias', 'alice']);
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(readdirSync(keys).sort(), before);
    assert.equal(((await ok(['did', 'list'])).identities as unknown[]).length, 3);
  });
});
