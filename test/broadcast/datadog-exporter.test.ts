import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Value } from 'typebox/value';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import { type DatadogConfig, datadogDestination } from '../../src/broadcast/exporters/datadog.js';
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

const API_KEY = '0123456789abcdef0123456789abcdef';
const SPANS_PATH = '/api/intake/llm-obs/v1/trace/spans';

interface Span {
  trace_id: string;
  span_id: string;
  parent_id: string;
  name: string;
  start_ns: number;
  duration: number;
  status?: string;
  session_id?: string;
  tags?: string[];
  meta: {
    kind: string;
    metadata?: Record<string, unknown>;
    input?: Record<string, unknown>;
    output?: Record<string, unknown>;
    [key: string]: unknown;
  };
  metrics?: Record<string, number>;
  collection_errors?: string[];
}

/** Why the intake would refuse a span (the documented required fields and value types), or null. */
function spanProblem(span: Span): string | null {
  if (typeof span.name !== 'string' || typeof span.trace_id !== 'string')
    return 'name and trace_id are required';
  if (!/^\d+$/.test(span.span_id)) return 'span_id must be a decimal string';
  if (span.parent_id !== 'undefined' && !/^\d+$/.test(span.parent_id))
    return 'parent_id must be a span id or "undefined"';
  if (typeof span.start_ns !== 'number' || typeof span.duration !== 'number')
    return 'start_ns and duration are numbers';
  if (typeof span.meta?.kind !== 'string') return 'meta.kind is required';
  if (span.status !== undefined && span.status !== 'ok' && span.status !== 'error')
    return 'status must be ok or error';
  const scalar = (value: unknown) => ['string', 'number', 'boolean'].includes(typeof value);
  if (!Object.values(span.meta.metadata ?? {}).every(scalar))
    return 'metadata values must be strings, numbers or booleans';
  if (Buffer.byteLength(JSON.stringify(span)) > 1 << 20) return 'span exceeds 1MB';
  return null;
}

/** The LLM Observability intake and the key-validation route, as Datadog answers them. */
function datadog(request: ReceivedRequest): ReceiverReply {
  if (request.headers['dd-api-key'] !== API_KEY) return { status: 403, body: { errors: ['Forbidden'] } };
  if (request.method === 'GET' && request.url === '/api/v1/validate')
    return { status: 200, body: { valid: true } };
  if (request.method !== 'POST' || request.url !== SPANS_PATH)
    return { status: 404, body: { errors: ['Not found'] } };
  if (request.raw.length > 5_100_000) return { status: 413, body: { errors: ['Payload too large'] } };
  const data = (
    request.json as { data?: { type?: string; attributes?: { ml_app?: string; spans?: Span[] } } }
  )?.data;
  if (
    data?.type !== 'span' ||
    typeof data.attributes?.ml_app !== 'string' ||
    !Array.isArray(data.attributes.spans)
  ) {
    return { status: 400, body: { errors: [{ title: 'Bad Request', detail: 'invalid payload' }] } };
  }
  for (const span of data.attributes.spans) {
    const problem = spanProblem(span);
    if (problem) return { status: 400, body: { errors: [{ title: 'Bad Request', detail: problem }] } };
  }
  return { status: 202 };
}

async function withDatadog(reply: (request: ReceivedRequest) => ReceiverReply = datadog) {
  const receiver = await startReceiver(reply);
  const config: DatadogConfig = { apiKey: API_KEY, mlApp: 'support-bot', url: receiver.url };
  return { receiver, config, context: exportContext(config, http) };
}

function attributesOf(request: ReceivedRequest | undefined): { ml_app: string; spans: Span[] } {
  assert.ok(request, 'no request arrived');
  return (request.json as { data: { attributes: { ml_app: string; spans: Span[] } } }).data.attributes;
}

