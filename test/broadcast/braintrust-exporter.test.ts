import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Value } from 'typebox/value';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import { type BraintrustConfig, braintrustDestination } from '../../src/broadcast/exporters/braintrust.js';
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

const API_KEY = 'sk-braintrust-0123456789';
const PROJECT_ID = '3c90c3cc-0d44-4b50-8888-8dd25736052a';
const SPAN_TYPES = new Set(['llm', 'score', 'function', 'eval', 'task', 'tool']);

interface LogEvent {
  id: string;
  span_attributes?: { name?: string; type?: string };
  metrics?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  [key: string]: unknown;
}

/**
 * Braintrust's API for this exporter: Bearer key; the insert route checks each event's shape and
 * replaces any row with the same id (so `rows` shows what a project would hold).
 */
function fakeBraintrust() {
  const rows = new Map<string, LogEvent>();
  const reply = (request: ReceivedRequest): ReceiverReply => {
    if (request.headers.authorization !== `Bearer ${API_KEY}`) {
      return { status: 401, body: { error: 'Invalid API key' } };
    }
    if (request.method === 'GET' && request.url.startsWith('/v1/project/')) {
      return request.url === `/v1/project/${PROJECT_ID}`
        ? { status: 200, body: { id: PROJECT_ID, name: 'gateway', org_id: 'org-1' } }
        : { status: 403, body: { error: 'Missing read access to project' } };
    }
    const insert = /^\/v1\/project_logs\/([^/]+)\/insert$/.exec(request.url);
    if (request.method !== 'POST' || !insert) return { status: 404, body: { error: 'Not found' } };
    if (insert[1] !== PROJECT_ID) return { status: 403, body: { error: 'Missing update access to project' } };
    const events = (request.json as { events?: LogEvent[] } | undefined)?.events;
    if (!Array.isArray(events)) return { status: 400, body: { error: 'events: Required' } };
    for (const event of events) {
      const metricsValid = Object.values(event.metrics ?? {}).every((value) => typeof value === 'number');
      const typeValid =
        event.span_attributes?.type === undefined || SPAN_TYPES.has(event.span_attributes.type);
      if (typeof event.id !== 'string' || !metricsValid || !typeValid) {
        return { status: 400, body: { error: 'Invalid event' } };
      }
    }
    for (const event of events) rows.set(event.id, event);
    return { status: 200, body: { row_ids: events.map((event) => event.id) } };
  };
  return { rows, reply };
}

async function withBraintrust(reply?: (request: ReceivedRequest) => ReceiverReply) {
  const braintrust = fakeBraintrust();
  const receiver = await startReceiver(reply ?? braintrust.reply);
  const config: BraintrustConfig = { apiKey: API_KEY, projectId: PROJECT_ID, baseUrl: receiver.url };
  return { receiver, config, rows: braintrust.rows, context: exportContext(config, http) };
}

function eventsOf(request: ReceivedRequest | undefined): LogEvent[] {
  assert.ok(request, 'no request arrived');
  return (request.json as { events: LogEvent[] }).events;
}

