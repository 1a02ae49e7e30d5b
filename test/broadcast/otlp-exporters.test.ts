import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import type { BroadcastEvent } from '../../src/broadcast/broadcast-event.js';
import type { DestinationType, ExportContext } from '../../src/broadcast/destination-type.js';
import { createExporterHttp, type ExporterHttp } from '../../src/broadcast/exporter-http.js';
import { arizeDestination } from '../../src/broadcast/exporters/arize.js';
import { grafanaDestination } from '../../src/broadcast/exporters/grafana.js';
import { newrelicDestination } from '../../src/broadcast/exporters/newrelic.js';
import { otelCollectorDestination } from '../../src/broadcast/exporters/otel-collector.js';
import { rampDestination } from '../../src/broadcast/exporters/ramp.js';
import { sentryDestination } from '../../src/broadcast/exporters/sentry.js';
import { webhookDestination } from '../../src/broadcast/exporters/webhook.js';
import {
  encodeOtlpTraces,
  type OtlpJsonKeyValue,
  type OtlpJsonRequest,
  type OtlpJsonSpan,
  type OtlpJsonValue,
} from '../../src/broadcast/otlp-spans.js';
import {
  deliveryFailure,
  exportContext,
  type FakeReceiver,
  outboxItem,
  privateEvent,
  type ReceivedRequest,
  type ReceiverReply,
  sampleEvent,
  startReceiver,
} from '../helpers/broadcast-fixtures.js';

type Config = Record<string, unknown>;

/** One OTLP destination type as its tests see it. */
interface ExporterCase {
  destination: DestinationType<object>;
  /** A valid config pointing at the receiver (`url` is its origin). */
  config(url: string): Config;
  /** The same config with a credential the receiver refuses; absent when the type has none. */
  wrongCredentials?(url: string): Config;
  /** Whether the receiver's origin is given as the context's `originOverride` (newrelic). */
  originOverride?: boolean;
  method: 'POST' | 'PUT';
  path: string;
  /** Headers the real service checks, exact values. */
  auth: Record<string, string>;
  /** What the real service answers a bad credential with. */
  unauthorizedStatus: number;
  /** A header the exporter sets itself, which a custom header of the same name must not replace. */
  fixedHeader?: string;
  /** Whether the body is exactly the common encoding (no vendor attributes). */
  plainBody: boolean;
  maxBatch: number;
  /** Events per HTTP request (a batch of more goes out as several requests); all of them by default. */
  eventsPerRequest?: number;
  testOnSave: boolean;
  secretFields: string[];
  defaults: Config;
  /** `urls()` of `urlsConfig`. */
  urlsConfig: Config;
  urls: string[];
  badConfigs: Array<{ config: Config; field: string }>;
}

const SENTRY_DSN = 'https://abc123public@o99.ingest.sentry.io/42';

