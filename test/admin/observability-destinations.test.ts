import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { openDestinationConfig } from '../../src/admin/observability/destination-config.js';
import { POLICY_TOPIC } from '../../src/admin/workspaces/workspace-access.js';
import { fixedClock } from '../../src/platform/clock.js';
import { startReceiver } from '../helpers/broadcast-fixtures.js';
import { type ClientResponse, expectError, type TestApp } from '../helpers/test-app.js';
import {
  addWorkspace,
  DESTINATIONS,
  destinationRow,
  insertDelivery,
  langfuseConfig,
  masked,
  startObservabilityGateway,
  startWebhookEndpoint,
  storedDestinationsText,
  vendorSecret,
  type WebhookEndpoint,
} from './observability-helpers.js';

const RECORD_FIELDS = [
  'api_key_hashes',
  'broadcast_generation_cost',
  'broadcast_generation_identity',
  'broadcast_generation_request_context',
  'config',
  'created_at',
  'enabled',
  'filter_rules',
  'id',
  'name',
  'privacy_mode',
  'regions',
  'sampling_rate',
  'type',
  'updated_at',
  'workspace_id',
];
/** The secret fields of the types used here (langfuse, posthog, datadog, braintrust). */
const SECRET_FIELDS = ['publicKey', 'secretKey', 'apiKey'];
const hash = (digit: string) => digit.repeat(64);

