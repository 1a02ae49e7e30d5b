import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ExportContext } from '../../src/broadcast/destination-type.js';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import { uuidV7 } from '../../src/broadcast/exporters/exporter-support.js';
import { type OpikConfig, opikDestination } from '../../src/broadcast/exporters/opik.js';
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

const API_KEY = 'opik-key-0123456789';
const http = createExporterHttp({ allowPrivateNetworks: true });
let receiver: FakeReceiver;

before(async () => {
  receiver = await startReceiver();
});
after(async () => {
  await receiver.close();
  await http.close();
});

const CONFIG: OpikConfig = { apiKey: API_KEY, workspace: 'acme', projectName: 'gateway' };

/** An export context aimed at the fake receiver the way the gateway config's origin override does it. */
function context(config: Partial<OpikConfig> = {}): ExportContext<OpikConfig> {
  return { ...exportContext({ ...CONFIG, ...config }, http), originOverride: receiver.url };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The millisecond timestamp a UUIDv7 carries. */
const v7Millis = (id: string) => Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);
const SPAN_TYPES = new Set(['general', 'tool', 'llm', 'guardrail']);

/** Opik's bean validation for the fields we send (Trace.java, Span.java, ErrorInfo.java, IdGenerator). */
function entityProblems(entity: unknown, kind: 'trace' | 'span', now: number): string[] {
  if (!isObject(entity)) return [`${kind} must be an object`];
  const problems: string[] = [];
  if (typeof entity.start_time !== 'string' || Number.isNaN(Date.parse(entity.start_time))) {
    problems.push('startTime must not be null');
  }
  for (const field of kind === 'trace' ? ['id'] : ['id', 'trace_id']) {
    const id = entity[field];
    if (typeof id !== 'string' || !UUID_V7.test(id))
      problems.push(`${kind} ${field} must be a version 7 UUID`);
    // The ingestion window: no ids from the future, none older than a year.
    else if (v7Millis(id) > now + 60_000 || v7Millis(id) < now - 365 * 86_400_000) {
      problems.push(`${kind} ${field} timestamp out of range`);
    }
  }
  if (typeof entity.project_name === 'string' && entity.project_name.trim() === '') {
    problems.push('projectName must not be blank');
  }
  if (entity.error_info !== undefined) {
    const info = entity.error_info;
    if (!isObject(info) || typeof info.exception_type !== 'string' || !info.exception_type.trim()) {
      problems.push('errorInfo.exceptionType must not be blank');
    }
    if (!isObject(info) || typeof info.traceback !== 'string' || !info.traceback.trim()) {
      problems.push('errorInfo.traceback must not be blank');
    }
  }
  if (kind === 'span') {
    if (!SPAN_TYPES.has(entity.type as string)) problems.push('type must not be null');
    if (entity.usage !== undefined && !Object.values(entity.usage as object).every(Number.isInteger)) {
      problems.push('usage values must be integers');
    }
    if (typeof entity.total_estimated_cost === 'number' && entity.total_estimated_cost < 0) {
      problems.push('totalEstimatedCost must be greater than or equal to 0.0');
    }
  }
  return problems;
}

