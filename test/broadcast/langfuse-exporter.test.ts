import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Value } from 'typebox/value';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import { type LangfuseConfig, langfuseDestination } from '../../src/broadcast/exporters/langfuse.js';
import {
  assertRetryAfter,
  exportContext,
  finalFailure,
  outboxItem,
  privateEvent,
  type ReceivedRequest,
  type ReceiverReply,
  sampleEvent,
  startReceiver,
} from '../helpers/broadcast-fixtures.js';

const http = createExporterHttp({ allowPrivateNetworks: true });
after(() => http.close());

const PUBLIC_KEY = 'pk-lf-1234';
const SECRET_KEY = 'sk-lf-5678';
const BASIC = `Basic ${Buffer.from(`${PUBLIC_KEY}:${SECRET_KEY}`).toString('base64')}`;
const EVENT_TYPES = new Set(['trace-create', 'generation-create']);

interface IngestionEvent {
  id: string;
  timestamp: string;
  type: string;
  body: Record<string, unknown>;
}

/**
 * Langfuse's public API as the exporter meets it: Basic auth on every route; the ingestion route
 * checks each event envelope and answers 207 `{ successes, errors }`, refusing bad events one by one.
 */
function langfuse(request: ReceivedRequest): ReceiverReply {
  if (request.headers.authorization !== BASIC) {
    return {
      status: 401,
      body: { message: 'Invalid credentials. Confirm that you have used the correct host.' },
    };
  }
  if (request.method === 'GET' && request.url === '/api/public/projects') {
    return { status: 200, body: { data: [{ id: 'project-1', name: 'Production' }] } };
  }
  if (request.method !== 'POST' || request.url !== '/api/public/ingestion') return { status: 404, body: {} };
  if (request.headers['content-type'] !== 'application/json') return { status: 415, body: {} };
  const batch = (request.json as { batch?: unknown } | undefined)?.batch;
  if (!Array.isArray(batch)) return { status: 400, body: { message: 'Invalid request data' } };
  const successes: Array<{ id: string; status: number }> = [];
  const errors: Array<{ id: string; status: number; message: string }> = [];
  for (const event of batch as IngestionEvent[]) {
    const valid =
      typeof event.id === 'string' &&
      typeof event.timestamp === 'string' &&
      EVENT_TYPES.has(event.type) &&
      typeof event.body?.id === 'string' &&
      (event.type === 'trace-create' || typeof event.body.traceId === 'string');
    if (valid) successes.push({ id: event.id, status: 201 });
    else errors.push({ id: String(event.id), status: 400, message: 'Invalid request data' });
  }
  return { status: 207, body: { successes, errors } };
}

async function withLangfuse(reply: (request: ReceivedRequest) => ReceiverReply = langfuse) {
  const receiver = await startReceiver(reply);
  const config: LangfuseConfig = { publicKey: PUBLIC_KEY, secretKey: SECRET_KEY, baseUrl: receiver.url };
  return { receiver, config, context: exportContext(config, http) };
}

function batchOf(request: ReceivedRequest | undefined): IngestionEvent[] {
  assert.ok(request, 'no request arrived');
  return (request.json as { batch: IngestionEvent[] }).batch;
}