const CASES: ExporterCase[] = [
  {
    destination: webhookDestination as DestinationType<object>,
    config: (url) => ({
      url: `${url}/hooks/switchyard`,
      method: 'POST',
      headers: { 'X-Webhook-Secret': 's3cret' },
    }),
    wrongCredentials: (url) => ({ url: `${url}/hooks/switchyard`, headers: { 'X-Webhook-Secret': 'nope' } }),
    method: 'POST',
    path: '/hooks/switchyard',
    auth: { 'x-webhook-secret': 's3cret' },
    unauthorizedStatus: 401,
    fixedHeader: 'Idempotency-Key',
    plainBody: true,
    maxBatch: 20,
    eventsPerRequest: 1,
    testOnSave: true,
    secretFields: [],
    defaults: { method: 'POST' },
    urlsConfig: { url: 'https://hooks.example.com/otlp' },
    urls: ['https://hooks.example.com/otlp'],
    badConfigs: [
      { config: { url: 'ftp://hooks.example.com/otlp' }, field: 'url' },
      { config: { url: 'https://user:secret@hooks.example.com/otlp' }, field: 'url' },
      { config: { url: 'https://hooks.example.com', headers: { 'Bad Header': 'x' } }, field: 'headers' },
      {
        config: { url: 'https://hooks.example.com', headers: { 'X-Injected': 'a\r\nHost: evil' } },
        field: 'headers',
      },
    ],
  },
  {
    destination: otelCollectorDestination as DestinationType<object>,
    config: (url) => ({
      endpoint: `${url}/v1/traces`,
      headers: { Authorization: 'Bearer xaat-axiom', 'X-Axiom-Dataset': 'llm-traces' },
    }),
    wrongCredentials: (url) => ({
      endpoint: `${url}/v1/traces`,
      headers: { Authorization: 'Bearer revoked' },
    }),
    method: 'POST',
    path: '/v1/traces',
    auth: { authorization: 'Bearer xaat-axiom', 'x-axiom-dataset': 'llm-traces' },
    unauthorizedStatus: 401,
    plainBody: true,
    maxBatch: 100,
    testOnSave: true,
    secretFields: [],
    defaults: {},
    urlsConfig: { endpoint: 'https://collector.internal:4318/v1/traces' },
    urls: ['https://collector.internal:4318/v1/traces'],
    badConfigs: [
      { config: { endpoint: 'file:///etc/passwd' }, field: 'endpoint' },
      { config: { endpoint: 'javascript:alert(1)' }, field: 'endpoint' },
      { config: { endpoint: 'not a url' }, field: 'endpoint' },
    ],
  },
  {
    destination: arizeDestination as DestinationType<object>,
    config: (url) => ({
      apiKey: 'ak-live',
      spaceKey: 'U3BhY2U6MQ==',
      modelId: 'switchyard-prod',
      baseUrl: url,
    }),
    wrongCredentials: (url) => ({ apiKey: 'ak-wrong', spaceKey: 'U3BhY2U6MQ==', modelId: 'm', baseUrl: url }),
    method: 'POST',
    path: '/v1/traces',
    auth: { space_id: 'U3BhY2U6MQ==', api_key: 'ak-live' },
    unauthorizedStatus: 401,
    fixedHeader: 'api_key',
    plainBody: false,
    maxBatch: 100,
    testOnSave: false,
    secretFields: ['apiKey'],
    defaults: { baseUrl: 'https://otlp.arize.com' },
    urlsConfig: { apiKey: 'k', spaceKey: 's', modelId: 'm', baseUrl: 'https://otlp.arize.com' },
    urls: ['https://otlp.arize.com/v1/traces'],
    badConfigs: [
      {
        config: { apiKey: 'k', spaceKey: 's', modelId: 'm', baseUrl: 'ftp://otlp.arize.com' },
        field: 'baseUrl',
      },
    ],
  },
  {
    destination: grafanaDestination as DestinationType<object>,
    config: (url) => ({ apiKey: 'glc_token', instanceId: '123456', baseUrl: url }),
    wrongCredentials: (url) => ({ apiKey: 'glc_other', instanceId: '123456', baseUrl: url }),
    method: 'POST',
    path: '/otlp/v1/traces',
    auth: { authorization: `Basic ${Buffer.from('123456:glc_token').toString('base64')}` },
    unauthorizedStatus: 401,
    fixedHeader: 'Authorization',
    plainBody: true,
    maxBatch: 100,
    testOnSave: false,
    secretFields: ['apiKey'],
    defaults: { baseUrl: 'https://otlp-gateway-prod-us-west-0.grafana.net' },
    urlsConfig: { apiKey: 'k', instanceId: '1', baseUrl: 'https://otlp-gateway-prod-eu-west-2.grafana.net/' },
    urls: ['https://otlp-gateway-prod-eu-west-2.grafana.net/otlp/v1/traces'],
    badConfigs: [
      { config: { apiKey: 'k', instanceId: 'my-stack' }, field: 'instanceId' },
      { config: { apiKey: 'k', instanceId: '1', baseUrl: 'gopher://grafana.net' }, field: 'baseUrl' },
    ],
  },
  {
    destination: newrelicDestination as DestinationType<object>,
    config: () => ({ licenseKey: 'eu01xx-license', region: 'eu' }),
    wrongCredentials: () => ({ licenseKey: 'bad-license', region: 'eu' }),
    originOverride: true,
    method: 'POST',
    path: '/v1/traces',
    auth: { 'api-key': 'eu01xx-license' },
    unauthorizedStatus: 403,
    fixedHeader: 'api-key',
    plainBody: false,
    maxBatch: 100,
    testOnSave: false,
    secretFields: ['licenseKey'],
    defaults: { region: 'us' },
    urlsConfig: { licenseKey: 'k', region: 'eu' },
    urls: ['https://otlp.eu01.nr-data.net/v1/traces'],
    badConfigs: [{ config: { licenseKey: 'k', headers: { 'x y': '1' } }, field: 'headers' }],
  },
  {
    destination: sentryDestination as DestinationType<object>,
    config: (url) => ({ dsn: SENTRY_DSN, otlpEndpoint: `${url}/api/42/integration/otlp/v1/traces` }),
    wrongCredentials: (url) => ({
      dsn: 'https://revoked@o99.ingest.sentry.io/42',
      otlpEndpoint: `${url}/api/42/integration/otlp/v1/traces`,
    }),
    method: 'POST',
    path: '/api/42/integration/otlp/v1/traces',
    auth: { 'x-sentry-auth': 'sentry sentry_key=abc123public' },
    unauthorizedStatus: 401,
    fixedHeader: 'x-sentry-auth',
    plainBody: true,
    maxBatch: 100,
    testOnSave: false,
    secretFields: ['dsn'],
    defaults: {},
    urlsConfig: {
      dsn: SENTRY_DSN,
      otlpEndpoint: 'https://o99.ingest.sentry.io/api/42/integration/otlp/v1/traces',
    },
    urls: ['https://o99.ingest.sentry.io/api/42/integration/otlp/v1/traces'],
    badConfigs: [
      { config: { dsn: 'http://abc@o99.ingest.sentry.io/42', otlpEndpoint: 'https://s.io/x' }, field: 'dsn' },
      { config: { dsn: 'https://o99.ingest.sentry.io/42', otlpEndpoint: 'https://s.io/x' }, field: 'dsn' },
      {
        config: { dsn: 'https://abc@o99.ingest.sentry.io/project', otlpEndpoint: 'https://s.io/x' },
        field: 'dsn',
      },
      { config: { dsn: SENTRY_DSN, otlpEndpoint: 'ftp://o99.ingest.sentry.io/x' }, field: 'otlpEndpoint' },
    ],
  },
  {
    destination: rampDestination as DestinationType<object>,
    config: (url) => ({ apiKey: 'ramp_tok', baseUrl: `${url}/developer/v1/ai-usage/openrouter` }),
    wrongCredentials: (url) => ({
      apiKey: 'ramp_expired',
      baseUrl: `${url}/developer/v1/ai-usage/openrouter`,
    }),
    method: 'POST',
    path: '/developer/v1/ai-usage/openrouter',
    auth: { authorization: 'Bearer ramp_tok' },
    unauthorizedStatus: 401,
    fixedHeader: 'Authorization',
    plainBody: false,
    maxBatch: 100,
    testOnSave: false,
    secretFields: ['apiKey'],
    defaults: { baseUrl: 'https://api.ramp.com/developer/v1/ai-usage/openrouter' },
    urlsConfig: { apiKey: 'k', baseUrl: 'https://api.ramp.com/developer/v1/ai-usage/openrouter' },
    urls: ['https://api.ramp.com/developer/v1/ai-usage/openrouter'],
    badConfigs: [{ config: { apiKey: 'k', baseUrl: 'ws://api.ramp.com/x' }, field: 'baseUrl' }],
  },
];

