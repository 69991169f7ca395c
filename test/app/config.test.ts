import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, configHelp, envNameOf, loadConfig } from '../../src/app/config.js';
import { defaultLedgerCacheBytes } from '../../src/store/ledger-cache-size.js';
import { defaultResolveCacheBytes } from '../../src/directory/resolve-cache.js';
import { memoryWithin, processMemoryBytes } from '../../src/base/process-memory.js';

function configError(argv: string[], env: NodeJS.ProcessEnv = {}): ConfigError {
  try {
    loadConfig(argv, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${JSON.stringify(argv)} / ${JSON.stringify(env)} to be rejected`);
}

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig([], {});
    assert.equal(c.dataDir, './.ddn-data');
    assert.equal(c.host, '127.0.0.1');
    assert.deepEqual(c.roles, ['directory', 'relay', 'cache']);
    assert.deepEqual(c.ports, { directory: 8080, relay: 8081, cache: 8082 });
    assert.equal(c.blockIntervalMs, 1000);
    assert.equal(c.finalityDepth, 0);
    assert.equal(c.profile, 'platform');
    assert.equal(c.chainId, 'ddn-dev');
    assert.equal(c.policy.allowPrivateEndpoints, false);
    assert.deepEqual(c.publicUrls, { relay: [], cache: [] });
    assert.equal(c.proofClockSkewSeconds, 300);
    assert.equal(c.logLevel, 'info');
    assert.equal(c.directory.maxBodyBytes, 1_048_576);
    assert.equal(c.relay.maxHttpEnvelopeBytes, 26_214_400);
    assert.equal(c.relay.stagingWindowSeconds, 3600);
    assert.equal(c.relay.maxSessionsPerDid, 8);
    assert.equal(c.cache.maxRetentionSeconds, 172_800);
    assert.equal(c.cache.chunkStagingWindowSeconds, 3600);
    assert.equal(c.cache.allowPlaintext, false, 'profile platform refuses plaintext payloads by default');
    assert.equal(loadConfig(['--profile', 'openpayload'], {}).cache.allowPlaintext, true, 'openpayload accepts them by default');
    assert.equal(loadConfig(['--cache-allow-plaintext'], {}).cache.allowPlaintext, true, 'the flag overrides the profile');
    assert.equal(loadConfig(['--profile', 'openpayload'], { DDN_CACHE_ALLOW_PLAINTEXT: 'false' }).cache.allowPlaintext, false);
    assert.equal(c.cache.maxBytesPerRecipient, 1_073_741_824);
    assert.equal(loadConfig(['--cache-max-bytes-per-recipient', '0'], {}).cache.maxBytesPerRecipient, 0, '0: no quota');
    assert.equal(c.cache.readCacheBytes, 33_554_432);
    assert.equal(c.cache.storageBudgetBytes, 0, 'no budget but the disk');
    assert.equal(loadConfig(['--cache-storage-budget-bytes', '1048576'], {}).cache.storageBudgetBytes, 1_048_576);
    assert.equal(c.storageReserveBytes, 8 * 1024 * 1024);
    assert.equal(loadConfig([], { DDN_STORAGE_RESERVE_BYTES: '0' }).storageReserveBytes, 0, '0: no reserve');
    assert.equal(loadConfig([], { DDN_CACHE_READ_CACHE_BYTES: '0' }).cache.readCacheBytes, 0, '0: no read cache');
    assert.equal(c.directoryViewTtlMs, 2_000);
    assert.equal(loadConfig(['--directory-view-ttl-ms', '0'], {}).directoryViewTtlMs, 0, '0: ask the Directory every time');
    assert.equal(loadConfig([], {}).ledgerCacheBytes, defaultLedgerCacheBytes(processMemoryBytes()), "the ledger's page cache: sized by memory");
    assert.equal(loadConfig(['--ledger-cache-bytes', '1048576'], {}).ledgerCacheBytes, 1048576);
    assert.equal(loadConfig([], { DDN_LEDGER_CACHE_BYTES: '536870912' }).ledgerCacheBytes, 536870912);
    assert.equal(loadConfig([], { DDN_DIRECTORY_VIEW_TTL_MS: '300000' }).directoryViewTtlMs, 300_000);
    const resolveDefault = defaultResolveCacheBytes(processMemoryBytes());
    assert.equal(c.directory.resolveCacheBytes, resolveDefault, 'the resolve cache: sized by memory');
    assert.notEqual(resolveDefault, 1_048_576);
    assert.equal(loadConfig(['--directory-resolve-cache-bytes', '1048576'], {}).directory.resolveCacheBytes, 1_048_576, 'the flag wins');
    assert.equal(loadConfig([], { DDN_DIRECTORY_RESOLVE_CACHE_BYTES: '1048576' }).directory.resolveCacheBytes, 1_048_576);
    assert.equal(loadConfig(['--directory-resolve-cache-bytes', '0'], {}).directory.resolveCacheBytes, 0, '0: none kept');
  });

  it("reads the memory a process may use: the machine's, or a cgroup's limit when lower", () => {
    const GIB = 2 ** 30;
    assert.equal(memoryWithin(24 * GIB, 2 * GIB), 2 * GIB, 'a container of 2 GiB');
    assert.equal(memoryWithin(24 * GIB, 2 ** 64), 24 * GIB, 'no limit (cgroup v2 "max")');
    assert.equal(memoryWithin(24 * GIB, 0), 24 * GIB);
    assert.equal(memoryWithin(24 * GIB, undefined), 24 * GIB);
  });

  it('has the documented connection bounds, read from flags and validated', () => {
    assert.deepEqual(loadConfig([], {}).http, {
      headersTimeoutMs: 20_000,
      requestTimeoutMs: 120_000,
      keepAliveTimeoutMs: 72_000,
      maxConnections: 4096,
      maxConnectionsPerAddress: 256,
    });
    const c = loadConfig(
      ['--http-headers-timeout-ms', '5000', '--http-request-timeout-ms=0', '--http-keep-alive-timeout-ms', '30000', '--max-connections', '900'],
      { DDN_MAX_CONNECTIONS_PER_ADDRESS: '0' },
    );
    assert.deepEqual(c.http, { headersTimeoutMs: 5000, requestTimeoutMs: 0, keepAliveTimeoutMs: 30_000, maxConnections: 900, maxConnectionsPerAddress: 0 });
    assert.equal(configError(['--http-headers-timeout-ms', '0']).option, '--http-headers-timeout-ms');
    assert.equal(configError(['--http-keep-alive-timeout-ms', '-1']).option, '--http-keep-alive-timeout-ms');
    assert.equal(configError(['--max-connections', 'many']).option, '--max-connections');
  });

  it('is deeply frozen', () => {
    const c = loadConfig([], {});
    assert.ok(Object.isFrozen(c));
    assert.ok(Object.isFrozen(c.ports));
    assert.ok(Object.isFrozen(c.roles));
    assert.ok(Object.isFrozen(c.publicUrls.relay));
    assert.ok(Object.isFrozen(c.relay));
    assert.throws(() => {
      (c.ports as { directory: number }).directory = 1;
    }, TypeError);
  });

  it('reads flags in both --name value and --name=value forms', () => {
    const c = loadConfig(
      [
        '--data-dir',
        '/tmp/x',
        '--host=0.0.0.0',
        '--directory-port',
        '0',
        '--relay-port=9001',
        '--cache-port',
        '9002',
        '--block-time-ms',
        '250',
        '--finality-depth',
        '2',
        '--profile',
        'openpayload',
        '--chain-id',
        'test-chain.1',
        '--allow-private-endpoints',
        '--roles',
        'cache,directory',
        '--proof-clock-skew-seconds',
        '60',
        '--log-level',
        'debug',
        '--directory-max-body-bytes',
        '2048',
        '--relay-max-envelope-bytes',
        '4096',
        '--cache-allow-plaintext=false',
      ],
      {},
    );
    assert.equal(c.dataDir, '/tmp/x');
    assert.equal(c.host, '0.0.0.0');
    assert.deepEqual(c.ports, { directory: 0, relay: 9001, cache: 9002 });
    assert.equal(c.blockIntervalMs, 250);
    assert.equal(c.finalityDepth, 2);
    assert.equal(c.profile, 'openpayload');
    assert.equal(c.chainId, 'test-chain.1');
    assert.equal(c.policy.allowPrivateEndpoints, true);
    assert.deepEqual(c.roles, ['directory', 'cache'], 'canonical order');
    assert.equal(c.proofClockSkewSeconds, 60);
    assert.equal(c.logLevel, 'debug');
    assert.equal(c.directory.maxBodyBytes, 2048);
    assert.equal(c.relay.maxHttpEnvelopeBytes, 4096);
    assert.equal(c.cache.allowPlaintext, false);
  });

  it('reads the matching DDN_* environment variables', () => {
    const c = loadConfig([], {
      DDN_DATA_DIR: '/var/ddn',
      DDN_HOST: '::1',
      DDN_DIRECTORY_PORT: '7000',
      DDN_RELAY_PORT: '7001',
      DDN_CACHE_PORT: '7002',
      DDN_BLOCK_TIME_MS: '10',
      DDN_FINALITY_DEPTH: '3',
      DDN_PROFILE: 'openpayload',
      DDN_CHAIN_ID: 'envchain',
      DDN_ALLOW_PRIVATE_ENDPOINTS: '1',
      DDN_ROLES: 'relay',
      DDN_PUBLIC_RELAY_URL: 'https://relay.example/a/, https://relay2.example',
      DDN_PUBLIC_CACHE_URL: 'https://cache.example',
      DDN_PROOF_CLOCK_SKEW_SECONDS: '30',
      DDN_LOG_LEVEL: 'warn',
      DDN_DIRECTORY_MAX_BODY_BYTES: '100',
      DDN_RELAY_MAX_ENVELOPE_BYTES: '200',
    });
    assert.equal(c.dataDir, '/var/ddn');
    assert.equal(c.host, '::1');
    assert.deepEqual(c.ports, { directory: 7000, relay: 7001, cache: 7002 });
    assert.equal(c.blockIntervalMs, 10);
    assert.equal(c.finalityDepth, 3);
    assert.equal(c.profile, 'openpayload');
    assert.equal(c.chainId, 'envchain');
    assert.equal(c.policy.allowPrivateEndpoints, true);
    assert.deepEqual(c.roles, ['relay']);
    assert.deepEqual(c.publicUrls.relay, ['https://relay.example/a', 'https://relay2.example']);
    assert.deepEqual(c.publicUrls.cache, ['https://cache.example']);
    assert.equal(c.proofClockSkewSeconds, 30);
    assert.equal(c.logLevel, 'warn');
    assert.equal(c.directory.maxBodyBytes, 100);
    assert.equal(c.relay.maxHttpEnvelopeBytes, 200);
  });

  it('accepts true/false spellings of switches, and treats empty variables as unset', () => {
    assert.equal(loadConfig([], { DDN_ALLOW_PRIVATE_ENDPOINTS: 'true' }).policy.allowPrivateEndpoints, true);
    assert.equal(loadConfig([], { DDN_ALLOW_PRIVATE_ENDPOINTS: '0' }).policy.allowPrivateEndpoints, false);
    assert.equal(loadConfig([], { DDN_ALLOW_PRIVATE_ENDPOINTS: 'FALSE' }).policy.allowPrivateEndpoints, false);
    assert.equal(loadConfig(['--allow-private-endpoints=1'], {}).policy.allowPrivateEndpoints, true);
    assert.equal(loadConfig([], { DDN_HOST: '' }).host, '127.0.0.1');
  });

  it('lets flags win over the environment', () => {
    const env = { DDN_DIRECTORY_PORT: '7000', DDN_PROFILE: 'openpayload', DDN_ALLOW_PRIVATE_ENDPOINTS: '1' };
    const c = loadConfig(['--directory-port', '7100', '--profile', 'platform', '--allow-private-endpoints=false'], env);
    assert.equal(c.ports.directory, 7100);
    assert.equal(c.profile, 'platform');
    assert.equal(c.policy.allowPrivateEndpoints, false);
    const urls = loadConfig(['--public-cache-url', 'http://a.example'], { DDN_PUBLIC_CACHE_URL: 'http://b.example' });
    assert.deepEqual(urls.publicUrls.cache, ['http://a.example'], 'a list flag replaces the variable, not appends');
  });

  it('takes repeated and comma-separated public URLs, deduplicated', () => {
    const c = loadConfig(['--public-relay-url', 'http://r1.example:9000/', '--public-relay-url=http://r2.example,http://r1.example:9000'], {});
    assert.deepEqual(c.publicUrls.relay, ['http://r1.example:9000', 'http://r2.example']);
  });

  it('hands writes to the producer by default, published at --ledger-peer-url (one origin) when given', () => {
    assert.deepEqual(loadConfig([], {}).ledgerHandOver, { on: true, peerUrl: null, maxInFlight: 16 });
    assert.deepEqual(
      loadConfig(['--ledger-hand-over', 'off', '--ledger-peer-url', 'http://10.0.0.5:8080/', '--ledger-hand-over-max', '4'], {}).ledgerHandOver,
      { on: false, peerUrl: 'http://10.0.0.5:8080', maxInFlight: 4 },
    );
    assert.equal(loadConfig([], { DDN_LEDGER_PEER_URL: 'https://dir-1.internal' }).ledgerHandOver.peerUrl, 'https://dir-1.internal');
  });

  it('takes several Directory URLs, repeated or comma-separated, in order and deduplicated', () => {
    assert.deepEqual(loadConfig([], {}).directoryUrl, []);
    const c = loadConfig(
      ['--directory-url', 'http://d1.example:8080/,http://d2.example', '--directory-url=http://d1.example:8080,https://d3.example/base/'],
      {},
    );
    assert.deepEqual(c.directoryUrl, ['http://d1.example:8080', 'http://d2.example', 'https://d3.example/base']);
    assert.ok(Object.isFrozen(c.directoryUrl));
    const env = loadConfig([], { DDN_DIRECTORY_URL: 'http://e1.example, http://e2.example' });
    assert.deepEqual(env.directoryUrl, ['http://e1.example', 'http://e2.example']);
    assert.deepEqual(loadConfig(['--directory-url', 'http://f.example'], { DDN_DIRECTORY_URL: 'http://e1.example' }).directoryUrl, ['http://f.example']);
    assert.match(
      configError(['--directory-url', 'http://d1.example,ftp://d2.example']).message,
      /--directory-url: must be an http\(s\) URL, got 'ftp:\/\/d2.example'/,
    );
    assert.equal(configError(['--directory-url', 'http://d1.example,,http://d2.example']).option, '--directory-url');
  });

  it('takes the last of a repeated single-valued flag', () => {
    assert.equal(loadConfig(['--directory-port', '1000', '--directory-port', '2000'], {}).ports.directory, 2000);
  });

  it('accepts a bracketed IPv6 host', () => {
    assert.equal(loadConfig(['--host', '[::1]'], {}).host, '::1');
  });

  const invalid: [string, string[]][] = [
    ['--data-dir', ['--data-dir', ' ']],
    ['--host', ['--host', 'a b']],
    ['--host', ['--host', 'a/b']],
    ['--directory-port', ['--directory-port', '65536']],
    ['--directory-port', ['--directory-port', 'http']],
    ['--relay-port', ['--relay-port', '-1']],
    ['--cache-port', ['--cache-port', '1.5']],
    ['--relay-port', ['--directory-port', '9000', '--relay-port', '9000']],
    ['--block-time-ms', ['--block-time-ms', '0']],
    ['--block-time-ms', ['--block-time-ms', '1e3']],
    ['--finality-depth', ['--finality-depth', '-2']],
    ['--profile', ['--profile', 'Platform']],
    ['--chain-id', ['--chain-id', 'has space']],
    ['--chain-id', ['--chain-id', 'x'.repeat(65)]],
    ['--allow-private-endpoints', ['--allow-private-endpoints=maybe']],
    ['--roles', ['--roles', 'directory,archive']],
    ['--roles', ['--roles', 'directory,,relay']],
    ['--public-relay-url', ['--public-relay-url', 'not a url']],
    ['--public-relay-url', ['--public-relay-url', 'ftp://relay.example']],
    ['--public-cache-url', ['--public-cache-url', 'https://cache.example/?q=1']],
    ['--ledger-hand-over', ['--ledger-hand-over', 'maybe']],
    ['--ledger-hand-over-max', ['--ledger-hand-over-max', '0']],
    ['--ledger-peer-url', ['--ledger-peer-url', 'http://dir.example:8080/base']],
    ['--ledger-peer-url', ['--ledger-peer-url', 'http://d1.example,http://d2.example']],
    ['--ledger-peer-url', ['--ledger-peer-url', 'ftp://dir.example']],
    ['--public-cache-url', ['--public-cache-url', 'https://user:pw@cache.example']],
    ['--proof-clock-skew-seconds', ['--proof-clock-skew-seconds', '0']],
    ['--log-level', ['--log-level', 'verbose']],
    ['--directory-max-body-bytes', ['--directory-max-body-bytes', '0']],
    ['--relay-max-envelope-bytes', ['--relay-max-envelope-bytes', 'lots']],
    ['--relay-staging-window-seconds', ['--relay-staging-window-seconds', '0']],
    ['--relay-max-sessions-per-did', ['--relay-max-sessions-per-did', '0']],
    ['--relay-live-auth', ['--relay-live-auth', 'sometimes']],
    ['--relay-live-max-sessions', ['--relay-live-max-sessions', '0']],
    ['--relay-live-max-session-buffered-bytes', ['--relay-live-max-session-buffered-bytes', '0']],
    ['--relay-live-max-buffered-bytes', ['--relay-live-max-buffered-bytes', 'x']],
    ['--relay-live-auth-timeout-ms', ['--relay-live-auth-timeout-ms', '0']],
    ['--relay-live-ping-interval-ms', ['--relay-live-ping-interval-ms', '99']],
    ['--cache-max-retention-seconds', ['--cache-max-retention-seconds', 'x']],
    ['--cache-chunk-staging-window-seconds', ['--cache-chunk-staging-window-seconds', '']],
    ['--cache-allow-plaintext', ['--cache-allow-plaintext=2']],
    ['--cache-max-bytes-per-recipient', ['--cache-max-bytes-per-recipient', '-1']],
    ['--cache-read-cache-bytes', ['--cache-read-cache-bytes', '2147483648']],
    ['--cache-storage-budget-bytes', ['--cache-storage-budget-bytes', '-1']],
    ['--storage-reserve-bytes', ['--storage-reserve-bytes', 'big']],
    ['--ledger-cache-bytes', ['--ledger-cache-bytes', '1048575']],
    ['--ledger-cache-bytes', ['--ledger-cache-bytes', '1099511627777']],
    ['--ledger-cache-bytes', ['--ledger-cache-bytes', '256MiB']],
    ['--directory-view-ttl-ms', ['--directory-view-ttl-ms', '300001']],
    ['--directory-view-ttl-ms', ['--directory-view-ttl-ms', '-1']],
    ['--host', ['--host']],
    ['--directory-port', ['--directory-port', '--relay-port', '1']],
    ['--nope', ['--nope']],
  ];
  for (const [flag, argv] of invalid) {
    it(`rejects ${JSON.stringify(argv).slice(0, 70)} naming ${flag}`, () => {
      const err = configError(argv);
      assert.equal(err.option, flag);
      assert.ok(err.message.includes(flag), err.message);
    });
  }

  it('rejects an invalid environment value naming both the variable and the flag', () => {
    const err = configError([], { DDN_BLOCK_TIME_MS: 'soon' });
    assert.equal(err.option, '--block-time-ms');
    assert.match(err.message, /DDN_BLOCK_TIME_MS/);
    assert.match(err.message, /--block-time-ms/);
    assert.match(err.message, /soon/);
    for (const [name, value] of [
      ['directory-port', '99999'],
      ['profile', 'other'],
      ['allow-private-endpoints', 'on'],
      ['roles', 'mailbox'],
      ['log-level', 'loud'],
    ] as const) {
      const e = configError([], { [envNameOf(name)]: value });
      assert.equal(e.option, `--${name}`);
      assert.ok(e.message.includes(envNameOf(name)) && e.message.includes(`--${name}`), e.message);
    }
  });

  it('live sessions: required under platform, open under openpayload by default; caps with defaults', () => {
    const platform = loadConfig([], {});
    assert.equal(platform.relay.liveAuth, 'required');
    assert.equal(platform.relay.liveMaxSessions, 10_000);
    assert.equal(platform.relay.liveMaxSessionBufferedBytes, 33_554_432);
    assert.equal(platform.relay.liveMaxBufferedBytes, 268_435_456);
    assert.equal(platform.relay.liveAuthTimeoutMs, 5000);
    assert.equal(loadConfig(['--profile', 'openpayload'], {}).relay.liveAuth, 'open');
    assert.equal(loadConfig(['--profile', 'openpayload', '--relay-live-auth', 'required'], {}).relay.liveAuth, 'required');
    assert.equal(loadConfig([], { DDN_RELAY_LIVE_AUTH: 'off' }).relay.liveAuth, 'off');
  });

  it('ignores port clashes between disabled roles', () => {
    const c = loadConfig(['--roles', 'directory', '--relay-port', '8080'], {});
    assert.deepEqual(c.roles, ['directory']);
  });

  it('rejects positional arguments', () => {
    assert.match(configError(['extra']).message, /unexpected argument 'extra'/);
  });

  it('documents every flag and its variable in the help text', () => {
    const help = configHelp();
    for (const flag of [
      '--data-dir',
      '--host',
      '--directory-port',
      '--relay-port',
      '--cache-port',
      '--block-time-ms',
      '--finality-depth',
      '--profile',
      '--chain-id',
      '--allow-private-endpoints',
      '--roles',
      '--public-relay-url',
      '--public-cache-url',
      '--proof-clock-skew-seconds',
      '--log-level',
      '--directory-max-body-bytes',
      '--relay-max-envelope-bytes',
    ]) {
      assert.ok(help.includes(flag), flag);
      assert.ok(help.includes(envNameOf(flag.slice(2))), envNameOf(flag.slice(2)));
    }
    // a flag as long as the column or longer is not run into its help text
    assert.match(help, /^ {2}--rate-limit-directory-write-target N\/PERIOD\|off\n {46}requests of class directory-write per target/m);
  });

  it("shows as each flag's default the value taken when the flag is not given", () => {
    const help = configHelp();
    const shown = (name: string) => new RegExp(`^  --${name}[ =\\[].*\\[([^\\]]*)\\]$`, 'm').exec(help)?.[1];
    const c = loadConfig([], {});
    const cases: [string, unknown][] = [
      ['data-dir', c.dataDir],
      ['host', c.host],
      ['directory-port', c.ports.directory],
      ['block-time-ms', c.blockIntervalMs],
      ['profile', c.profile],
      ['allow-private-endpoints', c.policy.allowPrivateEndpoints],
      ['directory-view-ttl-ms', c.directoryViewTtlMs],
      ['ledger-cache-bytes', c.ledgerCacheBytes],
      ['event-budget-per-owner', c.events.budgetPerOwnerPerMinute],
      ['http-body-budget-bytes', c.bodyBudget.maxBytes],
      ['export-stream-ping-interval-ms', c.directory.exportStream.pingIntervalMs],
      ['relay-staging-max-bytes', c.relay.stagingMaxBytes],
      ['cache-read-cache-bytes', c.cache.readCacheBytes],
      ['storage-reserve-bytes', c.storageReserveBytes],
      ['rate-limit-max-keys', c.rateLimit?.maxKeys],
    ];
    for (const [name, value] of cases) assert.equal(shown(name), String(value), `--${name}`);
    // defaults that depend on another option keep their words
    assert.equal(shown('log-format'), 'pretty on a terminal, else json');
    assert.equal(shown('relay-live-auth'), 'platform: required, openpayload: open');
  });
});

describe('loadConfig: request rate limits', () => {
  it('is on by default with the documented budgets, no trusted proxies and 100,000 keys', () => {
    const r = loadConfig([], {}).rateLimit;
    assert.ok(r !== null);
    assert.deepEqual(r.budgets.registration, { points: 300, seconds: 60 });
    assert.deepEqual(r.budgets['directory-write-target'], { points: 120, seconds: 60 });
    assert.deepEqual(r.budgets['cache-store'], { points: 60000, seconds: 60 });
    assert.deepEqual(r.budgets.read, { points: 60000, seconds: 60 });
    assert.deepEqual(r.trustedProxies, []);
    assert.equal(r.maxKeys, 100_000);
    assert.ok(Object.isFrozen(r.budgets));
  });

  it('turns off, scales every default, and takes per-budget overrides (absolute, or off)', () => {
    assert.equal(loadConfig(['--rate-limit', 'off'], {}).rateLimit, null);
    assert.equal(loadConfig([], { DDN_RATE_LIMIT: 'OFF' }).rateLimit, null);
    const scaled = loadConfig(['--rate-limit', '10', '--rate-limit-read', '5/10s', '--rate-limit-relay-post-target', 'off'], {}).rateLimit!;
    assert.deepEqual(scaled.budgets.registration, { points: 3000, seconds: 60 });
    assert.deepEqual(scaled.budgets['dns-challenge'], { points: 600, seconds: 60 });
    assert.deepEqual(scaled.budgets.read, { points: 5, seconds: 10 });
    assert.equal(scaled.budgets['relay-post-target'], null);
    assert.deepEqual(loadConfig(['--rate-limit', '0.5'], {}).rateLimit!.budgets['dns-challenge-target'], { points: 15, seconds: 60 });
    assert.deepEqual(loadConfig([], { DDN_RATE_LIMIT_CACHE_STORE_TARGET: '100/1h' }).rateLimit!.budgets['cache-store-target'], { points: 100, seconds: 3600 });
  });

  it('reads trusted proxies as addresses and CIDR blocks', () => {
    const r = loadConfig(['--trusted-proxies', '127.0.0.1,10.0.0.0/8', '--trusted-proxies', 'fd00::/8'], {}).rateLimit!;
    assert.deepEqual(r.trustedProxies, ['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
    assert.equal(loadConfig(['--rate-limit-max-keys', '500'], {}).rateLimit!.maxKeys, 500);
  });

  it('rejects malformed values, naming the flag', () => {
    assert.equal(configError(['--rate-limit', 'sometimes']).option, '--rate-limit');
    assert.equal(configError(['--rate-limit', '0']).option, '--rate-limit');
    assert.equal(configError(['--rate-limit-registration', '300']).option, '--rate-limit-registration');
    assert.equal(configError(['--rate-limit-read', '0/1m']).option, '--rate-limit-read');
    assert.equal(configError([], { DDN_RATE_LIMIT_CACHE_RETRIEVAL: '10/2d' }).option, '--rate-limit-cache-retrieval');
    assert.equal(configError(['--trusted-proxies', 'proxy.example']).option, '--trusted-proxies');
    assert.equal(configError(['--trusted-proxies', '10.0.0.0/40']).option, '--trusted-proxies');
    assert.equal(configError(['--rate-limit-max-keys', '1']).option, '--rate-limit-max-keys');
    assert.equal(configError(['--rate-limit', 'off', '--rate-limit-read', 'lots']).option, '--rate-limit-read', 'checked even when off');
    assert.match(configHelp(), /--rate-limit-relay-post-target N\/PERIOD\|off/);
  });
});

describe('loadConfig: --ledger substrate', () => {
  const chainArgs = ['--ledger', 'substrate', '--chain-url', 'ws://127.0.0.1:9944', '--chain-key', 'k.json'];
  const fails = (args: string[], flag: string, message: RegExp) =>
    assert.throws(
      () => loadConfig(args, {}),
      (e: unknown) => e instanceof ConfigError && e.message.startsWith(flag) && message.test(e.message),
    );

  it('is embedded by default, with no chain', () => {
    const c = loadConfig([], {});
    assert.equal(c.ledger, 'embedded');
    assert.equal(c.chain, null);
  });

  it('reads the chain endpoints (repeatable, deduplicated), the key, and the network file or the default network id', () => {
    const c = loadConfig([...chainArgs, '--chain-url', 'wss://b.example:443,ws://127.0.0.1:9944', '--network', 'net.json'], {});
    assert.deepEqual(c.chain, { urls: ['ws://127.0.0.1:9944', 'wss://b.example:443'], keyFile: 'k.json', networkFile: 'net.json', networkId: 'ddn-dev' });
    assert.deepEqual(loadConfig([...chainArgs, '--network-id', 'dev-2'], {}).chain?.networkFile, null);
    assert.equal(loadConfig([...chainArgs, '--network-id', 'dev-2'], {}).chain?.networkId, 'dev-2');
    assert.equal(loadConfig([], { DDN_LEDGER: 'substrate', DDN_CHAIN_URL: 'ws://h:1', DDN_CHAIN_KEY: 'k' }).chain?.urls[0], 'ws://h:1');
  });

  it('refuses what the chain decides, what does not fit together, and malformed values, naming the flag', () => {
    fails([...chainArgs, '--block-time-ms', '10'], '--block-time-ms', /chain decides/);
    fails([...chainArgs, '--finality-depth', '2'], '--finality-depth', /chain decides/);
    fails([...chainArgs, '--chain-id', 'x'], '--chain-id', /chain decides/);
    fails(['--ledger', 'substrate', '--chain-key', 'k'], '--chain-url', /required/);
    fails(['--ledger', 'substrate', '--chain-url', 'ws://h:1'], '--chain-key', /required/);
    fails([...chainArgs.slice(0, 2), '--chain-url', 'http://h:1', '--chain-key', 'k'], '--chain-url', /ws:\/\//);
    fails([...chainArgs, '--network', 'n.json', '--network-id', 'x'], '--network-id', /--network or --network-id/);
    fails([...chainArgs, '--network-id', 'bad id'], '--network-id', /1-64 characters/);
    fails([...chainArgs, '--roles', 'relay,cache'], '--ledger', /directory role/);
    fails(['--ledger', 'chain'], '--ledger', /one of embedded, substrate/);
    fails(['--chain-url', 'ws://h:1'], '--chain-url', /needs --ledger substrate/);
    fails(['--network', 'n.json'], '--network', /needs --ledger substrate/);
  });
});
