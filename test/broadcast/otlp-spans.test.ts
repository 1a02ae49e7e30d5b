import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { BroadcastEvent } from '../../src/broadcast/broadcast-event.js';
import { spanName } from '../../src/broadcast/exporters/exporter-support.js';
import { EMPTY_OTLP_REQUEST } from '../../src/broadcast/exporters/otlp-delivery.js';
import {
  encodeOtlpTraces,
  type OtlpJsonKeyValue,
  type OtlpJsonRequest,
  type OtlpJsonSpan,
  type OtlpJsonValue,
  SWITCHYARD_VERSION,
} from '../../src/broadcast/otlp-spans.js';
import { privateEvent, sampleEvent } from '../helpers/broadcast-fixtures.js';

function encode(events: BroadcastEvent[], options?: Parameters<typeof encodeOtlpTraces>[1]): OtlpJsonRequest {
  return JSON.parse(encodeOtlpTraces(events, options)) as OtlpJsonRequest;
}

function attributes(list: OtlpJsonKeyValue[]): Record<string, OtlpJsonValue> {
  const map: Record<string, OtlpJsonValue> = {};
  for (const { key, value } of list) {
    assert.equal(map[key], undefined, `attribute ${key} appears twice`);
    map[key] = value;
  }
  return map;
}

function onlySpan(request: OtlpJsonRequest): OtlpJsonSpan {
  assert.equal(request.resourceSpans.length, 1);
  const [resourceSpans] = request.resourceSpans;
  assert.equal(resourceSpans?.scopeSpans.length, 1);
  const spans = resourceSpans?.scopeSpans[0]?.spans ?? [];
  assert.equal(spans.length, 1);
  return spans[0] as OtlpJsonSpan;
}

function withTrace(overrides: Partial<BroadcastEvent['trace']>, event = sampleEvent()): BroadcastEvent {
  return { ...event, trace: { ...event.trace, ...overrides } };
}

const BODY_KEYS = [
  'gen_ai.prompt',
  'gen_ai.completion',
  'input.value',
  'output.value',
  'input.mime_type',
  'output.mime_type',
];

