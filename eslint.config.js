// ESLint (flat config): @eslint/js and typescript-eslint recommended rules over src/, test/, bench/, examples/,
// scripts/ and bin/; type-aware rules (promises) over the TypeScript files; no clock or environment read in the
// pure files of layers.cjs. `npm run lint` (part of `npm test`). Formatting is prettier's job (`npm run format`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import layers from './layers.cjs';

/** The pure files of layers.cjs as globs, and their platform edges, which are not pure. */
const pureFiles = layers.PURE.map((path) => (path.endsWith('/') ? `${path}**/*.ts` : path));
const platformEdges = Object.keys(layers.PLATFORM_EDGES);
const pureOnly = (what) => `${what} in a pure file (layers.cjs, PURE): take it as a parameter (a Clock, a config value).`;

/** Node's globals, for the plain JavaScript files (TypeScript files are checked by tsc). */
const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'globalThis',
    'fetch',
    'performance',
    'AbortController',
    'AbortSignal',
    'TextEncoder',
    'TextDecoder',
    'structuredClone',
    'queueMicrotask',
    'module',
    'require',
    '__dirname',
  ].map((g) => [g, 'readonly']),
);

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'bench/results/',
      'data/',
      '.ddn-data/',
      '.scratch/',
      '.test-src-*/',
      '.test-js-*/',
      'docs/grafana/',
      'test/support/openapi-types/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: nodeGlobals },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      eqeqeq: ['error', 'smart'],
      // The protocol's name and alias rules match control characters on purpose.
      'no-control-regex': 'off',
      // A variable declared before the closures that read it and assigned once after them stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      'no-console': 'off',
    },
  },
  // No function over 80 lines of code in src/ (CONTRIBUTING.md, "Rules of the house"). An exception says why on the
  // line before it: `// eslint-disable-next-line max-lines-per-function -- <a table / one scanner …>`.
  {
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
  {
    // Type-aware: a promise is awaited, returned, or handed to `void` where dropping it is meant (with the reason).
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's describe/it/test return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // The explorer's UI is its own TypeScript project (DOM, preact), outside tsconfig.json.
    files: ['src/explorer/ui/**'],
    languageOptions: { parserOptions: { projectService: false, project: './tsconfig.explorer.json', tsconfigRootDir: import.meta.dirname } },
  },
  {
    // Pure layers read neither the clock nor the environment: time and settings come in as parameters.
    files: pureFiles,
    ignores: platformEdges,
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: pureOnly('Date.now()') },
        { object: 'performance', property: 'now', message: pureOnly('performance.now()') },
        { object: 'globalThis', property: 'performance', message: pureOnly('performance') },
        { object: 'process', property: 'env', message: pureOnly('process.env') },
        { object: 'process', property: 'hrtime', message: pureOnly('process.hrtime') },
        { object: 'globalThis', property: 'process', message: pureOnly('process') },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: pureOnly('new Date() (the current time)') },
        { selector: "CallExpression[callee.name='Date']", message: pureOnly('Date() (the current time)') },
      ],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