test('langfuse: sends a trace-create and a generation-create per event, with Basic auth', async () => {
  const { receiver, context } = await withLangfuse();
  try {
    const item = outboxItem();
    assert.equal(await langfuseDestination.send([item], context), undefined);
    assert.equal(receiver.requests.length, 1);
    const request = receiver.requests[0] as ReceivedRequest;
    assert.equal(request.method, 'POST');
    assert.equal(request.url, '/api/public/ingestion');
    assert.equal(request.headers.authorization, BASIC);
    assert.equal(request.headers['content-type'], 'application/json');
    const [trace, generation] = batchOf(request);
    assert.equal(trace?.type, 'trace-create');
    assert.equal(generation?.type, 'generation-create');
    assert.match(trace?.id ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(trace?.id, generation?.id);
    assert.equal(trace?.timestamp, '2026-11-22T10:00:01.250Z');
    assert.deepEqual(trace?.body, {
      id: '4bf92f3577b34da6a3ce929d0e0e4736',
      name: 'openai/gpt-4o',
      timestamp: '2026-11-22T10:00:00.000Z',
      userId: 'user_12345',
      sessionId: 'session_abc',
      input: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hello.' },
      ],
      output: [{ role: 'assistant', content: 'Hello.' }],
      metadata: { order_id: 'ORD-12345' },
    });
    const body = generation?.body ?? {};
    assert.match(String(body.id), /^[0-9a-f-]{36}$/);
    assert.equal(body.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(body.name, 'openai/gpt-4o');
    assert.equal(body.model, 'openai/gpt-4o');
    assert.deepEqual(body.modelParameters, { temperature: 0.2, max_output_tokens: 256 });
    assert.deepEqual(body.input, trace?.body.input);
    assert.deepEqual(body.output, trace?.body.output);
    assert.deepEqual(body.usage, { input: 100, output: 50, total: 150, unit: 'TOKENS' });
    assert.deepEqual(body.usageDetails, { input: 100, output: 50, total: 150 });
    assert.deepEqual(body.costDetails, { input: 0.00025, output: 0.0005, total: 0.00075 });
    assert.equal(body.startTime, '2026-11-22T10:00:00.000Z');
    assert.equal(body.endTime, '2026-11-22T10:00:01.250Z');
    assert.equal(body.completionStartTime, '2026-11-22T10:00:00.300Z');
    assert.equal(body.level, undefined);
    assert.equal(body.parentObservationId, undefined);
    const metadata = body.metadata as Record<string, unknown>;
    assert.equal(metadata.generation_id, 'gen-1732276800-abcdefghijklmnop');
    assert.equal(metadata.provider, 'openai');
    assert.equal(metadata.is_byok, false);
    assert.deepEqual(metadata.identity, sampleEvent().identity);
    assert.deepEqual(metadata.request_context, sampleEvent().request_context);
    assert.deepEqual(metadata.trace_metadata, { order_id: 'ORD-12345' });
  } finally {
    await receiver.close();
  }
});

test('langfuse: privacy mode and absent options send no bodies, cost breakdown, identity or request context', async () => {
  const { receiver, context } = await withLangfuse();
  try {
    await langfuseDestination.send([outboxItem(privateEvent())], context);
    const [trace, generation] = batchOf(receiver.requests[0]);
    assert.equal('input' in (trace?.body ?? {}), false);
    assert.equal('output' in (trace?.body ?? {}), false);
    const body = generation?.body ?? {};
    for (const key of ['input', 'output']) assert.equal(key in body, false, key);
    // What the gateway billed is always sent; its breakdown only with broadcast_generation_cost.
    assert.deepEqual(body.costDetails, { total: privateEvent().total_cost });
    const metadata = body.metadata as Record<string, unknown>;
    for (const key of ['identity', 'request_context', 'is_byok']) assert.equal(key in metadata, false, key);
    // Tokens, timing and model stay.
    assert.deepEqual(body.usage, { input: 100, output: 50, total: 150, unit: 'TOKENS' });
    assert.equal(body.model, 'openai/gpt-4o');
    assert.doesNotMatch(receiver.requests[0]?.text ?? '', /Say hello|You are terse/);
  } finally {
    await receiver.close();
  }
});

test('langfuse: a trace shared by several generations is not overwritten; names, parent and errors are mapped', async () => {
  const { receiver, context } = await withLangfuse();
  try {
    const event = sampleEvent({
      trace: {
        ...sampleEvent().trace,
        external_trace_id: 'conversation-42',
        trace_name: 'support chat',
        generation_name: 'answer',
        parent_span_id: '1111222233334444',
      },
      status: 'failed',
      error: { type: 'upstream_error', message: 'provider returned 502' },
      output: [],
      first_token_ms: null,
    });
    await langfuseDestination.send([outboxItem(event)], context);
    const [trace, generation] = batchOf(receiver.requests[0]);
    assert.deepEqual(trace?.body, {
      id: '4bf92f3577b34da6a3ce929d0e0e4736',
      name: 'support chat',
      userId: 'user_12345',
      sessionId: 'session_abc',
      metadata: { order_id: 'ORD-12345' },
    });
    const body = generation?.body ?? {};
    assert.equal(body.name, 'answer');
    assert.equal(body.parentObservationId, '1111222233334444');
    assert.equal(body.level, 'ERROR');
    assert.equal(body.statusMessage, 'provider returned 502');
    assert.equal('completionStartTime' in body, false);
  } finally {
    await receiver.close();
  }
});

test('langfuse: custom headers are sent but never replace the credentials', async () => {
  const { receiver, config } = await withLangfuse();
  try {
    const context = exportContext(
      {
        ...config,
        headers: {
          'X-Langfuse-Proxy': 'edge-1',
          Authorization: 'Bearer stolen',
          'Content-Type': 'text/plain',
        },
      },
      http,
    );
    await langfuseDestination.send([outboxItem()], context);
    await langfuseDestination.testConnection(context);
    for (const request of receiver.requests) {
      assert.equal(request.headers['x-langfuse-proxy'], 'edge-1');
      assert.equal(request.headers.authorization, BASIC);
    }
    assert.equal(receiver.requests[0]?.headers['content-type'], 'application/json');
  } finally {
    await receiver.close();
  }
});

test('langfuse: 207 errors become rejections of the items they belong to', async () => {
  const refused = new Map<number, number>([
    [1, 400],
    [2, 500],
    [3, 429],
  ]);
  const { receiver, context } = await withLangfuse((request) => {
    const answer = langfuse(request);
    if (answer === 'close' || answer === 'hang' || request.method !== 'POST') return answer;
    // The generation of item i is batch[2i + 1].
    const batch = batchOf(request);
    const errors = [...refused].map(([item, status]) => ({
      id: batch[2 * item + 1]?.id,
      status,
      message: status === 400 ? 'Invalid request data' : 'Internal Server Error',
    }));
    return { status: 207, body: { successes: [], errors } };
  });
  try {
    const items = [0, 1, 2, 3].map((n) =>
      outboxItem(sampleEvent({ generation_id: `gen-1732276800-item${n}aaaaaaaaaaa` })),
    );
    const outcome = await langfuseDestination.send(items, context);
    assert.deepEqual(
      outcome?.rejected?.map(({ index, retryable, status }) => ({ index, retryable, status })),
      [
        { index: 1, retryable: false, status: 400 },
        { index: 2, retryable: true, status: 500 },
        { index: 3, retryable: true, status: 429 },
      ],
    );
    assert.match(
      outcome?.rejected?.[0]?.message ?? '',
      /Langfuse refused the event \(400\): Invalid request data/,
    );
  } finally {
    await receiver.close();
  }
});

test('langfuse: a 500 is a retryable DeliveryError', async () => {
  const { receiver, context } = await withLangfuse(() => ({
    status: 500,
    body: { message: 'Internal error' },
  }));
  try {
    await assert.rejects(langfuseDestination.send([outboxItem()], context), (error: unknown) => {
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.retryable, true);
      assert.equal(error.status, 500);
      return true;
    });
  } finally {
    await receiver.close();
  }
});

