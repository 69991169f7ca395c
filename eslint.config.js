// ESLint (flat config): @eslint/js and typescript-eslint recommended rules over src/, test/, bench/, examples/,
// scripts/ and bin/. `npm run lint` (part of `npm test`). Formatting is prettier's job (`npm run format`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
  { ignores: ['dist/', 'node_modules/', 'bench/results/', 'data/', '.ddn-data/', '.scratch/', 'docs/grafana/'] },
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
    // TODO(issue 41 item 1): src/http/ and the route files are being restructured (one route object per route);
    // the lead removes this exemption after that merge.
    ignores: ['src/http/**', 'src/**/*routes*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
