import { type Static, Type } from 'typebox';
import type { BroadcastEvent, BroadcastMessage } from '../broadcast-event.js';
import {
  type DestinationType,
  type ExportContext,
  type OutboxItem,
  outcomeBeside,
  type SendOutcome,
} from '../destination-type.js';
import {
  CustomHeadersSchema,
  headerProblems,
  jsonObject,
  mergeHeaders,
  packBySize,
  sendInGroups,
  sha256Hex,
  spanName,
  urlProblems,
} from './exporter-support.js';

const datadogConfigSchema = Type.Object(
  {
    apiKey: Type.String({ minLength: 1 }),
    mlApp: Type.String({ minLength: 1 }),
    url: Type.Optional(Type.String({ format: 'uri' })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type DatadogConfig = Static<typeof datadogConfigSchema>;

const DEFAULT_URL = 'https://api.us5.datadoghq.com';

/** The intake's limits, as Datadog's own SDKs apply them: 5 MB per request, 1 MB per span. */
const MAX_REQUEST_BYTES = 5_000_000;
const MAX_SPAN_BYTES = (1 << 20) - 1024;
/** The intake accepts spans at most 24 hours old. */
const MAX_SPAN_AGE_MS = 24 * 3_600_000;
const DROPPED_VALUE = "[This value has been dropped because this span's size exceeds the 1MB size limit.]";

/**
 * Datadog LLM Observability's span intake (`POST {url}/api/intake/llm-obs/v1/trace/spans`,
 * `DD-API-KEY`), documented at https://docs.datadoghq.com/llm_observability/instrumentation/api/.
 * One `llm` (or `embedding`) span per generation; it answers 202 with an empty body.
 */
export const datadogDestination: DestinationType<DatadogConfig> = {
  type: 'datadog',
  configSchema: datadogConfigSchema,
  defaults: { url: DEFAULT_URL },
  secretFields: ['apiKey'],
  validate: (config) => [
    ...urlProblems({ url: config.url }),
    ...headerProblems(config.headers),
    ...mlAppProblems(config.mlApp),
  ],
  urls: (config) => [spansUrl(config), validateUrl(config)],
  maxBatch: 100,
  testOnSave: false,
  send: sendBatch,
  testConnection: async (context) => {
    // Datadog's key check: 200 `{"valid":true}`, 403 for a key it does not know.
    await context.http.send(validateUrl(context.config), {
      method: 'GET',
      headers: requestHeaders(context.config),
      signal: context.signal,
    });
  },
};

const urlOf = (config: DatadogConfig) => (config.url ?? DEFAULT_URL).replace(/\/+$/, '');
const spansUrl = (config: DatadogConfig) => `${urlOf(config)}/api/intake/llm-obs/v1/trace/spans`;
const validateUrl = (config: DatadogConfig) => `${urlOf(config)}/api/v1/validate`;

function requestHeaders(config: DatadogConfig): Record<string, string> {
  return mergeHeaders(config.headers, { 'dd-api-key': config.apiKey, 'content-type': 'application/json' });
}

/**
 * The documented naming rule: lowercase; letters, digits and `_ - : . /`; at most 193 characters;
 * no doubled or trailing underscore.
 */
function mlAppProblems(mlApp: string): Array<{ field: string; message: string }> {
  const valid =
    mlApp.length <= 193 &&
    /^[\p{Ll}\p{Lo}\p{N}_\-:./]+$/u.test(mlApp) &&
    !mlApp.includes('__') &&
    !mlApp.endsWith('_');
  return valid
    ? []
    : [
        {
          field: 'mlApp',
          message:
            'must be lowercase letters, digits and _ - : . / (at most 193 characters, no doubled or trailing underscore)',
        },
      ];
}

async function sendBatch(
  items: readonly OutboxItem[],
  context: ExportContext<DatadogConfig>,
): Promise<SendOutcome | undefined> {
  const { stale, fresh } = partitionByAge(items, context.now);
  if (fresh.length === 0) return stale.length > 0 ? { rejected: stale } : undefined;
  const sending = sendSpans(
    fresh.map((index) => items[index] as OutboxItem),
    context,
  );
  if (stale.length === 0) return sending;
  // With stale items settled, a failure of the rest must not send them round again.
  return outcomeBeside(stale, fresh, sending);
}

/** Spans the intake would refuse for age are settled here (not retryable) rather than sent. */
function partitionByAge(
  items: readonly OutboxItem[],
  now: Date,
): { stale: NonNullable<SendOutcome['rejected']>; fresh: number[] } {
  const stale: NonNullable<SendOutcome['rejected']> = [];
  const fresh: number[] = [];
  items.forEach((item, index) => {
    if (now.getTime() - Date.parse(item.event.started_at) <= MAX_SPAN_AGE_MS) fresh.push(index);
    else
      stale.push({
        index,
        retryable: false,
        message: 'Datadog accepts LLM Observability spans at most 24 hours old',
      });
  });
  return { stale, fresh };
}

function sendSpans(
  items: readonly OutboxItem[],
  context: ExportContext<DatadogConfig>,
): Promise<SendOutcome | undefined> {
  const fragments = items.map(serializedSpan);
  const mlApp = JSON.stringify(context.config.mlApp);
  return sendInGroups(packBySize(fragments, MAX_REQUEST_BYTES), async (group) => {
    const spans = fragments.slice(group.start, group.end).join(',');
    await context.http.send(spansUrl(context.config), {
      method: 'POST',
      headers: requestHeaders(context.config),
      body: `{"data":{"type":"span","attributes":{"ml_app":${mlApp},"spans":[${spans}]}}}`,
      signal: context.signal,
    });
    return undefined;
  });
}

/** A span over the per-span limit keeps everything but its input and output, as Datadog's SDKs do. */
function serializedSpan(item: OutboxItem): string {
  const span = spanFor(item);
  const text = JSON.stringify(span);
  if (Buffer.byteLength(text) <= MAX_SPAN_BYTES) return text;
  const meta = { ...span.meta, input: { value: DROPPED_VALUE }, output: { value: DROPPED_VALUE } };
  return JSON.stringify({ ...span, meta, collection_errors: ['dropped_io'] });
}

interface DatadogSpan {
  meta: Record<string, unknown>;
  [key: string]: unknown;
}

function spanFor(item: OutboxItem): DatadogSpan {
  const { event } = item;
  const startNs = BigInt(event.start_time_unix_nano);
  return {
    trace_id: event.trace.trace_id,
    span_id: spanIdFor(item.idempotencyKey),
    // Datadog's ids are decimal; the client's parent span id is 16 hex digits.
    parent_id: event.trace.parent_span_id
      ? BigInt(`0x${event.trace.parent_span_id}`).toString(10)
      : 'undefined',
    name: spanName(event),
    // JSON numbers: nanoseconds since 1970 lose their last digits in a double, as in Datadog's own JS SDK.
    start_ns: Number(startNs),
    duration: Number(BigInt(event.end_time_unix_nano) - startNs),
    status: isError(event) ? 'error' : 'ok',
    session_id: event.session_id ?? undefined,
    tags: spanTags(event),
    meta: spanMeta(event),
    metrics: spanMetrics(event),
  };
}

/** 63 bits of the idempotency key's hash: the same span id on every delivery, positive as a signed id too. */
function spanIdFor(key: string): string {
  const bits = BigInt(`0x${sha256Hex(`${key}:span`).slice(0, 16)}`);
  return (bits & 0x7fff_ffff_ffff_ffffn || 1n).toString(10);
}

const isError = (event: BroadcastEvent) => event.status === 'failed' || event.error !== null;

function spanMeta(event: BroadcastEvent): Record<string, unknown> {
  const embedding = event.operation === 'embeddings';
  return {
    kind: embedding ? 'embedding' : 'llm',
    model_name: event.model ?? event.requested_model ?? undefined,
    model_provider: event.provider ?? undefined,
    input: event.input
      ? embedding
        ? { documents: event.input.map((message) => ({ text: message.content })) }
        : { messages: event.input.map(toDatadogMessage) }
      : undefined,
    output: event.output && !embedding ? { messages: event.output.map(toDatadogMessage) } : undefined,
    error: isError(event)
      ? { type: event.error?.type ?? event.status, message: event.error?.message ?? event.status }
      : undefined,
    metadata: spanMetadata(event),
  };
}

/** Metadata values must be strings, numbers or booleans: nested parts are flattened with dotted keys. */
function spanMetadata(event: BroadcastEvent): Record<string, string | number | boolean> {
  const flat: Record<string, string | number | boolean> = {
    ...event.trace.metadata,
    ...event.parameters,
    generation_id: event.generation_id,
    provider_name: event.provider_name ?? '',
    requested_model: event.requested_model ?? '',
    api_type: event.api_type,
    status: event.status,
    finish_reason: event.finish_reason ?? '',
    streamed: event.streamed,
    latency_ms: event.latency_ms,
    api_key_name: event.api_key_name,
    'tools.offered': event.tools.offered,
    'tools.called': event.tools.called,
    total_cost: event.total_cost,
  };
  if (event.generation_time_ms !== null) flat.generation_time_ms = event.generation_time_ms;
  if (event.cost) flatten(flat, 'cost', event.cost);
  if (event.identity) flatten(flat, 'identity', event.identity);
  if (event.request_context) flatten(flat, 'request_context', event.request_context);
  return flat;
}

function flatten(into: Record<string, string | number | boolean>, prefix: string, value: object): void {
  for (const [key, part] of Object.entries(value)) {
    if (part === null || part === undefined) continue;
    if (typeof part === 'object') flatten(into, `${prefix}.${key}`, part);
    else into[`${prefix}.${key}`] = part as string | number | boolean;
  }
}

function spanMetrics(event: BroadcastEvent): Record<string, number> {
  const { usage } = event;
  return {
    input_tokens: usage.prompt_tokens,
    output_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
    cache_read_input_tokens: usage.cached_tokens,
    cache_write_input_tokens: usage.cache_write_tokens,
    reasoning_output_tokens: usage.reasoning_tokens,
    // Datadog measures time to first token in seconds.
    ...(event.first_token_ms === null ? {} : { time_to_first_token: event.first_token_ms / 1000 }),
  };
}

function spanTags(event: BroadcastEvent): string[] {
  const tags = [
    `generation_id:${event.generation_id}`,
    `api_type:${event.api_type}`,
    `status:${event.status}`,
  ];
  if (event.provider) tags.push(`provider:${event.provider}`);
  if (event.user_id) tags.push(`user_id:${event.user_id}`);
  return tags;
}

function toDatadogMessage(message: BroadcastMessage): object {
  return {
    role: message.role,
    content: message.content,
    tool_calls: message.tool_calls?.map((call) => ({
      name: call.name,
      arguments: toolArguments(call.arguments),
      tool_id: call.id,
      type: 'function',
    })),
    tool_results: message.tool_call_id
      ? [{ tool_id: message.tool_call_id, result: message.content, type: 'function' }]
      : undefined,
  };
}

/** Datadog wants tool arguments as an object; text that is not a JSON object is kept under `value`. */
function toolArguments(text: string): object {
  return jsonObject(text) ?? { value: text };
}
