import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/platform/ids.js';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';

const numberFields = [
  'usage',
  'usage_daily',
  'usage_weekly',
  'usage_monthly',
  'byok_usage',
  'byok_usage_daily',
  'byok_usage_weekly',
  'byok_usage_monthly',
];

/** Every field of spec 2.3 is present with its type. */
function assertKeyRecord(record: Record<string, unknown>) {
  assert.match(record.hash as string, /^[0-9a-f]{64}$/);
  assert.equal(typeof record.name, 'string');
  assert.equal(typeof record.label, 'string');
  assert.equal(typeof record.disabled, 'boolean');
  assert.ok(record.limit === null || typeof record.limit === 'number');
  assert.ok(record.limit_remaining === null || typeof record.limit_remaining === 'number');
  assert.ok([null, 'daily', 'weekly', 'monthly'].includes(record.limit_reset as string | null));
  assert.equal(typeof record.include_byok_in_limit, 'boolean');
  for (const field of numberFields) assert.equal(typeof record[field], 'number', field);
  assert.match(record.created_at as string, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.ok(record.updated_at === null || typeof record.updated_at === 'string');
  assert.ok(record.expires_at === null || typeof record.expires_at === 'string');
  assert.ok(record.creator_user_id === null || typeof record.creator_user_id === 'string');
  assert.match(record.workspace_id as string, /^[0-9a-f-]{36}$/);
  assert.equal('key' in record, false, 'the secret is never part of the record');
}

describe('API keys over HTTP', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(() => gateway.close());

  it('creates a key: the record of spec 2.3 and the secret once', async () => {
    const created = await gateway.request('POST', '/api/v1/keys', {
      body: {
        name: 'Customer Key',
        limit: 10,
        limit_reset: 'monthly',
        include_byok_in_limit: true,
        creator_user_id: 'user_1',
      },
    });
    assert.equal(created.status, 200);
    assert.deepEqual(Object.keys(created.body).sort(), ['data', 'key']);
    assert.match(created.body.key, /^sk-sy-v1-[0-9a-f]{64}$/);
    const record = created.body.data;
    assertKeyRecord(record);
    assert.equal(record.name, 'Customer Key');
    assert.equal(record.limit, 10);
    assert.equal(record.limit_remaining, 10);
    assert.equal(record.limit_reset, 'monthly');
    assert.equal(record.include_byok_in_limit, true);
    assert.equal(record.creator_user_id, 'user_1');
    assert.equal(record.disabled, false);
    assert.equal(record.updated_at, null);
    assert.equal(record.expires_at, null);
    for (const field of numberFields) assert.equal(record[field], 0);
    const secret: string = created.body.key;
    assert.equal(record.label, `sk-sy-v1-${secret.slice(9, 12)}...${secret.slice(-3)}`);
    const { createHash } = await import('node:crypto');
    assert.equal(record.hash, createHash('sha256').update(secret).digest('hex'));

    // Stored rows hold the hash, never the secret.
    const rows = await gateway.services.storage.db.selectFrom('api_keys').selectAll().execute();
    assert.equal(JSON.stringify(rows).includes(secret), false);

    // The new key works, and GET /key describes it.
    const current = await gateway.request('GET', '/api/v1/key', { key: secret });
    assert.equal(current.status, 200);
    assert.equal(current.body.data.is_management_key, false);
    assert.equal(current.body.data.label, record.label);
    assert.equal(current.body.data.limit_remaining, 10);

    const fetched = await gateway.request('GET', `/api/v1/keys/${record.hash}`);
    assert.equal(fetched.status, 200);
    assert.deepEqual(fetched.body.data, record);
  });

  it('stores expires_at in UTC and accepts +00:00', async () => {
    const created = await gateway.request('POST', '/api/v1/keys', {
      body: { name: 'expiring', expires_at: '2099-12-31T23:59:59+00:00' },
    });
    assert.equal(created.status, 200);
    assert.equal(created.body.data.expires_at, '2099-12-31T23:59:59.000Z');
    assert.equal(created.body.data.limit, null);
    assert.equal(created.body.data.limit_remaining, null);
  });

  it('updates only the supplied fields, sets updated_at, and lists, hides and deletes keys', async () => {
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'to-update', limit: 3 } });
    const { hash } = created.body.data;
    const patched = await gateway.request('PATCH', `/api/v1/keys/${hash}`, {
      body: { name: 'renamed', limit: 7.5, limit_reset: 'daily' },
    });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.data.name, 'renamed');
    assert.equal(patched.body.data.limit, 7.5);
    assert.equal(patched.body.data.limit_remaining, 7.5);
    assert.equal(patched.body.data.limit_reset, 'daily');
    assert.equal(patched.body.data.include_byok_in_limit, false);
    assert.equal(typeof patched.body.data.updated_at, 'string');

    const cleared = await gateway.request('PATCH', `/api/v1/keys/${hash}`, {
      body: { limit: null, limit_reset: null },
    });
    assert.equal(cleared.body.data.limit, null);
    assert.equal(cleared.body.data.limit_remaining, null);
    assert.equal(cleared.body.data.name, 'renamed');

    const disabled = await gateway.request('PATCH', `/api/v1/keys/${hash}`, { body: { disabled: true } });
    assert.equal(disabled.body.data.disabled, true);
    const visible = await gateway.request('GET', '/api/v1/keys');
    assert.equal(visible.status, 200);
    assert.equal(
      visible.body.data.some((key: { hash: string }) => key.hash === hash),
      false,
    );
    const all = await gateway.request('GET', '/api/v1/keys?include_disabled=true');
    assert.equal(
      all.body.data.some((key: { hash: string }) => key.hash === hash),
      true,
    );
    for (const record of all.body.data) assertKeyRecord(record);

    const deleted = await gateway.request('DELETE', `/api/v1/keys/${hash}`);
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { deleted: true });
    expectError(await gateway.request('GET', `/api/v1/keys/${hash}`), 404);
    expectError(await gateway.request('DELETE', `/api/v1/keys/${hash}`), 404);
    expectError(await gateway.request('PATCH', `/api/v1/keys/${hash}`, { body: { name: 'ghost' } }), 404);
  });

  it('pages the list by 100, most recent first, and scopes it to a workspace', async () => {
    const other = newId();
    const at = new Date().toISOString();
    await gateway.services.storage.db
      .insertInto('workspaces')
      .values({
        id: other,
        name: 'Other',
        slug: `other-${other.slice(0, 8)}`,
        description: '',
        created_by: 'test',
        default_text_model: '',
        default_image_model: '',
        default_provider_sort: '',
        io_logging_api_key_ids: null,
        io_logging_sampling_rate: 1,
        is_data_discount_logging_enabled: 0,
        is_observability_broadcast_enabled: 0,
        include_byok_in_budgets: 0,
        is_observability_io_logging_enabled: 0,
        is_default: 0,
        created_at: at,
        updated_at: at,
      })
      .execute();
    const names: string[] = [];
    for (let index = 0; index < 105; index += 1) {
      const name = `paged-${String(index).padStart(3, '0')}`;
      names.push(name);
      const created = await gateway.request('POST', '/api/v1/keys', { body: { name, workspace_id: other } });
      assert.equal(created.status, 200);
      assert.equal(created.body.data.workspace_id, other);
    }
    const upper = await gateway.request('GET', `/api/v1/keys?workspace_id=${other.toUpperCase()}`);
    assert.equal(upper.status, 200, 'a UUID in upper case names the same workspace');
    const first = await gateway.request('GET', `/api/v1/keys?workspace_id=${other}`);
    assert.equal(first.body.data.length, 100);
    const second = await gateway.request('GET', `/api/v1/keys?workspace_id=${other}&offset=100`);
    assert.equal(second.body.data.length, 5);
    const listed = [...first.body.data, ...second.body.data].map((key: { name: string }) => key.name);
    // Created one after the other, so newest first is the reverse order of creation.
    assert.deepEqual(new Set(listed), new Set(names));
    const created = [...first.body.data, ...second.body.data].map(
      (key: { created_at: string }) => key.created_at,
    );
    assert.deepEqual(created, [...created].sort().reverse());
    const beyond = await gateway.request('GET', `/api/v1/keys?workspace_id=${other}&offset=500`);
    assert.deepEqual(beyond.body, { data: [] });
    // The default workspace's list does not show them.
    const defaults = await gateway.request('GET', '/api/v1/keys?include_disabled=true');
    assert.equal(
      defaults.body.data.some((key: { workspace_id: string }) => key.workspace_id === other),
      false,
    );
  });
});
