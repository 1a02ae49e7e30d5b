import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Value } from 'typebox/value';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import { type LangsmithConfig, langsmithDestination } from '../../src/broadcast/exporters/langsmith.js';
import {
  assertRetryAfter,
  exportContext,
  finalFailure,
  outboxItem,
  privateEvent,
  type ReceivedRequest,
  type ReceiverReply,
  retryableFailure,
  sampleEvent,
  startReceiver,
} from '../helpers/broadcast-fixtures.js';

const http = createExporterHttp({ allowPrivateNetworks: true });
after(() => http.close());

const API_KEY = 'lsv2_pt_0123456789abcdef';
/** An organization-scoped key: LangSmith needs `X-Tenant-Id` to know the workspace. */
const ORG_KEY = 'lsv2_sk_org0123456789';
const WORKSPACE_ID = '6f1c2a0e-3d4b-4c5a-9e8f-7a6b5c4d3e2f';
const RUN_TYPES = new Set(['llm', 'embedding', 'chain', 'tool', 'retriever', 'prompt', 'parser']);
const DOTTED_PART = /^(\d{8}T\d{12})Z([0-9a-f-]{36})$/;

interface Run {
  id: string;
  trace_id: string;
  dotted_order: string;
  name: string;
  run_type: string;
  start_time: string;
  [key: string]: unknown;
}

/** The reasons LangSmith gives for refusing a root run, or null when it takes it. */
function runProblem(run: Run): string | null {
  if (typeof run.name !== 'string' || !RUN_TYPES.has(run.run_type) || typeof run.start_time !== 'string') {
    return 'field required';
  }
  const parts = run.dotted_order.split('.');
  if (parts.length !== 1) return `dotted_order must contain a single part for root runs for run_id:${run.id}`;
  const match = DOTTED_PART.exec(parts[0] as string);
  if (!match || match[2] !== run.id) return `invalid 'dotted_order': ${run.dotted_order}`;
  if (run.trace_id !== run.id)
    return `invalid 'dotted_order': trace_id ${run.trace_id} does not match first part`;
  return null;
}

/** LangSmith's API for this exporter: `x-api-key`; runs/batch refuses bad runs and known ids (409). */
function fakeLangsmith() {
  const stored = new Set<string>();
  return (request: ReceivedRequest): ReceiverReply => {
    const key = request.headers['x-api-key'];
    if (key !== API_KEY && key !== ORG_KEY) return { status: 401, body: { detail: 'Invalid token' } };
    if (key === ORG_KEY && request.headers['x-tenant-id'] !== WORKSPACE_ID) {
      return {
        status: 403,
        body: { detail: 'This API key is org-scoped and requires workspace specification' },
      };
    }
    if (request.method === 'GET' && request.url === '/sessions?limit=1') {
      return { status: 200, body: [{ id: '1c9b0f7e-0000-4000-8000-000000000001', name: 'main' }] };
    }
    if (request.method !== 'POST' || request.url !== '/runs/batch')
      return { status: 404, body: { detail: 'Not Found' } };
    const runs = (request.json as { post?: Run[] } | undefined)?.post;
    if (!Array.isArray(runs)) return { status: 422, body: { detail: 'post: field required' } };
    for (const run of runs) {
      const problem = runProblem(run);
      if (problem) return { status: 400, body: { detail: problem } };
    }
    if (runs.some((run) => stored.has(run.id)))
      return { status: 409, body: { detail: 'Run already exists' } };
    for (const run of runs) stored.add(run.id);
    return { status: 202, body: {} };
  };
}

async function withLangsmith(reply: (request: ReceivedRequest) => ReceiverReply = fakeLangsmith()) {
  const receiver = await startReceiver(reply);
  const config: LangsmithConfig = { apiKey: API_KEY, endpoint: receiver.url, project: 'gateway-prod' };
  return { receiver, config, context: exportContext(config, http) };
}

function runsOf(request: ReceivedRequest | undefined): Run[] {
  assert.ok(request, 'no request arrived');
  return (request.json as { post: Run[] }).post;
}

