import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/platform/ids.js';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';

describe('Workspace members over HTTP', () => {
  let gateway: TestApp;
  let workspaceId: string;
  before(async () => {
    gateway = await startTestApp();
    const created = await gateway.request('POST', '/api/v1/workspaces', {
      body: { name: 'Team', slug: 'team' },
    });
    workspaceId = created.body.data.id;
  });
  after(() => gateway.close());

  const members = (path = '') => `/api/v1/workspaces/team/members${path}`;
  const storedMembers = async () =>
    (
      await gateway.services.storage.db
        .selectFrom('workspace_members')
        .select('user_id')
        .where('workspace_id', '=', workspaceId)
        .orderBy('user_id')
        .execute()
    ).map((row) => row.user_id);

  it('adds users as members (duplicates collapse), and does not add a member twice', async () => {
    const added = await gateway.request('POST', members('/add'), {
      body: { user_ids: ['user_a', 'user_b', 'user_a'] },
    });
    assert.equal(added.status, 200);
    assert.deepEqual(Object.keys(added.body).sort(), ['added_count', 'data']);
    assert.equal(added.body.added_count, 2);
    assert.deepEqual(
      added.body.data.map((member: { user_id: string }) => member.user_id),
      ['user_a', 'user_b'],
    );
    for (const member of added.body.data) {
      assert.deepEqual(Object.keys(member).sort(), ['created_at', 'id', 'role', 'user_id', 'workspace_id']);
      assert.match(member.id, /^[0-9a-f-]{36}$/);
      assert.equal(member.workspace_id, workspaceId);
      assert.equal(member.role, 'member');
      assert.match(member.created_at, /^\d{4}-\d{2}-\d{2}T/);
    }

    const again = await gateway.request('POST', members('/add'), {
      body: { user_ids: ['user_b', 'user_c'] },
    });
    assert.equal(again.body.added_count, 1);
    assert.deepEqual(
      again.body.data.map((member: { user_id: string }) => member.user_id),
      ['user_c'],
    );
    assert.deepEqual(await storedMembers(), ['user_a', 'user_b', 'user_c']);
  });

  it('lists members with total_count, paged, by id or slug', async () => {
    const listed = await gateway.request('GET', members());
    assert.equal(listed.status, 200);
    assert.equal(listed.body.total_count, 3);
    assert.deepEqual(listed.body.data.map((member: { user_id: string }) => member.user_id).sort(), [
      'user_a',
      'user_b',
      'user_c',
    ]);
    const byId = await gateway.request('GET', `/api/v1/workspaces/${workspaceId}/members?limit=2&offset=1`);
    assert.equal(byId.body.total_count, 3);
    assert.equal(byId.body.data.length, 2);
    assert.deepEqual(byId.body.data, listed.body.data.slice(1, 3));
    expectError(await gateway.request('GET', `/api/v1/workspaces/${newId()}/members`), 404);
    expectError(await gateway.request('GET', members('?limit=101')), 400);
    expectError(await gateway.request('GET', members('?offset=-1')), 400);
  });

  it('removes members, counting only those that were members', async () => {
    await gateway.request('POST', members('/add'), { body: { user_ids: ['user_x', 'user_y'] } });
    const removed = await gateway.request('POST', members('/remove'), {
      body: { user_ids: ['user_x', 'user_y', 'user_y', 'never_a_member'] },
    });
    assert.equal(removed.status, 200);
    assert.deepEqual(removed.body, { removed_count: 2 });
    assert.deepEqual(await storedMembers(), ['user_a', 'user_b', 'user_c']);
  });

  it('refuses to remove members that still have active keys in the workspace, naming them', async () => {
    const key = await gateway.request('POST', '/api/v1/keys', {
      body: { name: 'a key', creator_user_id: 'user_a', workspace_id: workspaceId },
    });
    // A key of user_b in another workspace does not hold user_b here.
    await gateway.request('POST', '/api/v1/keys', { body: { name: 'elsewhere', creator_user_id: 'user_b' } });
    const message = expectError(
      await gateway.request('POST', members('/remove'), { body: { user_ids: ['user_a', 'user_b'] } }),
      400,
    );
    assert.match(message, /still have active API keys in this workspace/);
    assert.match(message, /user_a/);
    assert.doesNotMatch(message, /user_b/);
    assert.deepEqual(await storedMembers(), ['user_a', 'user_b', 'user_c'], 'nobody was removed');

    // Once the key is disabled, the member can go.
    await gateway.request('PATCH', `/api/v1/keys/${key.body.data.hash}`, { body: { disabled: true } });
    const removed = await gateway.request('POST', members('/remove'), {
      body: { user_ids: ['user_a', 'user_b'] },
    });
    assert.deepEqual(removed.body, { removed_count: 2 });
    assert.deepEqual(await storedMembers(), ['user_c']);
  });

  it('refuses bad user_ids lists', async () => {
    const before = await storedMembers();
    const hundredAndOne = Array.from({ length: 101 }, (_, index) => `user_${index}`);
    const cases: Array<[unknown, RegExp]> = [
      [{ user_ids: [] }, /body\.user_ids must NOT have fewer than 1 items/],
      [{ user_ids: hundredAndOne }, /body\.user_ids must NOT have more than 100 items/],
      [{ user_ids: [''] }, /body\.user_ids\.0 must NOT have fewer than 1 characters/],
      [{ user_ids: ['u'.repeat(257)] }, /body\.user_ids\.0 must NOT have more than 256 characters/],
      [{ user_ids: [42] }, /body\.user_ids\.0 must be string/],
      [{ user_ids: ['a\u0000b'] }, /body\.user_ids\.0 must not contain NUL characters/],
      [
        { user_ids: ['ok', '\ud800'] },
        /body\.user_ids\.1 must not contain NUL characters or unpaired surrogates/,
      ],
      [{ user_ids: 'user_a' }, /body\.user_ids must be array/],
      [{}, /body\.user_ids/],
      [{ user_ids: ['a'], role: 'admin' }, /body\.role is not a known field/],
    ];
    for (const path of ['/add', '/remove']) {
      for (const [body, pattern] of cases) {
        assert.match(expectError(await gateway.request('POST', members(path), { body }), 400), pattern);
      }
    }
    assert.equal(
      (await gateway.request('POST', members('/add'), { body: { user_ids: hundredAndOne.slice(0, 100) } }))
        .status,
      200,
      '100 is the boundary',
    );
    assert.equal((await storedMembers()).length, before.length + 100);
    expectError(
      await gateway.request('POST', `/api/v1/workspaces/${newId()}/members/add`, {
        body: { user_ids: ['a'] },
      }),
      404,
    );
  });
});
