/**
 * A storage that ran out of space answers 507 `insufficient_storage` on every route, never 500: SQLite's
 * `SQLITE_FULL` and I/O errors, the file system's ENOSPC, PostgreSQL's `53100 disk_full` (src/base/storage-errors.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { createHttpServer } from '../../src/http/server.js';

const failures: Record<string, () => unknown> = {
  'SQLITE_FULL from better-sqlite3': () => new Database.SqliteError('database or disk is full', 'SQLITE_FULL'),
  'SQLITE_IOERR_WRITE from better-sqlite3': () => new Database.SqliteError('disk I/O error', 'SQLITE_IOERR_WRITE'),
  'ENOSPC from the file system': () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }),
  'PostgreSQL 53100 disk_full': () => Object.assign(new Error('could not extend file'), { code: '53100' }),
};

describe('storage failures on HTTP routes', () => {
  for (const [name, error] of Object.entries(failures)) {
    it(`answers ${name} with 507 insufficient_storage`, async () => {
      const server = createHttpServer({ name: 'directory', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'payload_too_large' });
      server.route('GET', '/write', () => {
        throw error();
      });
      const res = await server.fastify.inject({ method: 'GET', url: '/write' });
      assert.equal(res.statusCode, 507);
      assert.equal(res.json<{ code: string; error: string }>().code, 'insufficient_storage');
      await server.fastify.close();
    });
  }

  it('still answers any other failure with 500 internal_error', async () => {
    const server = createHttpServer({ name: 'directory', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'payload_too_large' });
    server.route('GET', '/write', () => {
      throw new Database.SqliteError('UNIQUE constraint failed', 'SQLITE_CONSTRAINT_UNIQUE');
    });
    const res = await server.fastify.inject({ method: 'GET', url: '/write' });
    assert.deepEqual([res.statusCode, res.json<{ code: string }>().code], [500, 'internal_error']);
    await server.fastify.close();
  });
});