const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;

/** What an OTLP/HTTP JSON receiver refuses with 400 (the request is not an ExportTraceServiceRequest). */
function otlpShapeProblem(json: unknown): string | null {
  const request = json as Partial<OtlpJsonRequest> | undefined;
  if (!request || !Array.isArray(request.resourceSpans)) return 'resourceSpans must be an array';
  for (const resourceSpans of request.resourceSpans) {
    if (!Array.isArray(resourceSpans.resource?.attributes)) return 'resource.attributes must be an array';
    if (!Array.isArray(resourceSpans.scopeSpans)) return 'scopeSpans must be an array';
    for (const scopeSpans of resourceSpans.scopeSpans) {
      if (!Array.isArray(scopeSpans.spans)) return 'spans must be an array';
      for (const span of scopeSpans.spans) {
        const problem = spanProblem(span);
        if (problem) return problem;
      }
    }
  }
  return null;
}

function spanProblem(span: OtlpJsonSpan): string | null {
  if (!HEX32.test(span.traceId) || /^0+$/.test(span.traceId)) return 'invalid traceId';
  if (!HEX16.test(span.spanId) || /^0+$/.test(span.spanId)) return 'invalid spanId';
  if (span.parentSpanId !== undefined && !HEX16.test(span.parentSpanId)) return 'invalid parentSpanId';
  if (typeof span.name !== 'string' || span.name === '') return 'span name required';
  if (!/^\d+$/.test(span.startTimeUnixNano) || !/^\d+$/.test(span.endTimeUnixNano))
    return 'times must be decimal strings';
  if (BigInt(span.endTimeUnixNano) < BigInt(span.startTimeUnixNano)) return 'span ends before it starts';
  for (const attribute of span.attributes) {
    if (typeof attribute.key !== 'string' || Object.keys(attribute.value).length !== 1)
      return 'invalid attribute';
    if (attribute.value.intValue !== undefined && typeof attribute.value.intValue !== 'string') {
      return 'int64 values must be decimal strings';
    }
  }
  return null;
}

