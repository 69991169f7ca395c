/**
 * The layer rules of src/ (ARCHITECTURE.md, "Layers"), checked by `npm run lint:boundaries` (part of `npm test`).
 * The table is layers.cjs: every folder of src/ has an allow-list of the folders it may import, checked on each
 * import (`layer-<folder>`) and on everything it reaches through other modules (`reach-<folder>`); a folder
 * missing from the table fails `every-folder-has-a-rule`. Pure files (layers.cjs, PURE) import no Node I/O
 * module, no driver and no package beyond a short list, and only other pure files. test/boundaries/ plants a
 * violation of every rule and checks that it is reported.
 */
const L = require('./layers.cjs');

const FOLDERS = Object.keys(L.MAY_IMPORT);
const anyOf = (names) => `(${names.join('|')})`;
const literal = (path) => path.replace(/[.]/g, '\\.');
/** A regular expression matching the files of a list of paths (a folder ends with `/`). */
const filesOf = (paths) => `^${anyOf(paths.map(literal))}`;
const folders = (names) => `^src/${anyOf(names)}/`;

/** The folders `folder` reaches when every module keeps to its allow-list. */
function closure(folder) {
  const seen = new Set([folder]);
  const todo = [folder];
  while (todo.length > 0) {
    for (const next of L.MAY_IMPORT[todo.pop()]) {
      if (!seen.has(next)) {
        seen.add(next);
        todo.push(next);
      }
    }
  }
  return [...seen];
}

const layerRules = FOLDERS.flatMap((folder) => [
  {
    name: `layer-${folder}`,
    comment: `src/${folder}/ imports only ${L.MAY_IMPORT[folder].join(', ') || 'nothing of ours'} (layers.cjs).`,
    severity: 'error',
    from: { path: folders([folder]) },
    to: { path: '^src/', pathNot: folders([folder, ...L.MAY_IMPORT[folder]]) },
  },
  {
    name: `reach-${folder}`,
    comment: `What src/${folder}/ reaches through other modules stays within its layers (${closure(folder).join(', ')}).`,
    severity: 'error',
    from: { path: folders([folder]) },
    to: { path: '^src/', pathNot: folders(closure(folder)), reachable: true },
  },
]);

/** The pure files: those of PURE but the platform edges. */
const pureFiles = `^(?!${anyOf(Object.keys(L.PLATFORM_EDGES).map(literal))})${anyOf(L.PURE.map(literal))}`;
const exceptionFiles = Object.keys(L.PURE_NODE_MODULE_EXCEPTIONS);
const RUNTIME = ['type-only', 'type-import', 'pre-compilation-only'];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles between modules.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    {
      name: 'roles-are-independent',
      comment: 'The Directory, the Relay and the Cache never import each other; they meet through ports/.',
      severity: 'error',
      from: { path: folders(L.ROLES) },
      to: { path: folders(L.ROLES), pathNot: '^src/$1/' },
    },
    {
      name: 'roles-never-reach-a-store',
      comment: 'A role reaches storage and other nodes through ports/, never a store, an adapter, the app, the CLI or a driver, even through other modules.',
      severity: 'error',
      from: { path: folders(L.ROLES) },
      to: { path: [folders(['store', 'adapters', 'app', 'cli']), `(^|/)node_modules/${anyOf(L.DRIVERS)}/`], reachable: true },
    },
    {
      name: 'drivers-only-in-store',
      comment: 'Only src/store/ imports a database driver (better-sqlite3, pg).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/store/' },
      to: { path: `(^|/)node_modules/${anyOf([...L.DRIVERS, 'pg-[^/]+'])}/` },
    },
    {
      name: 'pure-no-node-io',
      comment: `Pure files import no Node module but ${L.PURE_NODE_MODULES.join(', ')}: no file, socket, process, thread or timer.`,
      severity: 'error',
      from: { path: pureFiles, pathNot: filesOf(exceptionFiles) },
      to: { dependencyTypes: ['core'], pathNot: `^(node:)?${anyOf(L.PURE_NODE_MODULES)}$` },
    },
    ...exceptionFiles.map((file) => ({
      name: 'pure-no-node-io',
      comment: `${file} may also import ${L.PURE_NODE_MODULE_EXCEPTIONS[file].join(', ')} (layers.cjs says why).`,
      severity: 'error',
      from: { path: filesOf([file]) },
      to: { dependencyTypes: ['core'], pathNot: `^(node:)?${anyOf([...L.PURE_NODE_MODULES, ...L.PURE_NODE_MODULE_EXCEPTIONS[file]])}$` },
    })),
    {
      name: 'pure-packages-only',
      comment: `Pure files import no package but ${L.PURE_PACKAGES.join(', ')}: no driver, transport or logger.`,
      severity: 'error',
      from: { path: pureFiles },
      to: { dependencyTypesNot: ['core', 'local', 'aliased-tsconfig', ...RUNTIME], pathNot: `(^|/)node_modules/${anyOf(L.PURE_PACKAGES)}/` },
    },
    {
      name: 'pure-imports-pure',
      comment: 'A pure file imports only pure files (type-only imports aside; not the platform edges of layers.cjs), so purity holds through every import.',
      severity: 'error',
      from: { path: pureFiles },
      to: { path: '^src/', pathNot: pureFiles, dependencyTypesNot: RUNTIME },
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
  required: [
    {
      name: 'every-folder-has-a-rule',
      comment: 'Every file of src/ lies in a folder of layers.cjs: add a new folder there (and to ARCHITECTURE.md) before using it.',
      severity: 'error',
      module: { path: '^src/', pathNot: folders(FOLDERS) },
      // Nothing matches: a module this rule applies to always violates it.
      to: { path: '^$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
