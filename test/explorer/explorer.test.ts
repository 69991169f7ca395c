/**
 * The web explorer end to end in headless Chromium (Debian's `chromium`, driven by playwright-core): a Directory
 * with real SQLite ledger, `/health` and `/metrics`, listening on loopback; the bundle built with esbuild as
 * `npm run build` does. Every page loads and shows what it should, with landmarks, labels and one h1; the DID
 * and policy pages are kept as screenshots in test-artifacts/.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildExplorer } from '../../scripts/build-explorer.mjs';
import { registerHealthRoute } from '../../src/app/health.js';
import { NodeMetrics, registerMetricsRoute } from '../../src/app/metrics.js';
import { buildInfo } from '../../src/app/version.js';
import { BrowserContract } from '../support/browser-contract.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { kid, mutate, registerDid, registerFixture, type Fixture } from '../support/directory-flows.js';
import { registerApplication } from '../support/application-flows.js';
import { operatorOf, registerNamed, type Operator } from '../support/persona-flows.js';
import { policyJson, registerServiceDid, rule, target, writeV3, type ServiceDid } from '../support/policy-flows.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(process.cwd(), 'test-artifacts');

/**
 * A plan with every kind of edge: forward → store on failure, forward ⇉ archive always (a fork); with `gate`
 * (persona scopes only), a RequireProfile entry step → forward on success.
 */
function richPlan(relay: ServiceDid, cache: ServiceDid, gate: boolean): Record<string, unknown> {
  const steps: Record<string, unknown>[] = [
    { id: 'fwd', operation: 'Forward', targets: [target(relay, 'relay')] },
    { id: 'store', operation: 'Store', targets: [target(cache, 'cache')], desired_replicas: 1, required_replicas: 1 },
    { id: 'archive', operation: 'Archive', targets: [target(cache, 'archive')] },
  ];
  const transitions: Record<string, unknown>[] = [
    { from: 'fwd', to: 'store', trigger: 'Failure' },
    { from: 'fwd', to: 'archive', trigger: 'Always', mode: 'Fork' },
  ];
  if (gate) {
    steps.unshift({ id: 'gate', operation: 'RequireProfile' });
    transitions.unshift({ from: 'gate', to: 'fwd', trigger: 'Success' });
  }
  return { type: 'DeliveryPlan/v1', entry_step: gate ? 'gate' : 'fwd', steps, transitions };
}

/** The page's landmarks and headings: one banner, one labelled nav, one search form with a labelled box, one main, one h1. */
async function assertAccessible(page: Page, h1: string | RegExp): Promise<void> {
  assert.equal(await page.locator('header').count(), 1);
  assert.equal(await page.locator('nav[aria-label="Explorer"]').count(), 1);
  assert.equal(await page.locator('main#main').count(), 1);
  assert.equal(await page.getByRole('search').count(), 1);
  assert.equal(await page.getByLabel('Search').first().getAttribute('id'), 'q');
  const headings = await page.locator('h1').allTextContents();
  assert.equal(headings.length, 1, `one h1: ${JSON.stringify(headings)}`);
  if (typeof h1 === 'string') assert.equal(headings[0], h1);
  else assert.match(headings[0]!, h1);
  for (const svg of await page.locator('svg[role="img"]').all()) {
    const named = (await svg.getAttribute('aria-label')) ?? (await svg.getAttribute('aria-labelledby'));
    assert.ok(named, 'every drawing has an accessible name');
  }
  assert.equal(await page.locator('html').getAttribute('lang'), 'en');
}