test('langsmith: posts one root llm run per event to runs/batch', async () => {
  const { receiver, context } = await withLangsmith();
  try {
    assert.equal(await langsmithDestination.send([outboxItem()], context), undefined);
    const request = receiver.requests[0] as ReceivedRequest;
    assert.equal(request.method, 'POST');
    assert.equal(request.url, '/runs/batch');
    assert.equal(request.headers['x-api-key'], API_KEY);
    assert.equal(request.headers['x-tenant-id'], undefined);
    assert.equal(request.headers['content-type'], 'application/json');
    const [run] = runsOf(request);
    assert.ok(run);
    // A UUIDv7 whose time is the generation's start.
    assert.match(run.id, /^01a202b2-c500-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(
      Number.parseInt(run.id.replace(/-/g, '').slice(0, 12), 16),
      Date.parse('2026-11-22T10:00:00.000Z'),
    );
    assert.equal(run.trace_id, run.id);
    assert.equal(run.dotted_order, `20261122T100000000000Z${run.id}`);
    assert.deepEqual(
      { ...run, id: undefined, trace_id: undefined, dotted_order: undefined, extra: undefined },
      {
        id: undefined,
        trace_id: undefined,
        dotted_order: undefined,
        extra: undefined,
        name: 'openai/gpt-4o',
        run_type: 'llm',
        start_time: '2026-11-22T10:00:00.000Z',
        end_time: '2026-11-22T10:00:01.250Z',
        session_name: 'gateway-prod',
        inputs: {
          messages: [
            { role: 'system', content: 'You are terse.' },
            { role: 'user', content: 'Say hello.' },
          ],
        },
        outputs: {
          choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
        },
        events: [{ name: 'new_token', time: '2026-11-22T10:00:00.300Z' }],
      },
    );
    const extra = run.extra as { metadata: Record<string, unknown>; invocation_params: unknown };
    assert.deepEqual(extra.invocation_params, { temperature: 0.2, max_output_tokens: 256 });
    const { metadata } = extra;
    assert.equal(metadata.ls_provider, 'openai');
    assert.equal(metadata.ls_model_name, 'openai/gpt-4o');
    assert.equal(metadata.ls_model_type, 'chat');
    assert.deepEqual(metadata.usage_metadata, {
      input_tokens: 100,
      output_tokens: 50,
      total_tokens: 150,
      input_token_details: { cache_read: 0, cache_creation: 0 },
      output_token_details: { reasoning: 0 },
      input_cost: 0.00025,
      output_cost: 0.0005,
      total_cost: 0.00075,
    });
    assert.equal(metadata.session_id, 'session_abc');
    assert.equal(metadata.user_id, 'user_12345');
    assert.equal(metadata.trace_id, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(metadata.order_id, 'ORD-12345');
    assert.equal(metadata.generation_id, 'gen-1732276800-abcdefghijklmnop');
    assert.deepEqual(metadata.identity, sampleEvent().identity);
    assert.deepEqual(metadata.request_context, sampleEvent().request_context);
  } finally {
    await receiver.close();
  }
});

test('langsmith: privacy mode and absent options send no inputs, outputs, cost breakdown, identity or context', async () => {
  const { receiver, context } = await withLangsmith();
  try {
    await langsmithDestination.send([outboxItem(privateEvent())], context);
    const [run] = runsOf(receiver.requests[0]);
    assert.ok(run);
    assert.equal('inputs' in run, false);
    assert.equal('outputs' in run, false);
    const { metadata } = run.extra as { metadata: Record<string, unknown> };
    for (const key of ['identity', 'request_context', 'is_byok']) assert.equal(key in metadata, false, key);
    assert.deepEqual(metadata.usage_metadata, {
      input_tokens: 100,
      output_tokens: 50,
      total_tokens: 150,
      input_token_details: { cache_read: 0, cache_creation: 0 },
      output_token_details: { reasoning: 0 },
      // What the gateway billed is always sent; its breakdown only with broadcast_generation_cost.
      total_cost: privateEvent().total_cost,
    });
    assert.doesNotMatch(receiver.requests[0]?.text ?? '', /Say hello|You are terse/);
  } finally {
    await receiver.close();
  }
});

test('langsmith: failures, embeddings, names and tool calls', async () => {
  const { receiver, context } = await withLangsmith();
  try {
    const failed = sampleEvent({
      generation_id: 'gen-1732276800-failedgeneration',
      trace: { ...sampleEvent().trace, trace_name: 'support chat' },
      status: 'failed',
      error: { type: 'upstream_error', message: 'provider returned 502' },
      output: [
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' }],
        },
      ],
      first_token_ms: null,
    });
    const embedding = sampleEvent({
      generation_id: 'gen-1732276800-embeddinggenerat',
      operation: 'embeddings',
      api_type: 'embeddings',
      output: null,
    });
    await langsmithDestination.send([outboxItem(failed), outboxItem(embedding)], context);
    const [failedRun, embeddingRun] = runsOf(receiver.requests[0]);
    assert.equal(failedRun?.name, 'support chat');
    assert.equal(failedRun?.error, 'upstream_error: provider returned 502');
    assert.equal('events' in (failedRun ?? {}), false);
    assert.deepEqual((failedRun?.outputs as { choices: unknown[] } | undefined)?.choices[0], {
      index: 0,
      finish_reason: 'stop',
      message: {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
        ],
      },
    });
    assert.equal(embeddingRun?.run_type, 'embedding');
    assert.equal(
      (embeddingRun?.extra as { metadata: Record<string, unknown> } | undefined)?.metadata.ls_model_type,
      undefined,
    );
  } finally {
    await receiver.close();
  }
});

test('langsmith: workspaceId is sent as X-Tenant-Id for org-scoped keys', async () => {
  const { receiver, config } = await withLangsmith();
  try {
    const orgKey = { ...config, apiKey: ORG_KEY };
    await assert.rejects(
      langsmithDestination.send([outboxItem()], exportContext(orgKey, http)),
      finalFailure(403),
    );
    const context = exportContext({ ...orgKey, workspaceId: WORKSPACE_ID }, http);
    await langsmithDestination.send([outboxItem()], context);
    await langsmithDestination.testConnection(context);
    assert.equal(receiver.requests[1]?.headers['x-tenant-id'], WORKSPACE_ID);
    assert.equal(receiver.requests[2]?.headers['x-tenant-id'], WORKSPACE_ID);
  } finally {
    await receiver.close();
  }
});

