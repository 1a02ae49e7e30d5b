import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { defaultGuardrailId } from '../../src/admin/guardrails/default-guardrail-id.js';
import { POLICY_TOPIC } from '../../src/admin/workspaces/workspace-access.js';
import { newId } from '../../src/platform/ids.js';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';

const timestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Every field of spec 2.6, plus the reference's `default_guardrail_id` and `include_byok_in_budgets`. */
function assertWorkspaceRecord(record: Record<string, unknown>) {
  assert.deepEqual(Object.keys(record).sort(), [
    'created_at',
    'created_by',
    'default_guardrail_id',
    'default_image_model',
    'default_provider_sort',
    'default_text_model',
    'description',
    'id',
    'include_byok_in_budgets',
    'io_logging_api_key_ids',
    'io_logging_sampling_rate',
    'is_data_discount_logging_enabled',
    'is_observability_broadcast_enabled',
    'is_observability_io_logging_enabled',
    'name',
    'slug',
    'updated_at',
  ]);
  assert.match(record.id as string, /^[0-9a-f-]{36}$/);
  for (const field of ['name', 'slug', 'description', 'created_by', 'default_text_model']) {
    assert.equal(typeof record[field], 'string', field);
  }
  assert.equal(typeof record.default_image_model, 'string');
  assert.equal(typeof record.default_provider_sort, 'string');
  assert.equal(record.default_guardrail_id, defaultGuardrailId(record.id as string));
  assert.equal(typeof record.include_byok_in_budgets, 'boolean');
  assert.ok(record.io_logging_api_key_ids === null || Array.isArray(record.io_logging_api_key_ids));
  assert.equal(typeof record.io_logging_sampling_rate, 'number');
  assert.equal(typeof record.is_data_discount_logging_enabled, 'boolean');
  assert.equal(typeof record.is_observability_broadcast_enabled, 'boolean');
  assert.equal(typeof record.is_observability_io_logging_enabled, 'boolean');
  assert.match(record.created_at as string, timestamp);
  assert.match(record.updated_at as string, timestamp);
}

