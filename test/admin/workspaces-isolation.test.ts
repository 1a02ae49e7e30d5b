import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/platform/ids.js';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * A key of workspace B can neither read nor change workspace A (404, as if A did not exist); inference
 * keys cannot manage (403); the organization key (a management key of the default workspace) reaches all.
 */
describe('Workspace isolation', () => {
  let gateway: TestApp;
  let workspaceA: { id: string; slug: string };
  let workspaceB: { id: string; slug: string };
  let managerB: string;
  let inferenceA: string;

  before(async () => {
    gateway = await startTestApp();
    const create = async (slug: string) =>
      (await gateway.request('POST', '/api/v1/workspaces', { body: { name: slug, slug } })).body.data;
    workspaceA = await create('workspace-a');
    workspaceB = await create('workspace-b');
    // POST /keys only issues inference keys; management keys come from the CLI's service call.
    managerB = (
      await gateway.services.keys.createManagementKey({ name: 'admin of B', workspace_id: workspaceB.id })
    ).key;
    inferenceA = (
      await gateway.request('POST', '/api/v1/keys', {
        body: { name: 'app of A', workspace_id: workspaceA.id },
      })
    ).body.key;
    await gateway.request('PUT', `/api/v1/workspaces/${workspaceA.id}/budgets/monthly`, {
      body: { limit_usd: 10 },
    });
    await gateway.request('POST', `/api/v1/workspaces/${workspaceA.id}/members/add`, {
      body: { user_ids: ['user_a'] },
    });
  });
  after(() => gateway.close());

  async function snapshotOfA() {
    const { db } = gateway.services.storage;
    return JSON.stringify([
      await db.selectFrom('workspaces').selectAll().where('id', '=', workspaceA.id).execute(),
      await db
        .selectFrom('workspace_budgets')
        .selectAll()
        .where('workspace_id', '=', workspaceA.id)
        .execute(),
      await db
        .selectFrom('workspace_members')
        .selectAll()
        .where('workspace_id', '=', workspaceA.id)
        .execute(),
    ]);
  }

  /** Every workspace route, as [method, path, body]. */
  function routesOf(id: string): Array<[string, string, unknown]> {
    return [
      ['GET', `/api/v1/workspaces/${id}`, undefined],
      ['PATCH', `/api/v1/workspaces/${id}`, { name: 'taken over' }],
      ['DELETE', `/api/v1/workspaces/${id}`, undefined],
      ['GET', `/api/v1/workspaces/${id}/members`, undefined],
      ['POST', `/api/v1/workspaces/${id}/members/add`, { user_ids: ['intruder'] }],
      ['POST', `/api/v1/workspaces/${id}/members/remove`, { user_ids: ['user_a'] }],
      ['GET', `/api/v1/workspaces/${id}/budgets`, undefined],
      ['GET', `/api/v1/workspaces/${id}/budgets/monthly`, undefined],
      ['PUT', `/api/v1/workspaces/${id}/budgets/monthly`, { limit_usd: 1_000 }],
      ['DELETE', `/api/v1/workspaces/${id}/budgets/monthly`, undefined],
    ];
  }

  it('a management key of B gets 404 for every route of A, by id or slug, and changes nothing', async () => {
    const before = await snapshotOfA();
    for (const id of [workspaceA.id, workspaceA.slug, 'default']) {
      for (const [method, path, body] of routesOf(id)) {
        const response = await gateway.request(method, path, { key: managerB, body });
        const message = expectError(response, 404);
        assert.equal(message, 'Workspace not found', `${method} ${path}`);
      }
    }
    assert.equal(await snapshotOfA(), before);
    // Out of reach reads exactly like unknown.
    const unknown = await gateway.request('GET', `/api/v1/workspaces/${newId()}`, { key: managerB });
    assert.equal(expectError(unknown, 404), 'Workspace not found');
  });

  it('a management key of B manages B itself, lists only B, and cannot create workspaces', async () => {
    const listed = await gateway.request('GET', '/api/v1/workspaces', { key: managerB });
    assert.equal(listed.status, 200);
    assert.equal(listed.body.total_count, 1);
    assert.deepEqual(
      listed.body.data.map((record: { id: string }) => record.id),
      [workspaceB.id],
    );
    const own = `/api/v1/workspaces/${workspaceB.slug}`;
    assert.equal((await gateway.request('GET', own, { key: managerB })).status, 200);
    assert.equal(
      (await gateway.request('PATCH', own, { key: managerB, body: { description: 'ours' } })).status,
      200,
    );
    assert.equal(
      (await gateway.request('PUT', `${own}/budgets/daily`, { key: managerB, body: { limit_usd: 1 } }))
        .status,
      200,
    );
    assert.equal(
      (await gateway.request('POST', `${own}/members/add`, { key: managerB, body: { user_ids: ['user_b'] } }))
        .status,
      200,
    );
    // Its own key is active, so B cannot delete itself.
    assert.match(
      expectError(await gateway.request('DELETE', own, { key: managerB }), 400),
      /still has 1 active API key/,
    );

    const refused = await gateway.request('POST', '/api/v1/workspaces', {
      key: managerB,
      body: { name: 'Rogue', slug: 'rogue' },
    });
    assert.match(expectError(refused, 403), /Only organization management keys .* can create workspaces/);
    expectError(await gateway.request('GET', '/api/v1/workspaces/rogue'), 404);
  });

  it('an inference key reads its own workspace, nothing else, and manages nothing (403)', async () => {
    const listed = await gateway.request('GET', '/api/v1/workspaces', { key: inferenceA });
    assert.deepEqual(
      listed.body.data.map((record: { id: string }) => record.id),
      [workspaceA.id],
    );
    assert.equal(listed.body.total_count, 1);
    for (const [method, path] of routesOf(workspaceA.id).filter(([method]) => method === 'GET')) {
      assert.equal((await gateway.request(method, path, { key: inferenceA })).status, 200, path);
    }
    for (const [method, path] of routesOf(workspaceB.id).filter(([method]) => method === 'GET')) {
      expectError(await gateway.request(method, path, { key: inferenceA }), 404);
    }
    const before = await snapshotOfA();
    const writes = [
      ...routesOf(workspaceA.id).filter(([method]) => method !== 'GET'),
      ['POST', '/api/v1/workspaces', { name: 'x', slug: 'x' }] as [string, string, unknown],
    ];
    for (const [method, path, body] of writes) {
      const message = expectError(await gateway.request(method, path, { key: inferenceA, body }), 403);
      assert.equal(message, 'Only management keys can perform this operation', `${method} ${path}`);
    }
    assert.equal(await snapshotOfA(), before);
  });

  it('the organization key reaches every workspace', async () => {
    for (const [method, path] of routesOf(workspaceB.id).filter(([method]) => method === 'GET')) {
      assert.equal((await gateway.request(method, path)).status, path.endsWith('/monthly') ? 404 : 200, path);
    }
    const listed = await gateway.request('GET', '/api/v1/workspaces');
    assert.equal(listed.body.total_count, 3);
  });

  it('requests without a key get 401', async () => {
    for (const [method, path, body] of routesOf(workspaceA.id)) {
      expectError(await gateway.request(method, path, { key: null, body }), 401);
    }
  });
});
