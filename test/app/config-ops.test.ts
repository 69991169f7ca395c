/** The operations settings: --metrics-token, --log-format, --access-log. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, isLoopbackHost, loadConfig } from '../../src/app/config.js';

describe('operations settings', () => {
  it('defaults: no token, log format decided by the terminal, no access log', () => {
    const c = loadConfig([], {});
    assert.equal(c.metricsToken, null);
    assert.equal(c.logFormat, 'auto');
    assert.equal(c.accessLog, false);
  });

  it('reads flags and DDN_* variables', () => {
    const c = loadConfig(['--log-format', 'json', '--access-log'], { DDN_METRICS_TOKEN: 'sixteen-chars-ok!' });
    assert.equal(c.metricsToken, 'sixteen-chars-ok!');
    assert.equal(c.logFormat, 'json');
    assert.equal(c.accessLog, true);
    assert.equal(loadConfig(['--log-format=pretty'], {}).logFormat, 'pretty');
  });

  it('refuses a short or spaced token without echoing it, and an unknown format', () => {
    for (const token of ['short', 'sixteen chars with spaces']) {
      assert.throws(
        () => loadConfig(['--metrics-token', token], {}),
        (e: unknown) => e instanceof ConfigError && e.option === '--metrics-token' && !e.message.includes(token),
      );
    }
    assert.throws(
      () => loadConfig(['--log-format', 'xml'], {}),
      (e: unknown) => e instanceof ConfigError && e.option === '--log-format',
    );
  });

  it('knows loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', 'localhost']) assert.equal(isLoopbackHost(h), true, h);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', 'example.net']) assert.equal(isLoopbackHost(h), false, h);
  });
});