describe('web explorer in Chromium', () => {
  let h: DirectoryHarness;
  let base: string;
  let browser: Browser;
  let page: Page;
  let fx: Fixture;
  let op: Operator;
  const consoleErrors: string[] = [];
  /** Every answer of 400 or more the pages got: the tour of a healthy ledger must cause none. */
  const failedResources: string[] = [];
  /** Every JSON answer the pages read from the Directory, checked against its OpenAPI document. */
  let contract: BrowserContract;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
    await buildExplorer();
    mkdirSync(ARTIFACTS, { recursive: true });
    const metrics = new NodeMetrics(buildInfo());
    h = await startDirectory({
      observer: metrics.httpObserver('directory'),
      moreRoutes: (server, ledger) => {
        registerHealthRoute(server, { roles: ['directory'], profile: 'platform', chainId: 'ddn-test', ledger, isReady: () => true });
        registerMetricsRoute(server, metrics, { token: null, loopback: true });
      },
    });
    metrics.watchLedger(h.ledger);
    await h.server.fastify.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(h.server.fastify.server.address() as AddressInfo).port}`;

    // A DID with one of everything, two services, a policy with a branching plan; a persona; an application.
    const relay = await registerServiceDid(h, 60, [{ fragment: 'relay', kind: 'Relay' }]);
    const cache = await registerServiceDid(h, 61, [
      { fragment: 'cache', kind: 'Cache' },
      { fragment: 'archive', kind: 'Archive' },
    ]);
    fx = await registerFixture(h, 62);
    const inbox = { id: kid(fx.did, 'inbox'), type: 'PlatformCacheService', serviceEndpoint: ['https://cache.example/inbox', 'https://cache2.example/inbox'] };
    await mutate(h, fx.did, fx.key, 'AddService', { service: inbox });
    await mutate(h, fx.did, fx.key, 'add_alias', { alias: 'explorer62' });
    await writeV3(h, fx.key, 'did', fx.did, {
      action: 'set_policy_v3',
      policy: policyJson('DID', fx.did, fx.did, [rule('main', 1, richPlan(relay, cache, false))]),
    });
    op = await operatorOf(h, 63);
    await registerNamed(h, 'explorershop', op);
    await writeV3(h, op.key, 'persona', 'explorershop', {
      action: 'set_policy_v3',
      policy: policyJson('PERSONA', 'explorershop', op.did, [rule('only', 1, richPlan(relay, cache, true))]),
    });
    await registerApplication(h, 'explorer.app', op);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    contract = new BrowserContract(h.server, base);
    contract.watch(page);
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    page.on('response', (r) => {
      if (r.status() >= 400) failedResources.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
  });

  afterEach(async () => {
    await contract?.assertClean();
  });

  after(async () => {
    await browser?.close();
    await h?.close();
  });

  it('serves one page for every explorer address, the bundle from the package, and 404 for an unknown asset', async () => {
    const html = await fetch(`${base}/explorer/did/${fx.did}`);
    assert.equal(html.status, 200);
    assert.match(html.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(html.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    const text = await html.text();
    assert.match(text, /<script type="module" src="\/explorer\/assets\/app\.js"><\/script>/);
    assert.doesNotMatch(text, /https?:\/\//, 'nothing from another origin');
    const js = await fetch(`${base}/explorer/assets/app.js`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.ok((await js.text()).length > 10_000);
    assert.match((await fetch(`${base}/explorer/assets/app.css`)).headers.get('content-type') ?? '', /^text\/css/);
    const missing = await fetch(`${base}/explorer/assets/nope.js`);
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { code: string }).code, 'not_found');
  });

  it('DID page: record, aliases, services with a link each, keys, devices and history', async () => {
    await page.goto(`${base}/explorer/did/${fx.did}`);
    await page.getByRole('heading', { name: 'History' }).waitFor();
    await page.locator('table.history tbody tr').first().waitFor();
    await assertAccessible(page, fx.did);
    const main = page.locator('main');
    for (const section of ['Record', 'Aliases', 'Services', 'Verification methods', 'Key agreement', 'Devices', 'History']) {
      assert.equal(await main.getByRole('heading', { name: section, exact: true }).count(), 1, section);
    }
    const aliases = await page.locator('section[aria-labelledby="aliases"] li').allTextContents();
    assert.deepEqual(aliases.sort(), ['explorer62', fx.alias].sort());
    const serviceLinks = await page.locator('section[aria-labelledby="services"] a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(serviceLinks, ['https://relay.example/1', 'https://cache.example/inbox', 'https://cache2.example/inbox']);
    const keys = await page.locator('section[aria-labelledby="keys"] tbody tr').count();
    assert.equal(keys, 2);
    assert.match(await page.locator('section[aria-labelledby="devices"]').innerText(), /dev-1/);
    const actions = await page.locator('table.history tbody .action').allTextContents();
    assert.deepEqual(actions, ['set_policy_v3', 'add_alias', 'AddService', 'add_device', 'register_did']);
    assert.match(await page.locator('table.history tbody tr').nth(1).innerText(), /alias\s+explorer62/);
    await page.screenshot({ path: join(ARTIFACTS, 'explorer-did.png'), fullPage: true });

    // the policy link leads to the DID's policy page
    await page.getByRole('link', { name: 'view the delivery policy' }).click();
    await page.waitForURL(/\/explorer\/policy\/did\//);
    await page.locator('svg.plan-graph').waitFor();
    await assertAccessible(page, `Delivery policy of ${fx.did}`);
    assert.deepEqual(await page.locator('svg.plan-graph g.transition text').allTextContents(), ['Failure', 'Always (fork)']);
  });

  it('policy page: the delivery plan drawn as a graph of steps and transitions', async () => {
    await page.goto(`${base}/explorer/policy/persona/explorershop`);
    await page.locator('svg.plan-graph').waitFor();
    await assertAccessible(page, 'Delivery policy of explorershop');
    assert.match(await page.locator('main').innerText(), /PERSONA explorershop/);
    const graph = page.locator('svg.plan-graph');
    assert.deepEqual(
      (await graph.locator('g.step .step-op').allTextContents()).map((t) => t.replace('▶ ', '')),
      ['RequireProfile', 'Forward', 'Store', 'Archive'],
    );
    assert.equal(await graph.locator('g.step.entry').count(), 1);
    assert.match(await graph.locator('g.step.entry').innerHTML(), /gate/);
    assert.equal(await graph.locator('g.transition').count(), 3);
    assert.deepEqual(await graph.locator('g.transition text').allTextContents(), ['Success', 'Failure', 'Always (fork)']);
    assert.equal(await graph.locator('g.transition path[stroke-dasharray]').count(), 1, 'the fork is dashed');
    assert.match((await graph.locator('desc').textContent()) ?? '', /gate to fwd on Success; fwd to store on Failure; fwd to archive on Always/);
    // steps of later columns sit to the right of earlier ones
    const xOf = async (id: string) => Number(await graph.locator('g.step').filter({ hasText: id }).locator('rect').getAttribute('x'));
    assert.ok((await xOf('gate')) < (await xOf('fwd')) && (await xOf('fwd')) < (await xOf('store')));
    assert.match(await page.locator('main').innerText(), /Revision\s+1/);
    await page.screenshot({ path: join(ARTIFACTS, 'explorer-policy.png'), fullPage: true });
  });

  it('home page: counts, the latest operations with their subjects linked, the latest blocks', async () => {
    await page.goto(`${base}/explorer/`);
    await page.locator('table.recent-operations tbody tr').first().waitFor();
    await assertAccessible(page, 'ddn explorer');
    const counts = await page.locator('ul.counts li').allInnerTexts();
    // DIDs: the two service DIDs, the fixture, the operator
    assert.deepEqual(
      counts.map((c) => c.replace(/\s+/g, ' ').trim()),
      [
        '4 DIDs',
        '1 Personas',
        '1 Applications',
        `${((await (await fetch(`${base}/overview`)).json()) as { counts: { operations: number } }).counts.operations} Operations`,
      ],
    );
    const first = page.locator('table.recent-operations tbody tr').first();
    assert.match(await first.innerText(), /register_application\s+application explorer\.app\s+success/i);
    assert.equal(await first.getByRole('link', { name: 'explorer.app' }).getAttribute('href'), '/explorer/application/explorer.app');
    const didRow = page.locator('table.recent-operations tbody tr').filter({ hasText: 'add_alias' });
    assert.equal(await didRow.getByRole('link', { name: fx.did }).getAttribute('href'), `/explorer/did/${fx.did}`);
    assert.doesNotMatch(await page.locator('table.recent-operations').innerText(), /never/, 'every operation has its time');
    const fin = h.ledger.finalizedRefNow().number;
    assert.equal(await page.locator('table.recent-blocks tbody tr').first().locator('a').innerText(), `#${fin}`);
    await page.screenshot({ path: join(ARTIFACTS, 'explorer-home.png'), fullPage: true });
    await didRow.getByRole('link', { name: fx.did }).click();
    await page.waitForURL(new RegExp(`/explorer/did/${fx.did}$`));
    await page.getByRole('heading', { name: 'Record' }).waitFor();
  });

  it('block list and block page with its operations; transaction page', async () => {
    await page.goto(`${base}/explorer/blocks`);
    await page.locator('tbody tr').first().waitFor();
    await assertAccessible(page, 'Latest blocks');
    const head = h.ledger.headRef().number;
    assert.equal(await page.locator('tbody tr').count(), Math.min(20, head + 1));
    assert.equal(await page.locator('tbody tr').first().locator('a').innerText(), `#${head}`);
    await page.getByRole('link', { name: `#${head}`, exact: true }).click();
    await page.waitForURL(new RegExp(`/explorer/block/${head}$`));
    await page.getByRole('heading', { name: 'Operations' }).waitFor();
    await assertAccessible(page, `Block #${head}`);
    const ops = page.locator('section[aria-labelledby="operations"] tbody tr');
    assert.equal(await ops.count(), h.ledger.block(head)!.txs.length);
    assert.match(await ops.first().innerText(), /apply_policy_v3_with_proof|register_application/);
    // each operation names what it is about, linked to its page
    const subjects = await ops.locator('.subject a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    assert.equal(subjects.length, h.ledger.block(head)!.txs.length);
    assert.ok(
      subjects.every((href) => /^\/explorer\/(did|persona|application)\//.test(href ?? '')),
      JSON.stringify(subjects),
    );
    assert.equal(await page.getByRole('link', { name: `Block #${head + 1} →` }).count(), 0, 'no link past the finalized head');
    await ops.first().locator('td:nth-child(2) a').click();
    await page.waitForURL(/\/explorer\/tx\/0x[0-9a-f]{64}$/);
    await page.getByText('finalized', { exact: true }).waitFor();
    await assertAccessible(page, 'Transaction');
  });

  it('persona and application pages with their history; an application without a policy', async () => {
    await page.goto(`${base}/explorer/persona/explorershop`);
    await page.locator('table.history tbody tr').first().waitFor();
    await assertAccessible(page, 'explorershop');
    const record = page.locator('section[aria-labelledby="record"]');
    assert.match(await record.innerText(), new RegExp(op.did));
    const labels = await record.locator('dt').allInnerTexts();
    for (const label of ['Kind', 'Status', 'Receives deliveries', 'Operator', 'Last verified', 'Verification expires'])
      assert.ok(labels.includes(label), label);
    assert.deepEqual(
      labels.filter((l) => /_|^(Dns|Verified at|Controller threshold)/.test(l)),
      [],
      'no machine labels',
    );
    const value = async (label: string) =>
      (
        await record
          .locator('div')
          .filter({ has: page.locator('dt', { hasText: new RegExp(`^${label}$`) }) })
          .locator('dd')
          .innerText()
      ).trim();
    assert.equal(await value('Kind'), 'Named (registered without a DNS proof)');
    assert.equal(await value('Last verified'), 'never');
    assert.equal(await value('Verification expires'), 'never');
    assert.equal(await value('Signatures required'), '1 of 1');
    assert.deepEqual(
      (await record.locator('dd').allInnerTexts()).filter((v) => v.trim() === '0'),
      [],
      'no bare 0 for an unset value',
    );
    assert.ok((await page.locator('table.history tbody tr').count()) >= 2);
    const changed = await page.locator('table.history .changes .k').allInnerTexts();
    assert.ok(changed.includes('controller threshold'), JSON.stringify(changed));
    assert.deepEqual(
      changed.filter((k) => k.includes('_')),
      [],
      'what each operation changed, in words too',
    );
    await page.screenshot({ path: join(ARTIFACTS, 'explorer-persona.png'), fullPage: true });

    await page.goto(`${base}/explorer/application/explorer.app`);
    await page.locator('table.history tbody tr').first().waitFor();
    await assertAccessible(page, 'explorer.app');
    assert.match(await page.locator('section[aria-labelledby="record"]').innerText(), /active/);
    assert.equal(await page.locator('table.history tbody .action').first().innerText(), 'register_application');
    await page.goto(`${base}/explorer/policy/application/explorer.app`);
    await page.getByText('This application has no delivery policy.').waitFor();
    await assertAccessible(page, 'Delivery policy of explorer.app');
    await page.goto(`${base}/explorer/policy/application/Bad%20App`);
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /400 invalid_application_id/);
    assert.deepEqual(failedResources.splice(0), ['400 /policies/application/Bad%20App'], 'only the bad id was refused');
  });

  it('search finds a DID, an alias, a persona, an application, a transaction and a block; says so when nothing matches', async () => {
    const search = async (q: string) => {
      await page.goto(`${base}/explorer/`);
      await assertAccessible(page, 'ddn explorer');
      await page.locator('header').getByLabel('Search').fill(q);
      await page.locator('header').getByRole('button', { name: 'Search' }).click();
    };
    await search('explorer62');
    await page.waitForURL(new RegExp(`/explorer/did/${fx.did}$`));
    await page.getByRole('heading', { name: 'Record' }).waitFor();
    await search(fx.did);
    await page.waitForURL(new RegExp(`/explorer/did/${fx.did}$`));
    await search('explorershop');
    await page.waitForURL(/\/explorer\/persona\/explorershop$/);
    await search('explorer.app');
    await page.waitForURL(/\/explorer\/application\/explorer\.app$/);
    const tx = h.ledger.block(1)!.txs[0]!.txHash;
    await search(tx);
    await page.waitForURL(new RegExp(`/explorer/tx/${tx}$`));
    await search('1');
    await page.waitForURL(/\/explorer\/block\/1$/);
    await search('nothing-by-this-name');
    await page.getByText('Nothing found for “nothing-by-this-name”').waitFor();
    await assertAccessible(page, 'Search: nothing-by-this-name');
    // going back returns to the previous view
    await page.goBack();
    await page.waitForURL(/\/explorer\/$/);
  });

  it("node status page: health and live charts of the node's own metrics", async () => {
    await page.goto(`${base}/explorer/status`);
    await assertAccessible(page, 'Node status');
    const samples = page.locator('[data-samples]');
    for (let i = 0; Number(await samples.getAttribute('data-samples')) < 3; i++) {
      assert.ok(i < 100, 'three samples within 20 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.match(await page.locator('section[aria-labelledby="health"]').innerText(), /Status\s+ok/);
    for (const series of ['head', 'pool', 'rps', 'mem', 'lag']) {
      const chart = page.locator(`figure.chart[data-series="${series}"]`);
      assert.equal(await chart.locator('polyline').count(), 1, `${series} has a line`);
      assert.doesNotMatch(await chart.locator('output').innerText(), /no data/);
    }
    assert.equal(await page.locator('figure.chart[data-series="head"] output').innerText(), String(h.ledger.headRef().number));
    // a time axis under every chart, from two minutes ago to now
    for (const chart of await page.locator('figure.chart').all()) {
      assert.equal(await chart.locator('g.x-axis line').count(), 6, 'the axis and five ticks');
      assert.deepEqual(await chart.locator('g.x-axis text').allTextContents(), ['2 min ago', '1 min ago', '30 s ago', 'now']);
    }
    await page.screenshot({ path: join(ARTIFACTS, 'explorer-status.png'), fullPage: true });
    assert.match(await page.locator('[data-samples]').innerText(), /from GET \/metrics/);
  });

  it('a hostile document runs no script: its endpoints are text, a javascript: URL is no link', async () => {
    const evil = await registerServiceDid(h, 66, [
      { fragment: 'relay', kind: 'Relay', endpoints: ['javascript:window.__pwned=1'] },
      { fragment: 'cache', kind: 'Cache', endpoints: ['https://x.example/"><img src=x onerror=__pwned=1>'] },
    ]);
    for (const url of [`/explorer/did/${evil.did}`, '/explorer/', `/explorer/block/${h.ledger.finalizedRefNow().number}`]) {
      await page.goto(`${base}${url}`);
      await page.locator('main section').first().waitFor();
      await page
        .getByRole('status')
        .first()
        .waitFor({ state: 'detached' })
        .catch(() => undefined);
      assert.equal(await page.evaluate('"__pwned" in window'), false, url);
      assert.equal(await page.locator('main img, main script').count(), 0, url);
    }
    await page.goto(`${base}/explorer/did/${evil.did}`);
    await page.locator('section[aria-labelledby="services"]').waitFor();
    const services = page.locator('section[aria-labelledby="services"]');
    assert.equal(await services.locator('a[href^="javascript:"]').count(), 0);
    assert.match(await services.innerText(), /javascript:window\.__pwned=1/);
  });

  it('the tour of pages above asked for nothing that answered 400 or more', () => {
    assert.deepEqual(failedResources, []);
  });

  it('every JSON answer the pages read was checked against the OpenAPI document', () => {
    // the check itself runs after each test (afterEach); this says it saw the pages' reads at all
    assert.ok(contract.checkedJson >= 20, `only ${contract.checkedJson} JSON answers were checked`);
  });

  it('the check of the pages fails on an answer its document does not describe', async () => {
    const other = await browser.newPage();
    try {
      const planted = new BrowserContract(h.server, base);
      planted.watch(other);
      await other.route(/\/blocks\/latest$/, (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '{"planted":true}' }));
      await other.goto(`${base}/explorer/`);
      await other.evaluate(async () => void (await fetch('/blocks/latest')).text());
      await assert.rejects(planted.assertClean(), /GET \/blocks\/latest 200: data must have required property 'number'/);
    } finally {
      await other.close();
    }
  });

  it("a deleted DID's page says it is gone and still shows its history", async () => {
    const gone = await registerDid(h, 64);
    await mutate(h, gone.did, gone.key, 'delete_did');
    await page.goto(`${base}/explorer/did/${gone.did}`);
    await page.locator('table.history tbody tr').first().waitFor();
    assert.match(await page.getByRole('alert').first().innerText(), /404 did_not_found/);
    assert.deepEqual(await page.locator('table.history tbody .action').allTextContents(), ['delete_did', 'register_did']);
    assert.match(await page.locator('table.history tbody tr').first().innerText(), /DeleteDid/);
  });

  it('unknown DIDs and pages say so; no script errors anywhere', async () => {
    await page.goto(`${base}/explorer/did/did:platform:zzzzzzzzzzzzzzzzzzzzzz`);
    await page.getByRole('alert').first().waitFor();
    assert.match(await page.getByRole('alert').first().innerText(), /404 did_not_found/);
    await page.goto(`${base}/explorer/nowhere/at/all`);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    // the browser logs the 4xx answers of lookups (they are the test's own); script errors are another matter
    assert.deepEqual(
      consoleErrors.filter((e) => !/the server responded with a status of 4\d\d/.test(e)),
      [],
    );
  });
});
