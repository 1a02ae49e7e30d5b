import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import { after, describe, it } from 'node:test';
import { fixedClock } from '../../src/platform/clock.js';
import { backend, expectError, isolatedDatabase, startTestApp, type TestApp } from '../helpers/test-app.js';

const started: TestApp[] = [];
after(async () => {
  for (const gateway of started.reverse()) await gateway.close();
});

describe('per-key rate limits', () => {
  it('answers 429 with the envelope, Retry-After and X-RateLimit-* once a key exceeds its window', async () => {
    const clock = fixedClock(new Date('2026-05-01T10:00:20Z'));
    const gateway = await startTestApp({
      clock,
      config: { limits: { rate_limit: { requests: 3, window_seconds: 60 } } },
    });
    started.push(gateway);
    const secret = (await gateway.request('POST', '/api/v1/keys', { body: { name: 'limited' } })).body.key;
    for (let index = 0; index < 3; index += 1) {
      const ok = await gateway.request('GET', '/api/v1/key', { key: secret });
      assert.equal(ok.status, 200);
      assert.equal(
        ok.headers.get('x-ratelimit-limit'),
        null,
        'successful responses carry no rate-limit headers',
      );
    }
    const limited = await gateway.request('GET', '/api/v1/key', { key: secret });
    assert.equal(expectError(limited, 429), 'Rate limit exceeded');
    assert.equal(limited.body.error.metadata.error_type, 'rate_limit_exceeded');
    assert.equal(limited.headers.get('retry-after'), '40');
    assert.equal(limited.headers.get('x-ratelimit-limit'), '3');
    assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');
    assert.equal(limited.headers.get('x-ratelimit-reset'), String(Date.parse('2026-05-01T10:01:00Z')));
    // Another key has its own budget.
    assert.equal((await gateway.request('GET', '/api/v1/key')).status, 200);
    // The next window admits the key again.
    clock.set(new Date('2026-05-01T10:01:00Z'));
    assert.equal((await gateway.request('GET', '/api/v1/key', { key: secret })).status, 200);
  });

  it('is off when requests is 0', async () => {
    const gateway = await startTestApp({
      config: { limits: { rate_limit: { requests: 0, window_seconds: 60 } } },
    });
    started.push(gateway);
    for (let index = 0; index < 20; index += 1)
      assert.equal((await gateway.request('GET', '/api/v1/key')).status, 200);
  });

  it('is one global limit across two instances sharing Redis', {
    skip: backend.redisUrl ? false : 'REDIS_URL is not set',
  }, async (t) => {
    const database = isolatedDatabase();
    const redisPrefix = `switchyard-test-${randomBytes(6).toString('hex')}:`;
    const config = { limits: { rate_limit: { requests: 4, window_seconds: 3600 } } };
    const first = await startTestApp({ database, redisPrefix, config });
    const second = await startTestApp({ database, redisPrefix, config });
    t.after(async () => {
      await first.close();
      await second.close();
      await database.drop();
    });
    const secret = (await first.request('POST', '/api/v1/keys', { body: { name: 'shared' } })).body.key;
    const statuses: number[] = [];
    for (const gateway of [first, second, first, second, first, second]) {
      statuses.push((await gateway.request('GET', '/api/v1/key', { key: secret })).status);
    }
    // The management key's POST above counts against the management key, not this one.
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
  });

  it('invalidates a disabled key on the other instance through Redis', {
    skip: backend.redisUrl ? false : 'REDIS_URL is not set',
  }, async (t) => {
    const database = isolatedDatabase();
    const redisPrefix = `switchyard-test-${randomBytes(6).toString('hex')}:`;
    const first = await startTestApp({ database, redisPrefix });
    const second = await startTestApp({ database, redisPrefix });
    t.after(async () => {
      await first.close();
      await second.close();
      await database.drop();
    });
    const created = (await first.request('POST', '/api/v1/keys', { body: { name: 'shared' } })).body;
    assert.equal((await second.request('GET', '/api/v1/key', { key: created.key })).status, 200);
    await first.request('PATCH', `/api/v1/keys/${created.data.hash}`, { body: { disabled: true } });
    let status = 0;
    for (let attempt = 0; attempt < 50; attempt += 1) {
      status = (await second.request('GET', '/api/v1/key', { key: created.key })).status;
      if (status === 401) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(status, 401);
  });
});

describe('with Redis configured but unreachable', () => {
  it('serves requests and key changes at once, counting rate limits locally', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => {
        const address = server.address() as AddressInfo;
        server.close(() => resolve(address.port));
      });
    });
    const gateway = await startTestApp({
      config: {
        redis_url: `redis://127.0.0.1:${port}`,
        limits: { rate_limit: { requests: 2, window_seconds: 3600 } },
      },
    });
    started.push(gateway);
    const startedAt = Date.now();
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'no-redis' } });
    assert.equal(created.status, 200);
    const disabled = await gateway.request('PATCH', `/api/v1/keys/${created.body.data.hash}`, {
      body: { disabled: true },
    });
    assert.equal(disabled.status, 200);
    assert.equal(
      expectError(await gateway.request('GET', '/api/v1/key', { key: created.body.key }), 401),
      'API key is disabled',
    );
    // The management key has made three requests now: the local limit of 2 applies.
    expectError(await gateway.request('GET', '/api/v1/key'), 429);
    assert.ok(Date.now() - startedAt < 1000, `took ${Date.now() - startedAt} ms`);
  });
});