describe('observability destinations over HTTP', () => {
  const clock = fixedClock(new Date('2031-03-01T09:00:00.000Z'));
  let gateway: TestApp;
  let webhook: WebhookEndpoint;
  let defaultWorkspace: string;
  let inferenceKey: string;
  /** The workspace of the running test. */
  let workspace: string;
  /** Every secret handed to the API and every response text, for the final scan. */
  const secrets: string[] = [];
  const responses: string[] = [];
  const published: string[] = [];

  async function call(
    method: string,
    path: string,
    options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<ClientResponse> {
    const response = await gateway.request(method, path, options);
    responses.push(response.text);
    return response;
  }

  /**
   * Creates in the current test's own workspace (each test starts one, so the per-type limit of one
   * test does not reach into another), unless the body names a workspace or `callersWorkspace` asks
   * for the default of the caller's own.
   */
  async function create(
    body: Record<string, unknown>,
    options: { key?: string; callersWorkspace?: boolean } = {},
  ): Promise<ClientResponse> {
    const config = (body.config ?? {}) as Record<string, unknown>;
    for (const field of SECRET_FIELDS) if (typeof config[field] === 'string') secrets.push(config[field]);
    for (const value of Object.values(config.headers ?? {})) secrets.push(String(value));
    const placed =
      options.callersWorkspace || 'workspace_id' in body ? body : { ...body, workspace_id: workspace };
    return call('POST', DESTINATIONS, { body: placed, ...(options.key ? { key: options.key } : {}) });
  }

  /** The full stored config, opened as the delivery worker opens it. */
  async function storedConfig(id: string) {
    return openDestinationConfig(await destinationRow(gateway, id), gateway.services.secretBox);
  }

  before(async () => {
    gateway = await startObservabilityGateway({ clock });
    webhook = await startWebhookEndpoint();
    gateway.services.bus.subscribe(POLICY_TOPIC, (workspaceId) => published.push(workspaceId));
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'app' } });
    inferenceKey = created.body.key;
    defaultWorkspace = created.body.data.workspace_id;
  });

  beforeEach(async () => {
    workspace = await addWorkspace(gateway, 'Test');
  });

  after(async () => {
    await webhook?.receiver.close();
    await gateway?.close();
    // No response of this suite carried a secret (a short one is masked completely, but its text,
    // such as "abc", occurs in other words by chance).
    for (const secret of secrets.filter((value) => value.length >= 12)) {
      for (const text of responses)
        assert.equal(text.includes(secret), false, `a secret reached a response: ${text}`);
    }
  });

  it("counts a name's 255 characters once it is trimmed, on create and on PATCH", async () => {
    const longest = 'é'.repeat(255);
    const created = await create({ type: 'langfuse', name: ` ${longest}\t`, config: langfuseConfig() });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.data.name, longest);
    const patched = await call('PATCH', `${DESTINATIONS}/${created.body.data.id}`, {
      body: { name: `${' '.repeat(100)}${'n'.repeat(255)}\n` },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.data.name, 'n'.repeat(255));
  });

  it('creates a destination with the defaults of spec 2.4, secrets masked and sealed', async () => {
    const config = langfuseConfig();
    const before = published.length;
    const response = await create(
      { type: 'langfuse', name: '  Production Langfuse  ', config },
      { callersWorkspace: true },
    );
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(Object.keys(response.body), ['data']);
    const record = response.body.data;
    assert.deepEqual(Object.keys(record).sort(), RECORD_FIELDS);
    assert.match(record.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(record.workspace_id, defaultWorkspace);
    assert.equal(record.name, 'Production Langfuse', 'the name is trimmed');
    assert.equal(record.type, 'langfuse');
    assert.deepEqual(record.config, {
      baseUrl: 'https://us.cloud.langfuse.com',
      publicKey: masked(config.publicKey),
      secretKey: masked(config.secretKey),
    });
    assert.equal(record.config.secretKey, `${config.secretKey.slice(0, 4)}...${config.secretKey.slice(-4)}`);
    assert.equal(record.enabled, true);
    assert.equal(record.api_key_hashes, null);
    assert.equal(record.broadcast_generation_cost, false);
    assert.equal(record.broadcast_generation_identity, false);
    assert.equal(record.broadcast_generation_request_context, false);
    assert.equal(record.filter_rules, null);
    assert.equal(record.privacy_mode, false);
    assert.deepEqual(record.regions, ['global']);
    assert.equal(record.sampling_rate, 1);
    assert.equal(record.created_at, clock.now().toISOString());
    assert.equal(record.updated_at, record.created_at);
    assert.deepEqual(published.slice(before), [defaultWorkspace], 'the policy cache hears of it');

    // At rest: the non-secret part as JSON, the secrets sealed as one object; no plaintext anywhere.
    const row = await destinationRow(gateway, record.id);
    assert.deepEqual(JSON.parse(row.config), { baseUrl: 'https://us.cloud.langfuse.com' });
    assert.match(row.secrets_ciphertext ?? '', /^v1\./);
    const text = await storedDestinationsText(gateway);
    assert.equal(text.includes(config.publicKey), false);
    assert.equal(text.includes(config.secretKey), false);
    assert.deepEqual(JSON.parse(gateway.services.secretBox.open(row.secrets_ciphertext ?? '')), config);
    assert.deepEqual(await storedConfig(record.id), { baseUrl: 'https://us.cloud.langfuse.com', ...config });

    const fetched = await call('GET', `${DESTINATIONS}/${record.id}`);
    assert.equal(fetched.status, 200, fetched.text);
    assert.deepEqual(fetched.body, { data: record });
    const upper = await call('GET', `${DESTINATIONS}/${record.id.toUpperCase()}`);
    assert.deepEqual(upper.body, { data: record }, 'an upper-case UUID names the same destination');
  });

  it('stores every optional field given, normalized', async () => {
    const response = await create({
      type: 'langfuse',
      name: 'Everything',
      config: { ...langfuseConfig(), baseUrl: 'https://cloud.langfuse.com', headers: { 'X-Team': 'a' } },
      enabled: false,
      api_key_hashes: [hash('a'), hash('b'), hash('a')],
      broadcast_generation_cost: true,
      broadcast_generation_identity: true,
      broadcast_generation_request_context: true,
      filter_rules: {
        groups: [
          { rules: [{ field: 'model', operator: 'starts_with', value: 'openai/' }] },
          {
            logic: 'or',
            rules: [
              { field: 'total_cost', operator: 'gte', value: 0.01 },
              { field: 'user_id', operator: 'exists' },
              { field: 'output', operator: 'regex', value: '^(?:yes|no)$' },
              { field: 'prompt_tokens', operator: 'equals', value: 100 },
            ],
          },
        ],
      },
      privacy_mode: true,
      regions: ['eu', 'us', 'europe'],
      sampling_rate: 0.25,
    });
    assert.equal(response.status, 200, response.text);
    const record = response.body.data;
    assert.equal(record.enabled, false);
    assert.deepEqual(record.api_key_hashes, [hash('a'), hash('b')], 'duplicates are dropped');
    assert.equal(record.broadcast_generation_cost, true);
    assert.equal(record.broadcast_generation_identity, true);
    assert.equal(record.broadcast_generation_request_context, true);
    assert.deepEqual(record.filter_rules, {
      enabled: true,
      groups: [
        { logic: 'and', rules: [{ field: 'model', operator: 'starts_with', value: 'openai/' }] },
        {
          logic: 'or',
          rules: [
            { field: 'total_cost', operator: 'gte', value: 0.01 },
            { field: 'user_id', operator: 'exists' },
            { field: 'output', operator: 'regex', value: '^(?:yes|no)$' },
            { field: 'prompt_tokens', operator: 'equals', value: 100 },
          ],
        },
      ],
    });
    assert.equal(record.privacy_mode, true);
    assert.deepEqual(record.regions, ['europe', 'us'], '`eu` is `europe`, once');
    assert.equal(record.sampling_rate, 0.25);
    assert.equal(record.config.baseUrl, 'https://cloud.langfuse.com');
    assert.deepEqual(record.config.headers, { 'X-Team': '****' }, 'header values are secrets');
    const row = await destinationRow(gateway, record.id);
    assert.deepEqual(JSON.parse(row.regions), ['europe', 'us']);
    assert.deepEqual(JSON.parse(row.filter_rules ?? 'null'), record.filter_rules);
    assert.equal(row.config.includes('X-Team'), false, 'headers are sealed with the secrets');
  });

  it('follows the enablement transitions of spec 3, updated_at changing', async () => {
    const disabled = (
      await create({ type: 'posthog', name: 'off', config: { apiKey: vendorSecret('phc_') }, enabled: false })
    ).body.data;
    assert.equal(disabled.enabled, false, 'POST with enabled: false');
    const enabled = (
      await create({ type: 'posthog', name: 'on', config: { apiKey: vendorSecret('phc_') }, enabled: true })
    ).body.data;
    assert.equal(enabled.enabled, true, 'POST with enabled: true');

    clock.advance(60_000);
    const off = await call('PATCH', `${DESTINATIONS}/${enabled.id}`, { body: { enabled: false } });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.data.enabled, false);
    assert.equal(off.body.data.updated_at, clock.now().toISOString());
    assert.notEqual(off.body.data.updated_at, enabled.updated_at);
    assert.equal(off.body.data.created_at, enabled.created_at);

    clock.advance(60_000);
    const on = await call('PATCH', `${DESTINATIONS}/${enabled.id}`, { body: { enabled: true } });
    assert.equal(on.body.data.enabled, true);
    assert.equal(on.body.data.updated_at, clock.now().toISOString());
    assert.equal((await destinationRow(gateway, enabled.id)).enabled, 1);
  });

  it('PATCH rule 1: only the supplied fields change', async () => {
    const config = langfuseConfig();
    const original = (
      await create({
        type: 'langfuse',
        name: 'rule one',
        config,
        sampling_rate: 0.5,
        privacy_mode: true,
        regions: ['us'],
      })
    ).body.data;
    clock.advance(1_000);
    const before = published.length;
    const patched = await call('PATCH', `${DESTINATIONS}/${original.id}`, { body: { name: 'renamed' } });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.body.data, {
      ...original,
      name: 'renamed',
      updated_at: clock.now().toISOString(),
    });
    assert.deepEqual(published.slice(before), [workspace]);
    assert.deepEqual(await storedConfig(original.id), {
      baseUrl: 'https://us.cloud.langfuse.com',
      ...config,
    });

    const flags = await call('PATCH', `${DESTINATIONS}/${original.id}`, {
      body: {
        broadcast_generation_cost: true,
        broadcast_generation_identity: true,
        broadcast_generation_request_context: true,
        privacy_mode: false,
        sampling_rate: 0.0001,
      },
    });
    assert.equal(flags.status, 200, flags.text);
    assert.equal(flags.body.data.broadcast_generation_cost, true);
    assert.equal(flags.body.data.broadcast_generation_identity, true);
    assert.equal(flags.body.data.broadcast_generation_request_context, true);
    assert.equal(flags.body.data.privacy_mode, false);
    assert.equal(flags.body.data.sampling_rate, 0.0001);
    assert.equal(flags.body.data.name, 'renamed');
    assert.deepEqual(flags.body.data.regions, ['us']);
  });

  it('PATCH rules 2 and 3: null clears api_key_hashes and filter_rules, omitted keeps them', async () => {
    const rules = {
      enabled: false,
      groups: [{ logic: 'or', rules: [{ field: 'provider', operator: 'equals', value: 'openai' }] }],
    };
    const original = (
      await create({
        type: 'langfuse',
        name: 'rules',
        config: langfuseConfig(),
        api_key_hashes: [hash('c')],
        filter_rules: rules,
      })
    ).body.data;
    assert.deepEqual(original.filter_rules, rules);

    const kept = await call('PATCH', `${DESTINATIONS}/${original.id}`, { body: { name: 'still filtered' } });
    assert.deepEqual(kept.body.data.api_key_hashes, [hash('c')]);
    assert.deepEqual(kept.body.data.filter_rules, rules);

    const replaced = await call('PATCH', `${DESTINATIONS}/${original.id}`, {
      body: {
        api_key_hashes: [hash('d'), hash('e')],
        filter_rules: { groups: [{ rules: [{ field: 'completion_tokens', operator: 'lt', value: 10 }] }] },
      },
    });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual(replaced.body.data.api_key_hashes, [hash('d'), hash('e')]);
    assert.deepEqual(replaced.body.data.filter_rules, {
      enabled: true,
      groups: [{ logic: 'and', rules: [{ field: 'completion_tokens', operator: 'lt', value: 10 }] }],
    });

    const cleared = await call('PATCH', `${DESTINATIONS}/${original.id}`, {
      body: { api_key_hashes: null, filter_rules: null },
    });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.data.api_key_hashes, null);
    assert.equal(cleared.body.data.filter_rules, null);
    const row = await destinationRow(gateway, original.id);
    assert.equal(row.api_key_hashes, null);
    assert.equal(row.filter_rules, null);
  });

  it('PATCH rule 4: config keys merge, masked values are ignored, null removes', async () => {
    const config = {
      ...langfuseConfig(),
      headers: { Authorization: 'Bearer team-token-0123456789', 'X-Short': 'abc' },
    };
    secrets.push(config.headers.Authorization);
    const original = (await create({ type: 'langfuse', name: 'merge', config })).body.data;
    assert.deepEqual(original.config.headers, { Authorization: 'Bear...6789', 'X-Short': '****' });

    // The client sends back what it read: nothing changes, not even the sealed text.
    const rowBefore = await destinationRow(gateway, original.id);
    const echoed = await call('PATCH', `${DESTINATIONS}/${original.id}`, {
      body: { config: original.config },
    });
    assert.equal(echoed.status, 200, echoed.text);
    assert.deepEqual(echoed.body.data.config, original.config);
    const rowAfter = await destinationRow(gateway, original.id);
    assert.equal(rowAfter.secrets_ciphertext, rowBefore.secrets_ciphertext);
    assert.deepEqual(await storedConfig(original.id), {
      baseUrl: 'https://us.cloud.langfuse.com',
      ...config,
    });

    // One secret rotated, the other sent masked; unset keys keep their value.
    const newSecret = vendorSecret('sk-lf-');
    secrets.push(newSecret);
    const rotated = await call('PATCH', `${DESTINATIONS}/${original.id}`, {
      body: { config: { secretKey: newSecret, publicKey: original.config.publicKey } },
    });
    assert.equal(rotated.status, 200, rotated.text);
    assert.equal(rotated.body.data.config.secretKey, masked(newSecret));
    assert.deepEqual(await storedConfig(original.id), {
      baseUrl: 'https://us.cloud.langfuse.com',
      publicKey: config.publicKey,
      secretKey: newSecret,
      headers: config.headers,
    });

    // Headers merge by name (case-insensitively): masked kept, null removed, new added.
    const headers = await call('PATCH', `${DESTINATIONS}/${original.id}`, {
      body: { config: { headers: { authorization: 'Bear...6789', 'x-short': null, 'X-Dataset': 'traces' } } },
    });
    assert.equal(headers.status, 200, headers.text);
    assert.deepEqual((await storedConfig(original.id)).headers, {
      Authorization: 'Bearer team-token-0123456789',
      'X-Dataset': 'traces',
    });

    // null resets an optional field to its default; `headers: null` removes every custom header.
    await call('PATCH', `${DESTINATIONS}/${original.id}`, {
      body: { config: { baseUrl: 'https://eu.cloud.langfuse.com' } },
    });
    const reset = await call('PATCH', `${DESTINATIONS}/${original.id}`, {
      body: { config: { baseUrl: null, headers: null } },
    });
    assert.equal(reset.status, 200, reset.text);
    assert.deepEqual(await storedConfig(original.id), {
      baseUrl: 'https://us.cloud.langfuse.com',
      publicKey: config.publicKey,
      secretKey: newSecret,
    });
    assert.equal(reset.body.data.config.headers, undefined);
    assert.equal(JSON.stringify(await destinationRow(gateway, original.id)).includes(newSecret), false);
  });

  it('PATCH rule 5: regions are kept when omitted and normalized when given', async () => {
    const original = (
      await create({ type: 'langfuse', name: 'regions', config: langfuseConfig(), regions: ['us'] })
    ).body.data;
    const other = await call('PATCH', `${DESTINATIONS}/${original.id}`, { body: { sampling_rate: 0.9 } });
    assert.deepEqual(other.body.data.regions, ['us']);
    const changed = await call('PATCH', `${DESTINATIONS}/${original.id}`, {
      body: { regions: ['eu', 'global', 'eu'] },
    });
    assert.equal(changed.status, 200, changed.text);
    assert.deepEqual(changed.body.data.regions, ['europe', 'global']);
    const cleared = await call('PATCH', `${DESTINATIONS}/${original.id}`, { body: { regions: null } });
    assert.match(expectError(cleared, 400), /body\.regions must be array/);
    assert.deepEqual(JSON.parse((await destinationRow(gateway, original.id)).regions), ['europe', 'global']);
  });

  it('tests a webhook on save: 2xx and 400 pass, 500 refuses the save and stores nothing', async () => {
    const countRows = async () => (await storedDestinationsText(gateway)).split('"webhook"').length;
    webhook.status = 200;
    const created = await create({
      type: 'webhook',
      name: 'hook',
      config: { url: webhook.url, headers: { 'X-Hook-Secret': 'hook-secret-value-42' } },
    });
    secrets.push('hook-secret-value-42');
    assert.equal(created.status, 200, created.text);
    assert.deepEqual(created.body.data.config, {
      url: webhook.url,
      method: 'POST',
      headers: { 'X-Hook-Secret': 'hook...e-42' },
    });
    const [test] = webhook.tests();
    assert.ok(test, 'the receiver got a connection test');
    assert.equal(test.method, 'POST');
    assert.equal(test.url, '/hooks/switchyard');
    assert.equal(test.headers['x-hook-secret'], 'hook-secret-value-42', 'custom headers go with the test');

    webhook.status = 500;
    const rowsBefore = await countRows();
    const refused = await create({ type: 'webhook', name: 'down', config: { url: webhook.url } });
    const message = expectError(refused, 400);
    assert.match(message, /body\.config/);
    assert.match(message, /500/);
    assert.equal(await countRows(), rowsBefore, 'nothing stored');

    webhook.status = 400;
    const accepted = await create({
      type: 'webhook',
      name: 'strict receiver',
      config: { url: webhook.url, method: 'PUT' },
    });
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal(webhook.tests().at(-1)?.method, 'PUT', 'the test uses the configured method');

    // A PATCH that changes the config is tested again; one that does not, is not.
    webhook.status = 200;
    const tests = webhook.tests().length;
    await call('PATCH', `${DESTINATIONS}/${created.body.data.id}`, {
      body: { name: 'renamed hook', config: { method: 'POST' } },
    });
    assert.equal(webhook.tests().length, tests, 'an unchanged config is not tested');
    const down = await startReceiver(() => ({ status: 503, body: { error: 'maintenance' } }));
    try {
      const moved = await call('PATCH', `${DESTINATIONS}/${created.body.data.id}`, {
        body: { config: { url: `${down.url}/hook` }, enabled: false },
      });
      // The stored secret header does not follow the destination to a new address unless given again.
      assert.match(expectError(moved, 400), /body\.config\.headers\.X-Hook-Secret must be given again/);
      assert.equal(down.requests.length, 0, 'nothing was sent to the new address');
      const movedWithSecret = await call('PATCH', `${DESTINATIONS}/${created.body.data.id}`, {
        body: {
          config: { url: `${down.url}/hook`, headers: { 'X-Hook-Secret': 'hook-secret-value-42' } },
          enabled: false,
        },
      });
      assert.match(expectError(movedWithSecret, 400), /body\.config.*503/);
      assert.equal(down.requests[0]?.headers['x-test-connection'], 'true');
      const unchanged = await destinationRow(gateway, created.body.data.id);
      assert.equal(JSON.parse(unchanged.config).url, webhook.url, 'a refused PATCH changes nothing');
      assert.equal(unchanged.enabled, 1);
      assert.equal(unchanged.name, 'renamed hook');
    } finally {
      await down.close();
    }
  });

  it('a config PATCH that lost a race to another config PATCH is a 409, and the winner stays', async () => {
    // While the receiver is answering the first PATCH's connection test, a second PATCH changes the
    // config and completes; the first, merged from what it read before, must not overwrite it.
    let interloper: Promise<ClientResponse> | null = null;
    let id = '';
    const receiver = await startReceiver(async (request) => {
      if (request.headers['x-first'] === '1' && !interloper) {
        interloper = call('PATCH', `${DESTINATIONS}/${id}`, {
          body: { config: { headers: { 'X-Second': '2' } } },
        });
        assert.equal((await interloper).status, 200);
      }
      return { status: 200, body: {} };
    });
    try {
      id = (
        await create({
          type: 'otel-collector',
          name: 'raced',
          config: { endpoint: `${receiver.url}/v1/traces` },
        })
      ).body.data.id;
      const first = await call('PATCH', `${DESTINATIONS}/${id}`, {
        body: { config: { headers: { 'X-First': '1' } } },
      });
      assert.match(expectError(first, 409), /Resource conflict, try again later/);
      assert.deepEqual((await storedConfig(id)).headers, { 'X-Second': '2' });
    } finally {
      await receiver.close();
    }
  });

  it('POST /{id}/test runs the connection test with the stored (opened) config', async () => {
    webhook.status = 200;
    const hook = (await create({ type: 'webhook', name: 'testable', config: { url: webhook.url } })).body
      .data;
    const passed = await call('POST', `${DESTINATIONS}/${hook.id}/test`);
    assert.equal(passed.status, 200, passed.text);
    assert.deepEqual(passed.body, { data: { ok: true } });
    webhook.status = 500;
    const failed = await call('POST', `${DESTINATIONS}/${hook.id}/test`);
    assert.equal(failed.status, 200, failed.text);
    assert.equal(failed.body.data.ok, false);
    assert.match(failed.body.data.error, /500/);

    // Langfuse: the receiver checks the Basic credentials, which only the sealed secrets hold.
    const config = langfuseConfig();
    const langfuse = await startReceiver((request) => {
      const expected = `Basic ${Buffer.from(`${config.publicKey}:${config.secretKey}`).toString('base64')}`;
      if (request.method !== 'GET' || request.url !== '/api/public/projects')
        return { status: 404, body: { message: 'Not Found' } };
      if (request.headers.authorization !== expected)
        return { status: 401, body: { message: 'Invalid credentials' } };
      return { status: 200, body: { data: [{ id: 'project-1', name: 'Switchyard' }] } };
    });
    try {
      const good = (
        await create({ type: 'langfuse', name: 'lf', config: { ...config, baseUrl: langfuse.url } })
      ).body.data;
      assert.deepEqual((await call('POST', `${DESTINATIONS}/${good.id}/test`)).body, { data: { ok: true } });
      await call('PATCH', `${DESTINATIONS}/${good.id}`, {
        body: { config: { secretKey: 'sk-lf-wrong-secret-key' } },
      });
      const bad = await call('POST', `${DESTINATIONS}/${good.id}/test`);
      assert.equal(bad.body.data.ok, false);
      assert.match(bad.body.data.error, /401/);
      expectError(await call('POST', `${DESTINATIONS}/${good.id}/test`, { key: inferenceKey }), 403);
    } finally {
      await langfuse.close();
    }
  });

  it('lists newest first with total_count, in pages, readable by any key, configs masked', async () => {
    const ids: string[] = [];
    for (let index = 0; index < 4; index += 1) {
      clock.advance(1_000);
      const config = langfuseConfig();
      ids.push(
        (await create({ type: 'langfuse', name: `list ${index}`, config, workspace_id: workspace })).body.data
          .id,
      );
    }
    const all = await call('GET', `${DESTINATIONS}?workspace_id=${workspace}`);
    assert.equal(all.status, 200, all.text);
    assert.equal(all.body.total_count, 4);
    assert.deepEqual(
      all.body.data.map((record: { id: string }) => record.id),
      [...ids].reverse(),
    );
    for (const record of all.body.data) {
      assert.match(record.config.secretKey, /^sk-l\.\.\..{4}$/);
      assert.match(record.config.publicKey, /^pk-l\.\.\..{4}$/);
    }
    const page = await call('GET', `${DESTINATIONS}?workspace_id=${workspace}&offset=1&limit=2`);
    assert.deepEqual(
      page.body.data.map((record: { id: string }) => record.id),
      [ids[2], ids[1]],
    );
    assert.equal(page.body.total_count, 4);

    const own = await call('GET', DESTINATIONS, { key: inferenceKey });
    assert.equal(own.status, 200, own.text);
    assert.ok(own.body.data.length > 0);
    assert.ok(
      own.body.data.every((record: { workspace_id: string }) => record.workspace_id === defaultWorkspace),
    );
    const one = await call('GET', `${DESTINATIONS}/${own.body.data[0].id}`, { key: inferenceKey });
    assert.equal(one.status, 200, one.text);
  });

  it('allows 5 destinations per type and workspace: the sixth is a 409; deleting frees a slot', async () => {
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1) {
      ids.push(
        (
          await create({
            type: 'datadog',
            name: `dd ${index}`,
            config: { apiKey: vendorSecret('dd'), mlApp: 'app' },
            workspace_id: workspace,
          })
        ).body.data.id,
      );
    }
    const sixth = await create({
      type: 'datadog',
      name: 'dd 6',
      config: { apiKey: vendorSecret('dd'), mlApp: 'app' },
      workspace_id: workspace,
    });
    assert.match(expectError(sixth, 409), /at most 5 destinations of type datadog/);
    const otherType = await create({
      type: 'posthog',
      name: 'ph',
      config: { apiKey: vendorSecret('phc_') },
      workspace_id: workspace,
    });
    assert.equal(otherType.status, 200, 'another type has its own limit');

    const deleted = await call('DELETE', `${DESTINATIONS}/${ids[0]}`);
    assert.deepEqual(deleted.body, { deleted: true });
    const again = await create({
      type: 'datadog',
      name: 'dd again',
      config: { apiKey: vendorSecret('dd'), mlApp: 'app' },
      workspace_id: workspace,
    });
    assert.equal(again.status, 200, again.text);
  });

  it('keeps the limit under concurrent creates: 10 at once make exactly 5', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        create({
          type: 'braintrust',
          name: `bt ${index}`,
          config: { apiKey: vendorSecret('bt-'), projectId: '3f2b1c9e-1d2a-4c5b-9e8f-0a1b2c3d4e5f' },
          workspace_id: workspace,
        }),
      ),
    );
    const statuses = results.map((result) => result.status).sort();
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 409, 409, 409, 409, 409]);
    const listed = await call('GET', `${DESTINATIONS}?workspace_id=${workspace}`);
    assert.equal(listed.body.total_count, 5);
  });

  it('soft-deletes: gone from get, list, PATCH and a second DELETE; the row stays, marked', async () => {
    const record = (await create({ type: 'langfuse', name: 'doomed', config: langfuseConfig() })).body.data;
    const before = published.length;
    const deleted = await call('DELETE', `${DESTINATIONS}/${record.id}`, {
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, { deleted: true });
    assert.deepEqual(published.slice(before), [workspace]);
    expectError(await call('GET', `${DESTINATIONS}/${record.id}`), 404);
    expectError(await call('PATCH', `${DESTINATIONS}/${record.id}`, { body: { name: 'back' } }), 404);
    expectError(await call('DELETE', `${DESTINATIONS}/${record.id}`), 404);
    expectError(await call('POST', `${DESTINATIONS}/${record.id}/test`), 404);
    expectError(await call('GET', `${DESTINATIONS}/${record.id}/deliveries`), 404);
    const listed = await call('GET', `${DESTINATIONS}?workspace_id=${workspace}`);
    assert.equal(
      listed.body.data.some((item: { id: string }) => item.id === record.id),
      false,
    );
    const row = await destinationRow(gateway, record.id);
    assert.equal(row.deleted_at, clock.now().toISOString());
  });

  it('lists dead and pending deliveries and requeues the dead ones', async () => {
    const record = (await create({ type: 'langfuse', name: 'deliveries', config: langfuseConfig() })).body
      .data;
    const other = (await create({ type: 'langfuse', name: 'other deliveries', config: langfuseConfig() }))
      .body.data;
    const base = { destination_id: record.id, workspace_id: workspace };
    const dead = [
      await insertDelivery(gateway, { ...base, created_at: '2031-02-01T00:00:00.000Z' }),
      await insertDelivery(gateway, {
        ...base,
        created_at: '2031-02-03T00:00:00.000Z',
        last_status: null,
        last_error: 'receiver unreachable',
      }),
      await insertDelivery(gateway, {
        ...base,
        created_at: '2031-02-02T00:00:00.000Z',
        last_status: 401,
        last_error: 'receiver answered 401',
      }),
    ];
    const pending = await insertDelivery(gateway, {
      ...base,
      status: 'pending',
      attempts: 2,
      dead_at: null,
      next_attempt_at: '2031-02-04T00:00:30.000Z',
      created_at: '2031-02-04T00:00:00.000Z',
    });
    await insertDelivery(gateway, { destination_id: other.id, workspace_id: workspace });

    const listed = await call('GET', `${DESTINATIONS}/${record.id}/deliveries`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.total_count, 3);
    const newest = dead[1];
    assert.ok(newest);
    assert.deepEqual(listed.body.data[0], {
      id: newest.id,
      generation_id: newest.generation_id,
      status: 'dead',
      attempts: 8,
      next_attempt_at: newest.next_attempt_at,
      last_status: null,
      last_error: 'receiver unreachable',
      created_at: newest.created_at,
      dead_at: newest.dead_at,
    });
    assert.deepEqual(
      listed.body.data.map((row: { id: string }) => row.id),
      [dead[1]?.id, dead[2]?.id, dead[0]?.id],
    );
    const paged = await call('GET', `${DESTINATIONS}/${record.id}/deliveries?status=dead&offset=2&limit=1`);
    assert.deepEqual(
      paged.body.data.map((row: { id: string }) => row.id),
      [dead[0]?.id],
    );
    const pendingList = await call('GET', `${DESTINATIONS}/${record.id}/deliveries?status=pending`);
    assert.deepEqual(
      pendingList.body.data.map((row: { id: string; status: string }) => [row.id, row.status]),
      [[pending.id, 'pending']],
    );
    expectError(await call('GET', `${DESTINATIONS}/${record.id}/deliveries`, { key: inferenceKey }), 403);
    expectError(
      await call('POST', `${DESTINATIONS}/${record.id}/deliveries/retry`, { key: inferenceKey }),
      403,
    );

    const retried = await call('POST', `${DESTINATIONS}/${record.id}/deliveries/retry`);
    assert.equal(retried.status, 200, retried.text);
    assert.deepEqual(retried.body, { data: { requeued: 3 } });
    const rows = await gateway.services.storage.db
      .selectFrom('broadcast_outbox')
      .selectAll()
      .where('destination_id', '=', record.id)
      .orderBy('created_at', 'asc')
      .execute();
    for (const row of rows.filter((candidate) => candidate.id !== pending.id)) {
      assert.equal(row.status, 'pending');
      assert.equal(Number(row.attempts), 0);
      assert.equal(row.next_attempt_at, clock.now().toISOString());
      assert.equal(row.dead_at, null);
      assert.ok(row.last_error, 'the last error is kept');
    }
    const untouched = rows.find((row) => row.id === pending.id);
    assert.equal(Number(untouched?.attempts), 2, 'pending rows are left alone');
    assert.equal((await call('GET', `${DESTINATIONS}/${record.id}/deliveries`)).body.total_count, 0);
    assert.deepEqual((await call('POST', `${DESTINATIONS}/${record.id}/deliveries/retry`)).body, {
      data: { requeued: 0 },
    });
    const otherDead = await call('GET', `${DESTINATIONS}/${other.id}/deliveries`);
    assert.equal(otherDead.body.total_count, 1, "another destination's dead letters stay");
  });

  it('refuses every change to an inference key (403) but lets it read', async () => {
    const record = (
      await create(
        { type: 'langfuse', name: 'guarded', config: langfuseConfig() },
        { callersWorkspace: true },
      )
    ).body.data;
    const attempts: Array<[string, string, unknown?]> = [
      ['POST', DESTINATIONS, { type: 'langfuse', name: 'x', config: langfuseConfig() }],
      ['PATCH', `${DESTINATIONS}/${record.id}`, { enabled: false }],
      ['DELETE', `${DESTINATIONS}/${record.id}`],
      ['POST', `${DESTINATIONS}/${record.id}/test`],
    ];
    for (const [method, path, body] of attempts) {
      const response = await call(method, path, { key: inferenceKey, ...(body ? { body } : {}) });
      assert.equal(
        expectError(response, 403),
        'Only management keys can perform this operation',
        `${method} ${path}`,
      );
    }
    assert.equal((await destinationRow(gateway, record.id)).enabled, 1);
    assert.equal((await call('GET', `${DESTINATIONS}/${record.id}`, { key: inferenceKey })).status, 200);
    expectError(await call('GET', DESTINATIONS, { key: null as unknown as string }), 401);
  });

  it('answers 404 for an unknown id and 400 for an id that is not a UUID', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    expectError(await call('GET', `${DESTINATIONS}/${unknown}`), 404);
    expectError(await call('PATCH', `${DESTINATIONS}/${unknown}`, { body: { enabled: true } }), 404);
    expectError(await call('DELETE', `${DESTINATIONS}/${unknown}`), 404);
    expectError(await call('POST', `${DESTINATIONS}/${unknown}/deliveries/retry`), 404);
    assert.match(
      expectError(await call('GET', `${DESTINATIONS}/not-a-uuid`), 400),
      /params\.id must match format "uuid"/,
    );
  });
});
