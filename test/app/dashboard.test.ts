/** The ready-made Grafana dashboard (docs/grafana/ddn-dashboard.json) queries only metrics a node exposes. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startTestNode, type TestNode } from '../support/network.js';

const DASHBOARD = fileURLToPath(new URL('../../docs/grafana/ddn-dashboard.json', import.meta.url));

interface Dashboard {
  panels: { title: string; targets: { expr: string }[] }[];
  templating: { list: { definition?: string }[] };
}

/** The metric names a PromQL expression selects (every one is written with a `{…}` selector). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{/g), ...expr.matchAll(/label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)/g)].map((m) => m[1]!);
}

/** Sample names and `# TYPE` families of a scrape, histogram and summary series included. */
function exposed(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type !== null) {
      names.add(type[1]!);
      if (type[2] === 'histogram') for (const s of ['_bucket', '_count', '_sum']) names.add(`${type[1]}${s}`);
      if (type[2] === 'summary') for (const s of ['_count', '_sum']) names.add(`${type[1]}${s}`);
    } else if (line !== '' && !line.startsWith('#')) names.add(line.split(/[{ ]/)[0]!);
  }
  return names;
}

describe('the Grafana dashboard', () => {
  let combined: TestNode;
  let split: TestNode;
  before(async () => {
    combined = await startTestNode();
    split = await startTestNode(['--roles', 'relay,cache', '--directory-url', combined.urls.directory!]);
  });
  after(async () => {
    await split?.stop();
    await combined?.stop();
  });

  it('queries only metrics that a scrape of a node holds', async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
    const queried = new Set<string>();
    for (const p of dashboard.panels) for (const t of p.targets) for (const n of metricNames(t.expr)) queried.add(n);
    for (const v of dashboard.templating.list) if (v.definition !== undefined) for (const n of metricNames(v.definition)) queried.add(n);
    assert.ok(queried.size >= 15, [...queried].join(' '));

    const have = new Set<string>();
    for (const url of [combined.urls.relay!, split.urls.cache!]) {
      const res = await fetch(`${url}/metrics`);
      assert.equal(res.status, 200);
      for (const n of exposed(await res.text())) have.add(n);
    }
    const missing = [...queried].filter((n) => !have.has(n));
    assert.deepEqual(missing, [], 'metrics the dashboard queries but no node exposes');
  });
});
