import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import {
  metadataProperties,
  type PosthogConfig,
  posthogDestination,
} from '../../src/broadcast/exporters/posthog.js';
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

const API_KEY = 'phc_project_key_0123456789';
const http = createExporterHttp({ allowPrivateNetworks: true });
let receiver: FakeReceiver;

before(async () => {
  receiver = await startReceiver();
});
after(async () => {
  await receiver.close();
  await http.close();
});

function config(overrides: Partial<PosthogConfig> = {}): PosthogConfig {
  return { apiKey: API_KEY, endpoint: receiver.url, ...overrides };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const tokenOf = (body: Record<string, unknown>) => body.token ?? body.api_key ?? body.$token;

/** What PostHog's capture service checks on `/batch/` (rust/capture): it does not look the key up. */
function captureProblems(body: Record<string, unknown>): { status: number; message: string } | null {
  const token = tokenOf(body);
  if (typeof token !== 'string' || token === '')
    return { status: 401, message: 'event submitted without an api_key' };
  if (token.startsWith('phx_')) return { status: 401, message: 'API key is not valid: personal api key' };
  if (!Array.isArray(body.batch)) return { status: 400, message: 'failed to decode request' };
  if (body.batch.length === 0) return { status: 400, message: 'empty batch' };
  for (const event of body.batch) {
    if (!isObject(event) || typeof event.event !== 'string' || event.event === '') {
      return { status: 400, message: 'missing event name' };
    }
    const properties = isObject(event.properties) ? event.properties : {};
    const distinctId = event.distinct_id ?? properties.distinct_id ?? properties.$distinct_id;
    if (distinctId === undefined || distinctId === '') return { status: 400, message: 'missing distinct_id' };
    if (event.uuid !== undefined && !(typeof event.uuid === 'string' && UUID.test(event.uuid))) {
      return { status: 400, message: 'failed to decode request: invalid uuid' };
    }
    if (typeof event.timestamp === 'string' && Number.isNaN(Date.parse(event.timestamp))) {
      return { status: 400, message: 'invalid timestamp' };
    }
  }
  return null;
}

/** Answers like us.i.posthog.com: capture on `/batch/`, the flags service on `/flags/`. */
function posthogCloud(request: ReceivedRequest): ReceiverReply {
  if (request.method !== 'POST') return { status: 405, body: 'Method Not Allowed' };
  if (!isObject(request.json)) return { status: 400, body: 'failed to decode request' };
  if (request.url === '/batch/') {
    const problem = captureProblems(request.json);
    return problem ? { status: problem.status, body: problem.message } : { status: 200, body: { status: 1 } };
  }
  if (request.url === '/flags/?v=2') {
    const token = tokenOf(request.json);
    if (typeof token !== 'string') return { status: 401, body: 'No API token provided.' };
    if (token !== API_KEY) {
      return {
        status: 401,
        body: 'The provided API key is invalid or has expired. Please check your API key.',
      };
    }
    return {
      status: 200,
      body: {
        errorsWhileComputingFlags: false,
        flags: {},
        requestId: '0190f0e6-0000-7000-8000-000000000000',
      },
    };
  }
  return { status: 404, body: 'Not Found' };
}

interface CaptureEvent {
  event: string;
  uuid: string;
  distinct_id: string;
  timestamp: string;
  properties: Record<string, unknown>;
}

async function sendAndCapture(items = [outboxItem()], posthogConfig = config()): Promise<CaptureEvent[]> {
  receiver.requests.length = 0;
  receiver.reply = posthogCloud;
  await posthogDestination.send(items, exportContext(posthogConfig, http));
  assert.equal(receiver.requests.length, 1);
  const request = receiver.requests[0] as ReceivedRequest;
  assert.equal(request.method, 'POST');
  assert.equal(request.url, '/batch/');
  const body = request.json as { api_key: string; batch: CaptureEvent[] };
  assert.equal(body.api_key, API_KEY);
  assert.deepEqual(Object.keys(body).sort(), ['api_key', 'batch']);
  return body.batch;
}

test('posthog: sends one $ai_generation event per generation to /batch/ with the key in the body', async () => {
  const [event] = (await sendAndCapture()) as [CaptureEvent];
  const request = receiver.requests[0] as ReceivedRequest;
  assert.equal(request.headers['content-type'], 'application/json');
  assert.equal(request.headers.authorization, undefined);
  assert.match(event.uuid, UUID);
  assert.deepEqual(event, {
    event: '$ai_generation',
    uuid: event.uuid,
    distinct_id: 'user_12345',
    timestamp: '2026-11-22T10:00:00.000Z',
    properties: {
      order_id: 'ORD-12345',
      $ai_trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
      $ai_span_id: '00f067aa0ba902b7',
      $ai_session_id: 'session_abc',
      $ai_model: 'openai/gpt-4o',
      $ai_provider: 'openai',
      $ai_input_tokens: 100,
      $ai_output_tokens: 50,
      $ai_cache_read_input_tokens: 0,
      $ai_cache_creation_input_tokens: 0,
      $ai_reasoning_tokens: 0,
      $ai_latency: 1.25,
      $ai_time_to_first_token: 0.3,
      $ai_stream: false,
      $ai_model_parameters: { temperature: 0.2, max_output_tokens: 256 },
      $ai_http_status: 200,
      $ai_is_error: false,
      $ai_input: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hello.' },
      ],
      $ai_output_choices: [{ role: 'assistant', content: 'Hello.' }],
      $ai_total_cost_usd: 0.00075,
      $ai_input_cost_usd: 0.00025,
      $ai_output_cost_usd: 0.0005,
      generation_id: 'gen-1732276800-abcdefghijklmnop',
      operation: 'chat',
      api_type: 'chat-completions',
      status: 'completed',
      finish_reason: 'stop',
      requested_model: 'openai/gpt-4o',
      provider_name: 'OpenAI',
      api_key_name: 'production app',
      generation_time_ms: 950,
      tools_offered: 0,
      tools_called: 0,
      is_byok: false,
      api_key_hash: 'a'.repeat(64),
      workspace_id: '550e8400-e29b-41d4-a716-446655440000',
      app_referer: 'https://example.com',
      app_title: 'Example',
      attempts: 1,
      region: 'global',
    },
  });
});