test('langfuse: a 429 carries its Retry-After', async () => {
  const { receiver, context } = await withLangfuse(() => ({
    status: 429,
    headers: { 'retry-after': '12' },
    body: { message: 'Rate limit exceeded' },
  }));
  try {
    await assertRetryAfter(langfuseDestination.send([outboxItem()], context), 12_000);
  } finally {
    await receiver.close();
  }
});

test('langfuse: wrong keys (401) and a malformed request (400) are not retryable', async () => {
  const { receiver, config } = await withLangfuse();
  try {
    const wrongKeys = exportContext({ ...config, secretKey: 'sk-lf-wrong' }, http);
    await assert.rejects(langfuseDestination.send([outboxItem()], wrongKeys), (error: unknown) => {
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.status, 401);
      assert.equal(error.retryable, false);
      return true;
    });
    receiver.reply = () => ({ status: 400, body: { message: 'Invalid request data' } });
    await assert.rejects(
      langfuseDestination.send([outboxItem()], exportContext(config, http)),
      (error: unknown) => {
        assert.ok(error instanceof DeliveryError);
        assert.equal(error.retryable, false);
        return true;
      },
    );
  } finally {
    await receiver.close();
  }
});

test('langfuse: the same batch sent twice carries the same event and observation ids', async () => {
  const { receiver, context } = await withLangfuse();
  try {
    const event = sampleEvent();
    await langfuseDestination.send([outboxItem(event, 1)], context);
    await langfuseDestination.send([outboxItem(event, 2)], context);
    assert.equal(receiver.requests[0]?.text, receiver.requests[1]?.text);
    const other = sampleEvent({ generation_id: 'gen-1732276800-anothergeneration' });
    await langfuseDestination.send([outboxItem(other)], context);
    const ids = (index: number) => batchOf(receiver.requests[index]).map((event) => event.id);
    assert.notDeepEqual(ids(2), ids(0));
  } finally {
    await receiver.close();
  }
});