/** The service: method, path, credentials, content type and body checked as the real one does. */
function otlpService(exporter: ExporterCase): (request: ReceivedRequest) => ReceiverReply {
  return (request) => {
    if (request.method !== exporter.method)
      return { status: 405, body: { code: 12, message: 'method not allowed' } };
    if (request.url !== exporter.path) return { status: 404, body: { code: 5, message: 'not found' } };
    for (const [name, value] of Object.entries(exporter.auth)) {
      if (request.headers[name] !== value) {
        return { status: exporter.unauthorizedStatus, body: { code: 16, message: 'invalid credentials' } };
      }
    }
    if (request.headers['content-type'] !== 'application/json') {
      return { status: 415, body: { code: 3, message: 'unsupported content type' } };
    }
    const problem = otlpShapeProblem(request.json);
    if (problem) return { status: 400, body: { code: 3, message: problem } };
    return { status: 200, body: {} };
  };
}

function spansOf(request: ReceivedRequest | undefined): OtlpJsonSpan[] {
  const body = request?.json as OtlpJsonRequest;
  return body.resourceSpans.flatMap((resourceSpans) =>
    resourceSpans.scopeSpans.flatMap((scope) => scope.spans),
  );
}

function attributeMap(list: OtlpJsonKeyValue[]): Record<string, OtlpJsonValue> {
  return Object.fromEntries(list.map(({ key, value }) => [key, value]));
}

/** An event of its own: generation and span ids differ by `n`. */
function eventNumber(n: number, base: BroadcastEvent = sampleEvent()): BroadcastEvent {
  return {
    ...base,
    generation_id: `gen-${n}`,
    trace: { ...base.trace, span_id: (n + 1).toString(16).padStart(16, '0') },
  };
}

const BODY_KEYS = ['gen_ai.prompt', 'gen_ai.completion', 'input.value', 'output.value'];

let http: ExporterHttp;
before(() => {
  http = createExporterHttp({ allowPrivateNetworks: true });
});
after(() => http.close());

