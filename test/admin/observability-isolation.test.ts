import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { expectError, type TestApp } from '../helpers/test-app.js';
import {
  createDestination,
  DESTINATIONS,
  destinationRow,
  insertDelivery,
  langfuseConfig,
  startObservabilityGateway,
} from './observability-helpers.js';

/**
 * Destinations belong to a workspace: a key of workspace B, management or not, can neither see nor
 * touch those of workspace A (404, so ids do not leak), while the organization key (management key
 * of the default workspace) reaches every workspace.
 */
describe('observability destinations are isolated by workspace', () => {
  let gateway: TestApp;
  let workspaceA: string;
  let workspaceB: string;
  let destinationA: Record<string, any>;
  let managerB: string;
  let inferenceB: string;

  before(async () => {
    gateway = await startObservabilityGateway();
    const workspace = async (name: string, slug: string) => {
      const created = await gateway.request('POST', '/api/v1/workspaces', { body: { name, slug } });
      assert.equal(created.status, 200, created.text);
      return created.body.data.id as string;
    };
    workspaceA = await workspace('A', 'team-a');
    workspaceB = await workspace('B', 'team-b');
    managerB = (
      await gateway.services.keys.createManagementKey({ name: 'b admin', workspace_id: workspaceB })
    ).key;
    const keyB = await gateway.request('POST', '/api/v1/keys', {
      body: { name: 'b', workspace_id: workspaceB },
    });
    inferenceB = keyB.body.key;
    destinationA = await createDestination(gateway, {
      type: 'langfuse',
      name: 'A tracing',
      config: langfuseConfig(),
      workspace_id: workspaceA,
    });
    await insertDelivery(gateway, { destination_id: destinationA.id, workspace_id: workspaceA });
  });
  after(async () => {
    await gateway?.close();
  });

  it('the organization key creates in and lists any workspace', async () => {
    assert.equal(destinationA.workspace_id, workspaceA);
    const listed = await gateway.request('GET', `${DESTINATIONS}?workspace_id=${workspaceA}`);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.body.data.map((record: { id: string }) => record.id),
      [destinationA.id],
    );
    const own = await gateway.request('GET', DESTINATIONS);
    assert.equal(own.body.total_count, 0, 'the default workspace has none of its own');
    assert.equal((await gateway.request('GET', `${DESTINATIONS}/${destinationA.id}`)).status, 200);
  });

  it("answers 404 to another workspace's management key, for reads and changes alike", async () => {
    const id = destinationA.id;
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', `${DESTINATIONS}/${id}`],
      ['PATCH', `${DESTINATIONS}/${id}`, { enabled: false }],
      ['DELETE', `${DESTINATIONS}/${id}`],
      ['POST', `${DESTINATIONS}/${id}/test`],
      ['GET', `${DESTINATIONS}/${id}/deliveries`],
      ['POST', `${DESTINATIONS}/${id}/deliveries/retry`],
      ['GET', `${DESTINATIONS}?workspace_id=${workspaceA}`],
      [
        'POST',
        DESTINATIONS,
        { type: 'langfuse', name: 'intruder', config: langfuseConfig(), workspace_id: workspaceA },
      ],
    ];
    for (const [method, path, body] of attempts) {
      const response = await gateway.request(method, path, { key: managerB, ...(body ? { body } : {}) });
      expectError(response, 404);
    }
    const row = await destinationRow(gateway, id);
    assert.equal(row.enabled, 1);
    assert.equal(row.deleted_at, null);
    const dead = await gateway.services.storage.db
      .selectFrom('broadcast_outbox')
      .select('status')
      .where('destination_id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(dead.status, 'dead', 'the retry did not reach workspace A');
    const inA = await gateway.request('GET', `${DESTINATIONS}?workspace_id=${workspaceA}`);
    assert.equal(inA.body.total_count, 1, 'nothing was created in workspace A');
  });

  it("an inference key of another workspace gets 404 for A's destinations and reads only its own", async () => {
    expectError(await gateway.request('GET', `${DESTINATIONS}/${destinationA.id}`, { key: inferenceB }), 404);
    expectError(
      await gateway.request('GET', `${DESTINATIONS}?workspace_id=${workspaceA}`, { key: inferenceB }),
      404,
    );
    const own = await gateway.request('GET', DESTINATIONS, { key: inferenceB });
    assert.equal(own.status, 200, own.text);
    assert.equal(own.body.total_count, 0);
  });

  it("B's management key manages B's destinations, with a limit of its own", async () => {
    // Workspace A holds five datadog destinations; B may still create five.
    for (let index = 0; index < 5; index += 1) {
      await createDestination(gateway, {
        type: 'datadog',
        name: `A ${index}`,
        config: { apiKey: 'dd-api-key-0123456789', mlApp: 'a' },
        workspace_id: workspaceA,
      });
    }
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1) {
      const record = await createDestination(
        gateway,
        { type: 'datadog', name: `B ${index}`, config: { apiKey: 'dd-api-key-0123456789', mlApp: 'b' } },
        managerB,
      );
      assert.equal(record.workspace_id, workspaceB, "a workspace's own key creates there by default");
      ids.push(record.id);
    }
    const sixth = await gateway.request('POST', DESTINATIONS, {
      key: managerB,
      body: { type: 'datadog', name: 'B 6', config: { apiKey: 'dd-api-key-0123456789', mlApp: 'b' } },
    });
    expectError(sixth, 409);
    const listed = await gateway.request('GET', DESTINATIONS, { key: managerB });
    assert.equal(listed.body.total_count, 5);
    assert.ok(
      listed.body.data.every((record: { workspace_id: string }) => record.workspace_id === workspaceB),
    );
    const patched = await gateway.request('PATCH', `${DESTINATIONS}/${ids[0]}`, {
      key: managerB,
      body: { enabled: false },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(
      (await gateway.request('DELETE', `${DESTINATIONS}/${ids[1]}`, { key: managerB })).status,
      200,
    );
    // The organization key reaches B's destinations too.
    const fromOrganization = await gateway.request('GET', `${DESTINATIONS}/${ids[0]}`);
    assert.equal(fromOrganization.status, 200);
    assert.equal(fromOrganization.body.data.enabled, false);
  });
});
