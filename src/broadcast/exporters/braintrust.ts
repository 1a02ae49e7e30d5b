import { type Static, Type } from 'typebox';
import type { BroadcastEvent } from '../broadcast-event.js';
import type { DestinationType, ExportContext, OutboxItem, SendOutcome } from '../destination-type.js';
import {
  CustomHeadersSchema,
  errorText,
  headerProblems,
  mergeHeaders,
  packBySize,
  sendInGroups,
  spanName,
  toOpenAiChoices,
  toOpenAiMessage,
  UUID_PATTERN,
  urlProblems,
  uuidFromSeed,
} from './exporter-support.js';

const braintrustConfigSchema = Type.Object(
  {
    apiKey: Type.String({ minLength: 1 }),
    projectId: Type.String({ minLength: 1 }),
    baseUrl: Type.Optional(Type.String({ format: 'uri' })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type BraintrustConfig = Static<typeof braintrustConfigSchema>;

const DEFAULT_BASE_URL = 'https://api.braintrust.dev';

/** Braintrust's SDKs keep each request under 6 MiB (larger rows go through an upload they arrange). */
const MAX_REQUEST_BYTES = 6_000_000;

/**
 * Project logs insertion (`POST {baseUrl}/v1/project_logs/{projectId}/insert`, Bearer key). Each
 * generation is a root `llm` span. Braintrust replaces a row with the same `id`, so the id derived
 * from the idempotency key makes a retried batch overwrite, not duplicate.
 */
export const braintrustDestination: DestinationType<BraintrustConfig> = {
  type: 'braintrust',
  configSchema: braintrustConfigSchema,
  defaults: { baseUrl: DEFAULT_BASE_URL },
  secretFields: ['apiKey'],
  validate: (config) => [
    ...urlProblems({ baseUrl: config.baseUrl }),
    ...headerProblems(config.headers),
    ...(UUID_PATTERN.test(config.projectId)
      ? []
      : [{ field: 'projectId', message: 'must be a Braintrust project id (a UUID)' }]),
  ],
  urls: (config) => [insertUrl(config), projectUrl(config)],
  maxBatch: 100,
  testOnSave: false,
  send: sendBatch,
  testConnection: async (context) => {
    // Reads the project: checks the key and that it reaches this project, and writes nothing.
    await context.http.send(projectUrl(context.config), {
      method: 'GET',
      headers: requestHeaders(context.config),
      signal: context.signal,
    });
  },
};

const baseUrlOf = (config: BraintrustConfig) => (config.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
const insertUrl = (config: BraintrustConfig) =>
  `${baseUrlOf(config)}/v1/project_logs/${encodeURIComponent(config.projectId)}/insert`;
const projectUrl = (config: BraintrustConfig) =>
  `${baseUrlOf(config)}/v1/project/${encodeURIComponent(config.projectId)}`;

function requestHeaders(config: BraintrustConfig): Record<string, string> {
  return mergeHeaders(config.headers, {
    authorization: `Bearer ${config.apiKey}`,
    'content-type': 'application/json',
  });
}

async function sendBatch(
  items: readonly OutboxItem[],
  context: ExportContext<BraintrustConfig>,
): Promise<SendOutcome | undefined> {
  const fragments = items.map((item) => JSON.stringify(logEventFor(item)));
  return sendInGroups(packBySize(fragments, MAX_REQUEST_BYTES), async (group) => {
    await context.http.send(insertUrl(context.config), {
      method: 'POST',
      headers: requestHeaders(context.config),
      body: `{"events":[${fragments.slice(group.start, group.end).join(',')}]}`,
      signal: context.signal,
    });
    return undefined;
  });
}

function logEventFor(item: OutboxItem): object {
  const { event } = item;
  // Braintrust replaces a row with the same id: the same for every delivery of the item.
  const id = uuidFromSeed(`${item.idempotencyKey}:row`);
  return {
    id,
    // A root span: its own span and root. The gateway's trace id is kept in metadata.
    span_id: id,
    root_span_id: id,
    created: event.started_at,
    input: event.input ? event.input.map(toOpenAiMessage) : undefined,
    output: event.output ? toOpenAiChoices(event) : undefined,
    error: errorText(event),
    metadata: logMetadata(event),
    metrics: logMetrics(event),
    span_attributes: {
      name: spanName(event),
      type: 'llm',
    },
  };
}

/** Token counts under the names Braintrust's own wrappers use; times in Unix seconds. */
function logMetrics(event: BroadcastEvent): Record<string, number> {
  const { usage } = event;
  return {
    start: Date.parse(event.started_at) / 1000,
    end: Date.parse(event.ended_at) / 1000,
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    tokens: usage.total_tokens,
    prompt_cached_tokens: usage.cached_tokens,
    prompt_cache_creation_tokens: usage.cache_write_tokens,
    completion_reasoning_tokens: usage.reasoning_tokens,
    ...(event.first_token_ms === null ? {} : { time_to_first_token: event.first_token_ms / 1000 }),
  };
}

/** `model` and `provider` are what Braintrust reads for its cost estimate; the rest is for filtering. */
function logMetadata(event: BroadcastEvent): Record<string, unknown> {
  return {
    ...event.trace.metadata,
    ...event.parameters,
    model: event.model ?? event.requested_model ?? undefined,
    provider: event.provider ?? undefined,
    provider_name: event.provider_name ?? undefined,
    requested_model: event.requested_model,
    generation_id: event.generation_id,
    trace_id: event.trace.trace_id,
    parent_span_id: event.trace.parent_span_id ?? undefined,
    session_id: event.session_id ?? undefined,
    user_id: event.user_id ?? undefined,
    api_type: event.api_type,
    status: event.status,
    finish_reason: event.finish_reason,
    streamed: event.streamed,
    latency_ms: event.latency_ms,
    generation_time_ms: event.generation_time_ms,
    api_key_name: event.api_key_name,
    tools: event.tools,
    total_cost: event.total_cost,
    ...(event.cost ? { cost: event.cost } : {}),
    ...(event.identity ? { identity: event.identity } : {}),
    ...(event.request_context ? { request_context: event.request_context } : {}),
  };
}
