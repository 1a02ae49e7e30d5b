import { type Static, Type } from 'typebox';
import type { BroadcastEvent } from '../broadcast-event.js';
import { DeliveryError, type DestinationType, type OutboxItem } from '../destination-type.js';
import {
  CustomHeadersSchema,
  errorText,
  headerProblems,
  jsonObject,
  mergeHeaders,
  urlProblems,
  uuidFromSeed,
  withoutNulls,
} from './exporter-support.js';

/**
 * PostHog LLM analytics (https://posthog.com/docs/llm-analytics/manual-capture): one
 * `$ai_generation` event per generation, sent through the capture API's `POST /batch/` with the
 * project key in the body. Each event carries a `uuid` derived from the idempotency key; PostHog's
 * event table collapses rows with the same uuid, distinct id, timestamp and name, so a retried batch
 * does not double count.
 */
const posthogConfigSchema = Type.Object(
  {
    /** The project API key (`phc_…`): write-only, accepted by the capture and flags endpoints. */
    apiKey: Type.String({ minLength: 1 }),
    endpoint: Type.Optional(Type.String({ format: 'uri' })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type PosthogConfig = Static<typeof posthogConfigSchema>;

const DEFAULT_ENDPOINT = 'https://us.i.posthog.com';
/** Reference §3.3: metadata nested deeper than three levels is replaced with this marker. */
const TRUNCATED = '[truncated]';
const MAX_METADATA_DEPTH = 3;

export const posthogDestination: DestinationType<PosthogConfig> = {
  type: 'posthog',
  configSchema: posthogConfigSchema,
  defaults: { endpoint: DEFAULT_ENDPOINT },
  secretFields: ['apiKey'],
  validate: (config) => [...urlProblems({ endpoint: config.endpoint }), ...headerProblems(config.headers)],
  urls: (config) => [batchUrl(config), flagsUrl(config)],
  // Capture takes up to 20 MB per request and 1 MB per event; 100 events stay well inside.
  maxBatch: 100,
  testOnSave: false,
  send: async (items, context) => {
    await context.http.send(batchUrl(context.config), {
      method: 'POST',
      headers: posthogHeaders(context.config),
      body: JSON.stringify({ api_key: context.config.apiKey, batch: items.map(posthogEvent) }),
      signal: context.signal,
    });
    return undefined;
  },
  testConnection: async (context) => {
    // Capture accepts any well-formed key (unknown keys are dropped later, silently), so it cannot
    // check one. The flags endpoint looks the project key up and answers 401 for an unknown one;
    // `disable_flags` skips flag evaluation, so the call stores and bills nothing.
    const response = await context.http.send(flagsUrl(context.config), {
      method: 'POST',
      headers: posthogHeaders(context.config),
      body: JSON.stringify({
        token: context.config.apiKey,
        distinct_id: 'switchyard-connection-test',
        disable_flags: true,
      }),
      signal: context.signal,
    });
    if (!isFlagsAnswer(response.body)) {
      throw new DeliveryError(
        `PostHog answered ${response.status} without a flags response: not a PostHog host`,
        {
          retryable: false,
          status: response.status,
        },
      );
    }
  },
};

const endpoint = (config: PosthogConfig) => (config.endpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, '');
const batchUrl = (config: PosthogConfig) => `${endpoint(config)}/batch/`;
const flagsUrl = (config: PosthogConfig) => `${endpoint(config)}/flags/?v=2`;

/** The key travels in the body, so only the content type is ours to protect. */
const posthogHeaders = (config: PosthogConfig) =>
  mergeHeaders(config.headers, { 'content-type': 'application/json' });

function isFlagsAnswer(body: string): boolean {
  const answer = jsonObject(body);
  return answer !== null && ('flags' in answer || 'featureFlags' in answer);
}

/**
 * One capture event: `$ai_generation`, or `$ai_embedding` for embeddings (PostHog's LLM analytics
 * counts and prices embeddings apart, and has no output for them).
 */
function posthogEvent(item: OutboxItem): Record<string, unknown> {
  const { event } = item;
  const distinctId = event.user_id ?? event.identity?.api_key_hash ?? event.generation_id;
  const properties: Record<string, unknown> = {
    // Metadata first: the generation's own properties win over a custom key of the same name.
    ...metadataProperties(event.trace.metadata),
    ...withoutNulls({ ...aiProperties(event), ...contextProperties(event) }),
  };
  // A key hash or a generation id is not a person: do not let PostHog create a profile for it.
  if (event.user_id === null) properties.$process_person_profile = false;
  return {
    event: event.operation === 'embeddings' ? '$ai_embedding' : '$ai_generation',
    // A canonical UUID (version 8: the bits are derived), stable across retries.
    uuid: uuidFromSeed(item.idempotencyKey, 8),
    distinct_id: distinctId,
    timestamp: event.started_at,
    properties,
  };
}

/** PostHog's LLM analytics vocabulary (the `$ai_*` properties its generations views read). */
function aiProperties(event: BroadcastEvent): Record<string, unknown> {
  const { trace, usage } = event;
  const isError = event.status === 'failed' || event.error !== null;
  return {
    $ai_trace_id: trace.trace_id,
    $ai_span_id: trace.span_id,
    $ai_parent_id: trace.parent_span_id,
    $ai_span_name: trace.generation_name,
    $ai_session_id: event.session_id,
    $ai_model: event.model ?? event.requested_model,
    $ai_provider: event.provider,
    $ai_input_tokens: usage.prompt_tokens,
    $ai_output_tokens: usage.completion_tokens,
    $ai_cache_read_input_tokens: usage.cached_tokens,
    $ai_cache_creation_input_tokens: usage.cache_write_tokens,
    $ai_reasoning_tokens: usage.reasoning_tokens,
    $ai_latency: event.latency_ms / 1000,
    $ai_time_to_first_token: event.first_token_ms === null ? null : event.first_token_ms / 1000,
    $ai_stream: event.streamed,
    $ai_model_parameters: event.parameters,
    $ai_http_status: event.request_context?.http_status ?? null,
    $ai_is_error: isError,
    $ai_error: errorText(event) ?? null,
    $ai_input: event.input,
    $ai_output_choices: event.output,
    $ai_total_cost_usd: event.cost?.total_usd ?? event.total_cost,
    $ai_input_cost_usd: event.cost?.input_usd ?? null,
    $ai_output_cost_usd: event.cost?.output_usd ?? null,
  };
}

/** The rest of the event as plain properties; identity and request context only when present. */
function contextProperties(event: BroadcastEvent): Record<string, unknown> {
  const { identity, request_context: requestContext } = event;
  return {
    generation_id: event.generation_id,
    operation: event.operation,
    api_type: event.api_type,
    status: event.status,
    finish_reason: event.finish_reason,
    requested_model: event.requested_model,
    provider_name: event.provider_name,
    api_key_name: event.api_key_name,
    generation_time_ms: event.generation_time_ms,
    tools_offered: event.tools.offered,
    tools_called: event.tools.called,
    trace_name: event.trace.trace_name,
    span_name: event.trace.span_name,
    external_trace_id: event.trace.external_trace_id,
    is_byok: event.cost?.is_byok ?? null,
    api_key_hash: identity?.api_key_hash ?? null,
    workspace_id: identity?.workspace_id ?? null,
    member_user_id: identity?.member_user_id ?? null,
    app_referer: requestContext?.app_referer ?? null,
    app_title: requestContext?.app_title ?? null,
    attempts: requestContext?.attempts ?? null,
    region: requestContext?.region ?? null,
    request_metadata: requestContext?.request_metadata
      ? metadataProperties(requestContext.request_metadata)
      : null,
  };
}

/**
 * Metadata values arrive as strings, objects JSON-encoded; PostHog stores nested properties, so
 * encoded objects and arrays are sent decoded, with anything below the third level replaced by
 * '[truncated]' (reference §3.3). The metadata key itself is level 1: `{a: {b: {c: {d: 1}}}}` is
 * sent as `{a: {b: {c: '[truncated]'}}}`.
 */
export function metadataProperties(metadata: Record<string, string>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(metadata).map(([key, value]) => [
      key,
      limitDepth(decodeJson(value), MAX_METADATA_DEPTH - 1),
    ]),
  );
}

function decodeJson(value: string): unknown {
  const trimmed = value.trimStart();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** `levels` is how many more levels of keys an object value may open. */
function limitDepth(value: unknown, levels: number): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (levels === 0) return TRUNCATED;
  if (Array.isArray(value)) return value.map((entry) => limitDepth(entry, levels - 1));
  return Object.fromEntries(
    Object.entries(value).map(([key, entry]) => [key, limitDepth(entry, levels - 1)]),
  );
}
