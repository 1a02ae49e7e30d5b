import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { after, before, beforeEach, describe, it } from 'node:test';
import { defaultGuardrailId } from '../../../src/admin/guardrails/default-guardrail-id.js';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';
import {
  backend,
  type ClientResponse,
  isolatedDatabase,
  startTestApp,
  type TestApp,
} from '../../helpers/test-app.js';
import { chatCompletion, generationId, generationRecord, keyInfo, usageOf, waitFor } from './harness.js';

/**
 * Governance on the inference path, end to end: workspace budgets, guardrails (models, providers,
 * ZDR per vendor, spending limits, content filters) and BYOK credentials, each set up through the
 * admin API and observed as a client and the fake upstreams see it.
 */

/** Served by `acme`, which keeps no prompts: a zero-data-retention endpoint. */
const MODEL = 'openai/widget';
/** Served by `keeper`, which retains prompts. */
const KEEPER_MODEL = 'openai/keeper-widget';
/** Another `acme` model, of another vendor. */
const OTHER_MODEL = 'acme/gadget';

/** Two providers on one fake upstream; prices are round: $1 per million prompt tokens, $2 per million completion. */
function catalog(baseUrl: string) {
  const pricing = { prompt: '0.000001', completion: '0.000002' };
  return {
    providers: [
      { slug: 'acme', name: 'Acme', base_url: `${baseUrl}/acme/v1` },
      { slug: 'keeper', name: 'Keeper', base_url: `${baseUrl}/keeper/v1`, retains_prompts: true },
    ],
    models: [
      {
        id: MODEL,
        name: 'Widget',
        provider: 'acme',
        provider_model_id: 'widget',
        context_length: 100_000,
        max_completion_tokens: 4096,
        pricing,
      },
      {
        id: KEEPER_MODEL,
        name: 'Keeper widget',
        provider: 'keeper',
        provider_model_id: 'widget',
        context_length: 100_000,
        max_completion_tokens: 4096,
        pricing,
      },
      {
        id: 'acme/embed',
        name: 'Embed',
        provider: 'acme',
        provider_model_id: 'embed',
        context_length: 8192,
        pricing,
        output_modalities: ['embeddings'],
      },
      {
        id: OTHER_MODEL,
        name: 'Gadget',
        provider: 'acme',
        provider_model_id: 'gadget',
        context_length: 100_000,
        max_completion_tokens: 4096,
        pricing,
      },
    ],
  };
}

interface Setup {
  gateway: TestApp;
  fake: Awaited<ReturnType<typeof startFakeUpstream>>;
}

async function start(providers: Record<string, unknown>): Promise<Setup> {
  const fake = await startFakeUpstream();
  fake.handle((_request, response) => {
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(chatCompletion('ok', usageOf(1000, 500)));
  });
  const gateway = await startTestApp({
    config: { credits: { initial: 100 }, catalog: catalog(fake.url), providers },
  });
  return { gateway, fake };
}

function ok(response: ClientResponse, what: string) {
  assert.ok(
    response.status === 200 || response.status === 201,
    `${what}: ${response.status} ${response.text}`,
  );
  return response.body;
}

async function newWorkspace(gateway: TestApp, slug: string): Promise<string> {
  return ok(await gateway.request('POST', '/api/v1/workspaces', { body: { name: slug, slug } }), 'workspace')
    .data.id;
}

async function newKey(
  gateway: TestApp,
  workspaceId: string,
  extra: Record<string, unknown> = {},
): Promise<{ key: string; hash: string }> {
  const body = ok(
    await gateway.request('POST', '/api/v1/keys', {
      body: { name: 'app', workspace_id: workspaceId, ...extra },
    }),
    'key',
  );
  return { key: body.key, hash: body.data.hash };
}

