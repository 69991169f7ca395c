/**
 * How a leaf command meets SIGINT/SIGTERM (src/cli/command.ts), in-process with a fake process: a command that
 * does not ask for the signal is cut short with a JSON summary of its recorded progress (130, 143 for SIGTERM);
 * one that asks for it (as `receive --follow` does) ends as it chooses: its own result, or an `interrupted` error.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { leaf } from '../../src/cli/command.js';
import type { CliIo } from '../../src/cli/io.js';

function io(signal: NodeJS.Signals, out: string[]): CliIo {
  return { env: {}, stdout: (t) => void out.push(t), stderr: () => {}, shutdownSignal: () => Promise.resolve(signal) };
}

const never = new Promise<never>(() => {});

describe('a leaf command and signals', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`not asked for: ${signal} ends it with a summary of its progress, exit ${code}`, async () => {
      const out: string[] = [];
      const cmd = leaf('ddn t', {
        summary: 't',
        synopsis: '',
        options: {},
        async run(ctx) {
          ctx.progress({ sent_bytes: 10 });
          ctx.progress({ sent_envelopes: 1 });
          return never;
        },
      });
      assert.equal(await cmd.run([], io(signal, out)), code);
      const summary = JSON.parse(out.join('')) as Record<string, unknown>;
      assert.deepEqual([summary.code, summary.signal, summary.sent_bytes, summary.sent_envelopes], ['interrupted', signal, 10, 1]);
    });
  }

  it('asked for: the command ends with its own result and exit status', async () => {
    const out: string[] = [];
    const cmd = leaf('ddn t', {
      summary: 't',
      synopsis: '',
      options: {},
      async run(ctx) {
        return { stopped_by: await ctx.io.shutdownSignal() };
      },
    });
    assert.equal(await cmd.run([], io('SIGINT', out)), 0);
    assert.deepEqual(JSON.parse(out.join('')), { stopped_by: 'SIGINT' });
  });

  it('asked for, then an error with code interrupted: that error is the summary, exit 130 or 143 by its signal', async () => {
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      const out: string[] = [];
      const cmd = leaf('ddn t', {
        summary: 't',
        synopsis: '',
        options: {},
        async run(ctx) {
          const s = await ctx.io.shutdownSignal();
          throw Object.assign(new Error('stopped after 3 of 9 chunks; run the same command again to resume'), { code: 'interrupted', signal: s });
        },
      });
      assert.equal(await cmd.run([], io(signal, out)), code);
      const r = JSON.parse(out.join('')) as Record<string, unknown>;
      assert.deepEqual([r.code, r.message], ['interrupted', 'stopped after 3 of 9 chunks; run the same command again to resume']);
    }
  });
});