/** Answers like Opik Cloud: bare key in `authorization`, `Comet-Workspace`, 204 on writes, 422 on validation. */
function opikCloud(request: ReceivedRequest): ReceiverReply {
  if (request.headers.authorization !== API_KEY || request.headers['comet-workspace'] !== 'acme') {
    return { status: 401, body: { code: 401, message: 'User not allowed to access workspace' } };
  }
  const now = Date.parse('2026-11-22T10:00:02.000Z');
  if (request.method === 'GET' && request.url === '/opik/api/v1/private/projects?size=1') {
    return { status: 200, body: { page: 1, size: 1, total: 1, content: [{ id: 'p', name: 'gateway' }] } };
  }
  const batches: Record<string, 'trace' | 'span'> = {
    '/opik/api/v1/private/traces/batch': 'trace',
    '/opik/api/v1/private/spans/batch': 'span',
  };
  const kind = batches[request.url];
  if (request.method !== 'POST' || kind === undefined)
    return { status: 404, body: { code: 404, message: 'HTTP 404 Not Found' } };
  if (!request.headers['content-type']?.startsWith('application/json') || !isObject(request.json)) {
    return { status: 400, body: { code: 400, message: 'Unable to process JSON' } };
  }
  const list = request.json[`${kind}s`];
  if (!Array.isArray(list) || list.length < 1 || list.length > 1000) {
    return { status: 422, body: { errors: [`${kind}s size must be between 1 and 1000`] } };
  }
  const errors = list.flatMap((entity) => entityProblems(entity, kind, now));
  return errors.length > 0 ? { status: 422, body: { errors } } : { status: 204 };
}

interface Written {
  traces: Array<Record<string, unknown>>;
  spans: Array<Record<string, unknown>>;
}

async function sendAndCapture(items = [outboxItem()], ctx = context()): Promise<Written> {
  receiver.requests.length = 0;
  receiver.reply = opikCloud;
  await opikDestination.send(items, ctx);
  assert.deepEqual(
    receiver.requests.map((request) => `${request.method} ${request.url}`),
    ['POST /opik/api/v1/private/traces/batch', 'POST /opik/api/v1/private/spans/batch'],
  );
  const [traces, spans] = receiver.requests as [ReceivedRequest, ReceivedRequest];
  return { traces: (traces.json as Written).traces, spans: (spans.json as Written).spans };
}

test('opik: writes one trace and one llm span per generation', async () => {
  const item = outboxItem();
  const { traces, spans } = await sendAndCapture([item]);
  const [trace] = traces as [Record<string, unknown>];
  const [span] = spans as [Record<string, unknown>];
  const request = receiver.requests[0] as ReceivedRequest;
  assert.equal(request.headers['content-type'], 'application/json');
  assert.equal(request.headers.authorization, API_KEY);

  assert.match(trace.id as string, UUID_V7);
  assert.match(span.id as string, UUID_V7);
  assert.notEqual(span.id, trace.id);
  // The ids carry the generation's start time.
  assert.equal(v7Millis(trace.id as string), Date.parse('2026-11-22T10:00:00.000Z'));
  assert.equal(v7Millis(span.id as string), Date.parse('2026-11-22T10:00:00.000Z'));

  const input = { messages: sampleEvent().input };
  const output = {
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
  };
  assert.deepEqual(trace, {
    id: trace.id,
    project_name: 'gateway',
    name: 'openai/gpt-4o',
    start_time: '2026-11-22T10:00:00.000Z',
    end_time: '2026-11-22T10:00:01.250Z',
    input,
    output,
    thread_id: 'session_abc',
    ttft: 300,
    metadata: {
      order_id: 'ORD-12345',
      generation_id: 'gen-1732276800-abcdefghijklmnop',
      api_key_name: 'production app',
      user_id: 'user_12345',
      session_id: 'session_abc',
    },
  });
  assert.deepEqual(span, {
    id: span.id,
    project_name: 'gateway',
    trace_id: trace.id,
    name: 'openai/gpt-4o',
    type: 'llm',
    start_time: '2026-11-22T10:00:00.000Z',
    end_time: '2026-11-22T10:00:01.250Z',
    input,
    output,
    model: 'openai/gpt-4o',
    provider: 'openai',
    usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 },
    total_estimated_cost: 0.00075,
    metadata: {
      order_id: 'ORD-12345',
      generation_id: 'gen-1732276800-abcdefghijklmnop',
      operation: 'chat',
      api_type: 'chat-completions',
      status: 'completed',
      finish_reason: 'stop',
      streamed: false,
      requested_model: 'openai/gpt-4o',
      provider_name: 'OpenAI',
      api_key_name: 'production app',
      latency_ms: 1250,
      first_token_ms: 300,
      generation_time_ms: 950,
      cached_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      total_cost: 0.00075,
      parameters: { temperature: 0.2, max_output_tokens: 256 },
      tools: { offered: 0, called: 0 },
      cost: sampleEvent().cost,
      identity: sampleEvent().identity,
      request_context: sampleEvent().request_context,
    },
  });
});

