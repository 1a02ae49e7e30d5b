import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import { type WeaveConfig, weaveDestination } from '../../src/broadcast/exporters/weave.js';
import {
  exportContext,
  type FakeReceiver,
  outboxItem,
  privateEvent,
  type ReceivedRequest,
  type ReceiverReply,
  sampleEvent,
  startReceiver,
} from '../helpers/broadcast-fixtures.js';

const API_KEY = 'wandb-key-0123456789';
const http = createExporterHttp({ allowPrivateNetworks: true });
let receiver: FakeReceiver;

before(async () => {
  receiver = await startReceiver();
});
after(async () => {
  await receiver.close();
  await http.close();
});

function config(overrides: Partial<WeaveConfig> = {}): WeaveConfig {
  return { apiKey: API_KEY, entity: 'acme', project: 'gateway', baseUrl: receiver.url, ...overrides };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** weave/trace_server/validation.py: a call id is a 16-hex OTel span id or a canonical UUID. */
const validCallId = (id: unknown) => typeof id === 'string' && (/^[0-9a-f]{16}$/.test(id) || UUID.test(id));
const validTraceId = (id: unknown) => typeof id === 'string' && (/^[0-9a-f]{32}$/.test(id) || UUID.test(id));

/** Problems the trace server's pydantic models would report for one upsert_batch item (422). */
function batchItemProblems(item: unknown): string[] {
  if (!isObject(item) || !isObject(item.req)) return ['item needs mode and req'];
  const extraReqKeys = Object.keys(item.req).filter((key) => key !== item.mode);
  if (extraReqKeys.length > 0) return [`req forbids extra keys ${extraReqKeys.join(',')}`];
  if (item.mode === 'start') {
    const start = item.req.start;
    if (!isObject(start)) return ['start missing'];
    const problems: string[] = [];
    for (const field of ['project_id', 'op_name', 'started_at']) {
      if (typeof start[field] !== 'string') problems.push(`start.${field} required`);
    }
    if (!isObject(start.attributes)) problems.push('start.attributes must be an object');
    if (!isObject(start.inputs)) problems.push('start.inputs must be an object');
    if (start.id !== undefined && !validCallId(start.id)) problems.push('start.id invalid');
    if (start.trace_id !== undefined && !validTraceId(start.trace_id))
      problems.push('start.trace_id invalid');
    if (start.parent_id !== undefined && !validCallId(start.parent_id))
      problems.push('start.parent_id invalid');
    if ('wb_user_id' in start) problems.push('wb_user_id is set by the server');
    return problems;
  }
  if (item.mode === 'end') {
    const end = item.req.end;
    if (!isObject(end)) return ['end missing'];
    const problems: string[] = [];
    for (const field of ['project_id', 'ended_at']) {
      if (typeof end[field] !== 'string') problems.push(`end.${field} required`);
    }
    if (!validCallId(end.id)) problems.push('end.id invalid');
    if (!isObject(end.summary)) problems.push('end.summary must be an object');
    return problems;
  }
  return [`unknown mode ${String(item.mode)}`];
}

/** Answers like trace.wandb.ai: Basic `api:<key>`, JSON bodies, 422 on schema errors. */
function weaveTraceServer(request: ReceivedRequest): ReceiverReply {
  const expected = `Basic ${Buffer.from(`api:${API_KEY}`).toString('base64')}`;
  if (request.headers.authorization !== expected) return { status: 401, body: { detail: 'Unauthorized' } };
  if (request.method !== 'POST') return { status: 405, body: { detail: 'Method Not Allowed' } };
  if (!request.headers['content-type']?.startsWith('application/json') || !isObject(request.json)) {
    return { status: 422, body: { detail: [{ msg: 'body must be a JSON object' }] } };
  }
  const body = request.json;
  if (request.url === '/call/upsert_batch') {
    if (!Array.isArray(body.batch) || Object.keys(body).length !== 1) {
      return { status: 422, body: { detail: [{ msg: 'CallCreateBatchReq takes only batch' }] } };
    }
    const problems = body.batch.flatMap(batchItemProblems);
    if (problems.length > 0) return { status: 422, body: { detail: problems.map((msg) => ({ msg })) } };
    const res = body.batch.map((item) => {
      const start = (item as { req: { start?: { id: string; trace_id: string } } }).req.start;
      return start ? { id: start.id, trace_id: start.trace_id } : {};
    });
    return { status: 200, body: { res } };
  }
  if (request.url === '/calls/query_stats') {
    const allowed = new Set([
      'project_id',
      'filter',
      'query',
      'limit',
      'include_total_storage_size',
      'expand_columns',
    ]);
    if (typeof body.project_id !== 'string' || Object.keys(body).some((key) => !allowed.has(key))) {
      return { status: 422, body: { detail: [{ msg: 'invalid CallsQueryStatsReq' }] } };
    }
    if (body.project_id !== 'acme/gateway') return { status: 403, body: { detail: 'Permission denied' } };
    return { status: 200, body: { count: 0 } };
  }
  return { status: 404, body: { detail: 'Not Found' } };
}

interface UpsertBody {
  batch: Array<{ mode: string; req: { start?: Record<string, unknown>; end?: Record<string, unknown> } }>;
}

async function sendAndCapture(items = [outboxItem()], weaveConfig = config()): Promise<ReceivedRequest> {
  receiver.requests.length = 0;
  receiver.reply = weaveTraceServer;
  await weaveDestination.send(items, {
    ...exportContext(weaveConfig, http),
    signal: new AbortController().signal,
  });
  assert.equal(receiver.requests.length, 1);
  return receiver.requests[0] as ReceivedRequest;
}

test('weave: sends a start and an end part for each generation to /call/upsert_batch', async () => {
  const item = outboxItem();
  const request = await sendAndCapture([item]);
  assert.equal(request.method, 'POST');
  assert.equal(request.url, '/call/upsert_batch');
  assert.equal(request.headers['content-type'], 'application/json');
  const { batch } = request.json as UpsertBody;
  assert.deepEqual(
    batch.map((part) => part.mode),
    ['start', 'end'],
  );
  const start = batch[0]?.req.start as Record<string, unknown>;
  const end = batch[1]?.req.end as Record<string, unknown>;
  assert.match(start.id as string, UUID);
  assert.equal(end.id, start.id);
  assert.deepEqual(start, {
    project_id: 'acme/gateway',
    id: start.id,
    trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
    op_name: 'switchyard.chat',
    display_name: 'openai/gpt-4o',
    started_at: '2026-11-22T10:00:00.000Z',
    thread_id: 'session_abc',
    inputs: {
      model: 'openai/gpt-4o',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hello.' },
      ],
    },
    attributes: {
      generation_id: 'gen-1732276800-abcdefghijklmnop',
      operation: 'chat',
      api_type: 'chat-completions',
      status: 'completed',
      streamed: false,
      api_key_name: 'production app',
      latency_ms: 1250,
      total_cost: 0.00075,
      usage: sampleEvent().usage,
      parameters: { temperature: 0.2, max_output_tokens: 256 },
      tools: { offered: 0, called: 0 },
      model: 'openai/gpt-4o',
      requested_model: 'openai/gpt-4o',
      provider: 'openai',
      provider_name: 'OpenAI',
      finish_reason: 'stop',
      first_token_ms: 300,
      generation_time_ms: 950,
      user_id: 'user_12345',
      session_id: 'session_abc',
      cost: sampleEvent().cost,
      identity: sampleEvent().identity,
      request_context: sampleEvent().request_context,
      metadata: { order_id: 'ORD-12345' },
    },
  });
  assert.deepEqual(end, {
    project_id: 'acme/gateway',
    id: start.id,
    ended_at: '2026-11-22T10:00:01.250Z',
    summary: {
      usage: {
        'openai/gpt-4o': { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150, requests: 1 },
      },
    },
    output: {
      model: 'openai/gpt-4o',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
    },
  });
});