describe('OTLP spans from broadcast events', () => {
  it('builds one CLIENT span with the reference attributes, checked one by one', () => {
    const request = encode([sampleEvent()]);
    const [resourceSpans] = request.resourceSpans;
    assert.deepEqual(attributes(resourceSpans?.resource.attributes ?? []), {
      'service.name': { stringValue: 'switchyard' },
      'service.version': { stringValue: SWITCHYARD_VERSION },
      'switchyard.trace.id': { stringValue: '4bf92f3577b34da6a3ce929d0e0e4736' },
    });
    assert.deepEqual(resourceSpans?.scopeSpans[0]?.scope, {
      name: 'switchyard.broadcast',
      version: SWITCHYARD_VERSION,
    });

    const span = onlySpan(request);
    assert.equal(span.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(span.spanId, '00f067aa0ba902b7');
    assert.equal(span.parentSpanId, undefined);
    assert.equal(span.name, 'openai/gpt-4o');
    assert.equal(span.kind, 3, 'SPAN_KIND_CLIENT');
    assert.equal(span.startTimeUnixNano, '1795341600000000000');
    assert.equal(span.endTimeUnixNano, '1795341601250000000');
    assert.deepEqual(span.status, { code: 0 });

    const prompt = JSON.stringify([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Say hello.' },
    ]);
    const completion = JSON.stringify([{ role: 'assistant', content: 'Hello.' }]);
    assert.deepEqual(attributes(span.attributes), {
      'gen_ai.operation.name': { stringValue: 'chat' },
      'gen_ai.system': { stringValue: 'openai' },
      'gen_ai.request.model': { stringValue: 'openai/gpt-4o' },
      'gen_ai.response.model': { stringValue: 'openai/gpt-4o' },
      'gen_ai.response.id': { stringValue: 'gen-1732276800-abcdefghijklmnop' },
      'gen_ai.usage.input_tokens': { intValue: '100' },
      'gen_ai.usage.output_tokens': { intValue: '50' },
      'gen_ai.usage.total_tokens': { intValue: '150' },
      'gen_ai.usage.prompt_tokens': { intValue: '100' },
      'gen_ai.usage.completion_tokens': { intValue: '50' },
      'gen_ai.usage.input_tokens.cached': { intValue: '0' },
      'gen_ai.usage.output_tokens.reasoning': { intValue: '0' },
      'switchyard.usage.cache_write_tokens': { intValue: '0' },
      'gen_ai.response.finish_reasons': { arrayValue: { values: [{ stringValue: 'stop' }] } },
      'gen_ai.usage.cost': { doubleValue: 0.00075 },
      'gen_ai.request.temperature': { doubleValue: 0.2 },
      'gen_ai.request.max_tokens': { intValue: '256' },
      'user.id': { stringValue: 'user_12345' },
      'session.id': { stringValue: 'session_abc' },
      'trace.metadata.order_id': { stringValue: 'ORD-12345' },
      'switchyard.status': { stringValue: 'completed' },
      'switchyard.api_type': { stringValue: 'chat-completions' },
      'switchyard.provider_name': { stringValue: 'OpenAI' },
      'switchyard.api_key_name': { stringValue: 'production app' },
      'switchyard.streamed': { boolValue: false },
      'switchyard.latency_ms': { intValue: '1250' },
      'switchyard.first_token_ms': { intValue: '300' },
      'switchyard.generation_time_ms': { intValue: '950' },
      'switchyard.tools.offered': { intValue: '0' },
      'switchyard.tools.called': { intValue: '0' },
      'gen_ai.prompt': { stringValue: prompt },
      'input.value': { stringValue: prompt },
      'input.mime_type': { stringValue: 'application/json' },
      'gen_ai.completion': { stringValue: completion },
      'output.value': { stringValue: completion },
      'output.mime_type': { stringValue: 'application/json' },
      'switchyard.cost.total_usd': { doubleValue: 0.00075 },
      'switchyard.cost.input_usd': { doubleValue: 0.00025 },
      'switchyard.cost.output_usd': { doubleValue: 0.0005 },
      'switchyard.cost.is_byok': { boolValue: false },
      'switchyard.cost.currency': { stringValue: 'USD' },
      'switchyard.identity.api_key_hash': { stringValue: 'a'.repeat(64) },
      'switchyard.identity.workspace_id': { stringValue: '550e8400-e29b-41d4-a716-446655440000' },
      'switchyard.request.app_referer': { stringValue: 'https://example.com' },
      'switchyard.request.app_title': { stringValue: 'Example' },
      'switchyard.request.http_status': { intValue: '200' },
      'switchyard.request.attempts': { intValue: '1' },
      'switchyard.request.region': { stringValue: 'global' },
    });
  });

  it('reads service.version from package.json', () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    assert.equal(SWITCHYARD_VERSION, manifest.version);
  });

  it('sends no bodies in privacy mode but keeps tokens, cost, timing and metadata', () => {
    const span = onlySpan(encode([privateEvent()]));
    const found = attributes(span.attributes);
    for (const key of BODY_KEYS) assert.equal(found[key], undefined, `${key} must not be sent`);
    assert.deepEqual(found['gen_ai.usage.input_tokens'], { intValue: '100' });
    assert.deepEqual(found['gen_ai.usage.cost'], { doubleValue: 0.00075 });
    assert.deepEqual(found['switchyard.latency_ms'], { intValue: '1250' });
    assert.deepEqual(found['trace.metadata.order_id'], { stringValue: 'ORD-12345' });
    assert.ok(!encodeOtlpTraces([privateEvent()]).includes('Say hello.'));
  });

  it('sends only the bodies that are present', () => {
    const found = attributes(onlySpan(encode([sampleEvent({ output: null })])).attributes);
    assert.ok(found['gen_ai.prompt']);
    assert.equal(found['gen_ai.completion'], undefined);
    assert.equal(found['output.value'], undefined);
  });

  it('sends no cost, identity or request attributes when those parts are null', () => {
    const event = sampleEvent({ cost: null, identity: null, request_context: null });
    const keys = Object.keys(attributes(onlySpan(encode([event])).attributes));
    for (const prefix of ['switchyard.cost.', 'switchyard.identity.', 'switchyard.request.']) {
      assert.deepEqual(
        keys.filter((key) => key.startsWith(prefix)),
        [],
        `${prefix}* must be absent`,
      );
    }
    assert.ok(keys.includes('gen_ai.prompt'), 'bodies stay: only the optional parts are withheld');
    assert.ok(keys.includes('gen_ai.usage.cost'), 'the total cost is always part of the event');
  });

  it('writes request metadata and the member id when the request context and identity carry them', () => {
    const event = sampleEvent({
      identity: { api_key_hash: 'b'.repeat(64), workspace_id: 'w', member_user_id: 'member-7' },
      request_context: {
        app_referer: null,
        app_title: null,
        http_status: 200,
        attempts: 2,
        region: 'europe',
        request_metadata: { ticket: 'T-1' },
      },
    });
    const found = attributes(onlySpan(encode([event])).attributes);
    assert.deepEqual(found['switchyard.identity.member_user_id'], { stringValue: 'member-7' });
    assert.deepEqual(found['switchyard.request.metadata.ticket'], { stringValue: 'T-1' });
    assert.deepEqual(found['switchyard.request.attempts'], { intValue: '2' });
    assert.equal(found['switchyard.request.app_referer'], undefined);
  });

  it('keeps nanosecond timestamps exact, beyond what a double can hold', () => {
    const event = sampleEvent({
      start_time_unix_nano: '1795341600123456789',
      end_time_unix_nano: '1795341601987654321',
    });
    assert.notEqual(
      String(Number(event.start_time_unix_nano)),
      event.start_time_unix_nano,
      'the value is not a safe double',
    );
    const span = onlySpan(encode([event]));
    assert.equal(span.startTimeUnixNano, '1795341600123456789');
    assert.equal(span.endTimeUnixNano, '1795341601987654321');
  });

  it('sends trace and span ids as lowercase hex (not base64), with the parent span id', () => {
    const span = onlySpan(encode([withTrace({ parent_span_id: 'b7ad6b7169203331' })]));
    assert.match(span.traceId, /^[0-9a-f]{32}$/);
    assert.match(span.spanId, /^[0-9a-f]{16}$/);
    assert.equal(span.parentSpanId, 'b7ad6b7169203331');
    // W3C sampled flag plus OTLP's "has is_remote" and "is remote" bits: the parent is the client's span.
    assert.equal(span.flags, 0x301);
  });

  it('marks a failed generation with an ERROR status carrying the error message', () => {
    const event = sampleEvent({
      status: 'failed',
      error: { type: 'upstream_error', message: 'Provider returned 502' },
      output: null,
      finish_reason: null,
    });
    const span = onlySpan(encode([event]));
    assert.deepEqual(span.status, { code: 2, message: 'Provider returned 502' });
    const found = attributes(span.attributes);
    assert.deepEqual(found['error.type'], { stringValue: 'upstream_error' });
    assert.deepEqual(found['switchyard.error.message'], { stringValue: 'Provider returned 502' });
    assert.equal(found['gen_ai.response.finish_reasons'], undefined);
  });

  it('puts several events in one request, one resource per trace', () => {
    const second = withTrace({ span_id: '1111111111111111' }, sampleEvent({ generation_id: 'gen-2' }));
    const other = withTrace({ trace_id: 'f'.repeat(32), span_id: '2222222222222222' });
    const request = encode([sampleEvent(), second, other]);
    assert.equal(request.resourceSpans.length, 2);
    const spanIds = request.resourceSpans.map((resourceSpans) =>
      resourceSpans.scopeSpans.flatMap((scope) => scope.spans.map((span) => span.spanId)),
    );
    assert.deepEqual(spanIds, [['00f067aa0ba902b7', '1111111111111111'], ['2222222222222222']]);
    const traceIds = request.resourceSpans.map(
      (resourceSpans) => attributes(resourceSpans.resource.attributes)['switchyard.trace.id']?.stringValue,
    );
    assert.deepEqual(traceIds, ['4bf92f3577b34da6a3ce929d0e0e4736', 'f'.repeat(32)]);
  });

  it('names the span generation_name, then span_name, trace_name, model, requested model', () => {
    const names = { generation_name: 'gen', span_name: 'span', trace_name: 'trace' };
    assert.equal(spanName(withTrace(names)), 'gen');
    assert.equal(spanName(withTrace({ ...names, generation_name: null })), 'span');
    assert.equal(spanName(withTrace({ trace_name: 'trace' })), 'trace');
    assert.equal(
      spanName(sampleEvent({ model: null, requested_model: 'openrouter/auto' })),
      'openrouter/auto',
    );
    assert.equal(onlySpan(encode([withTrace(names)])).name, 'gen');
  });

  it('keeps whole-number doubles as doubleValue and maps request parameters', () => {
    const event = sampleEvent({
      total_cost: 0,
      parameters: {
        temperature: 1,
        top_p: 0.9,
        max_tokens: 64,
        seed: 7,
        stop: '###',
        logprobs: true,
        top_a: 0.5,
      },
    });
    const found = attributes(onlySpan(encode([event])).attributes);
    assert.deepEqual(found['gen_ai.usage.cost'], { doubleValue: 0 });
    assert.deepEqual(found['gen_ai.request.temperature'], { doubleValue: 1 });
    assert.deepEqual(found['gen_ai.request.top_p'], { doubleValue: 0.9 });
    assert.deepEqual(found['gen_ai.request.max_tokens'], { intValue: '64' });
    assert.deepEqual(found['gen_ai.request.seed'], { intValue: '7' });
    assert.deepEqual(found['switchyard.parameters.stop'], { stringValue: '###' });
    assert.deepEqual(found['switchyard.parameters.logprobs'], { boolValue: true });
    assert.deepEqual(found['switchyard.parameters.top_a'], { doubleValue: 0.5 });
  });

  it('describes an embeddings generation', () => {
    const event = sampleEvent({
      operation: 'embeddings',
      api_type: 'embeddings',
      output: null,
      finish_reason: null,
    });
    const found = attributes(onlySpan(encode([event])).attributes);
    assert.deepEqual(found['gen_ai.operation.name'], { stringValue: 'embeddings' });
    assert.deepEqual(found['switchyard.api_type'], { stringValue: 'embeddings' });
  });

  it('lets an exporter add resource and span attributes and cut long values', () => {
    const request = encode([sampleEvent()], {
      resourceAttributes: { model_id: 'my-project' },
      spanAttributes: (event, writer) => {
        writer.double('vendor.cost', event.total_cost);
        writer.string('gen_ai.system', 'overridden');
      },
      maxAttributeLength: 10,
    });
    const [resourceSpans] = request.resourceSpans;
    assert.deepEqual(attributes(resourceSpans?.resource.attributes ?? []).model_id, {
      stringValue: 'my-project',
    });
    const found = attributes(onlySpan(request).attributes);
    assert.deepEqual(found['vendor.cost'], { doubleValue: 0.00075 });
    assert.deepEqual(found['gen_ai.system'], { stringValue: 'overridden' });
    assert.equal(found['gen_ai.prompt']?.stringValue?.length, 10);
    assert.deepEqual(found['gen_ai.response.finish_reasons'], {
      arrayValue: { values: [{ stringValue: 'stop' }] },
    });
  });

  it('encodes the same events to the same bytes (a retried batch is identical)', () => {
    assert.equal(
      encodeOtlpTraces([sampleEvent(), privateEvent()]),
      encodeOtlpTraces([sampleEvent(), privateEvent()]),
    );
  });

  it('has an empty request for connection tests', () => {
    assert.deepEqual(JSON.parse(EMPTY_OTLP_REQUEST), { resourceSpans: [] });
    assert.deepEqual(encode([]), { resourceSpans: [] });
  });
});
