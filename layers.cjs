/**
 * The layer table of src/ (ARCHITECTURE.md, "Layers"): what each folder may import, and which files are pure.
 * One source for `.dependency-cruiser.cjs` (imports), `eslint.config.js` (clock and environment reads) and
 * test/boundaries/ (which plants a violation of every rule and checks ARCHITECTURE.md's table against this one).
 * A folder of src/ missing here fails `npm run lint:boundaries` (rule `every-folder-has-a-rule`).
 */

/** The layers every folder above the primitives may build on. */
const CORE = ['base', 'codec', 'crypto', 'wire', 'protocol'];

/** Every folder but the composition root (app) and the command (cli). */
const BELOW_APP = [
  'adapters',
  'base',
  'cache',
  'chain',
  'client',
  'codec',
  'crypto',
  'directory',
  'events',
  'explorer',
  'http',
  'ledger',
  'mirror',
  'outbound',
  'ports',
  'protocol',
  'relay',
  'shared',
  'store',
  'wire',
];

/**
 * Folder → the src/ folders its files may import (besides their own). Everything else of ours is forbidden.
 * Type-only imports count too: a folder that may not import another may not name its types either.
 */
const MAY_IMPORT = {
  base: [],
  wire: [],
  codec: ['base'],
  crypto: ['base', 'codec'],
  protocol: ['base', 'codec', 'crypto', 'wire'],
  ledger: CORE,
  chain: [...CORE, 'ledger'],
  ports: CORE,
  shared: [...CORE, 'ports'],
  outbound: CORE,
  http: [...CORE, 'ports'],
  client: CORE,
  explorer: ['base', 'wire', 'http'],
  mirror: [...CORE, 'ledger', 'http'],
  directory: [...CORE, 'ledger', 'ports', 'shared', 'http', 'outbound', 'explorer'],
  relay: [...CORE, 'ledger', 'ports', 'shared', 'http', 'outbound'],
  cache: [...CORE, 'ledger', 'ports', 'shared', 'http', 'outbound'],
  events: [...CORE, 'ledger', 'ports', 'outbound'],
  adapters: [...CORE, 'ports', 'outbound', 'client', 'events'],
  // Stores implement the interfaces their users declare, some of which live in a role (`*-store.ts`).
  store: [...CORE, 'ledger', 'ports', 'directory', 'relay', 'cache'],
  app: BELOW_APP,
  cli: [...BELOW_APP, 'app'],
};

/** The roles: they never import each other, and never reach a store, an adapter, the app or the CLI. */
const ROLES = ['directory', 'relay', 'cache'];

/**
 * The pure files: no Node I/O module, no database driver, no package beyond PURE_PACKAGES, no clock read
 * (`Date.now()`, `new Date()`, `performance.now()`), no environment (`process.env`); they import only pure
 * files (type-only imports aside), so the rule holds transitively. Time comes in as a parameter.
 * Paths relative to the repository; a folder ends with `/`.
 */
const PURE = [
  'src/base/bytes.ts',
  'src/base/errors.ts',
  'src/base/guards.ts',
  'src/base/json-text.ts',
  'src/base/serial-queue.ts',
  'src/base/storage-errors.ts',
  'src/base/thread-deaths.ts',
  'src/codec/',
  'src/crypto/',
  'src/wire/',
  'src/protocol/',
  'src/ports/',
  'src/ledger/',
];

/** Files inside a pure folder that are its edge to the platform, and why (they are not pure). */
const PLATFORM_EDGES = {
  'src/crypto/verify-thread.ts': 'the verifier thread: starts its worker and counts the worker deaths against the clock',
  'src/crypto/verify-worker.ts': "the verifier thread's body (node:worker_threads)",
  'src/ledger/chain.ts':
    'the ledger machinery: builds its parts, handing admission the end of an event-loop turn (setImmediate) that a group of admissions waits for',
  'src/ledger/production.ts': "the ledger machinery (block production): the producer's timer and the build duration (performance.now) of its metric",
};

/** Node modules a pure file may import (no I/O in them), and the one pure file with one more. */
const PURE_NODE_MODULES = ['crypto', 'buffer'];
const PURE_NODE_MODULE_EXCEPTIONS = {
  'src/protocol/public-endpoint.ts': ['net'], // BlockList and isIP parse addresses; no socket is opened
  'src/crypto/ed25519-sodium.ts': ['module'], // createRequire loads the libsodium addon, once per thread
};

/** Packages a pure file may import: encodings, hashes, curves, schemas. */
const PURE_PACKAGES = ['@noble/curves', '@noble/hashes', '@scure/base', 'cborg', 'typebox'];

/** Database drivers: only src/store/ imports them. */
const DRIVERS = ['better-sqlite3', 'pg'];

module.exports = { MAY_IMPORT, ROLES, PURE, PLATFORM_EDGES, PURE_NODE_MODULES, PURE_NODE_MODULE_EXCEPTIONS, PURE_PACKAGES, DRIVERS };