test('weave: privacy mode sends no inputs or output, and absent parts are left out', async () => {
  const request = await sendAndCapture([outboxItem(privateEvent())]);
  const { batch } = request.json as UpsertBody;
  const start = batch[0]?.req.start as Record<string, unknown>;
  const end = batch[1]?.req.end as Record<string, unknown>;
  assert.deepEqual(start.inputs, {});
  assert.equal('output' in end, false);
  const attributes = start.attributes as Record<string, unknown>;
  for (const absent of ['cost', 'identity', 'request_context'])
    assert.equal(absent in attributes, false, absent);
  assert.doesNotMatch(request.text, /Say hello|You are terse|Hello\./);
  // Tokens, cost and timing stay.
  assert.equal(attributes.total_cost, 0.00075);
  assert.deepEqual(end.summary, {
    usage: { 'openai/gpt-4o': { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150, requests: 1 } },
  });
});

test('weave: bodies without cost, identity or request context send only the bodies', async () => {
  const event = sampleEvent({
    cost: null,
    identity: null,
    request_context: null,
    user_id: null,
    session_id: null,
  });
  const request = await sendAndCapture([outboxItem(event)]);
  const start = (request.json as UpsertBody).batch[0]?.req.start as Record<string, unknown>;
  const attributes = start.attributes as Record<string, unknown>;
  for (const absent of ['cost', 'identity', 'request_context', 'user_id', 'session_id']) {
    assert.equal(absent in attributes, false, absent);
  }
  assert.equal('thread_id' in start, false);
  assert.equal((start.inputs as { messages: unknown[] }).messages.length, 2);
});

