import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { usdToNanos } from '../../src/billing/money.js';
import { expectError, isolatedDatabase, startTestApp, type TestApp } from '../helpers/test-app.js';

describe('GET /credits', () => {
  const database = isolatedDatabase();
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp({ database, config: { credits: { initial: 25 } } });
  });
  after(async () => {
    await gateway.close();
    await database.drop();
  });

  it('grants credits.initial once, when the database is first created', async () => {
    const response = await gateway.request('GET', '/api/v1/credits');
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { data: { total_credits: 25, total_usage: 0 } });
    // A restart on the same database with a different setting grants nothing more.
    await gateway.close();
    gateway = await startTestApp({ database, config: { credits: { initial: 100 } } });
    assert.deepEqual((await gateway.request('GET', '/api/v1/credits')).body, {
      data: { total_credits: 25, total_usage: 0 },
    });
  });

  it('adds grants and usage from the ledger, exactly (integer nano-dollars)', async () => {
    const now = new Date();
    await gateway.services.credits.grant({ nanos: usdToNanos(0.1), note: 'test', at: now });
    await gateway.services.credits.grant({ nanos: usdToNanos(0.2), note: 'test', at: now });
    await gateway.services.credits.recordUsage({ nanos: usdToNanos(0.000001234), note: null, at: now });
    const response = await gateway.request('GET', '/api/v1/credits');
    assert.deepEqual(response.body, { data: { total_credits: 25.3, total_usage: 0.000001234 } });
  });

  it('needs a management key', async () => {
    const secret = (await gateway.request('POST', '/api/v1/keys', { body: { name: 'app' } })).body.key;
    assert.equal(
      expectError(await gateway.request('GET', '/api/v1/credits', { key: secret }), 403),
      'Only management keys can perform this operation',
    );
    assert.equal(
      expectError(await gateway.request('GET', '/api/v1/credits', { key: null }), 401),
      'Missing Authentication header',
    );
  });
});
