/**
 * The layer rules of src/ (ARCHITECTURE.md, "Layers"), checked by `npm run lint:boundaries` (part of `npm test`).
 * Lower layers name what they may import (an allow-list); the roles, events, stores and adapters name what they
 * must not. A new folder under src/ starts outside every allow-list: add it here and to ARCHITECTURE.md.
 */
const ROLES = '^src/(directory|relay|cache)/';

/** A rule: files under `from` may import only the listed src folders (and packages). */
function onlyFrom(name, from, allowed, comment) {
  return {
    name,
    comment,
    severity: 'error',
    from: { path: `^src/${from}/` },
    to: { path: '^src/', pathNot: `^src/(${[from, ...allowed].join('|')})/` },
  };
}

/** A rule: files under `from` must not import the listed src folders. */
function never(name, from, forbidden, comment) {
  return {
    name,
    comment,
    severity: 'error',
    from: { path: `^src/(${from.join('|')})/` },
    to: { path: `^src/(${forbidden.join('|')})/` },
  };
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles between modules.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    onlyFrom('base-is-a-leaf', 'base', [], 'base/ (bytes, clock, errors, small utilities) imports nothing of ours.'),
    onlyFrom('codec-pure', 'codec', ['base'], 'Encodings depend on base only.'),
    onlyFrom('crypto-pure', 'crypto', ['base', 'codec'], 'Crypto primitives depend on base and codec only.'),
    onlyFrom('wire-is-shapes', 'wire', [], 'Wire shapes (TypeBox schemas) import nothing of ours: the routes and the SDK both import them.'),
    onlyFrom('protocol-pure', 'protocol', ['base', 'codec', 'crypto'], 'Wire formats and protocol rules import no role, store or transport.'),
    onlyFrom('ledger-below-roles', 'ledger', ['base', 'codec', 'crypto', 'protocol'], 'The ledger (state, runtime) imports no role, store or transport.'),
    onlyFrom('ports-are-interfaces', 'ports', ['base', 'codec', 'crypto', 'protocol'], 'Ports declare what the roles need; they import no implementation.'),
    onlyFrom('shared-rules', 'shared', ['base', 'codec', 'crypto', 'protocol', 'ports'], 'Use-case code more than one role runs (node authentication).'),
    onlyFrom('outbound-http', 'outbound', ['base', 'codec', 'crypto', 'protocol'], 'Outbound HTTP (the SSRF guard, timeouts, size caps) knows no role.'),
    onlyFrom(
      'sdk-is-publishable',
      'client',
      ['base', 'codec', 'crypto', 'protocol', 'wire'],
      'The SDK (ddn/client) imports no server code: no role, store, port, adapter, transport or app (the wire shapes it shares with the routes are its own).',
    ),
    {
      name: 'roles-are-independent',
      comment: 'The Directory, the Relay and the Cache never import each other; they meet through ports/.',
      severity: 'error',
      from: { path: ROLES },
      to: { path: ROLES, pathNot: '^src/$1/' },
    },
    never(
      'roles-use-ports',
      ['directory', 'relay', 'cache'],
      ['app', 'cli', 'client', 'store', 'adapters', 'events'],
      'A role reaches storage and other nodes through ports/; the app picks the implementation.',
    ),
    never(
      'events-use-ports',
      ['events'],
      ['directory', 'relay', 'cache', 'app', 'cli', 'client', 'store', 'adapters', 'http'],
      'Event processing sees the roles only through the events of ports/node-events.ts.',
    ),
    never(
      'http-knows-no-role',
      ['http'],
      ['directory', 'relay', 'cache', 'events', 'store', 'adapters', 'app', 'cli', 'client'],
      'The HTTP plumbing serves any role.',
    ),
    never(
      'stores-implement-ports',
      ['store'],
      ['app', 'cli', 'client', 'http', 'events', 'adapters', 'outbound'],
      'Stores implement ports; they serve no request and call no node.',
    ),
    never(
      'adapters-implement-ports',
      ['adapters'],
      ['directory', 'relay', 'cache', 'store', 'http', 'app', 'cli'],
      'HTTP implementations of ports for a process without the Directory.',
    ),
    {
      name: 'app-is-the-composition-root',
      comment: 'Only the CLI (and bin/) starts a node; nothing else imports app/.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(app|cli)/' },
      to: { path: '^src/app/' },
    },
    {
      name: 'cli-is-the-top',
      comment: 'Nothing imports the CLI.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'src-not-to-test',
      comment: 'Production code never imports tests, benchmarks or examples.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|examples)/' },
    },
    {
      name: 'src-not-to-dev-deps',
      comment: 'Production code imports runtime dependencies only (the explorer UI is bundled by esbuild at build time, so preact is a build dependency).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/explorer/ui/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