const chat = (
  gateway: TestApp,
  key: string,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) =>
  gateway.request('POST', '/api/v1/chat/completions', {
    key,
    headers,
    // The fake answers report 1,000 + 500 tokens ($0.002): max_tokens 1,000 reserves ~$0.002025,
    // enough to bill it (no generation is billed more than its reservation).
    body: { model: MODEL, messages: [{ role: 'user', content: 'hello' }], max_tokens: 1000, ...body },
  });

/** Which fake provider (by path) received each request, in order. */
const providersCalled = (fake: Setup['fake']) => fake.requests.map((request) => request.url.split('/')[1]);

describe('workspace budgets on the inference path', () => {
  let setup: Setup;
  before(async () => {
    setup = await start({ acme: { api_key: 'platform-acme' }, keeper: { api_key: 'platform-keeper' } });
  });
  after(async () => {
    await setup.gateway.close();
    await setup.fake.close();
  });

  it('refuses with 403 once the daily budget is spent, and counts only its own workspace', async () => {
    const { gateway } = setup;
    const workspace = await newWorkspace(gateway, 'budget-daily');
    const other = await newWorkspace(gateway, 'budget-other');
    const { key } = await newKey(gateway, workspace);
    const { key: otherKey } = await newKey(gateway, other);
    // Each answer costs 1000 × $1/M + 500 × $2/M = $0.002; the budget holds two and a half.
    ok(
      await gateway.request('PUT', `/api/v1/workspaces/${workspace}/budgets/daily`, {
        body: { limit_usd: 0.005 },
      }),
      'budget',
    );
    assert.equal((await chat(gateway, key)).status, 200);
    assert.equal((await chat(gateway, key)).status, 200);
    const refused = await chat(gateway, key);
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.body.error.message, /Workspace daily budget of \$0\.005/);
    // Another workspace's keys are not affected.
    assert.equal((await chat(gateway, otherKey)).status, 200);
    // Spend reached the workspace's usage rows.
    await waitFor('workspace usage recorded', async () => {
      const rows = await gateway.services.storage.db
        .selectFrom('workspace_usage_daily')
        .selectAll()
        .where('workspace_id', '=', workspace)
        .execute();
      return rows.length === 1 && Number(rows[0]!.usage_nanos) === 4_000_000;
    });
  });

  it('names the broadest exceeded interval', async () => {
    const { gateway } = setup;
    const workspace = await newWorkspace(gateway, 'budget-broad');
    const { key } = await newKey(gateway, workspace);
    ok(
      await gateway.request('PUT', `/api/v1/workspaces/${workspace}/budgets/lifetime`, {
        body: { limit_usd: 0.0042 },
      }),
      'lifetime',
    );
    ok(
      await gateway.request('PUT', `/api/v1/workspaces/${workspace}/budgets/daily`, {
        body: { limit_usd: 0.0041 },
      }),
      'daily',
    );
    assert.equal((await chat(gateway, key)).status, 200);
    assert.equal((await chat(gateway, key)).status, 200);
    // $0.004 spent: neither budget has room for another worst case ($0.002025); the message names
    // the lifetime one.
    const refused = await chat(gateway, key);
    assert.equal(refused.status, 403);
    assert.equal(
      refused.body.error.message,
      'Workspace lifetime budget of $0.0042 would be exceeded: this request may cost up to $0.002025 but $0.0002 remain. Contact your org admin, or send fewer max tokens.',
    );
    // Deleting the budgets lifts the refusal at once.
    for (const interval of ['lifetime', 'daily']) {
      ok(await gateway.request('DELETE', `/api/v1/workspaces/${workspace}/budgets/${interval}`), 'delete');
    }
    assert.equal((await chat(gateway, key)).status, 200);
    assert.equal((await chat(gateway, key)).status, 200);
    // $0.008 spent today. A daily budget set again below that is already exhausted: what was spent
    // while no budget existed counts.
    ok(
      await gateway.request('PUT', `/api/v1/workspaces/${workspace}/budgets/daily`, {
        body: { limit_usd: 0.0075 },
      }),
      'daily again',
    );
    const again = await chat(gateway, key);
    assert.equal(again.status, 403, again.text);
    assert.equal(
      again.body.error.message,
      'Workspace daily budget of $0.0075 exceeded. Contact your org admin.',
    );
  });

  it('never overspends under 20 concurrent requests', async () => {
    const { gateway } = setup;
    const workspace = await newWorkspace(gateway, 'budget-race');
    const { key } = await newKey(gateway, workspace);
    // Reserved worst case per request: prompt bound (~25 tokens) × $1/M + 100 × $2/M ≈ $0.000225;
    // each answer reports 10 + 100 tokens and costs $0.00021, close to it. Whatever the interleaving,
    // the $0.001 budget can hold at most four of them.
    setup.fake.handle((_request, response) => {
      setTimeout(() => {
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(chatCompletion('ok', usageOf(10, 100)));
      }, 50);
    });
    ok(
      await gateway.request('PUT', `/api/v1/workspaces/${workspace}/budgets/monthly`, {
        body: { limit_usd: 0.001 },
      }),
      'budget',
    );
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => chat(gateway, key, { max_tokens: 100 })),
    );
    const served = replies.filter((reply) => reply.status === 200).length;
    assert.ok(served >= 1 && served <= 4, `served ${served}`);
    for (const reply of replies) assert.ok(reply.status === 200 || reply.status === 403, reply.text);
    setup.fake.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('ok', usageOf(1000, 500)));
    });
  });
});

