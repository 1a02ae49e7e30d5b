import { readFileSync } from 'node:fs';
import {
  type Attributes,
  type HrTime,
  SpanKind,
  type SpanStatus,
  SpanStatusCode,
  TraceFlags,
} from '@opentelemetry/api';
// The serializer's own first step, imported directly: JsonTraceSerializer.serializeRequest would
// stringify and encode the request, which normalizeNumbers must then decode and parse again. The
// version is pinned exactly (package.json); test/broadcast/otlp-spans.test.ts checks the output.
import { JSON_ENCODER } from '@opentelemetry/otlp-transformer/build/src/common/utils.js';
import { createExportTraceServiceRequest } from '@opentelemetry/otlp-transformer/build/src/trace/internal.js';
import { type Resource, resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { sliceWhole } from '../platform/whole-characters.js';
import type { BroadcastEvent } from './broadcast-event.js';
import { spanName } from './exporters/exporter-support.js';

/**
 * Turns broadcast events into an OTLP/HTTP JSON `ExportTraceServiceRequest` (reference §3.3): one
 * CLIENT span per generation, attributes after the OTel GenAI semantic conventions, serialized by
 * the maintained @opentelemetry/otlp-transformer so the envelope (hex ids, decimal-string nanos,
 * span kind and flags) is exactly what OTLP receivers expect.
 */

/**
 * Read once at load: `../../package.json` is the repository's manifest both from `src/broadcast`
 * (tsx, tests) and from `dist/broadcast` (the build's rootDir is `src`).
 */
export const SWITCHYARD_VERSION: string = readPackageVersion();

function readPackageVersion(): string {
  try {
    const manifest: unknown = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    );
    const version = (manifest as { version?: unknown }).version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/**
 * One span's attributes. OTLP/JSON cannot tell the integer 1 from the double 1.0 once they are JS
 * numbers, and the transformer writes every whole number as `intValue`; the writer remembers which
 * keys are doubles so a temperature of 1 or a cost of 0 still goes out as `doubleValue`.
 */
export class SpanAttributeWriter {
  readonly values: Attributes = {};
  readonly doubles = new Set<string>();
  readonly #maxLength: number;

  constructor(maxLength = Number.POSITIVE_INFINITY) {
    this.#maxLength = maxLength;
  }

  string(key: string, value: string | null | undefined): void {
    if (value === null || value === undefined) return;
    this.values[key] = sliceWhole(value, this.#maxLength);
  }

  strings(key: string, values: readonly string[]): void {
    this.values[key] = values.map((value) => value.slice(0, this.#maxLength));
  }

  integer(key: string, value: number | null | undefined): void {
    if (value === null || value === undefined || !Number.isFinite(value)) return;
    this.values[key] = Math.trunc(value);
  }

  double(key: string, value: number | null | undefined): void {
    if (value === null || value === undefined || !Number.isFinite(value)) return;
    this.values[key] = value;
    this.doubles.add(key);
  }

  /** A number whose kind the data decides (a free-form parameter). */
  number(key: string, value: number): void {
    if (Number.isInteger(value)) this.integer(key, value);
    else this.double(key, value);
  }

  boolean(key: string, value: boolean | null | undefined): void {
    if (value === null || value === undefined) return;
    this.values[key] = value;
  }
}

/** What an exporter adds to the common span (Arize's project name and OpenInference attributes). */
export interface OtlpTraceOptions {
  /** Added to every resource, after (and over) the common ones. */
  resourceAttributes?: Record<string, string>;
  /** Adds attributes to each event's span, after (and over) the common ones. */
  spanAttributes?: (event: BroadcastEvent, attributes: SpanAttributeWriter) => void;
  /** Longest string attribute value kept (a receiver's documented limit); longer ones are cut. */
  maxAttributeLength?: number;
}

/** The OTLP/HTTP JSON body for these events (`{"resourceSpans":[…]}`), spans of a trace under one resource. */
export function encodeOtlpTraces(events: readonly BroadcastEvent[], options: OtlpTraceOptions = {}): string {
  const resources = new Map<string, Resource>();
  const doublesBySpan = new Map<string, Set<string>>();
  const spans = events.map((event) => {
    let resource = resources.get(event.trace.trace_id);
    if (!resource) {
      resource = traceResource(event, options);
      resources.set(event.trace.trace_id, resource);
    }
    const attributes = new SpanAttributeWriter(options.maxAttributeLength);
    writeSpanAttributes(event, attributes);
    options.spanAttributes?.(event, attributes);
    // Keyed by span id to find the span again in the grouped output; a repeated id merges its sets.
    const known = doublesBySpan.get(event.trace.span_id);
    doublesBySpan.set(
      event.trace.span_id,
      known ? new Set([...known, ...attributes.doubles]) : attributes.doubles,
    );
    return readableSpan(event, resource, attributes.values);
  });
  const request = createExportTraceServiceRequest(spans, JSON_ENCODER) as unknown as OtlpJsonRequest;
  normalizeNumbers(request, doublesBySpan);
  return JSON.stringify(request);
}

/**
 * The resource is per trace: `switchyard.trace.id` names the trace (as `openrouter.trace.id` does in
 * the reference), so spans of different traces in one batch cannot share it.
 */
function traceResource(event: BroadcastEvent, options: OtlpTraceOptions): Resource {
  return resourceFromAttributes({
    'service.name': 'switchyard',
    'service.version': SWITCHYARD_VERSION,
    'switchyard.trace.id': event.trace.trace_id,
    ...options.resourceAttributes,
  });
}

const SCOPE: ReadableSpan['instrumentationScope'] = {
  name: 'switchyard.broadcast',
  version: SWITCHYARD_VERSION,
};

function readableSpan(event: BroadcastEvent, resource: Resource, attributes: Attributes): ReadableSpan {
  const { trace_id: traceId, span_id: spanId, parent_span_id: parentSpanId } = event.trace;
  const start = BigInt(event.start_time_unix_nano);
  const end = BigInt(event.end_time_unix_nano);
  const spanContext = { traceId, spanId, traceFlags: TraceFlags.SAMPLED };
  return {
    name: spanName(event),
    kind: SpanKind.CLIENT,
    spanContext: () => spanContext,
    // The parent is the client's own span (its `trace.parent_span_id`): remote by definition.
    parentSpanContext: parentSpanId
      ? { traceId, spanId: parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: true }
      : undefined,
    startTime: hrTime(start),
    endTime: hrTime(end),
    duration: hrTime(end > start ? end - start : 0n),
    status: spanStatus(event),
    attributes,
    links: [],
    events: [],
    ended: true,
    resource,
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/**
 * `[seconds, nanoseconds]` from exact integer nanoseconds: a Unix time in nanoseconds (~1.8e18) is
 * beyond a double's 2^53, so the decimal string must never pass through a JS number whole.
 */
function hrTime(nanos: bigint): HrTime {
  return [Number(nanos / 1_000_000_000n), Number(nanos % 1_000_000_000n)];
}

function spanStatus(event: BroadcastEvent): SpanStatus {
  if (event.error) return { code: SpanStatusCode.ERROR, message: event.error.message ?? event.status };
  if (event.status === 'failed') return { code: SpanStatusCode.ERROR, message: 'failed' };
  return { code: SpanStatusCode.UNSET };
}

/** Request parameters with a GenAI semantic-convention name; the value type is the convention's. */
const PARAMETER_ATTRIBUTES: Record<string, { key: string; kind: 'double' | 'integer' }> = {
  temperature: { key: 'gen_ai.request.temperature', kind: 'double' },
  top_p: { key: 'gen_ai.request.top_p', kind: 'double' },
  top_k: { key: 'gen_ai.request.top_k', kind: 'double' },
  frequency_penalty: { key: 'gen_ai.request.frequency_penalty', kind: 'double' },
  presence_penalty: { key: 'gen_ai.request.presence_penalty', kind: 'double' },
  max_tokens: { key: 'gen_ai.request.max_tokens', kind: 'integer' },
  max_output_tokens: { key: 'gen_ai.request.max_tokens', kind: 'integer' },
  max_completion_tokens: { key: 'gen_ai.request.max_tokens', kind: 'integer' },
  seed: { key: 'gen_ai.request.seed', kind: 'integer' },
};

/** The common attributes (reference §3.3 and the OTel GenAI semantic conventions). */
function writeSpanAttributes(event: BroadcastEvent, attributes: SpanAttributeWriter): void {
  writeGenAi(event, attributes);
  writeParameters(event, attributes);
  attributes.string('user.id', event.user_id);
  attributes.string('session.id', event.session_id);
  for (const [key, value] of Object.entries(event.trace.metadata))
    attributes.string(`trace.metadata.${key}`, value);
  writeSwitchyard(event, attributes);
  writeBodies(event, attributes);
  writeCost(event, attributes);
  writeIdentity(event, attributes);
  writeRequestContext(event, attributes);
}

function writeGenAi(event: BroadcastEvent, attributes: SpanAttributeWriter): void {
  const { usage } = event;
  attributes.string('gen_ai.operation.name', event.operation);
  attributes.string('gen_ai.system', event.provider);
  attributes.string('gen_ai.request.model', event.requested_model ?? event.model);
  attributes.string('gen_ai.response.model', event.model);
  attributes.string('gen_ai.response.id', event.generation_id);
  attributes.integer('gen_ai.usage.input_tokens', usage.prompt_tokens);
  attributes.integer('gen_ai.usage.output_tokens', usage.completion_tokens);
  attributes.integer('gen_ai.usage.total_tokens', usage.total_tokens);
  // The names the reference's example payload shows, kept for receivers built against it.
  attributes.integer('gen_ai.usage.prompt_tokens', usage.prompt_tokens);
  attributes.integer('gen_ai.usage.completion_tokens', usage.completion_tokens);
  attributes.integer('gen_ai.usage.input_tokens.cached', usage.cached_tokens);
  attributes.integer('gen_ai.usage.output_tokens.reasoning', usage.reasoning_tokens);
  attributes.integer('switchyard.usage.cache_write_tokens', usage.cache_write_tokens);
  if (event.finish_reason !== null)
    attributes.strings('gen_ai.response.finish_reasons', [event.finish_reason]);
  attributes.double('gen_ai.usage.cost', event.total_cost);
  if (event.error) attributes.string('error.type', event.error.type ?? '_OTHER');
}

function writeParameters(event: BroadcastEvent, attributes: SpanAttributeWriter): void {
  for (const [name, value] of Object.entries(event.parameters)) {
    const known = PARAMETER_ATTRIBUTES[name];
    if (known && typeof value === 'number') {
      if (known.kind === 'double') attributes.double(known.key, value);
      else attributes.integer(known.key, value);
    } else if (typeof value === 'number') attributes.number(`switchyard.parameters.${name}`, value);
    else if (typeof value === 'boolean') attributes.boolean(`switchyard.parameters.${name}`, value);
    else attributes.string(`switchyard.parameters.${name}`, value);
  }
}

function writeSwitchyard(event: BroadcastEvent, attributes: SpanAttributeWriter): void {
  attributes.string('switchyard.status', event.status);
  attributes.string('switchyard.api_type', event.api_type);
  attributes.string('switchyard.provider_name', event.provider_name);
  attributes.string('switchyard.api_key_name', event.api_key_name);
  attributes.boolean('switchyard.streamed', event.streamed);
  attributes.number('switchyard.latency_ms', event.latency_ms);
  if (event.first_token_ms !== null) attributes.number('switchyard.first_token_ms', event.first_token_ms);
  if (event.generation_time_ms !== null)
    attributes.number('switchyard.generation_time_ms', event.generation_time_ms);
  attributes.integer('switchyard.tools.offered', event.tools.offered);
  attributes.integer('switchyard.tools.called', event.tools.called);
  attributes.string('switchyard.trace.name', event.trace.trace_name);
  attributes.string('switchyard.trace.external_id', event.trace.external_trace_id);
  attributes.string('switchyard.error.message', event.error?.message);
}

/** Bodies only when the destination receives them (`input`/`output` null in privacy mode). */
function writeBodies(event: BroadcastEvent, attributes: SpanAttributeWriter): void {
  if (event.input !== null) {
    const prompt = JSON.stringify(event.input);
    attributes.string('gen_ai.prompt', prompt);
    attributes.string('input.value', prompt);
    attributes.string('input.mime_type', 'application/json');
  }
  if (event.output !== null) {
    const completion = JSON.stringify(event.output);
    attributes.string('gen_ai.completion', completion);
    attributes.string('output.value', completion);
    attributes.string('output.mime_type', 'application/json');
  }
}

function writeCost(event: BroadcastEvent, attributes: SpanAttributeWriter): void {
  if (!event.cost) return;
  attributes.double('switchyard.cost.total_usd', event.cost.total_usd);
  attributes.double('switchyard.cost.input_usd', event.cost.input_usd);
  attributes.double('switchyard.cost.output_usd', event.cost.output_usd);
  attributes.boolean('switchyard.cost.is_byok', event.cost.is_byok);
  attributes.string('switchyard.cost.currency', event.cost.currency);
}

function writeIdentity(event: BroadcastEvent, attributes: SpanAttributeWriter): void {
  if (!event.identity) return;
  attributes.string('switchyard.identity.api_key_hash', event.identity.api_key_hash);
  attributes.string('switchyard.identity.workspace_id', event.identity.workspace_id);
  attributes.string('switchyard.identity.member_user_id', event.identity.member_user_id);
}

function writeRequestContext(event: BroadcastEvent, attributes: SpanAttributeWriter): void {
  const context = event.request_context;
  if (!context) return;
  attributes.string('switchyard.request.app_referer', context.app_referer);
  attributes.string('switchyard.request.app_title', context.app_title);
  attributes.integer('switchyard.request.http_status', context.http_status);
  attributes.integer('switchyard.request.attempts', context.attempts);
  attributes.string('switchyard.request.region', context.region);
  for (const [key, value] of Object.entries(context.request_metadata ?? {})) {
    attributes.string(`switchyard.request.metadata.${key}`, value);
  }
}

/** OTLP/JSON `AnyValue` as sent: int64 as a decimal string (after `normalizeNumbers`). */
export interface OtlpJsonValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values: OtlpJsonValue[] };
  kvlistValue?: { values: OtlpJsonKeyValue[] };
}
export interface OtlpJsonKeyValue {
  key: string;
  value: OtlpJsonValue;
}
export interface OtlpJsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpJsonKeyValue[];
  status: { code: number; message?: string };
  flags?: number;
}
/** The body `encodeOtlpTraces` produces (an OTLP `ExportTraceServiceRequest` in JSON). */
export interface OtlpJsonRequest {
  resourceSpans: Array<{
    resource: { attributes: OtlpJsonKeyValue[] };
    scopeSpans: Array<{ scope: { name: string; version?: string }; spans: OtlpJsonSpan[] }>;
  }>;
}

/**
 * The transformer writes int64 attribute values as JSON numbers; the OTLP/JSON mapping (and the
 * reference payload) has them as decimal strings, and remembered doubles become `doubleValue`.
 */
function normalizeNumbers(request: OtlpJsonRequest, doublesBySpan: Map<string, Set<string>>): void {
  for (const resourceSpans of request.resourceSpans) {
    normalizeAttributes(resourceSpans.resource.attributes, new Set());
    for (const scopeSpans of resourceSpans.scopeSpans) {
      for (const span of scopeSpans.spans) {
        normalizeAttributes(span.attributes, doublesBySpan.get(span.spanId) ?? new Set());
      }
    }
  }
}

function normalizeAttributes(attributes: OtlpJsonKeyValue[], doubles: Set<string>): void {
  for (const attribute of attributes)
    attribute.value = normalizeValue(attribute.value, doubles.has(attribute.key));
}

function normalizeValue(value: OtlpJsonValue, double: boolean): OtlpJsonValue {
  if (typeof value.intValue === 'number') {
    return double ? { doubleValue: value.intValue } : { intValue: String(value.intValue) };
  }
  if (value.arrayValue) {
    return { arrayValue: { values: value.arrayValue.values.map((item) => normalizeValue(item, double)) } };
  }
  return value;
}