for (const exporter of CASES) {
  const { destination } = exporter;

  describe(`${destination.type} destination`, () => {
    let receiver: FakeReceiver;
    beforeEach(async () => {
      receiver = await startReceiver(otlpService(exporter));
    });
    afterEach(() => receiver.close());

    function context(config: Config = exporter.config(receiver.url)): ExportContext<object> {
      const base = exportContext<object>(config, http);
      return exporter.originOverride ? { ...base, originOverride: receiver.url } : base;
    }

    it('declares its config, defaults, secrets, batch size and test-on-save', () => {
      assert.equal(destination.maxBatch, exporter.maxBatch);
      assert.equal(destination.testOnSave, exporter.testOnSave);
      assert.deepEqual([...destination.secretFields], exporter.secretFields);
      assert.deepEqual(destination.defaults, exporter.defaults);
      assert.deepEqual(destination.urls(exporter.urlsConfig), exporter.urls);
      const schema = destination.configSchema as { additionalProperties?: boolean; properties: Config };
      assert.equal(schema.additionalProperties, false);
      assert.ok('headers' in schema.properties, 'every OTLP type takes custom headers');
    });

    it('accepts its valid config and rejects bad ones naming the field', () => {
      assert.deepEqual(destination.validate?.(exporter.config('https://receiver.example.com')), []);
      for (const { config, field } of exporter.badConfigs) {
        const problems = destination.validate?.(config) ?? [];
        assert.ok(
          problems.some((problem) => problem.field === field),
          `${JSON.stringify(config)} must be refused on ${field}: ${JSON.stringify(problems)}`,
        );
      }
    });

    it('delivers an event as OTLP JSON to the right URL with its credentials', async () => {
      const item = outboxItem();
      const outcome = await destination.send([item], context());
      assert.equal(outcome, undefined);
      assert.equal(receiver.requests.length, 1);
      const [request] = receiver.requests;
      const [span] = spansOf(request);
      assert.equal(span?.traceId, item.event.trace.trace_id);
      assert.equal(span?.spanId, item.event.trace.span_id);
      assert.equal(span?.startTimeUnixNano, item.event.start_time_unix_nano);
      const attributes = attributeMap(span?.attributes ?? []);
      assert.deepEqual(attributes['gen_ai.request.model'], { stringValue: 'openai/gpt-4o' });
      assert.deepEqual(attributes['gen_ai.usage.input_tokens'], { intValue: '100' });
      assert.ok(attributes['gen_ai.prompt'], 'bodies are sent when the event has them');
      if (exporter.plainBody) assert.equal(request?.text, encodeOtlpTraces([item.event]));
    });

    it('sends no bodies in privacy mode and no absent optional parts', async () => {
      await destination.send([outboxItem(privateEvent())], context());
      const [request] = receiver.requests;
      assert.ok(!request?.text.includes('Say hello.') && !request?.text.includes('Hello.'));
      const keys = Object.keys(attributeMap(spansOf(request)[0]?.attributes ?? []));
      for (const key of BODY_KEYS) assert.ok(!keys.includes(key), `${key} must not be sent`);
      assert.deepEqual(
        keys.filter((key) =>
          /^(llm\.(input|output)_messages|switchyard\.(cost|identity|request)\.)/.test(key),
        ),
        [],
      );
      assert.ok(keys.includes('gen_ai.usage.output_tokens'), 'usage stays in privacy mode');
    });

    it('leaves out cost, identity and request context when the event has none', async () => {
      await destination.send(
        [outboxItem(sampleEvent({ cost: null, identity: null, request_context: null }))],
        context(),
      );
      const keys = Object.keys(attributeMap(spansOf(receiver.requests[0])[0]?.attributes ?? []));
      assert.deepEqual(
        keys.filter((key) => /^switchyard\.(cost|identity|request)\./.test(key)),
        [],
      );
      assert.ok(keys.includes('gen_ai.prompt'));
    });

    it('adds custom headers without letting them replace its own', async () => {
      const config = exporter.config(receiver.url);
      const custom: Record<string, string> = {
        ...(config.headers as Record<string, string> | undefined),
        'X-Team': 'ml-platform',
        'content-type': 'text/plain',
      };
      if (exporter.fixedHeader) {
        custom[exporter.fixedHeader] = 'forged';
        custom[exporter.fixedHeader.toUpperCase()] = 'forged';
      }
      const item = outboxItem();
      await destination.send([item], context({ ...config, headers: custom }));
      const [request] = receiver.requests;
      assert.equal(request?.headers['x-team'], 'ml-platform');
      assert.equal(request?.headers['content-type'], 'application/json');
      for (const [name, value] of Object.entries(exporter.auth)) assert.equal(request?.headers[name], value);
      if (exporter.fixedHeader === 'Idempotency-Key') {
        assert.equal(request?.headers['idempotency-key'], item.idempotencyKey);
      }
      assert.equal(spansOf(request).length, 1, 'the receiver accepted the request');
    });

    it('reports a 500 as a retryable failure', async () => {
      receiver.reply = () => ({ status: 500, body: { code: 13, message: 'internal error' } });
      const error = await deliveryFailure(destination.send([outboxItem()], context()));
      assert.equal(error.retryable, true);
      assert.equal(error.status, 500);
    });

    it('honours Retry-After on a 429', async () => {
      receiver.reply = () => ({
        status: 429,
        headers: { 'retry-after': '7' },
        body: { code: 8, message: 'slow down' },
      });
      const error = await deliveryFailure(destination.send([outboxItem()], context()));
      assert.equal(error.retryable, true);
      assert.equal(error.retryAfterMs, 7000);
    });

    it('does not retry a 400 or refused credentials', async () => {
      receiver.reply = () => ({ status: 400, body: { code: 3, message: 'bad request' } });
      const badRequest = await deliveryFailure(destination.send([outboxItem()], context()));
      assert.equal(badRequest.retryable, false);
      assert.equal(badRequest.status, 400);
      if (exporter.wrongCredentials) {
        receiver.reply = otlpService(exporter);
        const refused = await deliveryFailure(
          destination.send([outboxItem()], context(exporter.wrongCredentials(receiver.url))),
        );
        assert.equal(refused.retryable, false);
        assert.equal(refused.status, exporter.unauthorizedStatus);
      }
    });

    it('sends a retried batch with the same span ids (idempotent at the receiver)', async () => {
      const items = Array.from({ length: Math.min(exporter.maxBatch, 3) }, (_, n) =>
        outboxItem(eventNumber(n)),
      );
      await destination.send(items, context());
      await destination.send(
        items.map((item) => ({ ...item, attempt: 2 })),
        context(),
      );
      const half = receiver.requests.length / 2;
      const first = receiver.requests.slice(0, half);
      const second = receiver.requests.slice(half);
      assert.deepEqual(
        second.map((request) => request.text),
        first.map((request) => request.text),
      );
      const spanIds = first.flatMap((request) => spansOf(request).map((span) => span.spanId));
      assert.deepEqual(
        spanIds,
        items.map((item) => item.event.trace.span_id),
      );
      if (exporter.fixedHeader === 'Idempotency-Key') {
        assert.deepEqual(
          second.map((request) => request.headers['idempotency-key']),
          items.map((item) => item.idempotencyKey),
        );
      }
    });

    it(`sends a batch as ${exporter.eventsPerRequest === 1 ? 'one request per event' : 'one request'}`, async () => {
      const items = [0, 1, 2].map((n) => outboxItem(eventNumber(n)));
      await destination.send(items, context());
      assert.equal(receiver.requests.length, exporter.eventsPerRequest === 1 ? 3 : 1);
      assert.deepEqual(
        receiver.requests.flatMap((request) => spansOf(request).map((span) => span.spanId)),
        items.map((item) => item.event.trace.span_id),
      );
    });

    it('tests the connection with an empty OTLP payload, same URL and auth', async () => {
      const { destination: _destination, ...testContext } = context();
      await destination.testConnection(testContext);
      const [request] = receiver.requests;
      assert.equal(request?.text, '{"resourceSpans":[]}');
      assert.equal(request?.headers['x-test-connection'], 'true');
      assert.equal(request?.method, exporter.method);
    });

    it('passes the connection test on a 400 and fails it otherwise', async () => {
      const { destination: _destination, ...testContext } = context();
      receiver.reply = () => ({ status: 400, body: { code: 3, message: 'empty request' } });
      await destination.testConnection(testContext);
      receiver.reply = () => ({ status: 503, body: 'unavailable' });
      assert.equal((await deliveryFailure(destination.testConnection(testContext))).status, 503);
      if (exporter.wrongCredentials) {
        receiver.reply = otlpService(exporter);
        const { destination: _d, ...wrong } = context(exporter.wrongCredentials(receiver.url));
        const error = await deliveryFailure(destination.testConnection(wrong));
        assert.equal(error.status, exporter.unauthorizedStatus);
      }
    });
  });
}