describe('guardrails on the inference path', () => {
  let setup: Setup;
  let workspace: string;
  before(async () => {
    setup = await start({ acme: { api_key: 'platform-acme' }, keeper: { api_key: 'platform-keeper' } });
    workspace = await newWorkspace(setup.gateway, 'guarded');
  });
  after(async () => {
    await setup.gateway.close();
    await setup.fake.close();
  });
  beforeEach(() => {
    setup.fake.requests.length = 0;
  });

  async function guardrail(body: Record<string, unknown>): Promise<string> {
    return ok(
      await setup.gateway.request('POST', '/api/v1/guardrails', {
        body: { name: 'rail', workspace_id: workspace, ...body },
      }),
      'guardrail',
    ).data.id;
  }

  async function assignKey(guardrailId: string, hash: string) {
    ok(
      await setup.gateway.request('POST', `/api/v1/guardrails/${guardrailId}/assignments/keys`, {
        body: { key_hashes: [hash] },
      }),
      'assign',
    );
  }

  it('refuses a model outside the allowlist with 403, and routes an allowed one', async () => {
    const { gateway } = setup;
    const { key, hash } = await newKey(gateway, workspace);
    await assignKey(await guardrail({ name: 'only gadget', allowed_models: [OTHER_MODEL] }), hash);
    const refused = await chat(gateway, key);
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.body.error.message, /guardrail "only gadget".*openai\/widget.*not allowed/);
    assert.equal(setup.fake.requests.length, 0, 'no upstream was called');
    assert.equal((await chat(gateway, key, { model: OTHER_MODEL })).status, 200);
  });

  it('keeps ignored providers out of routing and refuses when none is left', async () => {
    const { gateway } = setup;
    const { key, hash } = await newKey(gateway, workspace);
    const id = await guardrail({ name: 'no acme', ignored_providers: ['acme'] });
    await assignKey(id, hash);
    assert.equal((await chat(gateway, key, { model: KEEPER_MODEL })).status, 200);
    assert.deepEqual(providersCalled(setup.fake), ['keeper']);
    const refused = await chat(gateway, key, { model: OTHER_MODEL });
    assert.equal(refused.status, 403);
    assert.match(refused.body.error.message, /guardrail "no acme"/);
    // A fallback list skips what the guardrail ignores.
    setup.fake.requests.length = 0;
    assert.equal((await chat(gateway, key, { model: MODEL, models: [KEEPER_MODEL] })).status, 200);
    assert.deepEqual(providersCalled(setup.fake), ['keeper']);
  });

  it('routes only to zero-data-retention endpoints for a vendor whose ZDR flag is set', async () => {
    const { gateway } = setup;
    const zdr = await newKey(gateway, workspace);
    await assignKey(await guardrail({ name: 'zdr only', enforce_zdr_openai: true }), zdr.hash);
    // keeper retains prompts: an openai/* model it serves is refused, one that acme serves answers,
    // and a fallback list moves on to the zero-data-retention endpoint.
    const refused = await chat(gateway, zdr.key, { model: KEEPER_MODEL });
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.body.error.message, /zero-data-retention/);
    assert.equal(setup.fake.requests.length, 0);
    assert.equal((await chat(gateway, zdr.key, { model: KEEPER_MODEL, models: [MODEL] })).status, 200);
    assert.deepEqual(providersCalled(setup.fake), ['acme']);
    // The deprecated enforce_zdr sets every vendor's flag that the request does not set itself.
    const { key, hash } = await newKey(gateway, workspace);
    await assignKey(
      await guardrail({ name: 'zdr but openai', enforce_zdr: true, enforce_zdr_openai: false }),
      hash,
    );
    assert.equal((await chat(gateway, key, { model: KEEPER_MODEL })).status, 200);
  });

  it('intersects the allowlists of the key, member and workspace default guardrails', async () => {
    const { gateway } = setup;
    const member = 'user-alice';
    ok(
      await gateway.request('POST', `/api/v1/workspaces/${workspace}/members/add`, {
        body: { user_ids: [member] },
      }),
      'member',
    );
    const { key, hash } = await newKey(gateway, workspace, { creator_user_id: member });
    await assignKey(await guardrail({ name: 'key rail', allowed_providers: ['acme', 'keeper'] }), hash);
    assert.equal((await chat(gateway, key)).status, 200, 'before the member guardrail, acme is allowed');
    const memberRail = await guardrail({ name: 'member rail', allowed_providers: ['keeper'] });
    ok(
      await gateway.request('POST', `/api/v1/guardrails/${memberRail}/assignments/members`, {
        body: { member_user_ids: [member] },
      }),
      'assign member',
    );
    // Only keeper is in both allowlists now.
    assert.equal((await chat(gateway, key)).status, 403);
    setup.fake.requests.length = 0;
    assert.equal((await chat(gateway, key, { model: KEEPER_MODEL })).status, 200);
    assert.deepEqual(providersCalled(setup.fake), ['keeper']);
    // The workspace default guardrail applies to every key of the workspace.
    ok(
      await gateway.request('PATCH', `/api/v1/guardrails/${defaultGuardrailId(workspace)}`, {
        body: { ignored_models: [KEEPER_MODEL] },
      }),
      'default guardrail',
    );
    const refused = await chat(gateway, key, { model: KEEPER_MODEL });
    assert.equal(refused.status, 403);
    ok(
      await gateway.request('PATCH', `/api/v1/guardrails/${defaultGuardrailId(workspace)}`, {
        body: { ignored_models: null },
      }),
      'clear default guardrail',
    );
    assert.equal((await chat(gateway, key, { model: KEEPER_MODEL })).status, 200);
  });

  it("enforces a member guardrail limit across the member's keys, also after a key is deleted", async () => {
    const { gateway } = setup;
    const member = 'user-bob';
    ok(
      await gateway.request('POST', `/api/v1/workspaces/${workspace}/members/add`, {
        body: { user_ids: [member] },
      }),
      'member',
    );
    const rail = await guardrail({ name: 'bob budget', limit_usd: 0.005, reset_interval: 'monthly' });
    ok(
      await gateway.request('POST', `/api/v1/guardrails/${rail}/assignments/members`, {
        body: { member_user_ids: [member] },
      }),
      'assign member',
    );
    const first = await newKey(gateway, workspace, { creator_user_id: member });
    assert.equal((await chat(gateway, first.key, { model: KEEPER_MODEL })).status, 200);
    assert.equal((await chat(gateway, first.key, { model: KEEPER_MODEL })).status, 200);
    // $0.004 of the member's $0.005 spent; the key is deleted and a new one issued to the member.
    await gateway.services.generations.flush();
    ok(await gateway.request('DELETE', `/api/v1/keys/${first.hash}`), 'delete key');
    // A restarted instance (fresh counters) reads the member's spend from storage: it outlives the key.
    const restarted = await startTestApp({
      database: gateway.database,
      config: {
        credits: { initial: 100 },
        catalog: catalog(setup.fake.url),
        providers: { acme: { api_key: 'platform-acme' }, keeper: { api_key: 'platform-keeper' } },
      },
    });
    try {
      const second = await newKey(restarted, workspace, { creator_user_id: member });
      const refused = await chat(restarted, second.key, { model: KEEPER_MODEL });
      assert.equal(refused.status, 403, refused.text);
      assert.match(refused.body.error.message, /Guardrail "bob budget" limit of \$0\.005.*this member/);
    } finally {
      await restarted.close();
    }
    const rows = await gateway.services.storage.db
      .selectFrom('member_usage_daily')
      .selectAll()
      .where('user_id', '=', member)
      .execute();
    assert.equal(
      rows.reduce((sum, row) => sum + Number(row.usage_nanos), 0),
      4_000_000,
    );
  });

  it('enforces a guardrail spending limit per key', async () => {
    const { gateway } = setup;
    const first = await newKey(gateway, workspace);
    const second = await newKey(gateway, workspace);
    const id = await guardrail({ name: 'cheap', limit_usd: 0.003, reset_interval: 'daily' });
    await assignKey(id, first.hash);
    await assignKey(id, second.hash);
    assert.equal((await chat(gateway, first.key)).status, 200);
    // $0.002 spent of $0.003: the next worst case does not fit.
    const refused = await chat(gateway, first.key);
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.body.error.message, /Guardrail "cheap" limit of \$0\.003/);
    // The limit is per key, not shared among the keys it is assigned to.
    assert.equal((await chat(gateway, second.key)).status, 200);
  });

  it('redacts, blocks and flags prompt content before the upstream sees it', async () => {
    const { gateway } = setup;
    const { key, hash } = await newKey(gateway, workspace);
    const id = await guardrail({
      name: 'filters',
      content_filter_builtins: [{ slug: 'email', action: 'redact' }],
      content_filters: [
        { pattern: 'project-[0-9]+', action: 'redact', label: '[PROJECT]' },
        { pattern: 'launch codes', action: 'block', label: 'secrets' },
      ],
    });
    await assignKey(id, hash);
    const redacted = await chat(
      gateway,
      key,
      { messages: [{ role: 'user', content: 'mail bob@example.com about project-42 and project-7' }] },
      { 'X-Switchyard-Metadata': 'enabled' },
    );
    assert.equal(redacted.status, 200, redacted.text);
    const sent = (setup.fake.requests.at(-1)!.body as any).messages[0].content;
    assert.equal(
      typeof sent === 'string' ? sent : sent[0].text,
      'mail [EMAIL] about [PROJECT] and [PROJECT]',
    );
    const stage = redacted.body.switchyard_metadata.pipeline[0];
    assert.equal(stage.type, 'guardrail');
    assert.equal(stage.name, 'content-filter');
    assert.equal(stage.guardrail_id, id);
    assert.equal(stage.data.action, 'redacted');

    // Embedding inputs are filtered the same way.
    setup.fake.handle((request, response) => {
      if (!request.url.endsWith('/embeddings')) {
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(chatCompletion('ok', usageOf(1000, 500)));
        return;
      }
      const inputs = (request.body as { input: string[] }).input;
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          object: 'list',
          data: inputs.map((_input, index) => ({ object: 'embedding', index, embedding: [0.5, 0.25] })),
          model: 'embed',
          usage: { prompt_tokens: 8, total_tokens: 8 },
        }),
      );
    });
    const embedded = await gateway.request('POST', '/api/v1/embeddings', {
      key,
      body: { model: 'acme/embed', input: ['write to bob@example.com', 'project-9 notes'] },
    });
    assert.equal(embedded.status, 200, embedded.text);
    assert.deepEqual((setup.fake.requests.at(-1)!.body as any).input, [
      'write to [EMAIL]',
      '[PROJECT] notes',
    ]);

    const before = setup.fake.requests.length;
    const blocked = await chat(gateway, key, {
      messages: [{ role: 'user', content: 'send the launch codes' }],
    });
    assert.equal(blocked.status, 403);
    assert.equal(blocked.body.error.message, 'Request blocked by content filter: secrets');
    assert.equal(setup.fake.requests.length, before, 'a blocked request never reaches an upstream');
  });

  it('scans NLP filters and large prompts in a content-filter thread, leaving the event loop free', async () => {
    const { gateway } = setup;
    const { key, hash } = await newKey(gateway, workspace);
    const slugs = ['email', 'phone', 'ssn', 'credit-card', 'ip-address', 'person-name', 'address'];
    const id = await guardrail({
      name: 'everything',
      content_filter_builtins: [
        ...slugs.map((slug) => ({ slug, action: 'redact' })),
        { slug: 'regex-prompt-injection', action: 'flag' },
      ],
      content_filters: [{ pattern: 'project-[0-9]+', action: 'redact', label: '[PROJECT]' }],
    });
    await assignKey(id, hash);
    const sentText = () => {
      const content = (setup.fake.requests.at(-1)!.body as any).messages[0].content;
      return typeof content === 'string' ? content : content[0].text;
    };
    const named = await chat(gateway, key, {
      messages: [{ role: 'user', content: 'Please write to Jane Doe at jane@example.com about project-7.' }],
    });
    assert.equal(named.status, 200, named.text);
    assert.equal(sentText(), 'Please write to [PERSON_NAME] at [EMAIL] about [PROJECT].');

    // ~3 MB of prompt: scanned on this thread, every filter held the event loop for seconds.
    const sentence = 'Mail jane@example.com or call +1 (415) 555-2671 from 10.0.12.7 about project-42. ';
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const startedAt = performance.now();
    const large = await chat(gateway, key, {
      messages: [{ role: 'user', content: sentence.repeat(36_000) }],
    });
    const requestMs = performance.now() - startedAt;
    delay.disable();
    assert.equal(large.status, 200, large.text);
    assert.equal(
      sentText(),
      'Mail [EMAIL] or call [PHONE] from [IP_ADDRESS] about [PROJECT]. '.repeat(36_000),
    );
    // What is left on this thread is reading, parsing and forwarding the body: its longest hold is
    // a small part of the request's time, where the scan on this thread was most of it (a ratio,
    // so a slower host changes both sides; measured 25 of ~330 ms threaded, 268 of ~350 inline).
    const longestMs = delay.max / 1e6;
    assert.ok(
      longestMs < requestMs / 3,
      `the event loop was held for ${longestMs.toFixed(0)} of the request's ${requestMs.toFixed(0)} ms`,
    );
  });
});

