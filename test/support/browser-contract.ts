/**
 * The OpenAPI contract on what a page in Chromium reads from a ddn server: the browser's own requests (the
 * explorer's `fetch` calls), which no `fetch` wrapper or `fastify.inject` of the test process sees. Each answer
 * playwright reports from the server's origin goes through the same check as an injected exchange
 * (`injectContract`, test/support/inject-contract.ts): a JSON answer against the route's schema for its status,
 * its error code recorded, an accepted JSON request body against the route's request schema. Problems are kept and
 * thrown by {@link BrowserContract.assertClean}, called after each test so a violation fails the test whose page
 * read it.
 */
import type { Page, Response } from 'playwright-core';
import type { HttpServer } from '../../src/http/server.js';
import { injectContract } from './inject-contract.js';
import { JSON_TYPES } from './openapi-check.js';

export class BrowserContract {
  private readonly pending = new Set<Promise<void>>();
  private readonly problems: string[] = [];
  private readonly check: ReturnType<typeof injectContract>;
  /** JSON answers checked so far (a test can see the check ran). */
  checkedJson = 0;

  constructor(
    server: Pick<HttpServer, 'fastify'>,
    private readonly origin: string,
  ) {
    this.check = injectContract(server);
  }

  /** Checks every answer `page` receives from the server's origin from now on. */
  watch(page: Page): void {
    page.on('response', (r) => {
      if (new URL(r.url()).origin !== this.origin) return;
      const p = this.checkOne(r).finally(() => this.pending.delete(p));
      this.pending.add(p);
    });
  }

  private async checkOne(r: Response): Promise<void> {
    const url = new URL(r.url());
    const request = r.request();
    let text: string;
    try {
      text = await r.text();
    } catch {
      return; // a page that navigated away before the body arrived: nothing was read
    }
    try {
      await this.check({
        method: request.method(),
        url: url.pathname + url.search,
        status: r.status(),
        contentType: r.headers()['content-type'],
        text,
        payload: request.postData() ?? undefined,
      });
      if (JSON_TYPES.test(r.headers()['content-type'] ?? '')) this.checkedJson++;
    } catch (e) {
      this.problems.push(e instanceof Error ? e.message : String(e));
    }
  }

  /** Waits for the answers still being checked; throws naming every problem seen since the last call. */
  async assertClean(): Promise<void> {
    await Promise.all([...this.pending]);
    const seen = this.problems.splice(0);
    if (seen.length > 0) throw new Error(`the browser read answers the OpenAPI document does not describe:\n${seen.join('\n')}`);
  }
}