describe('webhook specifics', () => {
  let receiver: FakeReceiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  it('stops a batch at a failed request: its event gets the failure, the later ones are reported unsent', async () => {
    const items = [0, 1, 2, 3].map((n) => outboxItem(eventNumber(n)));
    let calls = 0;
    receiver.reply = () => {
      calls += 1;
      return calls <= 2
        ? { status: 200, body: {} }
        : { status: 503, headers: { 'retry-after': '7' }, body: 'busy' };
    };
    const outcome = await webhookDestination.send(items, exportContext({ url: `${receiver.url}/in` }, http));
    // In order, one request per event: two delivered, the third refused, the fourth never sent.
    assert.deepEqual(
      receiver.requests.map((request) => request.headers['idempotency-key']),
      items.slice(0, 3).map((item) => item.idempotencyKey),
    );
    assert.equal(outcome?.rejected, undefined);
    assert.deepEqual(outcome?.stopped?.failed, [2]);
    assert.deepEqual(outcome?.stopped?.unsent, [3]);
    assert.equal(outcome?.stopped?.error.status, 503);
    assert.equal(outcome?.stopped?.error.retryAfterMs, 7000);
  });

  it('reports a failed first request as stopped too, and throws for a batch of one', async () => {
    receiver.reply = () => ({ status: 400, body: 'bad event' });
    const items = [0, 1, 2].map((n) => outboxItem(eventNumber(n)));
    const context = exportContext({ url: `${receiver.url}/in` }, http);
    const outcome = await webhookDestination.send(items, context);
    assert.equal(receiver.requests.length, 1);
    assert.deepEqual(outcome?.stopped?.failed, [0]);
    assert.deepEqual(outcome?.stopped?.unsent, [1, 2]);
    assert.equal(outcome?.stopped?.error.retryable, false);
    const error = await deliveryFailure(webhookDestination.send([items[0]!], context));
    assert.equal(error.status, 400);
  });

  it('uses PUT when configured, for deliveries and the connection test', async () => {
    const config = { url: `${receiver.url}/ingest`, method: 'PUT' as const };
    await webhookDestination.send([outboxItem()], exportContext(config, http));
    const { destination: _destination, ...testContext } = exportContext(config, http);
    await webhookDestination.testConnection(testContext);
    assert.deepEqual(
      receiver.requests.map((request) => request.method),
      ['PUT', 'PUT'],
    );
  });

  it('sends the item idempotency key', async () => {
    const item = outboxItem();
    await webhookDestination.send([item], exportContext({ url: receiver.url }, http));
    assert.match(item.idempotencyKey, /^[0-9a-f]{32}$/);
    assert.equal(receiver.requests[0]?.headers['idempotency-key'], item.idempotencyKey);
  });
});