test('posthog: an embeddings generation is an $ai_embedding event', async () => {
  const [event] = (await sendAndCapture([
    outboxItem(sampleEvent({ operation: 'embeddings', api_type: 'embeddings', output: [] })),
  ])) as [CaptureEvent];
  assert.equal(event.event, '$ai_embedding');
  assert.equal(event.properties.$ai_model, 'openai/gpt-4o');
});

test('posthog: privacy mode sends no $ai_input or $ai_output_choices; absent parts are left out', async () => {
  const [event] = (await sendAndCapture([outboxItem(privateEvent())])) as [CaptureEvent];
  const { properties } = event;
  for (const absent of [
    '$ai_input',
    '$ai_output_choices',
    '$ai_input_cost_usd',
    '$ai_output_cost_usd',
    '$ai_http_status',
    'is_byok',
    'api_key_hash',
    'workspace_id',
    'app_referer',
    'attempts',
    'region',
  ]) {
    assert.equal(absent in properties, false, absent);
  }
  assert.doesNotMatch((receiver.requests[0] as ReceivedRequest).text, /Say hello|You are terse|Hello\./);
  // Tokens, total cost and timing stay.
  assert.equal(properties.$ai_input_tokens, 100);
  assert.equal(properties.$ai_total_cost_usd, 0.00075);
  assert.equal(properties.$ai_latency, 1.25);
});

test('posthog: without a user the key hash, then the generation id, is the distinct id (no person profile)', async () => {
  const [byKey, byGeneration] = (await sendAndCapture([
    outboxItem(sampleEvent({ user_id: null })),
    outboxItem(sampleEvent({ user_id: null, identity: null, generation_id: 'gen-2' })),
  ])) as [CaptureEvent, CaptureEvent];
  assert.equal(byKey.distinct_id, 'a'.repeat(64));
  assert.equal(byKey.properties.$process_person_profile, false);
  assert.equal(byGeneration.distinct_id, 'gen-2');
  assert.equal(byGeneration.properties.$process_person_profile, false);
  const [withUser] = (await sendAndCapture()) as [CaptureEvent];
  assert.equal('$process_person_profile' in withUser.properties, false);
});

test('posthog: a failed generation with trace names, a parent and request metadata', async () => {
  const event = sampleEvent({
    status: 'failed',
    output: null,
    error: { type: 'upstream_error', message: 'provider timed out' },
    request_context: {
      ...sampleEvent().request_context!,
      http_status: 502,
      request_metadata: { tier: 'gold' },
    },
    trace: {
      ...sampleEvent().trace,
      parent_span_id: '1111222233334444',
      trace_name: 'checkout',
      generation_name: 'summarize-cart',
      external_trace_id: 'conv-42',
    },
  });
  const [captured] = (await sendAndCapture([outboxItem(event)])) as [CaptureEvent];
  const { properties } = captured;
  assert.equal(properties.$ai_is_error, true);
  assert.equal(properties.$ai_error, 'upstream_error: provider timed out');
  assert.equal(properties.$ai_http_status, 502);
  assert.equal(properties.$ai_span_name, 'summarize-cart');
  assert.equal(properties.$ai_parent_id, '1111222233334444');
  assert.equal(properties.trace_name, 'checkout');
  assert.equal(properties.external_trace_id, 'conv-42');
  assert.deepEqual(properties.request_metadata, { tier: 'gold' });
  assert.equal('$ai_output_choices' in properties, false);
});

