import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ORGANIZATION_ID } from '../../src/admin/guardrails/guardrail-assignment-service.js';
import { POLICY_TOPIC } from '../../src/admin/workspaces/workspace-access.js';
import { newId } from '../../src/platform/ids.js';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';

const GUARDRAILS = '/api/v1/guardrails';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A workspace row written directly: the workspaces API is not what this file tests. */
async function addWorkspace(gateway: TestApp): Promise<string> {
  const id = newId();
  const at = new Date().toISOString();
  await gateway.services.storage.db
    .insertInto('workspaces')
    .values({
      id,
      name: 'Other',
      slug: `other-${id.slice(0, 8)}`,
      description: '',
      created_by: 'test',
      default_text_model: '',
      default_image_model: '',
      default_provider_sort: '',
      io_logging_api_key_ids: null,
      io_logging_sampling_rate: 1,
      is_data_discount_logging_enabled: 0,
      is_observability_broadcast_enabled: 0,
      is_observability_io_logging_enabled: 0,
      include_byok_in_budgets: 0,
      is_default: 0,
      created_at: at,
      updated_at: at,
    })
    .execute();
  return id;
}

describe('guardrail assignments over HTTP', () => {
  let gateway: TestApp;
  let defaultWorkspace: string;
  let otherWorkspace: string;
  let otherManager: string;
  const policyChanges: string[] = [];

  const newKey = async (body: Record<string, unknown>) => {
    const created = await gateway.request('POST', '/api/v1/keys', { body });
    assert.equal(created.status, 200, created.text);
    return created.body.data as { hash: string; name: string; label: string };
  };
  const newGuardrail = async (name: string, key?: string) => {
    const created = await gateway.request('POST', GUARDRAILS, { body: { name }, ...(key ? { key } : {}) });
    assert.equal(created.status, 200, created.text);
    return created.body.data.id as string;
  };
  const addMember = (workspaceId: string, userId: string) =>
    gateway.services.storage.db
      .insertInto('workspace_members')
      .values({
        id: newId(),
        workspace_id: workspaceId,
        user_id: userId,
        role: 'member',
        created_at: new Date().toISOString(),
      })
      .execute();

  before(async () => {
    gateway = await startTestApp();
    gateway.services.bus.subscribe(POLICY_TOPIC, (workspaceId) => policyChanges.push(workspaceId));
    defaultWorkspace = (await gateway.request('GET', '/api/v1/key')).body.data.workspace_id;
    otherWorkspace = await addWorkspace(gateway);
    otherManager = (
      await gateway.services.keys.createManagementKey({ name: 'B admin', workspace_id: otherWorkspace })
    ).key;
  });
  after(() => gateway.close());

  it('assigns keys: one guardrail per key, a new assignment replaces the old one', async () => {
    const first = await newKey({ name: 'first key' });
    const second = await newKey({ name: 'second key' });
    const railOne = await newGuardrail('one');
    const railTwo = await newGuardrail('two');
    const before = policyChanges.length;

    const assigned = await gateway.request('POST', `${GUARDRAILS}/${railOne}/assignments/keys`, {
      body: { key_hashes: [first.hash, second.hash, first.hash] },
    });
    assert.equal(assigned.status, 200, assigned.text);
    assert.deepEqual(assigned.body, { assigned_count: 2 });
    assert.deepEqual(policyChanges.slice(before), [defaultWorkspace]);

    const listed = await gateway.request('GET', `${GUARDRAILS}/${railOne}/assignments/keys`);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.total_count, 2);
    const byHash = new Map(listed.body.data.map((item: { key_hash: string }) => [item.key_hash, item]));
    assert.deepEqual(Object.keys(byHash.get(first.hash) as object).sort(), [
      'assigned_by',
      'created_at',
      'guardrail_id',
      'id',
      'key_hash',
      'key_label',
      'key_name',
    ]);
    assert.deepEqual(
      { ...(byHash.get(first.hash) as object), id: 0, created_at: 0 },
      {
        id: 0,
        created_at: 0,
        guardrail_id: railOne,
        key_hash: first.hash,
        key_name: 'first key',
        key_label: first.label,
        assigned_by: sha256(gateway.managementKey),
      },
    );

    // Already holding it: nothing changes.
    const again = await gateway.request('POST', `${GUARDRAILS}/${railOne}/assignments/keys`, {
      body: { key_hashes: [first.hash] },
    });
    assert.deepEqual(again.body, { assigned_count: 0 });
    // Moving a key to another guardrail replaces its assignment.
    const moved = await gateway.request('POST', `${GUARDRAILS}/${railTwo}/assignments/keys`, {
      body: { key_hashes: [first.hash] },
    });
    assert.deepEqual(moved.body, { assigned_count: 1 });
    const one = await gateway.request('GET', `${GUARDRAILS}/${railOne}/assignments/keys`);
    assert.deepEqual(
      one.body.data.map((item: { key_hash: string }) => item.key_hash),
      [second.hash],
    );
    const two = await gateway.request('GET', `${GUARDRAILS}/${railTwo}/assignments/keys`);
    assert.deepEqual(
      two.body.data.map((item: { key_hash: string }) => item.key_hash),
      [first.hash],
    );
    const rows = await gateway.services.storage.db
      .selectFrom('guardrail_key_assignments')
      .selectAll()
      .where('key_hash', '=', first.hash)
      .execute();
    assert.equal(rows.length, 1);

    const removed = await gateway.request('POST', `${GUARDRAILS}/${railOne}/assignments/keys/remove`, {
      body: { key_hashes: [second.hash, first.hash, 'f'.repeat(64)] },
    });
    assert.deepEqual(removed.body, { unassigned_count: 1 }, 'only what this guardrail held');
    const empty = await gateway.request('GET', `${GUARDRAILS}/${railOne}/assignments/keys`);
    assert.deepEqual(empty.body, { data: [], total_count: 0 });
  });

  it('refuses unknown keys and keys of another workspace alike, and empty or malformed lists', async () => {
    const ours = await newKey({ name: 'ours' });
    const theirs = await newKey({ name: 'theirs', workspace_id: otherWorkspace });
    const rail = await newGuardrail('strict');
    const path = `${GUARDRAILS}/${rail}/assignments/keys`;
    const unknown = expectError(
      await gateway.request('POST', path, { body: { key_hashes: [ours.hash, 'a'.repeat(64)] } }),
      400,
    );
    assert.equal(
      unknown,
      "Invalid request parameters: body.key_hashes.1 must be the hash of an API key of the guardrail's workspace",
    );
    const foreign = expectError(
      await gateway.request('POST', path, { body: { key_hashes: [ours.hash, theirs.hash] } }),
      400,
    );
    assert.equal(foreign, unknown, 'the same answer for a key that exists elsewhere');
    assert.match(
      expectError(await gateway.request('POST', path, { body: { key_hashes: [] } }), 400),
      /body\.key_hashes must NOT have fewer than 1 items/,
    );
    assert.match(
      expectError(await gateway.request('POST', path, { body: { key_hashes: ['A'.repeat(64)] } }), 400),
      /body\.key_hashes\.0/,
    );
    assert.match(
      expectError(
        await gateway.request('POST', path, { body: { key_hashes: Array(101).fill(ours.hash) } }),
        400,
      ),
      /more than 100 items/,
    );
    assert.match(
      expectError(await gateway.request('POST', `${path}/remove`, { body: {} }), 400),
      /body\.key_hashes/,
    );
    const stored = await gateway.request('GET', path);
    assert.equal(stored.body.total_count, 0, 'nothing assigned by a refused request');
  });

  it('assigns members of the workspace (or creators of its keys), one guardrail per member and workspace', async () => {
    await addMember(defaultWorkspace, 'user_member');
    await addMember(otherWorkspace, 'user_elsewhere');
    await newKey({ name: 'created by', creator_user_id: 'user_creator' });
    const railOne = await newGuardrail('members one');
    const railTwo = await newGuardrail('members two');
    const path = (rail: string) => `${GUARDRAILS}/${rail}/assignments/members`;

    const assigned = await gateway.request('POST', path(railOne), {
      body: { member_user_ids: ['user_member', 'user_creator'] },
    });
    assert.equal(assigned.status, 200, assigned.text);
    assert.deepEqual(assigned.body, { assigned_count: 2 });
    const listed = await gateway.request('GET', path(railOne));
    assert.equal(listed.body.total_count, 2);
    const member = listed.body.data.find((item: { user_id: string }) => item.user_id === 'user_member');
    assert.deepEqual(
      { ...member, id: 0, created_at: 0 },
      {
        id: 0,
        created_at: 0,
        guardrail_id: railOne,
        user_id: 'user_member',
        organization_id: ORGANIZATION_ID,
        assigned_by: sha256(gateway.managementKey),
      },
    );

    for (const outsider of ['user_nobody', 'user_elsewhere']) {
      assert.equal(
        expectError(
          await gateway.request('POST', path(railOne), { body: { member_user_ids: [outsider] } }),
          400,
        ),
        "Invalid request parameters: body.member_user_ids.0 must be a member of the guardrail's workspace (or the creator_user_id of one of its keys)",
      );
    }
    assert.match(
      expectError(await gateway.request('POST', path(railOne), { body: { member_user_ids: [] } }), 400),
      /body\.member_user_ids must NOT have fewer than 1 items/,
    );

    const moved = await gateway.request('POST', path(railTwo), {
      body: { member_user_ids: ['user_member'] },
    });
    assert.deepEqual(moved.body, { assigned_count: 1 });
    const one = await gateway.request('GET', path(railOne));
    assert.deepEqual(
      one.body.data.map((item: { user_id: string }) => item.user_id),
      ['user_creator'],
    );
    const all = await gateway.request('GET', `${GUARDRAILS}/assignments/members?limit=1`);
    assert.equal(all.status, 200);
    assert.equal(all.body.data.length, 1);
    assert.ok(all.body.total_count >= 2);

    const removed = await gateway.request('POST', `${path(railTwo)}/remove`, {
      body: { member_user_ids: ['user_member', 'user_creator'] },
    });
    assert.deepEqual(removed.body, { unassigned_count: 1 });
  });

  it('a member who leaves the workspace leaves its guardrail assignment there, and keeps the one elsewhere', async () => {
    await addMember(defaultWorkspace, 'user_leaving');
    await addMember(otherWorkspace, 'user_leaving');
    const rail = await newGuardrail('for the leaver');
    const elsewhere = await newGuardrail('elsewhere', otherManager);
    const path = (id: string) => `${GUARDRAILS}/${id}/assignments/members`;
    for (const [id, key] of [
      [rail, undefined],
      [elsewhere, otherManager],
    ] as const) {
      const assigned = await gateway.request('POST', path(id), {
        body: { member_user_ids: ['user_leaving'] },
        ...(key ? { key } : {}),
      });
      assert.deepEqual(assigned.body, { assigned_count: 1 }, assigned.text);
    }
    const left = await gateway.request('POST', `/api/v1/workspaces/${defaultWorkspace}/members/remove`, {
      body: { user_ids: ['user_leaving'] },
    });
    assert.deepEqual(left.body, { removed_count: 1 }, left.text);
    const listed = await gateway.request('GET', path(rail));
    assert.deepEqual(listed.body, { data: [], total_count: 0 });
    const kept = await gateway.request('GET', path(elsewhere), { key: otherManager });
    assert.deepEqual(
      kept.body.data.map((item: { user_id: string }) => item.user_id),
      ['user_leaving'],
    );
    // Back in the workspace, the member starts without one.
    await addMember(defaultWorkspace, 'user_leaving');
    assert.equal((await gateway.request('GET', path(rail))).body.total_count, 0);
    const cleared = await gateway.request('POST', `${path(elsewhere)}/remove`, {
      body: { member_user_ids: ['user_leaving'] },
      key: otherManager,
    });
    assert.deepEqual(cleared.body, { unassigned_count: 1 });
  });

  it('deletes a guardrail together with its assignments', async () => {
    const key = await newKey({ name: 'doomed' });
    await addMember(defaultWorkspace, 'user_doomed');
    const rail = await newGuardrail('doomed');
    await gateway.request('POST', `${GUARDRAILS}/${rail}/assignments/keys`, {
      body: { key_hashes: [key.hash] },
    });
    await gateway.request('POST', `${GUARDRAILS}/${rail}/assignments/members`, {
      body: { member_user_ids: ['user_doomed'] },
    });
    assert.equal((await gateway.request('DELETE', `${GUARDRAILS}/${rail}`)).status, 200);
    const db = gateway.services.storage.db;
    assert.deepEqual(
      await db.selectFrom('guardrail_key_assignments').selectAll().where('guardrail_id', '=', rail).execute(),
      [],
    );
    assert.deepEqual(
      await db
        .selectFrom('guardrail_member_assignments')
        .selectAll()
        .where('guardrail_id', '=', rail)
        .execute(),
      [],
    );
    expectError(await gateway.request('GET', `${GUARDRAILS}/${rail}/assignments/keys`), 404);
  });

  it('keeps assignments within reach: another workspace sees only its own, and 404 for ours', async () => {
    const ours = await newKey({ name: 'ours for reach' });
    const rail = await newGuardrail('ours for reach');
    await gateway.request('POST', `${GUARDRAILS}/${rail}/assignments/keys`, {
      body: { key_hashes: [ours.hash] },
    });
    const theirKey = await newKey({ name: 'their key', workspace_id: otherWorkspace });
    const theirRail = await newGuardrail('their rail', otherManager);
    const theirs = await gateway.request('POST', `${GUARDRAILS}/${theirRail}/assignments/keys`, {
      key: otherManager,
      body: { key_hashes: [theirKey.hash] },
    });
    assert.deepEqual(theirs.body, { assigned_count: 1 });

    const seen = await gateway.request('GET', `${GUARDRAILS}/assignments/keys`, { key: otherManager });
    assert.equal(seen.status, 200);
    assert.deepEqual(
      seen.body.data.map((item: { key_hash: string }) => item.key_hash),
      [theirKey.hash],
    );
    assert.equal(seen.body.total_count, 1);
    const members = await gateway.request('GET', `${GUARDRAILS}/assignments/members`, { key: otherManager });
    assert.deepEqual(members.body, { data: [], total_count: 0 });
    // The organization key (default workspace) sees every workspace's assignments.
    const everything = await gateway.request('GET', `${GUARDRAILS}/assignments/keys?limit=100`);
    const hashes = everything.body.data.map((item: { key_hash: string }) => item.key_hash);
    assert.ok(hashes.includes(theirKey.hash) && hashes.includes(ours.hash));

    for (const [method, path, body] of [
      ['GET', `${GUARDRAILS}/${rail}/assignments/keys`],
      ['POST', `${GUARDRAILS}/${rail}/assignments/keys`, { key_hashes: [theirKey.hash] }],
      ['POST', `${GUARDRAILS}/${rail}/assignments/keys/remove`, { key_hashes: [ours.hash] }],
      ['GET', `${GUARDRAILS}/${rail}/assignments/members`],
      ['POST', `${GUARDRAILS}/${rail}/assignments/members`, { member_user_ids: ['user_member'] }],
      ['POST', `${GUARDRAILS}/${rail}/assignments/members/remove`, { member_user_ids: ['user_member'] }],
    ] as const) {
      expectError(await gateway.request(method, path, { key: otherManager, ...(body ? { body } : {}) }), 404);
    }
    const still = await gateway.request('GET', `${GUARDRAILS}/${rail}/assignments/keys`);
    assert.equal(still.body.total_count, 1, 'their attempts changed nothing');
    for (const query of ['limit=0', 'limit=101', 'offset=-1']) {
      expectError(await gateway.request('GET', `${GUARDRAILS}/assignments/keys?${query}`), 400);
    }
  });
});