test('braintrust: inserts one root llm span per event into the project logs', async () => {
  const { receiver, context } = await withBraintrust();
  try {
    assert.equal(await braintrustDestination.send([outboxItem()], context), undefined);
    const request = receiver.requests[0] as ReceivedRequest;
    assert.equal(request.method, 'POST');
    assert.equal(request.url, `/v1/project_logs/${PROJECT_ID}/insert`);
    assert.equal(request.headers.authorization, `Bearer ${API_KEY}`);
    assert.equal(request.headers['content-type'], 'application/json');
    const [event] = eventsOf(request);
    assert.ok(event);
    assert.match(event.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual(
      { ...event, id: undefined, metadata: undefined },
      {
        id: undefined,
        metadata: undefined,
        span_id: event.id,
        root_span_id: event.id,
        created: '2026-11-22T10:00:00.000Z',
        input: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'Say hello.' },
        ],
        output: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
        metrics: {
          start: 1795341600,
          end: 1795341601.25,
          prompt_tokens: 100,
          completion_tokens: 50,
          tokens: 150,
          prompt_cached_tokens: 0,
          prompt_cache_creation_tokens: 0,
          completion_reasoning_tokens: 0,
          time_to_first_token: 0.3,
        },
        span_attributes: { name: 'openai/gpt-4o', type: 'llm' },
      },
    );
    const metadata = event.metadata ?? {};
    assert.equal(metadata.model, 'openai/gpt-4o');
    assert.equal(metadata.provider, 'openai');
    assert.equal(metadata.temperature, 0.2);
    assert.equal(metadata.order_id, 'ORD-12345');
    assert.equal(metadata.trace_id, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(metadata.session_id, 'session_abc');
    assert.equal(metadata.user_id, 'user_12345');
    assert.deepEqual(metadata.cost, sampleEvent().cost);
    assert.deepEqual(metadata.identity, sampleEvent().identity);
    assert.deepEqual(metadata.request_context, sampleEvent().request_context);
  } finally {
    await receiver.close();
  }
});

test('braintrust: privacy mode and absent options send no input, output, cost, identity or context', async () => {
  const { receiver, context } = await withBraintrust();
  try {
    await braintrustDestination.send([outboxItem(privateEvent())], context);
    const [event] = eventsOf(receiver.requests[0]);
    assert.ok(event);
    assert.equal('input' in event, false);
    assert.equal('output' in event, false);
    for (const key of ['cost', 'identity', 'request_context'])
      assert.equal(key in (event.metadata ?? {}), false, key);
    assert.equal(event.metrics?.tokens, 150);
    assert.doesNotMatch(receiver.requests[0]?.text ?? '', /Say hello|You are terse/);
  } finally {
    await receiver.close();
  }
});

test('braintrust: a failed generation carries its error and span name', async () => {
  const { receiver, context } = await withBraintrust();
  try {
    const failed = sampleEvent({
      trace: { ...sampleEvent().trace, span_name: 'retrieve-and-answer' },
      status: 'failed',
      error: { type: 'upstream_error', message: 'provider returned 502' },
      output: null,
      first_token_ms: null,
    });
    await braintrustDestination.send([outboxItem(failed)], context);
    const [event] = eventsOf(receiver.requests[0]);
    assert.equal(event?.error, 'upstream_error: provider returned 502');
    assert.deepEqual(event?.span_attributes, { name: 'retrieve-and-answer', type: 'llm' });
    assert.equal('time_to_first_token' in (event?.metrics ?? {}), false);
  } finally {
    await receiver.close();
  }
});

test('braintrust: custom headers are sent but never replace the key', async () => {
  const { receiver, config } = await withBraintrust();
  try {
    const context = exportContext(
      { ...config, headers: { 'X-Org': 'acme', authorization: 'Bearer stolen' } },
      http,
    );
    await braintrustDestination.send([outboxItem()], context);
    await braintrustDestination.testConnection(context);
    for (const request of receiver.requests) {
      assert.equal(request.headers['x-org'], 'acme');
      assert.equal(request.headers.authorization, `Bearer ${API_KEY}`);
    }
  } finally {
    await receiver.close();
  }
});

test('braintrust: the same batch sent twice replaces its rows instead of adding new ones', async () => {
  const { receiver, context, rows } = await withBraintrust();
  try {
    const items = [sampleEvent(), sampleEvent({ generation_id: 'gen-1732276800-secondgeneration' })];
    await braintrustDestination.send(
      items.map((event) => outboxItem(event, 1)),
      context,
    );
    await braintrustDestination.send(
      items.map((event) => outboxItem(event, 2)),
      context,
    );
    assert.equal(receiver.requests[0]?.text, receiver.requests[1]?.text);
    assert.equal(rows.size, 2);
  } finally {
    await receiver.close();
  }
});

