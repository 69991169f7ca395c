#!/usr/bin/env node
// `npm run typecheck` and `npm run lint` in one process, sharing one TypeScript program per tsconfig (`npm test`):
// tsc's checks of tsconfig.json's and tsconfig.explorer.json's programs, then eslint (eslint.config.js) with those
// programs as its type information (typescript-eslint's parserOptions.programs) instead of building its own
// through the project service — the type-aware rules then read the types the check already computed. Exits 1 if
// either reports an error (eslint's warnings are printed and do not fail, as with `eslint .`).
import ts from 'typescript';
import { ESLint } from 'eslint';

/** The program of one tsconfig file, as `tsc -p FILE --noEmit` builds it. */
function program(configFile) {
  const host = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail([d]) };
  const parsed = ts.getParsedCommandLineOfConfigFile(configFile, { noEmit: true }, host);
  if (parsed.errors.length > 0) fail(parsed.errors);
  return ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options, projectReferences: parsed.projectReferences });
}

const formatHost = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => process.cwd(), getNewLine: () => '\n' };
/** As tsc prints them: in colour with the source line on a terminal, one line each otherwise. */
const format = (diagnostics) =>
  process.stderr.isTTY ? ts.formatDiagnosticsWithColorAndContext(diagnostics, formatHost) : ts.formatDiagnostics(diagnostics, formatHost);
function fail(diagnostics) {
  process.stderr.write(format(diagnostics));
  process.exit(1);
}

const programs = [program('tsconfig.json'), program('tsconfig.explorer.json')];
const diagnostics = programs.flatMap((p) => ts.getPreEmitDiagnostics(p));
if (diagnostics.length > 0) {
  process.stderr.write(format(diagnostics));
  process.stderr.write(`typecheck: ${diagnostics.length} error(s)\n`);
}

const eslint = new ESLint({
  overrideConfig: { files: ['**/*.ts', '**/*.tsx'], languageOptions: { parserOptions: { projectService: false, programs } } },
});
const results = await eslint.lintFiles(['.']);
const text = await (await eslint.loadFormatter('stylish')).format(results);
if (text !== '') process.stdout.write(text);
const lintErrors = results.reduce((n, r) => n + r.errorCount + r.fatalErrorCount, 0);
process.exit(diagnostics.length > 0 || lintErrors > 0 ? 1 : 0);