describe('otel-collector specifics', () => {
  let receiver: FakeReceiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  it('treats a partial success that rejects every span as a permanent failure', async () => {
    receiver.reply = () => ({
      status: 200,
      body: { partialSuccess: { rejectedSpans: '1', errorMessage: 'span name too long' } },
    });
    const error = await deliveryFailure(
      otelCollectorDestination.send([outboxItem()], exportContext({ endpoint: receiver.url }, http)),
    );
    assert.equal(error.retryable, false);
    assert.match(error.message, /span name too long/);
  });

  it('counts a partial success that rejects only some spans as delivered', async () => {
    receiver.reply = () => ({
      status: 200,
      body: { partialSuccess: { rejectedSpans: '1', errorMessage: 'one bad' } },
    });
    const items = [0, 1].map((n) => outboxItem(eventNumber(n)));
    assert.equal(
      await otelCollectorDestination.send(items, exportContext({ endpoint: receiver.url }, http)),
      undefined,
    );
  });

  it('reports a dropped connection as retryable', async () => {
    receiver.reply = () => 'close';
    const error = await deliveryFailure(
      otelCollectorDestination.send([outboxItem()], exportContext({ endpoint: receiver.url }, http)),
    );
    assert.equal(error.retryable, true);
    assert.equal(error.status, null);
  });
});

describe('arize specifics', () => {
  let receiver: FakeReceiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  const config = (url: string) => ({
    apiKey: 'ak',
    spaceKey: 'space',
    modelId: 'switchyard-prod',
    baseUrl: `${url}/`,
  });

  it('names the project on the resource and describes the span with OpenInference', async () => {
    const event = sampleEvent({
      output: [
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' }],
        },
      ],
    });
    await arizeDestination.send([outboxItem(event)], exportContext(config(receiver.url), http));
    const [request] = receiver.requests;
    assert.equal(request?.url, '/v1/traces', 'a trailing slash on baseUrl is not doubled');
    const body = request?.json as OtlpJsonRequest;
    const resource = attributeMap(body.resourceSpans[0]?.resource.attributes ?? []);
    assert.deepEqual(resource['openinference.project.name'], { stringValue: 'switchyard-prod' });
    assert.deepEqual(resource.model_id, { stringValue: 'switchyard-prod' });
    const attributes = attributeMap(spansOf(request)[0]?.attributes ?? []);
    assert.deepEqual(attributes['openinference.span.kind'], { stringValue: 'LLM' });
    assert.deepEqual(attributes['llm.model_name'], { stringValue: 'openai/gpt-4o' });
    assert.deepEqual(attributes['llm.provider'], { stringValue: 'openai' });
    assert.deepEqual(attributes['llm.token_count.prompt'], { intValue: '100' });
    assert.deepEqual(attributes['llm.token_count.completion'], { intValue: '50' });
    assert.deepEqual(attributes['llm.token_count.total'], { intValue: '150' });
    assert.deepEqual(attributes['llm.cost.total'], { doubleValue: 0.00075 });
    assert.deepEqual(attributes['llm.cost.prompt'], { doubleValue: 0.00025 });
    assert.deepEqual(attributes['llm.invocation_parameters'], {
      stringValue: '{"temperature":0.2,"max_output_tokens":256}',
    });
    assert.deepEqual(attributes.metadata, { stringValue: '{"order_id":"ORD-12345"}' });
    assert.deepEqual(attributes['llm.input_messages.0.message.role'], { stringValue: 'system' });
    assert.deepEqual(attributes['llm.input_messages.1.message.content'], { stringValue: 'Say hello.' });
    assert.deepEqual(attributes['llm.output_messages.0.message.tool_calls.0.tool_call.function.name'], {
      stringValue: 'lookup',
    });
    assert.deepEqual(attributes['llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments'], {
      stringValue: '{"q":"x"}',
    });
    assert.ok(attributes['input.value'] && attributes['output.value']);
  });

  it('marks embeddings as EMBEDDING spans and sends no prompt cost breakdown without cost', async () => {
    const event = sampleEvent({ operation: 'embeddings', api_type: 'embeddings', output: null, cost: null });
    await arizeDestination.send([outboxItem(event)], exportContext(config(receiver.url), http));
    const attributes = attributeMap(spansOf(receiver.requests[0])[0]?.attributes ?? []);
    assert.deepEqual(attributes['openinference.span.kind'], { stringValue: 'EMBEDDING' });
    assert.deepEqual(attributes['embedding.model_name'], { stringValue: 'openai/gpt-4o' });
    assert.equal(attributes['llm.cost.prompt'], undefined);
  });
});