test('weave: a failed generation carries its exception, a parent and names from the trace', async () => {
  const event = sampleEvent({
    status: 'failed',
    model: null,
    provider: null,
    provider_name: null,
    output: null,
    finish_reason: null,
    error: { type: 'upstream_error', message: 'provider timed out' },
    trace: {
      ...sampleEvent().trace,
      parent_span_id: '1111222233334444',
      trace_name: 'checkout',
      generation_name: 'summarize-cart',
    },
  });
  const request = await sendAndCapture([outboxItem(event)]);
  const { batch } = request.json as UpsertBody;
  const start = batch[0]?.req.start as Record<string, unknown>;
  const end = batch[1]?.req.end as Record<string, unknown>;
  assert.equal(start.parent_id, '1111222233334444');
  assert.equal(start.display_name, 'summarize-cart');
  assert.equal(end.exception, 'upstream_error: provider timed out');
  assert.deepEqual(end.summary, { usage: {} });
});

test('weave: custom headers are sent but never replace the credentials', async () => {
  const request = await sendAndCapture(
    [outboxItem()],
    config({
      headers: { 'X-Team': 'ml-platform', Authorization: 'Bearer stolen', 'Content-Type': 'text/plain' },
    }),
  );
  assert.equal(request.headers['x-team'], 'ml-platform');
  assert.equal(request.headers.authorization, `Basic ${Buffer.from(`api:${API_KEY}`).toString('base64')}`);
  assert.equal(request.headers['content-type'], 'application/json');
});

test('weave: the same batch sent twice uses the same call ids; different events get different ids', async () => {
  const items = [outboxItem(), outboxItem(sampleEvent({ generation_id: 'gen-2' }))];
  const first = (await sendAndCapture(items)).json as UpsertBody;
  const second = (await sendAndCapture(items.map((item) => ({ ...item, attempt: 2 })))).json as UpsertBody;
  assert.deepEqual(first, second);
  const ids = first.batch.map((part) => (part.req.start ?? part.req.end)?.id);
  assert.equal(ids[0], ids[1]);
  assert.equal(ids[2], ids[3]);
  assert.notEqual(ids[0], ids[2]);
});