test('braintrust: a 500 and a 429 are retryable, the 429 with its Retry-After', async () => {
  const { receiver, context } = await withBraintrust(() => ({
    status: 500,
    body: { error: 'Internal error' },
  }));
  try {
    await assert.rejects(braintrustDestination.send([outboxItem()], context), retryableFailure(500));
    receiver.reply = () => ({
      status: 429,
      headers: { 'retry-after': '3' },
      body: { error: 'Too many requests' },
    });
    await assertRetryAfter(braintrustDestination.send([outboxItem()], context), 3_000);
  } finally {
    await receiver.close();
  }
});

test('braintrust: a bad key (401) and a project out of reach (403) are not retryable', async () => {
  const { receiver, config } = await withBraintrust();
  try {
    await assert.rejects(
      braintrustDestination.send([outboxItem()], exportContext({ ...config, apiKey: 'sk-wrong' }, http)),
      finalFailure(401),
    );
    const otherProject = exportContext(
      { ...config, projectId: '00000000-0000-4000-8000-000000000000' },
      http,
    );
    await assert.rejects(braintrustDestination.send([outboxItem()], otherProject), finalFailure(403));
  } finally {
    await receiver.close();
  }
});

test('braintrust: testConnection reads the project and fails when it is out of reach', async () => {
  const { receiver, config } = await withBraintrust();
  try {
    await braintrustDestination.testConnection(exportContext(config, http));
    assert.equal(receiver.requests[0]?.method, 'GET');
    assert.equal(receiver.requests[0]?.url, `/v1/project/${PROJECT_ID}`);
    await assert.rejects(
      braintrustDestination.testConnection(
        exportContext({ ...config, projectId: '00000000-0000-4000-8000-000000000000' }, http),
      ),
      (error: unknown) => error instanceof DeliveryError && error.status === 403,
    );
    await assert.rejects(
      braintrustDestination.testConnection(exportContext({ ...config, apiKey: 'sk-wrong' }, http)),
      (error: unknown) => error instanceof DeliveryError && error.status === 401,
    );
  } finally {
    await receiver.close();
  }
});

test('braintrust: config schema, defaults, secrets, validation and urls', () => {
  const { configSchema, defaults, secretFields } = braintrustDestination;
  assert.deepEqual(defaults, { baseUrl: 'https://api.braintrust.dev' });
  assert.deepEqual([...secretFields], ['apiKey']);
  assert.equal(braintrustDestination.testOnSave, false);
  assert.equal(Value.Check(configSchema, { apiKey: 'k', projectId: PROJECT_ID }), true);
  assert.equal(Value.Check(configSchema, { apiKey: 'k' }), false);
  const config: BraintrustConfig = {
    apiKey: 'k',
    projectId: PROJECT_ID,
    baseUrl: 'https://api-eu.braintrust.dev',
  };
  assert.deepEqual(braintrustDestination.validate?.(config), []);
  assert.deepEqual(
    braintrustDestination.validate?.({ ...config, projectId: '../../v1/api_key', baseUrl: 'gopher://x' }),
    [
      { field: 'baseUrl', message: 'must be an http or https URL' },
      { field: 'projectId', message: 'must be a Braintrust project id (a UUID)' },
    ],
  );
  assert.deepEqual(
    braintrustDestination.validate?.({ ...config, headers: { 'Bad Name': 'x', 'X-Ok': 'a\nb' } }),
    [
      { field: 'headers', message: '"Bad Name" is not a valid header name' },
      { field: 'headers', message: 'the value of "X-Ok" contains control characters' },
    ],
  );
  assert.deepEqual(braintrustDestination.urls(config), [
    `https://api-eu.braintrust.dev/v1/project_logs/${PROJECT_ID}/insert`,
    `https://api-eu.braintrust.dev/v1/project/${PROJECT_ID}`,
  ]);
});