describe('Workspaces over HTTP', () => {
  let gateway: TestApp;
  const policyChanges: string[] = [];
  before(async () => {
    gateway = await startTestApp();
    gateway.services.bus.subscribe(POLICY_TOPIC, (workspaceId) => policyChanges.push(workspaceId));
  });
  after(() => gateway.close());

  const create = (body: Record<string, unknown>) => gateway.request('POST', '/api/v1/workspaces', { body });

  it('creates a workspace with every field and answers 200 { data }, like POST /keys', async () => {
    const hash = 'a'.repeat(64);
    const created = await create({
      name: 'Production',
      slug: 'production',
      description: 'Production environment workspace',
      default_text_model: 'openai/gpt-4o',
      default_image_model: 'openai/dall-e-3',
      default_provider_sort: 'price',
      is_observability_broadcast_enabled: true,
      is_observability_io_logging_enabled: true,
      io_logging_sampling_rate: 0.25,
      io_logging_api_key_ids: [hash, hash],
      is_data_discount_logging_enabled: true,
    });
    assert.equal(created.status, 200);
    assert.deepEqual(Object.keys(created.body), ['data']);
    const record = created.body.data;
    assertWorkspaceRecord(record);
    assert.equal(record.name, 'Production');
    assert.equal(record.slug, 'production');
    assert.equal(record.description, 'Production environment workspace');
    assert.equal(record.default_text_model, 'openai/gpt-4o');
    assert.equal(record.default_image_model, 'openai/dall-e-3');
    assert.equal(record.default_provider_sort, 'price');
    assert.equal(record.is_observability_broadcast_enabled, true);
    assert.equal(record.is_observability_io_logging_enabled, true);
    assert.equal(record.io_logging_sampling_rate, 0.25);
    assert.deepEqual(record.io_logging_api_key_ids, [hash], 'duplicates collapse');
    assert.equal(record.is_data_discount_logging_enabled, true);
    assert.equal(record.include_byok_in_budgets, false);
    // The bootstrap key names no user, so the creator is the key itself.
    const { createHash } = await import('node:crypto');
    assert.equal(record.created_by, createHash('sha256').update(gateway.managementKey).digest('hex'));

    const stored = await gateway.services.storage.db
      .selectFrom('workspaces')
      .selectAll()
      .where('id', '=', record.id)
      .executeTakeFirstOrThrow();
    assert.equal(stored.is_default, 0);
    assert.equal(stored.io_logging_api_key_ids, JSON.stringify([hash]));
  });

  it('fills defaults for the optional fields', async () => {
    const created = await create({ name: 'Bare', slug: 'bare' });
    assert.equal(created.status, 200);
    const record = created.body.data;
    assertWorkspaceRecord(record);
    assert.equal(record.description, '');
    assert.equal(record.default_text_model, '');
    assert.equal(record.default_provider_sort, '');
    assert.equal(record.io_logging_sampling_rate, 1);
    assert.equal(record.io_logging_api_key_ids, null);
    assert.equal(record.is_data_discount_logging_enabled, false);
    assert.equal(record.created_at, record.updated_at);
  });

  it('gets a workspace by id (any case) and by slug; a slug and an id name different workspaces', async () => {
    const first = (await create({ name: 'First', slug: 'first' })).body.data;
    const second = (await create({ name: 'Second', slug: 'second' })).body.data;
    const byId = await gateway.request('GET', `/api/v1/workspaces/${first.id}`);
    assert.equal(byId.status, 200);
    assert.deepEqual(byId.body.data, first);
    const upper = await gateway.request('GET', `/api/v1/workspaces/${first.id.toUpperCase()}`);
    assert.deepEqual(upper.body.data, first);
    const bySlug = await gateway.request('GET', '/api/v1/workspaces/second');
    assert.deepEqual(bySlug.body.data, second);
    assert.notEqual(byId.body.data.id, bySlug.body.data.id);
    // A slug is matched exactly; an unknown id or slug is a 404.
    expectError(await gateway.request('GET', '/api/v1/workspaces/SECOND'), 404);
    expectError(await gateway.request('GET', `/api/v1/workspaces/${newId()}`), 404);
    expectError(await gateway.request('GET', '/api/v1/workspaces/no-such-workspace'), 404);
    // The default workspace is reachable by its seeded slug.
    const defaults = await gateway.request('GET', '/api/v1/workspaces/default');
    assert.equal(defaults.status, 200);
    assertWorkspaceRecord(defaults.body.data);
  });

  it('lists workspaces oldest first with total_count, paged by offset and limit', async () => {
    const all = await gateway.request('GET', '/api/v1/workspaces?limit=100');
    assert.equal(all.status, 200);
    assert.deepEqual(Object.keys(all.body).sort(), ['data', 'total_count']);
    const count = await gateway.services.storage.db
      .selectFrom('workspaces')
      .select((eb) => eb.fn.countAll().as('count'))
      .executeTakeFirstOrThrow();
    assert.equal(all.body.total_count, Number(count.count));
    assert.equal(all.body.data.length, all.body.total_count);
    assert.equal(all.body.data[0].slug, 'default');
    for (const record of all.body.data) assertWorkspaceRecord(record);
    const created = all.body.data.map((record: { created_at: string }) => record.created_at);
    assert.deepEqual(created, [...created].sort());

    const firstPage = await gateway.request('GET', '/api/v1/workspaces?limit=2');
    const secondPage = await gateway.request('GET', '/api/v1/workspaces?limit=2&offset=2');
    assert.equal(firstPage.body.data.length, 2);
    assert.equal(firstPage.body.total_count, all.body.total_count);
    assert.deepEqual(
      [...firstPage.body.data, ...secondPage.body.data].map((record: { id: string }) => record.id),
      all.body.data.slice(0, 4).map((record: { id: string }) => record.id),
    );
    const beyond = await gateway.request('GET', '/api/v1/workspaces?offset=1000');
    assert.deepEqual(beyond.body, { data: [], total_count: all.body.total_count });
  });

  it('the default page holds 50 workspaces', async () => {
    const existing = (await gateway.request('GET', '/api/v1/workspaces')).body.total_count as number;
    for (let index = existing; index < 52; index += 1) {
      assert.equal((await create({ name: `Bulk ${index}`, slug: `bulk-${index}` })).status, 200);
    }
    const page = await gateway.request('GET', '/api/v1/workspaces');
    assert.equal(page.body.data.length, 50);
    assert.ok(page.body.total_count >= 52);
  });

  it('updates only the supplied fields, checks the slug again, and publishes a policy change', async () => {
    const record = (
      await create({
        name: 'Patchable',
        slug: 'patchable',
        description: 'before',
        default_provider_sort: 'latency',
      })
    ).body.data;
    policyChanges.length = 0;
    const patched = await gateway.request('PATCH', '/api/v1/workspaces/patchable', {
      body: { name: 'Patched', slug: 'patched', io_logging_sampling_rate: 0.5 },
    });
    assert.equal(patched.status, 200);
    assertWorkspaceRecord(patched.body.data);
    assert.equal(patched.body.data.id, record.id);
    assert.equal(patched.body.data.name, 'Patched');
    assert.equal(patched.body.data.slug, 'patched');
    assert.equal(patched.body.data.io_logging_sampling_rate, 0.5);
    assert.equal(patched.body.data.description, 'before');
    assert.equal(patched.body.data.default_provider_sort, 'latency');
    assert.equal(patched.body.data.created_at, record.created_at);
    assert.ok(patched.body.data.updated_at >= record.updated_at);
    assert.deepEqual(policyChanges, [record.id]);

    // The old slug no longer names it; null clears text fields; keeping its own slug is fine.
    expectError(await gateway.request('GET', '/api/v1/workspaces/patchable'), 404);
    const cleared = await gateway.request('PATCH', `/api/v1/workspaces/${record.id}`, {
      body: { slug: 'patched', description: null, default_provider_sort: null, io_logging_api_key_ids: [] },
    });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.data.description, '');
    assert.equal(cleared.body.data.default_provider_sort, '');
    assert.deepEqual(cleared.body.data.io_logging_api_key_ids, []);
    const fetched = await gateway.request('GET', '/api/v1/workspaces/patched');
    assert.deepEqual(fetched.body.data, cleared.body.data);

    expectError(
      await gateway.request('PATCH', `/api/v1/workspaces/${newId()}`, { body: { name: 'ghost' } }),
      404,
    );
  });

  it('deletes a workspace and, in one go, everything that belongs to it', async () => {
    const { db } = gateway.services.storage;
    const doomed = (await create({ name: 'Doomed', slug: 'doomed' })).body.data.id as string;
    const kept = (await create({ name: 'Kept', slug: 'kept' })).body.data.id as string;
    const at = new Date().toISOString();
    const disabledKeys: string[] = [];
    for (const workspace of [doomed, kept]) {
      const key = await gateway.request('POST', '/api/v1/keys', {
        body: { name: `key of ${workspace}`, workspace_id: workspace, creator_user_id: 'user_1' },
      });
      const hash = key.body.data.hash as string;
      disabledKeys.push(hash);
      await gateway.request('PATCH', `/api/v1/keys/${hash}`, { body: { disabled: true } });
      await gateway.services.keys.recordUsage(hash, { usageNanos: 5, byokNanos: 0 });
      await gateway.request('POST', `/api/v1/workspaces/${workspace}/members/add`, {
        body: { user_ids: ['user_1', 'user_2'] },
      });
      await gateway.request('PUT', `/api/v1/workspaces/${workspace}/budgets/monthly`, {
        body: { limit_usd: 10 },
      });
      await db
        .insertInto('workspace_usage_daily')
        .values({ workspace_id: workspace, day: at.slice(0, 10), usage_nanos: 7, byok_usage_nanos: 0 })
        .execute();
      const guardrailId = newId();
      await db
        .insertInto('guardrails')
        .values({
          id: guardrailId,
          workspace_id: workspace,
          name: 'g',
          description: null,
          limit_nanos: null,
          reset_interval: null,
          allowed_models: null,
          allowed_providers: null,
          ignored_models: null,
          ignored_providers: null,
          enforce_zdr_anthropic: null,
          enforce_zdr_openai: null,
          enforce_zdr_google: null,
          enforce_zdr_other: null,
          content_filter_builtins: null,
          content_filters: null,
          is_workspace_default: 0,
          created_at: at,
          updated_at: at,
        })
        .execute();
      await db
        .insertInto('guardrail_key_assignments')
        .values({
          id: newId(),
          guardrail_id: guardrailId,
          key_hash: hash,
          assigned_by: 'test',
          created_at: at,
        })
        .execute();
      await db
        .insertInto('guardrail_member_assignments')
        .values({
          id: newId(),
          guardrail_id: guardrailId,
          workspace_id: workspace,
          user_id: 'user_1',
          organization_id: 'org',
          assigned_by: 'test',
          created_at: at,
        })
        .execute();
      await db
        .insertInto('byok_credentials')
        .values({
          id: newId(),
          workspace_id: workspace,
          name: 'b',
          provider: 'openai',
          label: 'sk-...abc',
          secret_ciphertext: 'x',
          disabled: 0,
          is_fallback: 0,
          sort_order: 0,
          allowed_api_key_hashes: null,
          allowed_models: null,
          allowed_user_ids: null,
          created_at: at,
          updated_at: at,
        })
        .execute();
    }

    async function rowsOf(workspace: string, keyHash: string) {
      const guardrails = await db
        .selectFrom('guardrails')
        .select('id')
        .where('workspace_id', '=', workspace)
        .execute();
      const guardrailIds = guardrails.map((row) => row.id);
      const count = async (query: { execute(): Promise<unknown[]> }) => (await query.execute()).length;
      return {
        workspaces: await count(db.selectFrom('workspaces').select('id').where('id', '=', workspace)),
        members: await count(
          db.selectFrom('workspace_members').select('id').where('workspace_id', '=', workspace),
        ),
        budgets: await count(
          db.selectFrom('workspace_budgets').select('id').where('workspace_id', '=', workspace),
        ),
        usage: await count(
          db.selectFrom('workspace_usage_daily').select('day').where('workspace_id', '=', workspace),
        ),
        guardrails: guardrails.length,
        keyAssignments: await count(
          db.selectFrom('guardrail_key_assignments').select('id').where('key_hash', '=', keyHash),
        ),
        memberAssignments: await count(
          db.selectFrom('guardrail_member_assignments').select('id').where('workspace_id', '=', workspace),
        ),
        guardrailAssignments:
          guardrailIds.length === 0
            ? 0
            : await count(
                db
                  .selectFrom('guardrail_key_assignments')
                  .select('id')
                  .where('guardrail_id', 'in', guardrailIds),
              ),
        byok: await count(
          db.selectFrom('byok_credentials').select('id').where('workspace_id', '=', workspace),
        ),
        keys: await count(db.selectFrom('api_keys').select('hash').where('workspace_id', '=', workspace)),
        keyUsage: await count(db.selectFrom('key_usage_daily').select('day').where('key_hash', '=', keyHash)),
      };
    }
    const before = await rowsOf(doomed, disabledKeys[0]!);
    assert.deepEqual(before, {
      workspaces: 1,
      members: 2,
      budgets: 1,
      usage: 1,
      guardrails: 1,
      keyAssignments: 1,
      memberAssignments: 1,
      guardrailAssignments: 1,
      byok: 1,
      keys: 1,
      keyUsage: 1,
    });

    policyChanges.length = 0;
    const deleted = await gateway.request('DELETE', '/api/v1/workspaces/doomed');
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { deleted: true });
    assert.deepEqual(policyChanges, [doomed]);
    const gone = await rowsOf(doomed, disabledKeys[0]!);
    for (const [table, count] of Object.entries(gone)) assert.equal(count, 0, table);
    assert.deepEqual(await rowsOf(kept, disabledKeys[1]!), before, 'another workspace keeps its rows');

    expectError(await gateway.request('GET', `/api/v1/workspaces/${doomed}`), 404);
    expectError(await gateway.request('DELETE', `/api/v1/workspaces/${doomed}`), 404);
    expectError(await gateway.request('GET', `/api/v1/keys/${disabledKeys[0]}`), 404);
    // The slug is free again.
    assert.equal((await create({ name: 'Doomed again', slug: 'doomed' })).status, 200);
  });

  it('refuses to delete the default workspace, or one with active keys (naming the count)', async () => {
    const defaults = (await gateway.request('GET', '/api/v1/workspaces/default')).body.data;
    const message = expectError(await gateway.request('DELETE', `/api/v1/workspaces/${defaults.id}`), 400);
    assert.match(message, /default workspace cannot be deleted/);
    // Nor renamed out of its slug, which another workspace could then take.
    const renamed = expectError(
      await gateway.request('PATCH', `/api/v1/workspaces/${defaults.id}`, { body: { slug: 'renamed' } }),
      400,
    );
    assert.match(renamed, /body\.slug of the default workspace cannot be changed/);
    assert.equal((await gateway.request('GET', '/api/v1/workspaces/default')).body.data.id, defaults.id);

    const busy = (await create({ name: 'Busy', slug: 'busy' })).body.data.id as string;
    for (const name of ['one', 'two']) {
      await gateway.request('POST', '/api/v1/keys', { body: { name, workspace_id: busy } });
    }
    const disabled = await gateway.request('POST', '/api/v1/keys', {
      body: { name: 'off', workspace_id: busy },
    });
    await gateway.request('PATCH', `/api/v1/keys/${disabled.body.data.hash}`, { body: { disabled: true } });
    const refused = expectError(await gateway.request('DELETE', '/api/v1/workspaces/busy'), 400);
    assert.match(refused, /still has 2 active API keys/);
    const rows = await gateway.services.storage.db
      .selectFrom('api_keys')
      .select('hash')
      .where('workspace_id', '=', busy)
      .execute();
    assert.equal(rows.length, 3, 'nothing was deleted');
    assert.equal((await gateway.request('GET', '/api/v1/workspaces/busy')).status, 200);
  });
});