async function sendExpectingError(reply: ReceiverReply, weaveConfig = config()): Promise<DeliveryError> {
  receiver.reply = () => reply;
  const error = await weaveDestination.send([outboxItem()], exportContext(weaveConfig, http)).then(
    () => assert.fail('send should have failed'),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof DeliveryError);
  return error;
}

test('weave: a 500 is a retryable delivery error', async () => {
  const error = await sendExpectingError({ status: 500, body: { detail: 'Internal Server Error' } });
  assert.equal(error.retryable, true);
  assert.equal(error.status, 500);
});

test('weave: a 429 carries its Retry-After', async () => {
  const error = await sendExpectingError({
    status: 429,
    headers: { 'retry-after': '7' },
    body: { detail: 'slow down' },
  });
  assert.equal(error.retryable, true);
  assert.equal(error.retryAfterMs, 7000);
});

test('weave: a wrong key (401) and a rejected body (422) are not retryable', async () => {
  receiver.reply = weaveTraceServer;
  const unauthorized = await weaveDestination
    .send([outboxItem()], exportContext(config({ apiKey: 'wrong' }), http))
    .then(
      () => assert.fail('send should have failed'),
      (caught: unknown) => caught as DeliveryError,
    );
  assert.equal(unauthorized.status, 401);
  assert.equal(unauthorized.retryable, false);
  const invalid = await sendExpectingError({ status: 422, body: { detail: [{ msg: 'field required' }] } });
  assert.equal(invalid.retryable, false);
});

test('weave: testConnection runs an authenticated stats query on the project and stores nothing', async () => {
  receiver.requests.length = 0;
  receiver.reply = weaveTraceServer;
  await weaveDestination.testConnection(exportContext(config(), http));
  assert.equal(receiver.requests.length, 1);
  const request = receiver.requests[0] as ReceivedRequest;
  assert.equal(request.url, '/calls/query_stats');
  assert.deepEqual(request.json, { project_id: 'acme/gateway', limit: 1 });

  for (const bad of [config({ apiKey: 'wrong' }), config({ project: 'elsewhere' })]) {
    const error = await weaveDestination.testConnection(exportContext(bad, http)).then(
      () => assert.fail('testConnection should have failed'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof DeliveryError);
    assert.equal(error.retryable, false);
  }
});

test('weave: testConnection refuses a 2xx that is not a trace server answer', async () => {
  receiver.reply = () => ({ status: 200, body: '<html>login</html>' });
  await assert.rejects(weaveDestination.testConnection(exportContext(config(), http)), DeliveryError);
});

test('weave: validate, urls and defaults', () => {
  assert.deepEqual(weaveDestination.defaults, { baseUrl: 'https://trace.wandb.ai' });
  assert.deepEqual(weaveDestination.secretFields, ['apiKey']);
  assert.equal(weaveDestination.testOnSave, false);
  const valid = { apiKey: 'k', entity: 'acme', project: 'gateway', baseUrl: 'https://trace.wandb.ai' };
  assert.deepEqual(weaveDestination.validate?.(valid), []);
  assert.deepEqual(weaveDestination.validate?.({ ...valid, baseUrl: 'ftp://trace.wandb.ai' }), [
    { field: 'baseUrl', message: 'must be an http or https URL' },
  ]);
  assert.deepEqual(
    weaveDestination
      .validate?.({ ...valid, baseUrl: 'not a url', entity: 'a/b' })
      .map((problem) => problem.field),
    ['baseUrl', 'entity'],
  );
  assert.deepEqual(weaveDestination.urls({ ...valid, baseUrl: 'https://weave.example.com/' }), [
    'https://weave.example.com/call/upsert_batch',
    'https://weave.example.com/calls/query_stats',
  ]);
});