test('posthog: nested metadata deeper than three levels is replaced with [truncated]', async () => {
  const metadata = {
    plain: 'ORD-1',
    shallow: JSON.stringify({ b: { c: 1 } }),
    deep: JSON.stringify({ b: { c: { d: { e: 1 } } } }),
    list: JSON.stringify([{ x: { y: 1 } }]),
    broken: '{not json',
  };
  assert.deepEqual(metadataProperties(metadata), {
    plain: 'ORD-1',
    shallow: { b: { c: 1 } },
    deep: { b: { c: '[truncated]' } },
    list: [{ x: '[truncated]' }],
    broken: '{not json',
  });
  const event = sampleEvent({ trace: { ...sampleEvent().trace, metadata } });
  const [captured] = (await sendAndCapture([outboxItem(event)])) as [CaptureEvent];
  assert.deepEqual(captured.properties.deep, { b: { c: '[truncated]' } });
  // A metadata key never replaces one of the generation's own properties.
  const clash = sampleEvent({ trace: { ...sampleEvent().trace, metadata: { $ai_model: 'spoofed' } } });
  const [guarded] = (await sendAndCapture([outboxItem(clash)])) as [CaptureEvent];
  assert.equal(guarded.properties.$ai_model, 'openai/gpt-4o');
});

test('posthog: custom headers are sent; the content type stays JSON', async () => {
  await sendAndCapture(
    [outboxItem()],
    config({ headers: { 'X-Proxy': 'edge-1', 'Content-Type': 'text/plain' } }),
  );
  const request = receiver.requests[0] as ReceivedRequest;
  assert.equal(request.headers['x-proxy'], 'edge-1');
  assert.equal(request.headers['content-type'], 'application/json');
});

test('posthog: the same batch sent twice carries the same uuids', async () => {
  const items = [outboxItem(), outboxItem(sampleEvent({ generation_id: 'gen-2' }))];
  const first = await sendAndCapture(items);
  const second = await sendAndCapture(items.map((item) => ({ ...item, attempt: 2 })));
  assert.deepEqual(first, second);
  assert.notEqual(first[0]?.uuid, first[1]?.uuid);
});

async function sendExpectingError(
  reply: ReceiverReply | ((r: ReceivedRequest) => ReceiverReply),
  c = config(),
) {
  receiver.reply = typeof reply === 'function' ? reply : () => reply;
  const error = await posthogDestination.send([outboxItem()], exportContext(c, http)).then(
    () => assert.fail('send should have failed'),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof DeliveryError);
  return error;
}

test('posthog: a 503 is retryable', async () => {
  const error = await sendExpectingError({ status: 503, body: 'transient error, please retry' });
  assert.equal(error.retryable, true);
});

test('posthog: a 429 carries its Retry-After', async () => {
  const error = await sendExpectingError({
    status: 429,
    headers: { 'retry-after': '30' },
    body: 'rate limited',
  });
  assert.equal(error.retryable, true);
  assert.equal(error.retryAfterMs, 30_000);
});

test('posthog: a refused key (401) and a refused body (400) are not retryable', async () => {
  const personalKey = await sendExpectingError(posthogCloud, config({ apiKey: 'phx_personal' }));
  assert.equal(personalKey.status, 401);
  assert.equal(personalKey.retryable, false);
  const invalid = await sendExpectingError({ status: 400, body: 'missing distinct_id' });
  assert.equal(invalid.retryable, false);
});

test('posthog: testConnection asks the flags service to check the key, capturing nothing', async () => {
  receiver.requests.length = 0;
  receiver.reply = posthogCloud;
  await posthogDestination.testConnection(exportContext(config(), http));
  assert.equal(receiver.requests.length, 1);
  const request = receiver.requests[0] as ReceivedRequest;
  assert.equal(request.url, '/flags/?v=2');
  assert.deepEqual(request.json, {
    token: API_KEY,
    distinct_id: 'switchyard-connection-test',
    disable_flags: true,
  });

  const error = await posthogDestination
    .testConnection(exportContext(config({ apiKey: 'phc_wrong' }), http))
    .then(
      () => assert.fail('testConnection should have failed'),
      (caught: unknown) => caught,
    );
  assert.ok(error instanceof DeliveryError);
  assert.equal(error.status, 401);
  assert.equal(error.retryable, false);

  receiver.reply = () => ({ status: 200, body: '<html>PostHog</html>' });
  await assert.rejects(posthogDestination.testConnection(exportContext(config(), http)), DeliveryError);
});

test('posthog: validate, urls and defaults', () => {
  assert.deepEqual(posthogDestination.defaults, { endpoint: 'https://us.i.posthog.com' });
  assert.deepEqual(posthogDestination.secretFields, ['apiKey']);
  assert.equal(posthogDestination.testOnSave, false);
  assert.deepEqual(posthogDestination.validate?.({ apiKey: 'k', endpoint: 'https://eu.i.posthog.com' }), []);
  assert.deepEqual(posthogDestination.validate?.({ apiKey: 'k', endpoint: 'file:///etc/passwd' }), [
    { field: 'endpoint', message: 'must be an http or https URL' },
  ]);
  assert.deepEqual(posthogDestination.validate?.({ apiKey: 'k', endpoint: 'eu.i.posthog.com' }), [
    { field: 'endpoint', message: 'must be an absolute http or https URL' },
  ]);
  assert.deepEqual(posthogDestination.urls({ apiKey: 'k', endpoint: 'https://eu.i.posthog.com/' }), [
    'https://eu.i.posthog.com/batch/',
    'https://eu.i.posthog.com/flags/?v=2',
  ]);
});