test('opik: privacy mode sends no input or output, and absent parts are left out', async () => {
  const { traces, spans } = await sendAndCapture([outboxItem(privateEvent())]);
  for (const entity of [...traces, ...spans]) {
    assert.equal('input' in entity, false);
    assert.equal('output' in entity, false);
  }
  const metadata = spans[0]?.metadata as Record<string, unknown>;
  for (const absent of ['cost', 'identity', 'request_context'])
    assert.equal(absent in metadata, false, absent);
  assert.doesNotMatch(
    receiver.requests.map((request) => request.text).join('\n'),
    /Say hello|You are terse|Hello\./,
  );
  // Usage, cost and timing stay.
  assert.deepEqual(spans[0]?.usage, { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 });
  assert.equal(spans[0]?.total_estimated_cost, 0.00075);
});

test('opik: bodies without cost, identity or request context send only the bodies', async () => {
  const event = sampleEvent({
    cost: null,
    identity: null,
    request_context: null,
    session_id: null,
    user_id: null,
  });
  const { traces, spans } = await sendAndCapture([outboxItem(event)]);
  const metadata = spans[0]?.metadata as Record<string, unknown>;
  for (const absent of ['cost', 'identity', 'request_context', 'session_id'])
    assert.equal(absent in metadata, false);
  assert.equal('thread_id' in (traces[0] as object), false);
  assert.equal('user_id' in (traces[0] as { metadata: object }).metadata, false);
  assert.ok(spans[0]?.input);
});

test('opik: a failed generation carries error_info and names from the trace', async () => {
  const event = sampleEvent({
    status: 'failed',
    model: null,
    provider: null,
    output: null,
    error: { type: 'upstream_error', message: 'provider timed out' },
    trace: { ...sampleEvent().trace, trace_name: 'checkout', generation_name: 'summarize-cart' },
  });
  const { traces, spans } = await sendAndCapture([outboxItem(event)]);
  const errorInfo = {
    exception_type: 'upstream_error',
    message: 'provider timed out',
    traceback: 'upstream_error: provider timed out',
  };
  assert.equal(traces[0]?.name, 'checkout');
  assert.equal(spans[0]?.name, 'summarize-cart');
  assert.deepEqual(traces[0]?.error_info, errorInfo);
  assert.deepEqual(spans[0]?.error_info, errorInfo);
  assert.equal('model' in (spans[0] as object), false);
  assert.equal('provider' in (spans[0] as object), false);
});

test('opik: custom headers are sent on every request but never replace the credentials', async () => {
  await sendAndCapture(
    [outboxItem()],
    context({ headers: { 'X-Proxy-Token': 'p', Authorization: 'Bearer other', 'comet-workspace': 'other' } }),
  );
  for (const request of receiver.requests) {
    assert.equal(request.headers['x-proxy-token'], 'p');
    assert.equal(request.headers.authorization, API_KEY);
    assert.equal(request.headers['comet-workspace'], 'acme');
  }
});

test('opik: the same batch sent twice uses the same trace and span ids', async () => {
  const items = [outboxItem(), outboxItem(sampleEvent({ generation_id: 'gen-2' }))];
  const first = await sendAndCapture(items);
  const second = await sendAndCapture(items.map((item) => ({ ...item, attempt: 3 })));
  assert.deepEqual(first, second);
  assert.notEqual(first.traces[0]?.id, first.traces[1]?.id);
  assert.deepEqual(
    first.spans.map((span) => span.trace_id),
    first.traces.map((trace) => trace.id),
  );
});

