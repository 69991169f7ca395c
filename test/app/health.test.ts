import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import { healthBody, registerHealthRoute, type HealthSource } from '../../src/app/health.js';
import { createHttpServer } from '../../src/http/server.js';
import { getChecked } from '../support/inject-contract.js';

const ref = (number: number, byte: string) => ({ number, hash: `0x${byte.repeat(32)}`, timestampMs: 1 });

function source(over: Partial<HealthSource> = {}): HealthSource {
  return {
    roles: ['relay', 'cache'],
    profile: 'openpayload',
    chainId: 'c1',
    ledger: { genesisHash: new Uint8Array(32).fill(0xaa), headRef: () => ref(7, 'bb'), finalizedRefNow: () => ref(5, 'cc') },
    isReady: () => true,
    ...over,
  };
}

describe('GET /health', () => {
  it('reports roles, profile, chain and the head and finalized blocks', () => {
    assert.deepEqual(healthBody(source()), {
      status: 'ok',
      roles: ['relay', 'cache'],
      profile: 'openpayload',
      chain_id: 'c1',
      genesis_hash: `0x${'aa'.repeat(32)}`,
      head: { number: 7, hash: `0x${'bb'.repeat(32)}` },
      finalized: { number: 5, hash: `0x${'cc'.repeat(32)}` },
    });
  });

  it('says degraded (200, same body) while the node refuses new data for lack of storage', async () => {
    let degraded = true;
    const server = createHttpServer({ name: 'cache', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'envelope_too_large' });
    registerHealthRoute(server, source({ isDegraded: () => degraded }));
    const full = await getChecked(server, '/health');
    assert.equal(full.statusCode, 200);
    assert.deepEqual(full.json(), { ...healthBody(source()), status: 'degraded' });
    degraded = false;
    assert.equal((await getChecked(server, '/health')).json<{ status: string }>().status, 'ok');
    await server.fastify.close();
  });

  it('answers 503 ledger_unavailable with Retry-After when not ready', async () => {
    const server = createHttpServer({ name: 'relay', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'envelope_too_large' });
    let ready = false;
    registerHealthRoute(server, source({ isReady: () => ready }));
    const down = await getChecked(server, '/health');
    assert.equal(down.statusCode, 503);
    assert.equal(down.json<{ code: string }>().code, 'ledger_unavailable');
    assert.ok(down.headers['retry-after'] !== undefined);
    ready = true;
    const up = await getChecked(server, '/health');
    assert.equal(up.statusCode, 200);
    await server.fastify.close();
  });

  it('answers ledger_unavailable when the ledger cannot be read', () => {
    const broken = source({
      ledger: {
        genesisHash: new Uint8Array(32),
        headRef: () => {
          throw new Error('db closed');
        },
        finalizedRefNow: () => ref(0, '00'),
      },
    });
    assert.throws(
      () => healthBody(broken),
      (e: unknown) => e instanceof DdnError && e.code === 'ledger_unavailable',
    );
  });
});

describe('GET /health: version and the Directory of a Relay- or Cache-only process', () => {
  it('reports the version and commit of the build', () => {
    const body = healthBody(source({ build: { version: '1.2.3', commit: 'abcdef012345' } }));
    assert.equal(body.version, '1.2.3');
    assert.equal(body.commit, 'abcdef012345');
  });

  it('reports the remote Directory and its chain, never the local ledger', async () => {
    const chain = {
      genesis_hash: `0x${'11'.repeat(32)}`,
      head: { number: 9, hash: `0x${'22'.repeat(32)}` },
      finalized: { number: 8, hash: `0x${'33'.repeat(32)}` },
    };
    let reachable = true;
    const directory = {
      state: async () =>
        reachable ? { url: 'http://d:8080', reachable, health: { status: 'ok', ...chain } } : { url: 'http://d:8080', reachable, reason: 'refused' },
    };
    const server = createHttpServer({ name: 'relay', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'envelope_too_large' });
    registerHealthRoute(server, source({ roles: ['relay'], directory, build: { version: '1.2.3' } }));
    const up = await getChecked(server, '/health');
    assert.deepEqual(up.json(), {
      status: 'ok',
      version: '1.2.3',
      roles: ['relay'],
      profile: 'openpayload',
      chain_id: 'c1',
      ...chain,
      directory: { url: 'http://d:8080', reachable: true },
    });
    reachable = false;
    const down = await getChecked(server, '/health');
    assert.equal(down.statusCode, 200);
    assert.deepEqual(down.json(), {
      status: 'ok',
      version: '1.2.3',
      roles: ['relay'],
      profile: 'openpayload',
      chain_id: 'c1',
      directory: { url: 'http://d:8080', reachable: false },
    });
    await server.fastify.close();
  });
});