describe('BYOK credentials on the inference path', () => {
  let setup: Setup;
  let workspace: string;
  before(async () => {
    // acme has no platform credential: only a workspace's own key can reach it.
    setup = await start({ keeper: { api_key: 'platform-keeper' } });
    workspace = await newWorkspace(setup.gateway, 'byok');
  });
  after(async () => {
    await setup.gateway.close();
    await setup.fake.close();
  });
  beforeEach(() => {
    setup.fake.requests.length = 0;
  });

  it('calls the provider with the workspace key, bills BYOK usage and leaves credits alone', async () => {
    const { gateway, fake } = setup;
    const { key } = await newKey(gateway, workspace);
    // Without a credential for acme, gadget has no endpoint.
    assert.equal((await chat(gateway, key, { model: OTHER_MODEL })).status, 404);
    const created = ok(
      await gateway.request('POST', '/api/v1/byok', {
        body: { provider: 'acme', key: 'sk-acme-own-secret-0001', workspace_id: workspace },
      }),
      'byok',
    ).data;
    const creditsBefore = (await gateway.request('GET', '/api/v1/credits')).body.data;
    const answered = await chat(gateway, key, { model: OTHER_MODEL }, { 'X-Switchyard-Metadata': 'enabled' });
    assert.equal(answered.status, 200, answered.text);
    assert.equal(fake.requests.at(-1)!.headers.authorization, 'Bearer sk-acme-own-secret-0001');
    assert.equal(answered.body.usage.is_byok, true);
    assert.equal(answered.body.switchyard_metadata.is_byok, true);
    const record = await generationRecord(gateway, key, generationId(answered));
    assert.equal(record.is_byok, true);
    await waitFor('BYOK usage billed', async () => (await keyInfo(gateway, key)).byok_usage > 0);
    const info = await keyInfo(gateway, key);
    assert.equal(info.usage, 0);
    assert.equal(info.byok_usage, 0.002);
    assert.deepEqual((await gateway.request('GET', '/api/v1/credits')).body.data, creditsBefore);
    // A disabled credential is not used.
    ok(await gateway.request('PATCH', `/api/v1/byok/${created.id}`, { body: { disabled: true } }), 'disable');
    assert.equal((await chat(gateway, key, { model: OTHER_MODEL })).status, 404);
    ok(await gateway.request('DELETE', `/api/v1/byok/${created.id}`), 'delete');
  });

  it('a failed call with the workspace key says BYOK in the error and in switchyard_metadata alike', async () => {
    const { gateway, fake } = setup;
    const { key } = await newKey(gateway, workspace);
    const created = ok(
      await gateway.request('POST', '/api/v1/byok', {
        body: { provider: 'acme', key: 'sk-acme-own-secret-0003', workspace_id: workspace },
      }),
      'byok',
    ).data;
    fake.handle((_request, response) => {
      response
        .writeHead(500, { 'content-type': 'application/json' })
        .end('{"error":{"message":"upstream broke"}}');
    });
    try {
      const failed = await chat(gateway, key, { model: OTHER_MODEL }, { 'X-Switchyard-Metadata': 'enabled' });
      assert.equal(failed.status, 500, failed.text);
      assert.equal(failed.body.error.metadata.is_byok, true);
      assert.equal(failed.body.switchyard_metadata.is_byok, true);
      assert.equal(failed.body.switchyard_metadata.attempt, 1);
    } finally {
      fake.handle((_request, response) => {
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(chatCompletion('ok', usageOf(1000, 500)));
      });
      ok(await gateway.request('DELETE', `/api/v1/byok/${created.id}`), 'delete');
    }
  });

  it('tries the workspace key before the platform key, and the platform key first when it is a fallback', async () => {
    const { gateway, fake } = setup;
    const { key } = await newKey(gateway, workspace);
    const created = ok(
      await gateway.request('POST', '/api/v1/byok', {
        body: { provider: 'keeper', key: 'sk-keeper-own-secret-02', workspace_id: workspace },
      }),
      'byok',
    ).data;
    // The BYOK key is refused by the provider: the platform key answers instead.
    fake.handle((request, response) => {
      if (request.headers.authorization === 'Bearer sk-keeper-own-secret-02') {
        response
          .writeHead(401, { 'content-type': 'application/json' })
          .end('{"error":{"message":"bad key"}}');
        return;
      }
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('ok', usageOf(1000, 500)));
    });
    const answered = await chat(gateway, key, { model: KEEPER_MODEL });
    assert.equal(answered.status, 200, answered.text);
    assert.deepEqual(
      fake.requests.map((request) => request.headers.authorization),
      ['Bearer sk-keeper-own-secret-02', 'Bearer platform-keeper'],
    );
    assert.equal(answered.body.usage.is_byok, false);
    fake.requests.length = 0;
    ok(
      await gateway.request('PATCH', `/api/v1/byok/${created.id}`, { body: { is_fallback: true } }),
      'fallback',
    );
    assert.equal((await chat(gateway, key, { model: KEEPER_MODEL })).status, 200);
    assert.deepEqual(
      fake.requests.map((request) => request.headers.authorization),
      ['Bearer platform-keeper'],
    );
    // A credential limited to other keys is not used for this one.
    ok(
      await gateway.request('PATCH', `/api/v1/byok/${created.id}`, {
        body: { is_fallback: false, allowed_api_key_hashes: [(await newKey(gateway, workspace)).hash] },
      }),
      'restrict',
    );
    fake.requests.length = 0;
    assert.equal((await chat(gateway, key, { model: KEEPER_MODEL })).status, 200);
    assert.deepEqual(
      fake.requests.map((request) => request.headers.authorization),
      ['Bearer platform-keeper'],
    );
    fake.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('ok', usageOf(1000, 500)));
    });
  });
});