test('datadog: posts one llm span per event to the LLM Observability intake', async () => {
  const { receiver, context } = await withDatadog();
  try {
    assert.equal(await datadogDestination.send([outboxItem()], context), undefined);
    const request = receiver.requests[0] as ReceivedRequest;
    assert.equal(request.method, 'POST');
    assert.equal(request.url, SPANS_PATH);
    assert.equal(request.headers['dd-api-key'], API_KEY);
    assert.equal(request.headers['content-type'], 'application/json');
    assert.equal((request.json as { data: { type: string } }).data.type, 'span');
    const { ml_app, spans } = attributesOf(request);
    assert.equal(ml_app, 'support-bot');
    const [span] = spans;
    assert.ok(span);
    assert.match(span.span_id, /^\d+$/);
    assert.ok(BigInt(span.span_id) > 0n && BigInt(span.span_id) < 2n ** 63n);
    assert.deepEqual(
      { ...span, span_id: undefined, meta: undefined },
      {
        span_id: undefined,
        meta: undefined,
        trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
        parent_id: 'undefined',
        name: 'openai/gpt-4o',
        start_ns: 1795341600000000000,
        duration: 1_250_000_000,
        status: 'ok',
        session_id: 'session_abc',
        tags: [
          'generation_id:gen-1732276800-abcdefghijklmnop',
          'api_type:chat-completions',
          'status:completed',
          'provider:openai',
          'user_id:user_12345',
        ],
        metrics: {
          input_tokens: 100,
          output_tokens: 50,
          total_tokens: 150,
          cache_read_input_tokens: 0,
          cache_write_input_tokens: 0,
          reasoning_output_tokens: 0,
          time_to_first_token: 0.3,
        },
      },
    );
    assert.deepEqual(
      { ...span.meta, metadata: undefined },
      {
        metadata: undefined,
        kind: 'llm',
        model_name: 'openai/gpt-4o',
        model_provider: 'openai',
        input: {
          messages: [
            { role: 'system', content: 'You are terse.' },
            { role: 'user', content: 'Say hello.' },
          ],
        },
        output: { messages: [{ role: 'assistant', content: 'Hello.' }] },
      },
    );
    const metadata = span.meta.metadata ?? {};
    assert.equal(metadata.order_id, 'ORD-12345');
    assert.equal(metadata.temperature, 0.2);
    assert.equal(metadata.generation_id, 'gen-1732276800-abcdefghijklmnop');
    assert.equal(metadata['cost.total_usd'], 0.00075);
    assert.equal(metadata['identity.workspace_id'], '550e8400-e29b-41d4-a716-446655440000');
    assert.equal(metadata['request_context.app_title'], 'Example');
    assert.equal('identity.member_user_id' in metadata, false);
  } finally {
    await receiver.close();
  }
});

test('datadog: privacy mode and absent options send no input, output, cost, identity or context', async () => {
  const { receiver, context } = await withDatadog();
  try {
    await datadogDestination.send([outboxItem(privateEvent())], context);
    const [span] = attributesOf(receiver.requests[0]).spans;
    assert.ok(span);
    assert.equal('input' in span.meta, false);
    assert.equal('output' in span.meta, false);
    const keys = Object.keys(span.meta.metadata ?? {});
    assert.deepEqual(
      keys.filter((key) => /^(cost|identity|request_context)\./.test(key)),
      [],
    );
    assert.equal(span.metrics?.input_tokens, 100);
    assert.doesNotMatch(receiver.requests[0]?.text ?? '', /Say hello|You are terse/);
  } finally {
    await receiver.close();
  }
});

test('datadog: errors, parents, tool calls and embeddings are mapped', async () => {
  const { receiver, context } = await withDatadog();
  try {
    const failed = sampleEvent({
      generation_id: 'gen-1732276800-failedgeneration',
      trace: { ...sampleEvent().trace, parent_span_id: '00000000000000ff', generation_name: 'answer' },
      status: 'failed',
      error: { type: 'upstream_error', message: 'provider returned 502' },
      input: [
        { role: 'tool', content: '{"temp":21}', tool_call_id: 'call_1' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'call_2', name: 'lookup', arguments: '{"q":"x"}' }],
        },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'call_3', name: 'raw', arguments: 'not json' }],
        },
      ],
    });
    const embedding = sampleEvent({
      generation_id: 'gen-1732276800-embeddinggenerat',
      operation: 'embeddings',
      api_type: 'embeddings',
      output: null,
      first_token_ms: null,
    });
    await datadogDestination.send([outboxItem(failed), outboxItem(embedding)], context);
    const [failedSpan, embeddingSpan] = attributesOf(receiver.requests[0]).spans;
    assert.equal(failedSpan?.parent_id, '255');
    assert.equal(failedSpan?.name, 'answer');
    assert.equal(failedSpan?.status, 'error');
    assert.deepEqual(failedSpan?.meta.error, { type: 'upstream_error', message: 'provider returned 502' });
    assert.deepEqual(failedSpan?.meta.input, {
      messages: [
        {
          role: 'tool',
          content: '{"temp":21}',
          tool_results: [{ tool_id: 'call_1', result: '{"temp":21}', type: 'function' }],
        },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ name: 'lookup', arguments: { q: 'x' }, tool_id: 'call_2', type: 'function' }],
        },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { name: 'raw', arguments: { value: 'not json' }, tool_id: 'call_3', type: 'function' },
          ],
        },
      ],
    });
    assert.equal(embeddingSpan?.meta.kind, 'embedding');
    assert.deepEqual(embeddingSpan?.meta.input, {
      documents: [{ text: 'You are terse.' }, { text: 'Say hello.' }],
    });
    assert.equal('output' in (embeddingSpan?.meta ?? {}), false);
    assert.equal('time_to_first_token' in (embeddingSpan?.metrics ?? {}), false);
  } finally {
    await receiver.close();
  }
});

