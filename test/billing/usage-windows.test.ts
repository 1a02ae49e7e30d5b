import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { usdToNanos } from '../../src/billing/money.js';
import { sumWindows, windowEndsAt, windowStartDays } from '../../src/billing/usage-windows.js';
import { fixedClock } from '../../src/platform/clock.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

describe('calendar windows in UTC', () => {
  it('starts weeks on Monday and months on the 1st', () => {
    // 2026-03-01 is a Sunday: its week began on Monday 2026-02-23.
    assert.deepEqual(windowStartDays(new Date('2026-03-01T23:59:59Z')), {
      day: '2026-03-01',
      week: '2026-02-23',
      month: '2026-03-01',
    });
    assert.deepEqual(windowStartDays(new Date('2026-03-02T00:00:00Z')), {
      day: '2026-03-02',
      week: '2026-03-02',
      month: '2026-03-01',
    });
  });

  it('sums daily amounts into day, week and month', () => {
    const days = [
      { day: '2026-02-27', nanos: 1 },
      { day: '2026-02-28', nanos: 10 },
      { day: '2026-03-01', nanos: 100 },
    ];
    assert.deepEqual(sumWindows(days, 1111, new Date('2026-03-01T12:00:00Z')), {
      usage: 1111,
      daily: 100,
      weekly: 111,
      monthly: 100,
    });
  });
});

describe('key usage and limit_remaining over HTTP', () => {
  const clock = fixedClock(new Date('2026-03-01T23:30:00Z'));
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp({ clock });
  });
  after(() => gateway.close());

  it('reports usage by UTC day, Monday-based week and month, and resets limit_remaining with the window', async () => {
    const created = await gateway.request('POST', '/api/v1/keys', {
      body: { name: 'metered', limit: 10, limit_reset: 'daily', include_byok_in_limit: true },
    });
    const { hash } = created.body.data;
    const secret: string = created.body.key;
    // Warm the cache, so the test also proves cached usage stays current.
    assert.equal((await gateway.request('GET', '/api/v1/key', { key: secret })).status, 200);

    await gateway.services.keys.recordUsage(hash, {
      usageNanos: usdToNanos(1.25),
      byokNanos: 0,
      at: new Date('2026-02-27T10:00:00Z'),
    });
    await gateway.services.keys.recordUsage(hash, {
      usageNanos: usdToNanos(2),
      byokNanos: usdToNanos(0.5),
      at: new Date('2026-03-01T23:00:00Z'),
    });

    const sunday = (await gateway.request('GET', `/api/v1/keys/${hash}`)).body.data;
    assert.equal(sunday.usage, 3.25);
    assert.equal(sunday.usage_daily, 2);
    assert.equal(sunday.usage_weekly, 3.25);
    assert.equal(sunday.usage_monthly, 2);
    assert.equal(sunday.byok_usage, 0.5);
    assert.equal(sunday.byok_usage_daily, 0.5);
    // Daily limit of 10, BYOK included: 10 - 2 - 0.5.
    assert.equal(sunday.limit_remaining, 7.5);
    const current = (await gateway.request('GET', '/api/v1/key', { key: secret })).body.data;
    assert.equal(current.usage_daily, 2);
    assert.equal(current.limit_remaining, 7.5);

    // Midnight UTC on Monday: a new day and a new week; the month goes on.
    clock.set(new Date('2026-03-02T00:00:01Z'));
    const monday = (await gateway.request('GET', `/api/v1/keys/${hash}`)).body.data;
    assert.equal(monday.usage, 3.25);
    assert.equal(monday.usage_daily, 0);
    assert.equal(monday.usage_weekly, 0);
    assert.equal(monday.usage_monthly, 2);
    assert.equal(monday.limit_remaining, 10);
    const cached = (await gateway.request('GET', '/api/v1/key', { key: secret })).body.data;
    assert.equal(cached.usage_daily, 0);
    assert.equal(cached.usage_monthly, 2);
    assert.equal(cached.limit_remaining, 10);

    // A monthly limit counts the whole month; without BYOK only paid usage counts.
    const monthly = await gateway.request('PATCH', `/api/v1/keys/${hash}`, {
      body: { limit_reset: 'monthly', include_byok_in_limit: false },
    });
    assert.equal(monthly.body.data.limit_remaining, 8);
    // No reset: the lifetime usage counts, and the remainder never goes below zero.
    const lifetime = await gateway.request('PATCH', `/api/v1/keys/${hash}`, {
      body: { limit_reset: null, limit: 1 },
    });
    assert.equal(lifetime.body.data.limit_remaining, 0);

    const listed = (await gateway.request('GET', '/api/v1/keys')).body.data.find(
      (key: { hash: string }) => key.hash === hash,
    );
    assert.equal(listed.usage, 3.25);
    assert.equal(listed.usage_monthly, 2);
  });
});

describe('window ends', () => {
  it('ends days at midnight UTC, weeks on Monday and months on the 1st', () => {
    const at = new Date('2026-11-22T15:30:00Z'); // a Sunday
    assert.equal(new Date(windowEndsAt('daily', at)).toISOString(), '2026-11-23T00:00:00.000Z');
    assert.equal(new Date(windowEndsAt('weekly', at)).toISOString(), '2026-11-23T00:00:00.000Z');
    assert.equal(new Date(windowEndsAt('monthly', at)).toISOString(), '2026-12-01T00:00:00.000Z');
    const monday = new Date('2026-11-23T00:00:00Z');
    assert.equal(new Date(windowEndsAt('weekly', monday)).toISOString(), '2026-11-30T00:00:00.000Z');
    const december = new Date('2026-12-31T23:59:59Z');
    assert.equal(new Date(windowEndsAt('monthly', december)).toISOString(), '2027-01-01T00:00:00.000Z');
  });
});
