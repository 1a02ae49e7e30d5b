import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { fixedClock } from '../../src/platform/clock.js';
import { expectError, newSecret, startTestApp, type TestApp } from '../helpers/test-app.js';

describe('authentication', () => {
  const clock = fixedClock(new Date('2026-03-10T12:00:00Z'));
  let gateway: TestApp;
  let inferenceKey: string;
  before(async () => {
    gateway = await startTestApp({ clock });
    inferenceKey = (await gateway.request('POST', '/api/v1/keys', { body: { name: 'app' } })).body.key;
  });
  after(() => gateway.close());

  it('answers a missing header with 401 "Missing Authentication header"', async () => {
    assert.equal(
      expectError(await gateway.request('GET', '/api/v1/key', { key: null }), 401),
      'Missing Authentication header',
    );
    assert.equal(
      expectError(
        await gateway.request('GET', '/api/v1/credits', { key: null, headers: { authorization: '' } }),
        401,
      ),
      'Missing Authentication header',
    );
  });

  it('answers a garbled header with 401', async () => {
    for (const header of [
      'Basic abc',
      'Bearer',
      'Bearer a b',
      'sk-sy-v1-abc',
      `Bearer ${'x'.repeat(2000)}`,
    ]) {
      assert.match(
        expectError(
          await gateway.request('GET', '/api/v1/key', { key: null, headers: { authorization: header } }),
          401,
        ),
        /Invalid Authentication header/,
        header,
      );
    }
  });

  it('answers an unknown key with 401', async () => {
    assert.equal(
      expectError(await gateway.request('GET', '/api/v1/key', { key: newSecret() }), 401),
      'Invalid API key',
    );
  });

  it('accepts the scheme case-insensitively', async () => {
    const response = await gateway.request('GET', '/api/v1/key', {
      key: null,
      headers: { authorization: `bearer ${inferenceKey}` },
    });
    assert.equal(response.status, 200);
  });

  it("accepts Anthropic's x-api-key header when there is no Authorization header", async () => {
    const response = await gateway.request('GET', '/api/v1/key', {
      key: null,
      headers: { 'x-api-key': inferenceKey },
    });
    assert.equal(response.status, 200);
    assert.equal(response.body.data.is_management_key, false);
    const wrong = await gateway.request('GET', '/api/v1/key', {
      key: null,
      headers: { 'x-api-key': 'sk-nope' },
    });
    assert.equal(wrong.status, 401);
  });

  it('refuses a request that names its credential twice, in either order and on either lane', async () => {
    const bearer = (key: string) => `Bearer ${key}`;
    const send = async (path: string, headers: string[], body?: string) => {
      const response = await request(`${gateway.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: body === undefined ? headers : [...headers, 'content-type', 'application/json'],
        ...(body === undefined ? {} : { body }),
      });
      return { status: response.statusCode, body: (await response.body.json()) as any };
    };
    const chat = JSON.stringify({ model: 'x/y', messages: [{ role: 'user', content: 'hi' }] });
    for (const headers of [
      ['authorization', bearer(inferenceKey), 'authorization', bearer(gateway.managementKey)],
      ['Authorization', bearer(gateway.managementKey), 'authorization', bearer(inferenceKey)],
      ['x-api-key', inferenceKey, 'X-Api-Key', gateway.managementKey],
    ]) {
      for (const [path, body] of [
        ['/api/v1/credits', undefined],
        ['/api/v1/chat/completions', chat],
      ] as const) {
        const refused = await send(path, headers, body);
        assert.equal(refused.status, 400, JSON.stringify(refused.body));
        assert.match(refused.body.error.message, /names its credential more than once/);
      }
    }
    // One of each is no repetition: Authorization wins, as before.
    const both = await send('/api/v1/key', ['authorization', bearer(inferenceKey), 'x-api-key', 'other']);
    assert.equal(both.status, 200);
  });

  it('refuses an inference key on management operations with 403', async () => {
    for (const [method, path] of [
      ['GET', '/api/v1/keys'],
      ['POST', '/api/v1/keys'],
      ['GET', '/api/v1/credits'],
      ['DELETE', `/api/v1/keys/${'0'.repeat(64)}`],
    ] as const) {
      const response = await gateway.request(method, path, {
        key: inferenceKey,
        ...(method === 'POST' ? { body: { name: 'x' } } : {}),
      });
      assert.equal(
        expectError(response, 403),
        'Only management keys can perform this operation',
        `${method} ${path}`,
      );
    }
    const keys = await gateway.services.storage.db.selectFrom('api_keys').select('name').execute();
    assert.equal(
      keys.some((key) => key.name === 'x'),
      false,
    );
  });

  it('serves an authenticated request from memory: no database query after the first use', async () => {
    const secret = (await gateway.request('POST', '/api/v1/keys', { body: { name: 'cached' } })).body.key;
    assert.equal((await gateway.request('GET', '/api/v1/key', { key: secret })).status, 200);
    const before = gateway.services.storage.queryCount();
    for (let index = 0; index < 5; index += 1) {
      const response = await gateway.request('GET', '/api/v1/key', { key: secret });
      assert.equal(response.status, 200);
      assert.equal(response.body.data.is_management_key, false);
    }
    assert.equal(gateway.services.storage.queryCount() - before, 0);
    // An unknown key is remembered too, so a flood of made-up keys does not reach the database.
    const bogus = newSecret();
    expectError(await gateway.request('GET', '/api/v1/key', { key: bogus }), 401);
    const afterMiss = gateway.services.storage.queryCount();
    expectError(await gateway.request('GET', '/api/v1/key', { key: bogus }), 401);
    assert.equal(gateway.services.storage.queryCount() - afterMiss, 0);
  });

  it('sees a disabled key at once (the cache is invalidated), and again after re-enabling', async () => {
    const created = (await gateway.request('POST', '/api/v1/keys', { body: { name: 'toggle' } })).body;
    assert.equal((await gateway.request('GET', '/api/v1/key', { key: created.key })).status, 200);
    await gateway.request('PATCH', `/api/v1/keys/${created.data.hash}`, { body: { disabled: true } });
    assert.equal(
      expectError(await gateway.request('GET', '/api/v1/key', { key: created.key }), 401),
      'API key is disabled',
    );
    await gateway.request('PATCH', `/api/v1/keys/${created.data.hash}`, { body: { disabled: false } });
    assert.equal((await gateway.request('GET', '/api/v1/key', { key: created.key })).status, 200);
    await gateway.request('DELETE', `/api/v1/keys/${created.data.hash}`);
    assert.equal(
      expectError(await gateway.request('GET', '/api/v1/key', { key: created.key }), 401),
      'Invalid API key',
    );
  });

  it('refuses an expired key with 401 once its expiry has passed', async () => {
    const created = (
      await gateway.request('POST', '/api/v1/keys', {
        body: { name: 'short-lived', expires_at: '2026-03-10T13:00:00Z' },
      })
    ).body;
    assert.equal((await gateway.request('GET', '/api/v1/key', { key: created.key })).status, 200);
    clock.set(new Date('2026-03-10T13:00:01Z'));
    assert.equal(
      expectError(await gateway.request('GET', '/api/v1/key', { key: created.key }), 401),
      'API key has expired',
    );
    clock.set(new Date('2026-03-10T12:00:00Z'));
  });

  it('registers the bootstrap key as a management key', async () => {
    const response = await gateway.request('GET', '/api/v1/key');
    assert.equal(response.status, 200);
    assert.equal(response.body.data.is_management_key, true);
  });
});

describe('key cache time limit', () => {
  it('looks a key up again after a minute, so a lost invalidation cannot keep a disabled key alive', async () => {
    const clock = fixedClock(new Date('2026-03-10T12:00:00Z'));
    const gateway = await startTestApp({ clock });
    try {
      const created = (await gateway.request('POST', '/api/v1/keys', { body: { name: 'ttl' } })).body;
      assert.equal((await gateway.request('GET', '/api/v1/key', { key: created.key })).status, 200);
      // Disable it behind the cache's back, as another instance would if its message were lost.
      await gateway.services.storage.db
        .updateTable('api_keys')
        .set({ disabled: 1 })
        .where('hash', '=', created.data.hash)
        .execute();
      assert.equal((await gateway.request('GET', '/api/v1/key', { key: created.key })).status, 200);
      clock.advance(60_000);
      assert.equal(
        expectError(await gateway.request('GET', '/api/v1/key', { key: created.key }), 401),
        'API key is disabled',
      );
    } finally {
      await gateway.close();
    }
  });
});