test('datadog: custom headers are sent but never replace the API key', async () => {
  const { receiver, config } = await withDatadog();
  try {
    const context = exportContext({ ...config, headers: { 'X-Env': 'prod', 'DD-API-KEY': 'stolen' } }, http);
    await datadogDestination.send([outboxItem()], context);
    await datadogDestination.testConnection(context);
    for (const request of receiver.requests) {
      assert.equal(request.headers['x-env'], 'prod');
      assert.equal(request.headers['dd-api-key'], API_KEY);
    }
  } finally {
    await receiver.close();
  }
});

test('datadog: the same batch sent twice carries the same span ids', async () => {
  const { receiver, context } = await withDatadog();
  try {
    const event = sampleEvent();
    await datadogDestination.send([outboxItem(event, 1)], context);
    await datadogDestination.send([outboxItem(event, 2)], context);
    assert.equal(receiver.requests[0]?.text, receiver.requests[1]?.text);
    await datadogDestination.send(
      [outboxItem(sampleEvent({ generation_id: 'gen-1732276800-othergeneration1' }))],
      context,
    );
    assert.notEqual(
      attributesOf(receiver.requests[2]).spans[0]?.span_id,
      attributesOf(receiver.requests[0]).spans[0]?.span_id,
    );
  } finally {
    await receiver.close();
  }
});

test('datadog: a span over 1 MB loses its input and output, not its place', async () => {
  const { receiver, context } = await withDatadog();
  try {
    const huge = sampleEvent({
      input: Array.from({ length: 40 }, () => ({ role: 'user' as const, content: 'y'.repeat(30_000) })),
    });
    assert.equal(await datadogDestination.send([outboxItem(huge)], context), undefined);
    const [span] = attributesOf(receiver.requests[0]).spans;
    assert.deepEqual(span?.meta.input, {
      value: "[This value has been dropped because this span's size exceeds the 1MB size limit.]",
    });
    assert.deepEqual(span?.collection_errors, ['dropped_io']);
    assert.equal(span?.metrics?.input_tokens, 100);
  } finally {
    await receiver.close();
  }
});

test('datadog: spans older than 24 hours are refused without being sent', async () => {
  const { receiver, context } = await withDatadog();
  try {
    const old = sampleEvent({
      generation_id: 'gen-1732276800-oldgeneration111',
      started_at: '2026-11-21T09:00:00.000Z',
    });
    const outcome = await datadogDestination.send([outboxItem(old), outboxItem()], context);
    assert.deepEqual(
      outcome?.rejected?.map(({ index, retryable }) => ({ index, retryable })),
      [{ index: 0, retryable: false }],
    );
    assert.equal(attributesOf(receiver.requests[0]).spans.length, 1);
    // The rest failing does not send the stale item round again: the failure (its status and
    // Retry-After kept) is the batch's stop, for the fresh items alone.
    receiver.reply = () => ({
      status: 503,
      headers: { 'retry-after': '9' },
      body: { errors: ['Service Unavailable'] },
    });
    const failed = await datadogDestination.send([outboxItem(old), outboxItem()], context);
    assert.deepEqual(
      failed?.rejected?.map(({ index, retryable }) => ({ index, retryable })),
      [{ index: 0, retryable: false }],
    );
    assert.deepEqual(failed?.stopped?.failed, [1]);
    assert.deepEqual(failed?.stopped?.unsent, []);
    assert.equal(failed?.stopped?.error.status, 503);
    assert.equal(failed?.stopped?.error.retryAfterMs, 9000);
    receiver.requests.length = 0;
    assert.deepEqual((await datadogDestination.send([outboxItem(old)], context))?.rejected?.length, 1);
    assert.equal(receiver.requests.length, 0);
  } finally {
    await receiver.close();
  }
});

