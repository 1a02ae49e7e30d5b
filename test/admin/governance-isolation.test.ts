import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ClientResponse, startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * Isolation across every governance resource: a management key of workspace B can neither read nor
 * change anything of workspace A (404, so that ids do not leak), and an inference key can perform
 * no management operation (403).
 */

function ok(response: ClientResponse, what: string) {
  assert.ok(
    response.status === 200 || response.status === 201,
    `${what}: ${response.status} ${response.text}`,
  );
  return response.body;
}

describe('governance resources are isolated by workspace', () => {
  let gateway: TestApp;
  let workspaceA: string;
  let workspaceB: string;
  let guardrailA: string;
  let byokA: string;
  let keyA: { key: string; hash: string };
  let managerB: string;
  let inferenceB: string;

  before(async () => {
    gateway = await startTestApp({ config: { providers: { openai: { api_key: 'platform' } } } });
    workspaceA = ok(
      await gateway.request('POST', '/api/v1/workspaces', { body: { name: 'A', slug: 'team-a' } }),
      'workspace A',
    ).data.id;
    workspaceB = ok(
      await gateway.request('POST', '/api/v1/workspaces', { body: { name: 'B', slug: 'team-b' } }),
      'workspace B',
    ).data.id;
    const createdA = ok(
      await gateway.request('POST', '/api/v1/keys', { body: { name: 'a', workspace_id: workspaceA } }),
      'key A',
    );
    keyA = { key: createdA.key, hash: createdA.data.hash };
    // Management keys are issued by the CLI (or the bootstrap key), not over HTTP.
    managerB = (
      await gateway.services.keys.createManagementKey({ name: 'b admin', workspace_id: workspaceB })
    ).key;
    inferenceB = ok(
      await gateway.request('POST', '/api/v1/keys', { body: { name: 'b', workspace_id: workspaceB } }),
      'key B',
    ).key;
    ok(
      await gateway.request('PUT', `/api/v1/workspaces/${workspaceA}/budgets/monthly`, {
        body: { limit_usd: 10 },
      }),
      'budget A',
    );
    guardrailA = ok(
      await gateway.request('POST', '/api/v1/guardrails', {
        body: { name: 'rail A', workspace_id: workspaceA },
      }),
      'guardrail A',
    ).data.id;
    byokA = ok(
      await gateway.request('POST', '/api/v1/byok', {
        body: { provider: 'openai', key: 'sk-team-a-secret-value-123', workspace_id: workspaceA },
      }),
      'byok A',
    ).data.id;
  });
  after(async () => {
    await gateway?.close();
  });

  it('answers 404 to a management key of another workspace, for reads and changes alike', async () => {
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', `/api/v1/workspaces/${workspaceA}`],
      ['GET', '/api/v1/workspaces/team-a'],
      ['PATCH', `/api/v1/workspaces/${workspaceA}`, { description: 'mine now' }],
      ['DELETE', `/api/v1/workspaces/${workspaceA}`],
      ['GET', `/api/v1/workspaces/${workspaceA}/members`],
      ['POST', `/api/v1/workspaces/${workspaceA}/members/add`, { user_ids: ['mallory'] }],
      ['GET', `/api/v1/workspaces/${workspaceA}/budgets`],
      ['GET', `/api/v1/workspaces/${workspaceA}/budgets/monthly`],
      ['PUT', `/api/v1/workspaces/${workspaceA}/budgets/monthly`, { limit_usd: 1_000_000 }],
      ['DELETE', `/api/v1/workspaces/${workspaceA}/budgets/monthly`],
      ['GET', `/api/v1/guardrails/${guardrailA}`],
      ['PATCH', `/api/v1/guardrails/${guardrailA}`, { name: 'taken' }],
      ['DELETE', `/api/v1/guardrails/${guardrailA}`],
      ['GET', `/api/v1/guardrails/${guardrailA}/assignments/keys`],
      ['POST', `/api/v1/guardrails/${guardrailA}/assignments/keys`, { key_hashes: [keyA.hash] }],
      ['GET', `/api/v1/byok/${byokA}`],
      ['PATCH', `/api/v1/byok/${byokA}`, { disabled: true }],
      ['DELETE', `/api/v1/byok/${byokA}`],
      ['PATCH', `/api/v1/keys/${keyA.hash}`, { disabled: true }],
      ['DELETE', `/api/v1/keys/${keyA.hash}`],
    ];
    for (const [method, path, body] of attempts) {
      const response = await gateway.request(method, path, { key: managerB, ...(body ? { body } : {}) });
      assert.equal(response.status, 404, `${method} ${path}: ${response.status} ${response.text}`);
    }
    // Lists show only B's own resources.
    const workspaces = ok(await gateway.request('GET', '/api/v1/workspaces', { key: managerB }), 'list');
    assert.deepEqual(
      workspaces.data.map((workspace: { id: string }) => workspace.id),
      [workspaceB],
    );
    const guardrails = ok(
      await gateway.request('GET', '/api/v1/guardrails', { key: managerB }),
      'guardrails',
    );
    assert.equal(guardrails.data.length, 0);
    const byok = ok(await gateway.request('GET', '/api/v1/byok', { key: managerB }), 'byok');
    assert.equal(byok.data.length, 0);
    // Nothing of A changed.
    const still = ok(await gateway.request('GET', `/api/v1/byok/${byokA}`), 'byok A').data;
    assert.equal(still.disabled, false);
    const budget = ok(
      await gateway.request('GET', `/api/v1/workspaces/${workspaceA}/budgets/monthly`),
      'budget',
    );
    assert.equal(budget.data.limit_usd, 10);
  });

  it('answers 403 to an inference key on every management operation', async () => {
    const attempts: Array<[string, string, unknown?]> = [
      ['POST', '/api/v1/workspaces', { name: 'x', slug: 'x' }],
      ['PATCH', `/api/v1/workspaces/${workspaceB}`, { description: 'x' }],
      ['DELETE', `/api/v1/workspaces/${workspaceB}`],
      ['PUT', `/api/v1/workspaces/${workspaceB}/budgets/daily`, { limit_usd: 1 }],
      ['DELETE', `/api/v1/workspaces/${workspaceB}/budgets/daily`],
      ['POST', '/api/v1/guardrails', { name: 'x' }],
      ['POST', '/api/v1/byok', { provider: 'openai', key: 'sk-x' }],
      ['POST', '/api/v1/keys', { name: 'x' }],
    ];
    for (const [method, path, body] of attempts) {
      const response = await gateway.request(method, path, { key: inferenceB, ...(body ? { body } : {}) });
      assert.equal(response.status, 403, `${method} ${path}: ${response.status} ${response.text}`);
    }
  });

  it('never returns the BYOK secret', async () => {
    const bodies = [
      (await gateway.request('GET', `/api/v1/byok/${byokA}`)).text,
      (await gateway.request('GET', `/api/v1/byok?workspace_id=${workspaceA}`)).text,
    ];
    for (const text of bodies) assert.ok(!text.includes('sk-team-a-secret-value-123'), text);
  });
});