describe('newrelic specifics', () => {
  let receiver: FakeReceiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  it('calls the region host unless an origin override is set', () => {
    assert.deepEqual(newrelicDestination.urls({ licenseKey: 'k' }), ['https://otlp.nr-data.net/v1/traces']);
    assert.deepEqual(newrelicDestination.urls({ licenseKey: 'k', region: 'us' }), [
      'https://otlp.nr-data.net/v1/traces',
    ]);
  });

  it('keeps requests under 1 MB and attribute values under 4095 characters', async () => {
    const long = 'x'.repeat(20_000);
    const items = Array.from({ length: 100 }, (_, n) =>
      outboxItem(
        eventNumber(
          n,
          sampleEvent({
            input: [{ role: 'user', content: long }],
            output: [{ role: 'assistant', content: long }],
          }),
        ),
      ),
    );
    const context = { ...exportContext({ licenseKey: 'k' }, http), originOverride: receiver.url };
    assert.equal(await newrelicDestination.send(items, context), undefined);
    assert.ok(receiver.requests.length > 1, 'the batch was split');
    for (const request of receiver.requests) assert.ok(request.raw.length <= 1_000_000);
    const spans = receiver.requests.flatMap((request) => spansOf(request));
    assert.deepEqual(
      spans.map((span) => span.spanId),
      items.map((item) => item.event.trace.span_id),
    );
    const prompt = attributeMap(spans[0]?.attributes ?? [])['gen_ai.prompt']?.stringValue ?? '';
    assert.equal(prompt.length, 4095);
  });

  it('reports the items of a failed later request as stopped, not the delivered ones', async () => {
    const long = 'y'.repeat(20_000);
    const items = Array.from({ length: 100 }, (_, n) =>
      outboxItem(eventNumber(n, sampleEvent({ input: [{ role: 'user', content: long }] }))),
    );
    let calls = 0;
    receiver.reply = () => {
      calls += 1;
      return calls === 1 ? { status: 200, body: {} } : { status: 503, body: 'busy' };
    };
    const context = { ...exportContext({ licenseKey: 'k' }, http), originOverride: receiver.url };
    const outcome = await newrelicDestination.send(items, context);
    const delivered = spansOf(receiver.requests[0]).length;
    assert.ok(delivered > 0 && delivered < 100);
    const stopped = outcome?.stopped;
    assert.equal(stopped?.error.status, 503);
    assert.equal(stopped?.error.retryable, true);
    const sentSecond = spansOf(receiver.requests[1]).length;
    assert.deepEqual(
      stopped?.failed,
      items.slice(delivered, delivered + sentSecond).map((_, n) => delivered + n),
    );
    assert.deepEqual(
      [...(stopped?.failed ?? []), ...(stopped?.unsent ?? [])],
      items.slice(delivered).map((_, n) => delivered + n),
    );
  });
});

describe('sentry specifics', () => {
  let receiver: FakeReceiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  it('takes the public key from a DSN that also carries a secret', async () => {
    const config = {
      dsn: 'https://pubkey9:legacysecret@o1.ingest.us.sentry.io/4505',
      otlpEndpoint: `${receiver.url}/api/4505/integration/otlp/v1/traces`,
    };
    assert.deepEqual(sentryDestination.validate?.(config), []);
    await sentryDestination.send([outboxItem()], exportContext(config, http));
    assert.equal(receiver.requests[0]?.headers['x-sentry-auth'], 'sentry sentry_key=pubkey9');
    assert.ok(!receiver.requests[0]?.text.includes('legacysecret'));
  });
});

describe('ramp specifics', () => {
  let receiver: FakeReceiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  it('adds the cost attribute Ramp reads', async () => {
    await rampDestination.send(
      [outboxItem(sampleEvent({ total_cost: 2 }))],
      exportContext({ apiKey: 'k', baseUrl: receiver.url }, http),
    );
    const attributes = attributeMap(spansOf(receiver.requests[0])[0]?.attributes ?? []);
    assert.deepEqual(attributes['gen_ai.usage.total_cost'], { doubleValue: 2 });
    assert.deepEqual(attributes['gen_ai.usage.cost'], { doubleValue: 2 });
  });
});