test('langsmith: custom headers are sent but never replace the key', async () => {
  const { receiver, config } = await withLangsmith();
  try {
    const context = exportContext(
      { ...config, headers: { 'X-Team': 'ml', 'X-API-Key': 'lsv2_pt_stolen' } },
      http,
    );
    await langsmithDestination.send([outboxItem()], context);
    await langsmithDestination.testConnection(context);
    for (const request of receiver.requests) {
      assert.equal(request.headers['x-team'], 'ml');
      assert.equal(request.headers['x-api-key'], API_KEY);
    }
  } finally {
    await receiver.close();
  }
});

test('langsmith: the same batch sent twice names the same runs, and the repeat (409) counts as delivered', async () => {
  const { receiver, context } = await withLangsmith();
  try {
    const event = sampleEvent();
    await langsmithDestination.send([outboxItem(event, 1)], context);
    assert.equal(await langsmithDestination.send([outboxItem(event, 2)], context), undefined);
    assert.equal(receiver.requests.length, 2);
    assert.equal(receiver.requests[0]?.text, receiver.requests[1]?.text);
  } finally {
    await receiver.close();
  }
});

test('langsmith: 500 and 429 are retryable, with Retry-After', async () => {
  const { receiver, context } = await withLangsmith(() => ({
    status: 500,
    body: { detail: 'Internal Server Error' },
  }));
  try {
    await assert.rejects(langsmithDestination.send([outboxItem()], context), retryableFailure(500));
    receiver.reply = () => ({
      status: 429,
      headers: { 'retry-after': '30' },
      body: { detail: 'Too many requests' },
    });
    await assertRetryAfter(langsmithDestination.send([outboxItem()], context), 30_000);
  } finally {
    await receiver.close();
  }
});

test('langsmith: a bad key (401) and a refused run (400) are not retryable', async () => {
  const { receiver, config } = await withLangsmith();
  try {
    await assert.rejects(
      langsmithDestination.send([outboxItem()], exportContext({ ...config, apiKey: 'lsv2_pt_wrong' }, http)),
      finalFailure(401),
    );
    receiver.reply = () => ({ status: 400, body: { detail: "invalid 'dotted_order'" } });
    await assert.rejects(
      langsmithDestination.send([outboxItem()], exportContext(config, http)),
      finalFailure(400),
    );
  } finally {
    await receiver.close();
  }
});

test('langsmith: testConnection lists one project and fails on a bad key', async () => {
  const { receiver, config } = await withLangsmith();
  try {
    await langsmithDestination.testConnection(exportContext(config, http));
    assert.equal(receiver.requests[0]?.method, 'GET');
    assert.equal(receiver.requests[0]?.url, '/sessions?limit=1');
    await assert.rejects(
      langsmithDestination.testConnection(exportContext({ ...config, apiKey: 'nope' }, http)),
      (error: unknown) => error instanceof DeliveryError && error.status === 401,
    );
  } finally {
    await receiver.close();
  }
});

test('langsmith: config schema, defaults, secrets, validation and urls', () => {
  const { configSchema, defaults, secretFields } = langsmithDestination;
  assert.deepEqual(defaults, { endpoint: 'https://api.smith.langchain.com', project: 'main' });
  assert.deepEqual([...secretFields], ['apiKey']);
  assert.equal(langsmithDestination.testOnSave, false);
  assert.equal(Value.Check(configSchema, { apiKey: 'k' }), true);
  assert.equal(Value.Check(configSchema, {}), false);
  assert.equal(Value.Check(configSchema, { apiKey: 'k', project: '' }), false);
  const config: LangsmithConfig = {
    apiKey: 'k',
    endpoint: 'https://langsmith.example.com/api/v1',
    project: 'main',
  };
  assert.deepEqual(langsmithDestination.validate?.(config), []);
  assert.deepEqual(
    langsmithDestination.validate?.({ ...config, endpoint: 'javascript:alert(1)', workspaceId: 'team' }),
    [
      { field: 'endpoint', message: 'must be an http or https URL' },
      { field: 'workspaceId', message: 'must be a LangSmith workspace id (a UUID)' },
    ],
  );
  assert.deepEqual(
    langsmithDestination.validate?.({ ...config, headers: { 'Bad Name': 'x', 'X-Ok': 'a\nb' } }),
    [
      { field: 'headers', message: '"Bad Name" is not a valid header name' },
      { field: 'headers', message: 'the value of "X-Ok" contains control characters' },
    ],
  );
  assert.deepEqual(langsmithDestination.urls(config), [
    'https://langsmith.example.com/api/v1/runs/batch',
    'https://langsmith.example.com/api/v1/sessions?limit=1',
  ]);
});
