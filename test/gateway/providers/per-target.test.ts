import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { baseUrlOf, bearerHeadersOf, perTarget } from '../../../src/gateway/providers/shared/per-target.js';

describe('perTarget', () => {
  it('derives once per target object and answers each target with its own value', () => {
    let derived = 0;
    const urlOf = perTarget((target) => {
      derived += 1;
      return `${baseUrlOf(target)}/chat/completions`;
    });
    const platform = { baseUrl: 'https://api.example.com/v1//', apiKey: 'sk-platform' };
    const byok = { baseUrl: 'https://eu.example.com/v1', apiKey: 'sk-workspace' };
    assert.equal(urlOf(platform), 'https://api.example.com/v1/chat/completions');
    assert.equal(urlOf(platform), 'https://api.example.com/v1/chat/completions');
    assert.equal(urlOf(byok), 'https://eu.example.com/v1/chat/completions');
    assert.equal(derived, 2);
  });

  it('shares one frozen headers object per target, with that target credential', () => {
    const platform = {
      baseUrl: 'https://api.example.com/v1',
      apiKey: 'sk-platform',
      headers: { 'x-title': 'a' },
    };
    const byok = { baseUrl: 'https://api.example.com/v1', apiKey: 'sk-workspace' };
    const keyless = { baseUrl: 'http://127.0.0.1:9/v1', apiKey: null };
    const headers = bearerHeadersOf(platform);
    assert.deepEqual(headers, { authorization: 'Bearer sk-platform', 'x-title': 'a' });
    assert.equal(bearerHeadersOf(platform), headers);
    assert.ok(Object.isFrozen(headers));
    assert.throws(() => {
      (headers as Record<string, string>).authorization = 'Bearer other';
    }, TypeError);
    assert.deepEqual(bearerHeadersOf(byok), { authorization: 'Bearer sk-workspace' });
    assert.deepEqual(bearerHeadersOf(keyless), {});
  });
});