test('datadog: a 500 and a 429 are retryable, the 429 with its Retry-After', async () => {
  const { receiver, context } = await withDatadog(() => ({
    status: 500,
    body: { errors: ['Internal Server Error'] },
  }));
  try {
    await assert.rejects(datadogDestination.send([outboxItem()], context), retryableFailure(500));
    receiver.reply = () => ({
      status: 429,
      headers: { 'retry-after': '5' },
      body: { errors: ['Too many requests'] },
    });
    await assertRetryAfter(datadogDestination.send([outboxItem()], context), 5_000);
  } finally {
    await receiver.close();
  }
});

test('datadog: an unknown key (403) and a refused payload (400) are not retryable', async () => {
  const { receiver, config } = await withDatadog();
  try {
    await assert.rejects(
      datadogDestination.send([outboxItem()], exportContext({ ...config, apiKey: 'wrong' }, http)),
      finalFailure(403),
    );
    receiver.reply = () => ({ status: 400, body: { errors: [{ title: 'Bad Request' }] } });
    await assert.rejects(
      datadogDestination.send([outboxItem()], exportContext(config, http)),
      finalFailure(400),
    );
  } finally {
    await receiver.close();
  }
});

test('datadog: testConnection validates the key', async () => {
  const { receiver, config } = await withDatadog();
  try {
    await datadogDestination.testConnection(exportContext(config, http));
    assert.equal(receiver.requests[0]?.method, 'GET');
    assert.equal(receiver.requests[0]?.url, '/api/v1/validate');
    await assert.rejects(
      datadogDestination.testConnection(exportContext({ ...config, apiKey: 'wrong' }, http)),
      finalFailure(403),
    );
  } finally {
    await receiver.close();
  }
});

test('datadog: config schema, defaults, secrets, validation and urls', () => {
  const { configSchema, defaults, secretFields } = datadogDestination;
  assert.deepEqual(defaults, { url: 'https://api.us5.datadoghq.com' });
  assert.deepEqual([...secretFields], ['apiKey']);
  assert.equal(datadogDestination.testOnSave, false);
  assert.equal(Value.Check(configSchema, { apiKey: 'k', mlApp: 'app' }), true);
  assert.equal(Value.Check(configSchema, { apiKey: 'k' }), false);
  const config: DatadogConfig = {
    apiKey: 'k',
    mlApp: 'support-bot/v2:eu.1',
    url: 'https://api.datadoghq.eu',
  };
  assert.deepEqual(datadogDestination.validate?.(config), []);
  const mlAppProblem = {
    field: 'mlApp',
    message:
      'must be lowercase letters, digits and _ - : . / (at most 193 characters, no doubled or trailing underscore)',
  };
  for (const mlApp of ['Support-Bot', 'support bot', 'support__bot', 'support_', 'a'.repeat(194)]) {
    assert.deepEqual(datadogDestination.validate?.({ ...config, mlApp }), [mlAppProblem], mlApp);
  }
  assert.deepEqual(datadogDestination.validate?.({ ...config, url: 'file:///etc/passwd' }), [
    { field: 'url', message: 'must be an http or https URL' },
  ]);
  assert.deepEqual(
    datadogDestination.validate?.({ ...config, headers: { 'Bad Name': 'x', 'X-Ok': 'a\nb' } }),
    [
      { field: 'headers', message: '"Bad Name" is not a valid header name' },
      { field: 'headers', message: 'the value of "X-Ok" contains control characters' },
    ],
  );
  assert.deepEqual(datadogDestination.urls(config), [
    'https://api.datadoghq.eu/api/intake/llm-obs/v1/trace/spans',
    'https://api.datadoghq.eu/api/v1/validate',
  ]);
});
