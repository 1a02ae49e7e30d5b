import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { POLICY_TOPIC } from '../../src/admin/workspaces/workspace-access.js';
import { fixedClock } from '../../src/platform/clock.js';
import { newId } from '../../src/platform/ids.js';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';

const NANOS = 1_000_000_000;

describe('Workspace budgets over HTTP', () => {
  let gateway: TestApp;
  let workspaceId: string;
  const policyChanges: string[] = [];
  before(async () => {
    // A Wednesday: its week began on Monday the 13th, its month on the 1st.
    gateway = await startTestApp({ clock: fixedClock(new Date('2031-01-15T12:00:00Z')) });
    gateway.services.bus.subscribe(POLICY_TOPIC, (id) => policyChanges.push(id));
    const created = await gateway.request('POST', '/api/v1/workspaces', {
      body: { name: 'Spend', slug: 'spend' },
    });
    workspaceId = created.body.data.id;
  });
  after(() => gateway.close());
  beforeEach(async () => {
    await gateway.services.storage.db.deleteFrom('workspace_budgets').execute();
    policyChanges.length = 0;
  });

  const budget = (interval: string) => `/api/v1/workspaces/spend/budgets/${interval}`;
  const put = (interval: string, body: unknown) => gateway.request('PUT', budget(interval), { body });
  const storedBudgets = async () =>
    JSON.stringify(
      await gateway.services.storage.db
        .selectFrom('workspace_budgets')
        .selectAll()
        .orderBy('interval')
        .execute(),
    );

  it('creates, reads, replaces and deletes the budget of each interval', async () => {
    const created = await put('monthly', { limit_usd: 500 });
    assert.equal(created.status, 200);
    assert.deepEqual(Object.keys(created.body).sort(), ['data', 'include_byok_in_budgets']);
    assert.equal(created.body.include_byok_in_budgets, false);
    const record = created.body.data;
    assert.deepEqual(Object.keys(record).sort(), [
      'created_at',
      'id',
      'interval',
      'limit_usd',
      'reset_interval',
      'updated_at',
      'usage_usd',
      'workspace_id',
    ]);
    assert.equal(record.workspace_id, workspaceId);
    assert.equal(record.interval, 'monthly');
    assert.equal(record.limit_usd, 500);
    assert.equal(record.reset_interval, 'monthly');
    assert.equal(record.usage_usd, 0);
    assert.deepEqual(policyChanges, [workspaceId]);

    const lifetime = await put('lifetime', { limit_usd: 1000.5 });
    assert.equal(lifetime.body.data.reset_interval, null);
    await put('weekly', { limit_usd: 200 });
    await put('daily', { limit_usd: 0.25 });

    const listed = await gateway.request('GET', `/api/v1/workspaces/${workspaceId}/budgets`);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.include_byok_in_budgets, false);
    assert.deepEqual(
      listed.body.data.map((item: { interval: string; limit_usd: number }) => [
        item.interval,
        item.limit_usd,
      ]),
      [
        ['daily', 0.25],
        ['weekly', 200],
        ['monthly', 500],
        ['lifetime', 1000.5],
      ],
    );

    const one = await gateway.request('GET', budget('monthly'));
    assert.deepEqual(one.body, { data: record, include_byok_in_budgets: false });

    // Replacing keeps the id and created_at.
    const replaced = await put('monthly', { limit_usd: 400 });
    assert.equal(replaced.body.data.id, record.id);
    assert.equal(replaced.body.data.created_at, record.created_at);
    assert.equal(replaced.body.data.limit_usd, 400);
    const rows = await gateway.services.storage.db
      .selectFrom('workspace_budgets')
      .selectAll()
      .where('interval', '=', 'monthly')
      .execute();
    assert.equal(rows.length, 1);
    assert.equal(Number(rows[0]!.limit_nanos), 400 * NANOS);

    policyChanges.length = 0;
    const deleted = await gateway.request('DELETE', budget('monthly'));
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { deleted: true });
    assert.deepEqual(policyChanges, [workspaceId]);
    expectError(await gateway.request('GET', budget('monthly')), 404);
    // Idempotent: deleting again still says deleted (spec 3).
    assert.deepEqual((await gateway.request('DELETE', budget('monthly'))).body, { deleted: true });
    assert.equal((await gateway.request('GET', `/api/v1/workspaces/spend/budgets`)).body.data.length, 3);
  });

  it('include_byok_in_budgets is workspace-wide; omitting it leaves it unchanged', async () => {
    const on = await put('weekly', { limit_usd: 50, include_byok_in_budgets: true });
    assert.equal(on.body.include_byok_in_budgets, true);
    const kept = await put('daily', { limit_usd: 5 });
    assert.equal(kept.body.include_byok_in_budgets, true);
    assert.equal(
      (await gateway.request('GET', '/api/v1/workspaces/spend')).body.data.include_byok_in_budgets,
      true,
    );
    assert.equal((await gateway.request('GET', budget('weekly'))).body.include_byok_in_budgets, true);
    const off = await put('daily', { limit_usd: 5, include_byok_in_budgets: false });
    assert.equal(off.body.include_byok_in_budgets, false);
    assert.equal(
      (await gateway.request('GET', '/api/v1/workspaces/spend')).body.data.include_byok_in_budgets,
      false,
    );
  });

  it('limits must strictly decrease as the interval narrows, among the budgets set', async () => {
    await put('monthly', { limit_usd: 500 });
    let before = await storedBudgets();
    // A narrower limit above a broader one.
    assert.equal(
      expectError(await put('weekly', { limit_usd: 600 }), 400),
      'Budget limits must be strictly decreasing as scope narrows: the monthly limit ($500.00) must be greater than the weekly limit ($600.00).',
    );
    assert.equal(await storedBudgets(), before);
    // A broader limit below a narrower one.
    assert.equal((await put('weekly', { limit_usd: 100 })).status, 200);
    before = await storedBudgets();
    assert.equal(
      expectError(await put('monthly', { limit_usd: 50 }), 400),
      'Budget limits must be strictly decreasing as scope narrows: the monthly limit ($50.00) must be greater than the weekly limit ($100.00).',
    );
    // Equal is not strictly less.
    assert.match(
      expectError(await put('weekly', { limit_usd: 500 }), 400),
      /the monthly limit \(\$500\.00\) must be greater than the weekly limit \(\$500\.00\)/,
    );
    // Intervals that are not set are skipped: lifetime is compared with monthly, daily with weekly.
    assert.match(
      expectError(await put('lifetime', { limit_usd: 499.99 }), 400),
      /the lifetime limit \(\$499\.99\) must be greater than the monthly limit \(\$500\.00\)/,
    );
    assert.match(
      expectError(await put('daily', { limit_usd: 100.0001 }), 400),
      /the weekly limit \(\$100\.00\) must be greater than the daily limit \(\$100\.0001\)/,
    );
    assert.equal(await storedBudgets(), before, 'refused changes leave the budgets as they were');

    // Deleting the middle budget leaves the outer ones to compare directly.
    await gateway.request('DELETE', budget('weekly'));
    assert.equal((await put('daily', { limit_usd: 499 })).status, 200);
    assert.equal((await put('lifetime', { limit_usd: 500.01 })).status, 200);
  });

  it('a refused PUT changes nothing, not even the BYOK flag', async () => {
    await put('monthly', { limit_usd: 10 });
    const before = await storedBudgets();
    expectError(await put('daily', { limit_usd: 20, include_byok_in_budgets: true }), 400);
    assert.equal(await storedBudgets(), before);
    assert.equal(
      (await gateway.request('GET', '/api/v1/workspaces/spend')).body.data.include_byok_in_budgets,
      false,
    );
  });

  it('refuses bad limits and intervals', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ limit_usd: 0 }, /body\.limit_usd must be > 0/],
      [{ limit_usd: -5 }, /body\.limit_usd must be > 0/],
      [{ limit_usd: '10' }, /body\.limit_usd must be number/],
      [{ limit_usd: null }, /body\.limit_usd must be number/],
      [{ limit_usd: 1e12 }, /body\.limit_usd must be <= 1000000/],
      [{ limit_usd: 1e-12 }, /body\.limit_usd must be at least 0\.000000001/],
      [{}, /body\.limit_usd/],
      [{ limit_usd: 5, include_byok_in_budgets: 'yes' }, /body\.include_byok_in_budgets must be boolean/],
      [{ limit_usd: 5, reset_interval: 'daily' }, /body\.reset_interval is not a known field/],
    ];
    for (const [body, pattern] of cases) {
      assert.match(expectError(await put('daily', body), 400), pattern, JSON.stringify(body));
    }
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const message = expectError(
        await gateway.request(method, budget('hourly'), method === 'PUT' ? { body: { limit_usd: 1 } } : {}),
        400,
      );
      assert.match(message, /params\.interval must be one of: daily, weekly, monthly, lifetime/);
    }
    assert.equal(await storedBudgets(), '[]');
  });

  it('an unknown workspace is a 404 on every budget route', async () => {
    const base = `/api/v1/workspaces/${newId()}/budgets`;
    expectError(await gateway.request('GET', base), 404);
    expectError(await gateway.request('GET', `${base}/daily`), 404);
    expectError(await gateway.request('PUT', `${base}/daily`, { body: { limit_usd: 1 } }), 404);
    expectError(await gateway.request('DELETE', `${base}/daily`), 404);
    expectError(await gateway.request('DELETE', '/api/v1/workspaces/nope/budgets/daily'), 404);
  });

  it('shows the spend of each budget’s current window, BYOK only when the flag is on', async () => {
    const { db } = gateway.services.storage;
    const rows = [
      { day: '2031-01-15', usage: 1, byok: 10 },
      { day: '2031-01-13', usage: 2, byok: 20 },
      { day: '2031-01-05', usage: 4, byok: 40 },
      { day: '2030-12-31', usage: 8, byok: 80 },
    ];
    for (const row of rows) {
      await db
        .insertInto('workspace_usage_daily')
        .values({
          workspace_id: workspaceId,
          day: row.day,
          usage_nanos: row.usage * NANOS,
          byok_usage_nanos: row.byok * NANOS,
        })
        .execute();
    }
    await put('lifetime', { limit_usd: 1000 });
    await put('monthly', { limit_usd: 900 });
    await put('weekly', { limit_usd: 800 });
    await put('daily', { limit_usd: 700 });
    const usage = async () =>
      Object.fromEntries(
        (await gateway.request('GET', '/api/v1/workspaces/spend/budgets')).body.data.map(
          (item: { interval: string; usage_usd: number }) => [item.interval, item.usage_usd],
        ),
      );
    assert.deepEqual(await usage(), { daily: 1, weekly: 3, monthly: 7, lifetime: 15 });
    const withByok = await put('daily', { limit_usd: 700, include_byok_in_budgets: true });
    assert.equal(withByok.body.data.usage_usd, 11);
    assert.deepEqual(await usage(), { daily: 11, weekly: 33, monthly: 77, lifetime: 165 });
    assert.equal((await gateway.request('GET', budget('lifetime'))).body.data.usage_usd, 165);
    // Another workspace's spend is not counted.
    const other = await gateway.request('POST', '/api/v1/workspaces', {
      body: { name: 'Other', slug: 'other' },
    });
    await db
      .insertInto('workspace_usage_daily')
      .values({
        workspace_id: other.body.data.id,
        day: '2031-01-15',
        usage_nanos: NANOS,
        byok_usage_nanos: 0,
      })
      .execute();
    assert.equal((await gateway.request('GET', budget('daily'))).body.data.usage_usd, 11);
    await db.deleteFrom('workspace_usage_daily').execute();
  });
});