describe('governance across two instances sharing a database and Redis', () => {
  it('a budget and a guardrail set on one instance hold on the other at once', {
    skip: !backend.redisUrl && 'REDIS_URL is not set',
  }, async () => {
    const fake = await startFakeUpstream();
    fake.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('ok', usageOf(1000, 500)));
    });
    const database = isolatedDatabase();
    const redisPrefix = `switchyard-test-${randomBytes(6).toString('hex')}:`;
    const config = {
      credits: { initial: 100 },
      catalog: catalog(fake.url),
      providers: { acme: { api_key: 'platform-acme' }, keeper: { api_key: 'platform-keeper' } },
    };
    const first = await startTestApp({ database, redisPrefix, config });
    const second = await startTestApp({ database, redisPrefix, config });
    try {
      const workspace = await newWorkspace(first, 'shared');
      const { key, hash } = await newKey(first, workspace);
      // Both instances load the policy before it changes.
      assert.equal((await chat(second, key)).status, 200);
      assert.equal((await chat(first, key)).status, 200);
      // $0.004 spent (written: a new budget counts what storage holds, and each instance what it
      // served itself); a $0.005 daily budget set through the first instance leaves no room for a
      // worst case of ~$0.00104 on the second.
      await Promise.all([first.services.generations.flush(), second.services.generations.flush()]);
      ok(
        await first.request('PUT', `/api/v1/workspaces/${workspace}/budgets/daily`, {
          body: { limit_usd: 0.005 },
        }),
        'budget',
      );
      const refused = await chat(second, key);
      assert.equal(refused.status, 403, refused.text);
      assert.match(refused.body.error.message, /Workspace daily budget of \$0\.005/);
      ok(await first.request('DELETE', `/api/v1/workspaces/${workspace}/budgets/daily`), 'delete budget');
      assert.equal((await chat(second, key)).status, 200);
      // A guardrail assigned through the second instance applies on the first.
      const guardrail = ok(
        await second.request('POST', '/api/v1/guardrails', {
          body: { name: 'no widget', workspace_id: workspace, ignored_models: [MODEL] },
        }),
        'guardrail',
      ).data.id;
      ok(
        await second.request('POST', `/api/v1/guardrails/${guardrail}/assignments/keys`, {
          body: { key_hashes: [hash] },
        }),
        'assign',
      );
      assert.equal((await chat(first, key)).status, 403);
    } finally {
      await first.close();
      await second.close();
      await database.drop();
      await fake.close();
    }
  });
});
