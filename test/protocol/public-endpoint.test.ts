import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hostWithinDomain, isSpecialAddress, publicEndpointProblem } from '../../src/protocol/public-endpoint.js';

describe('public route endpoints (http-api.md §8.1)', () => {
  it('accepts public https endpoints, with a path', () => {
    for (const e of ['https://cache.example.com', 'https://relay.example.net/base/path', 'https://8.8.8.8', 'https://[2606:4700::1]:8443']) {
      assert.equal(publicEndpointProblem(e), null, e);
    }
  });
  it('names what is wrong with every refused endpoint', () => {
    const cases: [string, string][] = [
      ['http://cache.example.com', 'not_https'],
      ['not a url', 'malformed'],
      ['https://user:pw@cache.example.com', 'credentials'],
      ['https://cache.example.com/?x=1', 'query_or_fragment'],
      ['https://cache.example.com/#f', 'query_or_fragment'],
      ['https://localhost', 'non_public_host'],
      ['https://intranet', 'non_public_host'],
      ['https://box.local', 'non_public_host'],
      ['https://svc.internal', 'non_public_host'],
      ['https://a.home.arpa', 'non_public_host'],
      ['https://x.test', 'non_public_host'],
      ['https://x.example', 'non_public_host'],
      ['https://x.localhost', 'non_public_host'],
      ['https://127.0.0.1', 'non_public_host'],
      ['https://10.1.2.3', 'non_public_host'],
      ['https://172.20.0.1', 'non_public_host'],
      ['https://192.168.1.1', 'non_public_host'],
      ['https://100.64.0.1', 'non_public_host'],
      ['https://169.254.1.1', 'non_public_host'],
      ['https://[::1]', 'non_public_host'],
      ['https://[fe80::1]', 'non_public_host'],
      ['https://[fd00::1]', 'non_public_host'],
      ['https://[2001:db8::1]', 'non_public_host'],
      ['https://[::ffff:8.8.8.8]', 'non_public_host'],
    ];
    for (const [e, problem] of cases) assert.equal(publicEndpointProblem(e), problem, e);
  });
  it('classifies addresses', () => {
    assert.equal(isSpecialAddress('1.1.1.1'), false);
    assert.equal(isSpecialAddress('224.0.0.1'), true);
    assert.equal(isSpecialAddress('198.18.0.1'), true);
    assert.equal(isSpecialAddress('2a00:1450::1'), false);
    assert.equal(isSpecialAddress('not-an-ip'), true);
  });
  it('checks Call-step hosts against the registered domain', () => {
    assert.equal(hostWithinDomain('https://example.com/hook', 'example.com'), true);
    assert.equal(hostWithinDomain('https://api.example.com/hook', 'example.com'), true);
    assert.equal(hostWithinDomain('https://badexample.com/hook', 'example.com'), false);
  });
});