test('opik: uuidV7 is deterministic, time-ordered and valid', () => {
  const a = uuidV7('2026-11-22T10:00:00.000Z', 'seed');
  assert.equal(a, uuidV7('2026-11-22T10:00:00.000Z', 'seed'));
  assert.match(a, UUID_V7);
  assert.notEqual(a, uuidV7('2026-11-22T10:00:00.000Z', 'other seed'));
  assert.ok(uuidV7('2026-11-22T10:00:00.001Z', 'seed') > a);
});

async function sendExpectingError(
  reply: ReceiverReply | ((r: ReceivedRequest) => ReceiverReply),
  ctx = context(),
) {
  receiver.reply = typeof reply === 'function' ? reply : () => reply;
  const error = await opikDestination.send([outboxItem()], ctx).then(
    () => assert.fail('send should have failed'),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof DeliveryError);
  return error;
}

test('opik: a 500 is retryable, also when only the spans request fails', async () => {
  const whole = await sendExpectingError({ status: 500, body: { code: 500, message: 'Server error' } });
  assert.equal(whole.retryable, true);
  const spansOnly = await sendExpectingError((request) =>
    request.url.endsWith('/spans/batch')
      ? { status: 503, body: { code: 503, message: 'unavailable' } }
      : opikCloud(request),
  );
  assert.equal(spansOnly.retryable, true);
  assert.equal(spansOnly.status, 503);
});

test('opik: a 429 carries its Retry-After', async () => {
  const error = await sendExpectingError({
    status: 429,
    headers: { 'retry-after': '12' },
    body: { code: 429 },
  });
  assert.equal(error.retryable, true);
  assert.equal(error.retryAfterMs, 12_000);
});

test('opik: a wrong key (401) and a rejected body (422) are not retryable', async () => {
  const unauthorized = await sendExpectingError(opikCloud, context({ apiKey: 'wrong' }));
  assert.equal(unauthorized.status, 401);
  assert.equal(unauthorized.retryable, false);
  const invalid = await sendExpectingError({ status: 422, body: { errors: ['startTime must not be null'] } });
  assert.equal(invalid.retryable, false);
});

test('opik: testConnection lists one project with the credentials and writes nothing', async () => {
  receiver.requests.length = 0;
  receiver.reply = opikCloud;
  await opikDestination.testConnection(context());
  assert.deepEqual(
    receiver.requests.map((request) => `${request.method} ${request.url}`),
    ['GET /opik/api/v1/private/projects?size=1'],
  );
  for (const bad of [context({ apiKey: 'wrong' }), context({ workspace: 'elsewhere' })]) {
    const error = await opikDestination.testConnection(bad).then(
      () => assert.fail('testConnection should have failed'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof DeliveryError);
    assert.equal(error.retryable, false);
  }
  receiver.reply = () => ({ status: 200, body: 'ok' });
  await assert.rejects(opikDestination.testConnection(context()), DeliveryError);
});

test('opik: without an origin override it calls Opik Cloud', () => {
  assert.deepEqual(opikDestination.urls(CONFIG), [
    'https://www.comet.com/opik/api/v1/private/traces/batch',
    'https://www.comet.com/opik/api/v1/private/spans/batch',
    'https://www.comet.com/opik/api/v1/private/projects?size=1',
  ]);
  assert.deepEqual(opikDestination.defaults, {});
  assert.deepEqual(opikDestination.secretFields, ['apiKey']);
  assert.equal(opikDestination.testOnSave, false);
});

test('opik: validate rejects blank workspace and project names', () => {
  assert.deepEqual(opikDestination.validate?.(CONFIG), []);
  assert.deepEqual(opikDestination.validate?.({ ...CONFIG, workspace: '  ', projectName: ' ' }), [
    { field: 'workspace', message: 'must not be blank' },
    { field: 'projectName', message: 'must not be blank' },
  ]);
});