test('langfuse: a batch over the 3.5 MB limit is split, and stops at a failed part, which alone it fails', async () => {
  let calls = 0;
  const { receiver, context } = await withLangfuse((request) => {
    calls += 1;
    return calls === 2
      ? { status: 429, headers: { 'retry-after': '600' }, body: { message: 'rate limited' } }
      : langfuse(request);
  });
  try {
    const big = 'x'.repeat(30_000);
    const heavy = (n: number) =>
      outboxItem(
        sampleEvent({
          generation_id: `gen-1732276800-heavy${n}aaaaaaaaaa`,
          input: Array.from({ length: 26 }, () => ({ role: 'user' as const, content: big })),
        }),
      );
    // Each item carries its 780 kB input twice (trace and generation): two fit in one request, so
    // five make three requests; the third is not sent after the second's 429.
    const outcome = await langfuseDestination.send(
      [heavy(0), heavy(1), heavy(2), heavy(3), heavy(4)],
      context,
    );
    assert.equal(receiver.requests.length, 2);
    for (const request of receiver.requests) assert.ok(request.raw.length < 3_500_000);
    assert.equal(batchOf(receiver.requests[0]).length, 4);
    assert.equal(outcome?.rejected?.length ?? 0, 0);
    assert.deepEqual(outcome?.stopped?.failed, [2, 3]);
    assert.deepEqual(outcome?.stopped?.unsent, [4]);
    assert.equal(outcome?.stopped?.error.status, 429);
    assert.equal(outcome?.stopped?.error.retryAfterMs, 600_000);
  } finally {
    await receiver.close();
  }
});

test('langfuse: testConnection reads the project and fails on bad keys', async () => {
  const { receiver, config } = await withLangfuse();
  try {
    await langfuseDestination.testConnection(exportContext(config, http));
    assert.equal(receiver.requests[0]?.method, 'GET');
    assert.equal(receiver.requests[0]?.url, '/api/public/projects');
    assert.equal(receiver.requests[0]?.text, '');
    await assert.rejects(
      langfuseDestination.testConnection(exportContext({ ...config, publicKey: 'pk-lf-other' }, http)),
      finalFailure(401),
    );
  } finally {
    await receiver.close();
  }
});

test('langfuse: config schema, defaults, secrets, validation and urls', () => {
  const { configSchema, defaults, secretFields } = langfuseDestination;
  assert.deepEqual(defaults, { baseUrl: 'https://us.cloud.langfuse.com' });
  assert.deepEqual([...secretFields], ['publicKey', 'secretKey']);
  assert.equal(langfuseDestination.testOnSave, false);
  assert.equal(Value.Check(configSchema, { publicKey: 'pk', secretKey: 'sk' }), true);
  assert.equal(Value.Check(configSchema, { publicKey: 'pk' }), false);
  assert.equal(Value.Check(configSchema, { publicKey: 'pk', secretKey: 'sk', extra: 1 }), false);
  const config: LangfuseConfig = { publicKey: 'pk', secretKey: 'sk', baseUrl: 'https://cloud.langfuse.com/' };
  assert.deepEqual(langfuseDestination.validate?.(config), []);
  assert.deepEqual(langfuseDestination.validate?.({ ...config, baseUrl: 'ftp://cloud.langfuse.com' }), [
    { field: 'baseUrl', message: 'must be an http or https URL' },
  ]);
  assert.deepEqual(
    langfuseDestination.validate?.({ ...config, baseUrl: 'https://pk:sk@cloud.langfuse.com' }),
    [{ field: 'baseUrl', message: 'must not carry credentials in the URL' }],
  );
  assert.deepEqual(
    langfuseDestination.validate?.({ ...config, headers: { 'Bad Name': 'x', 'X-Ok': 'a\nb' } }),
    [
      { field: 'headers', message: '"Bad Name" is not a valid header name' },
      { field: 'headers', message: 'the value of "X-Ok" contains control characters' },
    ],
  );
  assert.deepEqual(langfuseDestination.urls(config), [
    'https://cloud.langfuse.com/api/public/ingestion',
    'https://cloud.langfuse.com/api/public/projects',
  ]);
});
