import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashApiKey, newId } from '../../src/platform/ids.js';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * A management key of a workspace other than the default one manages only its own workspace's keys:
 * another workspace named in `workspace_id`, or a key hash of another workspace, is a 404.
 */
describe('API key isolation between workspaces', () => {
  let gateway: TestApp;
  let workspaceA: string;
  let workspaceB: string;
  let managerB: string;
  let keyOfA: string;

  before(async () => {
    gateway = await startTestApp();
    const create = async (slug: string) =>
      (await gateway.request('POST', '/api/v1/workspaces', { body: { name: slug, slug } })).body.data
        .id as string;
    workspaceA = await create('keys-a');
    workspaceB = await create('keys-b');
    managerB = (
      await gateway.services.keys.createManagementKey({ name: 'admin of B', workspace_id: workspaceB })
    ).key;
    keyOfA = (
      await gateway.request('POST', '/api/v1/keys', { body: { name: 'of A', workspace_id: workspaceA } })
    ).body.data.hash;
  });
  after(() => gateway.close());

  const asB = (method: string, path: string, body?: unknown) =>
    gateway.request(method, path, { key: managerB, body });
  const keyRows = async () =>
    JSON.stringify(
      await gateway.services.storage.db.selectFrom('api_keys').selectAll().orderBy('hash').execute(),
    );

  it('creates keys in its own workspace by default, and naming another workspace is a 404', async () => {
    const created = await asB('POST', '/api/v1/keys', { name: 'of B' });
    assert.equal(created.status, 200);
    assert.equal(created.body.data.workspace_id, workspaceB);
    const explicit = await asB('POST', '/api/v1/keys', {
      name: 'of B too',
      workspace_id: workspaceB.toUpperCase(),
    });
    assert.equal(explicit.status, 200);
    assert.equal(explicit.body.data.workspace_id, workspaceB);

    const before = await keyRows();
    for (const workspace of [workspaceA, newId()]) {
      const refused = await asB('POST', '/api/v1/keys', { name: 'intruder', workspace_id: workspace });
      assert.equal(expectError(refused, 404), 'Workspace not found');
    }
    assert.equal(await keyRows(), before);
  });

  it('lists only its own workspace; another (or unknown) workspace_id is a 404', async () => {
    const listed = await asB('GET', '/api/v1/keys?include_disabled=true');
    assert.equal(listed.status, 200);
    assert.ok(listed.body.data.length >= 3);
    for (const key of listed.body.data) assert.equal(key.workspace_id, workspaceB);
    assert.equal((await asB('GET', `/api/v1/keys?workspace_id=${workspaceB}`)).status, 200);
    for (const workspace of [workspaceA, newId()]) {
      assert.equal(
        expectError(await asB('GET', `/api/v1/keys?workspace_id=${workspace}`), 404),
        'Workspace not found',
      );
    }
  });

  it('cannot get, update or delete a key of another workspace (404), only its own', async () => {
    const bootstrap = hashApiKey(gateway.managementKey);
    const before = await keyRows();
    for (const hash of [keyOfA, bootstrap]) {
      assert.equal(expectError(await asB('GET', `/api/v1/keys/${hash}`), 404), 'API key not found');
      assert.equal(
        expectError(await asB('PATCH', `/api/v1/keys/${hash}`, { disabled: true }), 404),
        'API key not found',
      );
      assert.equal(expectError(await asB('DELETE', `/api/v1/keys/${hash}`), 404), 'API key not found');
    }
    assert.equal(await keyRows(), before);

    const own = (await asB('POST', '/api/v1/keys', { name: 'mine' })).body.data.hash;
    assert.equal((await asB('GET', `/api/v1/keys/${own}`)).status, 200);
    assert.equal(
      (await asB('PATCH', `/api/v1/keys/${own}`, { name: 'still mine' })).body.data.name,
      'still mine',
    );
    assert.deepEqual((await asB('DELETE', `/api/v1/keys/${own}`)).body, { deleted: true });
  });

  it('the organization key keeps reaching every workspace, and an unknown one stays a 400', async () => {
    assert.equal((await gateway.request('GET', `/api/v1/keys/${keyOfA}`)).status, 200);
    const ofB = await gateway.request('GET', `/api/v1/keys?workspace_id=${workspaceB}`);
    assert.ok(ofB.body.data.length >= 2);
    const created = await gateway.request('POST', '/api/v1/keys', {
      body: { name: 'x', workspace_id: workspaceB },
    });
    assert.equal(created.body.data.workspace_id, workspaceB);
    const defaults = await gateway.request('POST', '/api/v1/keys', { body: { name: 'y' } });
    const defaultWorkspace = (await gateway.request('GET', '/api/v1/workspaces/default')).body.data.id;
    assert.equal(defaults.body.data.workspace_id, defaultWorkspace);
    assert.match(
      expectError(await gateway.request('GET', `/api/v1/keys?workspace_id=${newId()}`), 400),
      /workspace_id names no existing workspace/,
    );
  });

  it('an inference key cannot use /keys at all (403)', async () => {
    const inference = (
      await gateway.request('POST', '/api/v1/keys', { body: { name: 'app', workspace_id: workspaceA } })
    ).body.key;
    for (const [method, path] of [
      ['GET', '/api/v1/keys'],
      ['GET', `/api/v1/keys/${keyOfA}`],
      ['DELETE', `/api/v1/keys/${keyOfA}`],
    ] as const) {
      expectError(await gateway.request(method, path, { key: inference }), 403);
    }
  });
});
