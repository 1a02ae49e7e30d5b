import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { POLICY_TOPIC } from '../../src/admin/workspaces/workspace-access.js';
import { type ClientResponse, expectError, startTestApp, type TestApp } from '../helpers/test-app.js';
import { addWorkspace, providerSecret, storedCredentialsText } from './byok-helpers.js';

const RECORD_FIELDS = [
  'allowed_api_key_hashes',
  'allowed_models',
  'allowed_user_ids',
  'created_at',
  'disabled',
  'id',
  'is_fallback',
  'label',
  'name',
  'provider',
  'sort_order',
  'updated_at',
  'workspace_id',
];

describe('BYOK credentials over HTTP', () => {
  let gateway: TestApp;
  /** Every secret handed to the API and every response text, for the final scan. */
  const secrets: string[] = [];
  const responses: string[] = [];
  const published: string[] = [];
  let defaultWorkspace: string;
  let inferenceKey: { key: string; hash: string };
  /** A model whose id differs from its canonical slug, with a `:batch` variant. */
  let model: { id: string; canonical_slug: string };

  async function call(method: string, path: string, options: { key?: string | null; body?: unknown } = {}) {
    const response = await gateway.request(method, path, options);
    responses.push(response.text);
    return response;
  }

  async function create(body: Record<string, unknown>, key?: string): Promise<ClientResponse> {
    if (typeof body.key === 'string') secrets.push(body.key);
    return call('POST', '/api/v1/byok', { body, ...(key ? { key } : {}) });
  }

  async function rowOf(id: string) {
    return gateway.services.storage.db
      .selectFrom('byok_credentials')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  }

  before(async () => {
    gateway = await startTestApp();
    gateway.services.bus.subscribe(POLICY_TOPIC, (workspaceId) => published.push(workspaceId));
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'app' } });
    inferenceKey = { key: created.body.key, hash: created.body.data.hash };
    defaultWorkspace = created.body.data.workspace_id;
    const models = await gateway.request('GET', '/api/v1/models');
    const ids = new Set(models.body.data.map((candidate: { id: string }) => candidate.id));
    model = models.body.data.find(
      (candidate: { id: string; canonical_slug: string }) =>
        candidate.id !== candidate.canonical_slug && ids.has(`${candidate.id}:batch`),
    );
    assert.ok(model, 'the bundled catalogue has a model with a dated canonical slug and a :batch variant');
  });

  after(async () => {
    // No response of this suite ever carried a provider secret.
    for (const secret of secrets) {
      for (const text of responses) assert.equal(text.includes(secret), false, 'a secret reached a response');
    }
    await gateway.close();
  });

  it('creates a credential with defaults: the record of spec 2.10, a masked label, no secret', async () => {
    const secret = providerSecret();
    const before = published.length;
    const created = await create({ provider: 'openai', key: secret });
    assert.equal(created.status, 200, created.text);
    assert.deepEqual(Object.keys(created.body), ['data']);
    const record = created.body.data;
    assert.deepEqual(Object.keys(record).sort(), RECORD_FIELDS);
    assert.match(record.id, /^[0-9a-f-]{36}$/);
    assert.equal(record.workspace_id, defaultWorkspace);
    assert.equal(record.provider, 'openai');
    assert.equal(record.name, 'OpenAI', "the provider's display name by default");
    assert.equal(record.label, `${secret.slice(0, 3)}...${secret.slice(-4)}`);
    assert.equal(record.disabled, false);
    assert.equal(record.is_fallback, false);
    assert.equal(record.sort_order, 0);
    assert.equal(record.allowed_api_key_hashes, null);
    assert.equal(record.allowed_models, null);
    assert.equal(record.allowed_user_ids, null);
    assert.match(record.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(record.updated_at, record.created_at);
    assert.deepEqual(published.slice(before), [defaultWorkspace], 'the policy cache hears of it');

    // Stored sealed: no column holds the secret, and the secret box opens the ciphertext to it.
    const row = await rowOf(record.id);
    assert.equal(JSON.stringify(row).includes(secret), false);
    assert.match(row.secret_ciphertext, /^v1\./);
    assert.equal(gateway.services.secretBox.open(row.secret_ciphertext), secret);

    const fetched = await call('GET', `/api/v1/byok/${record.id}`);
    assert.equal(fetched.status, 200);
    assert.deepEqual(fetched.body, { data: record });
    const upper = await call('GET', `/api/v1/byok/${record.id.toUpperCase()}`);
    assert.deepEqual(upper.body, { data: record }, 'a UUID in upper case names the same credential');
  });

  it('stores every field given, allow-lists included, with models as canonical slugs', async () => {
    const secret = providerSecret('sk-ant-');
    const created = await create({
      provider: 'anthropic',
      key: secret,
      name: 'Team Anthropic',
      disabled: true,
      is_fallback: true,
      sort_order: 1_000_000,
      allowed_api_key_hashes: [inferenceKey.hash],
      allowed_models: [model.id, `${model.id}:batch`, 'anthropic/claude-opus-5-20260723'],
      allowed_user_ids: ['user_1', 'user 2'],
      workspace_id: defaultWorkspace.toUpperCase(),
    });
    assert.equal(created.status, 200, created.text);
    const record = created.body.data;
    assert.equal(record.name, 'Team Anthropic');
    assert.equal(record.disabled, true);
    assert.equal(record.is_fallback, true);
    assert.equal(record.sort_order, 1_000_000);
    assert.equal(record.workspace_id, defaultWorkspace);
    assert.deepEqual(record.allowed_api_key_hashes, [inferenceKey.hash]);
    // The id and its `:batch` variant are one canonical slug, kept once.
    assert.equal(record.allowed_models[0], model.canonical_slug);
    assert.equal(new Set(record.allowed_models).size, record.allowed_models.length);
    assert.deepEqual(record.allowed_user_ids, ['user_1', 'user 2']);
    // The list columns are JSON array text.
    const row = await rowOf(record.id);
    assert.equal(row.allowed_user_ids, '["user_1","user 2"]');
    assert.equal(row.allowed_api_key_hashes, JSON.stringify([inferenceKey.hash]));
  });

  it('masks a short key completely', async () => {
    const secret = 'short-key-1234';
    const created = await create({ provider: 'deepinfra', key: secret });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.data.label, '********');
  });

  it('lists a workspace in priority order with total_count, in pages', async () => {
    const workspace = await addWorkspace(gateway, 'Listing');
    for (const sortOrder of [30, 10, 20]) {
      const created = await create({
        provider: 'openai',
        key: providerSecret(),
        name: `order-${sortOrder}`,
        sort_order: sortOrder,
        workspace_id: workspace,
      });
      assert.equal(created.status, 200, created.text);
    }
    const listed = await call('GET', `/api/v1/byok?workspace_id=${workspace}`);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.total_count, 3);
    assert.deepEqual(
      listed.body.data.map((record: { name: string }) => record.name),
      ['order-10', 'order-20', 'order-30'],
    );
    const page = await call('GET', `/api/v1/byok?workspace_id=${workspace}&offset=1&limit=1`);
    assert.deepEqual(
      page.body.data.map((record: { name: string }) => record.name),
      ['order-20'],
    );
    assert.equal(page.body.total_count, 3);
    const beyond = await call('GET', `/api/v1/byok?workspace_id=${workspace}&offset=10`);
    assert.deepEqual(beyond.body, { data: [], total_count: 3 });
    // Without workspace_id: the caller's own (default) workspace, which does not show these.
    const own = await call('GET', '/api/v1/byok');
    assert.equal(own.status, 200);
    assert.ok(own.body.data.length > 0);
    assert.ok(
      own.body.data.every((record: { workspace_id: string }) => record.workspace_id === defaultWorkspace),
    );
    assert.equal(own.body.total_count, own.body.data.length);
  });

  it('updates only the supplied fields; `key` rotates the secret and its label; null clears lists', async () => {
    const oldSecret = providerSecret();
    const created = await create({
      provider: 'openai',
      key: oldSecret,
      allowed_user_ids: ['user_1'],
      allowed_models: [model.id],
    });
    const id = created.body.data.id;
    const before = await rowOf(id);

    const renamed = await call('PATCH', `/api/v1/byok/${id}`, { body: { name: 'Renamed', sort_order: 5 } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.data.name, 'Renamed');
    assert.equal(renamed.body.data.sort_order, 5);
    assert.equal(renamed.body.data.label, created.body.data.label);
    assert.deepEqual(renamed.body.data.allowed_user_ids, ['user_1']);
    assert.equal((await rowOf(id)).secret_ciphertext, before.secret_ciphertext, 'the secret is untouched');

    const newSecret = providerSecret();
    secrets.push(newSecret);
    const publishedBefore = published.length;
    const rotated = await call('PATCH', `/api/v1/byok/${id}`, {
      body: {
        key: newSecret,
        allowed_user_ids: null,
        allowed_models: null,
        disabled: true,
        is_fallback: true,
      },
    });
    assert.equal(rotated.status, 200, rotated.text);
    const record = rotated.body.data;
    assert.equal(record.label, `${newSecret.slice(0, 3)}...${newSecret.slice(-4)}`);
    assert.notEqual(record.label, created.body.data.label);
    assert.equal(record.allowed_user_ids, null);
    assert.equal(record.allowed_models, null);
    assert.equal(record.disabled, true);
    assert.equal(record.is_fallback, true);
    assert.equal(record.name, 'Renamed');
    assert.equal(record.created_at, created.body.data.created_at);
    assert.ok(record.updated_at >= created.body.data.updated_at);
    assert.deepEqual(published.slice(publishedBefore), [defaultWorkspace]);

    const after = await rowOf(id);
    assert.notEqual(after.secret_ciphertext, before.secret_ciphertext);
    assert.equal(gateway.services.secretBox.open(after.secret_ciphertext), newSecret);
    const stored = JSON.stringify(after);
    assert.equal(stored.includes(oldSecret), false, 'the old secret is gone');
    assert.equal(stored.includes(newSecret), false, 'the new secret is sealed');
    assert.equal(after.allowed_user_ids, null);

    // A key is issued by one provider: a move to another needs the new provider's key.
    const sealedBefore = (await rowOf(id)).secret_ciphertext;
    const keyless = await call('PATCH', `/api/v1/byok/${id}`, { body: { provider: 'deepinfra' } });
    assert.equal(keyless.status, 400, keyless.text);
    assert.match(
      keyless.body.error.message,
      /body\.key must be given again when body\.provider changes \(a stored key is never sent to another provider\)/,
    );
    // Its masked label is not a key either.
    const relabelled = await call('PATCH', `/api/v1/byok/${id}`, {
      body: { provider: 'deepinfra', key: record.label },
    });
    assert.equal(relabelled.status, 400, relabelled.text);
    assert.equal((await rowOf(id)).provider, 'openai');
    assert.equal((await rowOf(id)).secret_ciphertext, sealedBefore);
    // The same provider named again needs nothing more.
    assert.equal((await call('PATCH', `/api/v1/byok/${id}`, { body: { provider: 'openai' } })).status, 200);
    const deepinfraSecret = providerSecret();
    secrets.push(deepinfraSecret);
    const provider = await call('PATCH', `/api/v1/byok/${id}`, {
      body: { provider: 'deepinfra', key: deepinfraSecret },
    });
    assert.equal(provider.status, 200, provider.text);
    assert.equal(provider.body.data.provider, 'deepinfra');
    assert.equal(gateway.services.secretBox.open((await rowOf(id)).secret_ciphertext), deepinfraSecret);
  });

  it('deletes a credential and its sealed secret', async () => {
    const secret = providerSecret();
    const created = await create({ provider: 'openai', key: secret });
    const id = created.body.data.id;
    const publishedBefore = published.length;
    const deleted = await call('DELETE', `/api/v1/byok/${id}`);
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { deleted: true });
    assert.deepEqual(published.slice(publishedBefore), [defaultWorkspace]);
    const row = await gateway.services.storage.db
      .selectFrom('byok_credentials')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    assert.equal(row, undefined);
    expectError(await call('GET', `/api/v1/byok/${id}`), 404);
    expectError(await call('DELETE', `/api/v1/byok/${id}`), 404);
    expectError(await call('PATCH', `/api/v1/byok/${id}`, { body: { name: 'ghost' } }), 404);
  });

  it('answers 404 for an unknown id and 400 for an id that is not a UUID', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    assert.equal(expectError(await call('GET', `/api/v1/byok/${unknown}`), 404), 'BYOK credential not found');
    expectError(await call('PATCH', `/api/v1/byok/${unknown}`, { body: { name: 'x' } }), 404);
    expectError(await call('DELETE', `/api/v1/byok/${unknown}`), 404);
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { name: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      assert.match(
        expectError(await call(method, '/api/v1/byok/not-a-uuid', { body }), 400),
        /params\.id must match format "uuid"/,
      );
      // A URN of a UUID is not a plain one either (ajv-formats takes it; no lookup strips it).
      assert.match(
        expectError(await call(method, `/api/v1/byok/urn:uuid:${unknown}`, { body }), 400),
        /params\.id must match format "uuid"/,
      );
    }
  });

  it('keeps each workspace to its own credentials: 404 outside, 403 for inference keys on changes', async () => {
    const secretA = providerSecret();
    const inDefault = (await create({ provider: 'openai', key: secretA })).body.data;
    const other = await addWorkspace(gateway, 'Other');
    const otherAdmin = await gateway.services.keys.createManagementKey({
      name: 'other admin',
      workspace_id: other,
    });
    const otherInference = await gateway.request('POST', '/api/v1/keys', {
      body: { name: 'other app', workspace_id: other },
    });
    assert.equal(otherInference.status, 200, otherInference.text);

    // The other workspace's management key cannot see or touch the default workspace's credential.
    const key = otherAdmin.key;
    assert.equal(
      expectError(await call('GET', `/api/v1/byok/${inDefault.id}`, { key }), 404),
      'BYOK credential not found',
    );
    expectError(await call('PATCH', `/api/v1/byok/${inDefault.id}`, { key, body: { disabled: true } }), 404);
    expectError(await call('DELETE', `/api/v1/byok/${inDefault.id}`, { key }), 404);
    expectError(await call('GET', `/api/v1/byok?workspace_id=${defaultWorkspace}`, { key }), 404);
    expectError(
      await create({ provider: 'openai', key: providerSecret(), workspace_id: defaultWorkspace }, key),
      404,
    );
    assert.equal((await rowOf(inDefault.id)).disabled, 0, 'nothing changed');

    // In its own workspace it manages credentials, by default there.
    const own = await create({ provider: 'openai', key: providerSecret() }, key);
    assert.equal(own.status, 200, own.text);
    assert.equal(own.body.data.workspace_id, other);
    const listed = await call('GET', '/api/v1/byok', { key });
    assert.deepEqual(
      listed.body.data.map((record: { id: string }) => record.id),
      [own.body.data.id],
    );
    // A key hash of another workspace is refused with the words used for an unknown one.
    const foreign = await call('PATCH', `/api/v1/byok/${own.body.data.id}`, {
      key,
      body: { allowed_api_key_hashes: [inferenceKey.hash] },
    });
    assert.equal(
      expectError(foreign, 400),
      'Invalid request parameters: body.allowed_api_key_hashes.0 names no API key of this workspace',
    );
    const ownHash = await call('PATCH', `/api/v1/byok/${own.body.data.id}`, {
      key,
      body: { allowed_api_key_hashes: [otherInference.body.data.hash] },
    });
    assert.equal(ownHash.status, 200, ownHash.text);

    // The organization key reaches the other workspace.
    const fromOrganization = await call('GET', `/api/v1/byok/${own.body.data.id}`);
    assert.equal(fromOrganization.status, 200);

    // Inference keys read their own workspace's credentials but change nothing.
    const reader = inferenceKey.key;
    assert.equal((await call('GET', `/api/v1/byok/${inDefault.id}`, { key: reader })).status, 200);
    assert.equal((await call('GET', '/api/v1/byok', { key: reader })).status, 200);
    expectError(await call('GET', `/api/v1/byok/${own.body.data.id}`, { key: reader }), 404);
    const denied = expectError(await create({ provider: 'openai', key: providerSecret() }, reader), 403);
    assert.equal(denied, 'Only management keys can perform this operation');
    expectError(
      await call('PATCH', `/api/v1/byok/${inDefault.id}`, { key: reader, body: { name: 'x' } }),
      403,
    );
    expectError(await call('DELETE', `/api/v1/byok/${inDefault.id}`, { key: reader }), 403);
    const otherReader = otherInference.body.key;
    expectError(await call('GET', `/api/v1/byok/${inDefault.id}`, { key: otherReader }), 404);

    expectError(await call('GET', '/api/v1/byok', { key: null }), 401);
  });

  it('never stores a secret in the clear', async () => {
    const stored = await storedCredentialsText(gateway);
    assert.ok(secrets.length > 5);
    for (const secret of secrets) assert.equal(stored.includes(secret), false);
  });
});

describe('careless clients', () => {
  it('a DELETE sent with Content-Type: application/json and no body is accepted', async () => {
    const gateway = await startTestApp({ config: { providers: { openai: { api_key: 'platform' } } } });
    try {
      const created = await gateway.request('POST', '/api/v1/byok', {
        body: { provider: 'openai', key: 'sk-careless-client-0001' },
      });
      assert.equal(created.status, 200, created.text);
      const deleted = await gateway.request('DELETE', `/api/v1/byok/${created.body.data.id}`, {
        headers: { 'content-type': 'application/json' },
        rawBody: '',
      });
      assert.equal(deleted.status, 200, deleted.text);
      assert.deepEqual(deleted.body, { deleted: true });
      // Other methods still refuse an empty JSON body, naming the problem.
      const empty = await gateway.request('POST', '/api/v1/byok', {
        headers: { 'content-type': 'application/json' },
        rawBody: '',
      });
      assert.equal(empty.status, 400);
    } finally {
      await gateway.close();
    }
  });
});
