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
  toOpenAiChoices,
  toOpenAiMessage,
  UUID_PATTERN,
  urlProblems,
  uuidV7,
} from './exporter-support.js';

const langsmithConfigSchema = Type.Object(
  {
    apiKey: Type.String({ minLength: 1 }),
    endpoint: Type.Optional(Type.String({ format: 'uri' })),
    project: Type.Optional(Type.String({ minLength: 1 })),
    workspaceId: Type.Optional(Type.String({ minLength: 1 })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type LangsmithConfig = Static<typeof langsmithConfigSchema>;

const DEFAULT_ENDPOINT = 'https://api.smith.langchain.com';
const DEFAULT_PROJECT = 'main';

/** LangSmith refuses request bodies above 20 MiB (`batch_ingest_config.size_limit_bytes`). */
const MAX_REQUEST_BYTES = 20_000_000;

/**
 * Batch run ingestion (`POST {endpoint}/runs/batch`, `x-api-key`). Every generation is its own
 * root run: LangSmith requires a root run's `trace_id` to equal its `id` and its `dotted_order` to
 * have a single part, so the gateway's trace id travels in metadata instead, and `session_id`
 * (LangSmith's thread key) groups a conversation.
 */
export const langsmithDestination: DestinationType<LangsmithConfig> = {
  type: 'langsmith',
  configSchema: langsmithConfigSchema,
  defaults: { endpoint: DEFAULT_ENDPOINT, project: DEFAULT_PROJECT },
  secretFields: ['apiKey'],
  validate: (config) => [
    ...urlProblems({ endpoint: config.endpoint }),
    ...headerProblems(config.headers),
    ...(config.workspaceId !== undefined && !UUID_PATTERN.test(config.workspaceId)
      ? [{ field: 'workspaceId', message: 'must be a LangSmith workspace id (a UUID)' }]
      : []),
  ],
  urls: (config) => [batchUrl(config), sessionsUrl(config)],
  maxBatch: 100,
  testOnSave: false,
  send: sendBatch,
  testConnection: async (context) => {
    // Lists one tracing project: authenticated, workspace-scoped, and writes nothing.
    await context.http.send(sessionsUrl(context.config), {
      method: 'GET',
      headers: requestHeaders(context.config),
      signal: context.signal,
    });
  },
};

const endpointOf = (config: LangsmithConfig) => (config.endpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, '');
const batchUrl = (config: LangsmithConfig) => `${endpointOf(config)}/runs/batch`;
const sessionsUrl = (config: LangsmithConfig) => `${endpointOf(config)}/sessions?limit=1`;

function requestHeaders(config: LangsmithConfig): Record<string, string> {
  return mergeHeaders(config.headers, {
    'x-api-key': config.apiKey,
    // Org-scoped keys must name the workspace they write to.
    ...(config.workspaceId ? { 'x-tenant-id': config.workspaceId } : {}),
    'content-type': 'application/json',
  });
}

async function sendBatch(
  items: readonly OutboxItem[],
  context: ExportContext<LangsmithConfig>,
): Promise<SendOutcome | undefined> {
  const project = context.config.project ?? DEFAULT_PROJECT;
  const fragments = items.map((item) => JSON.stringify(runFor(item, project)));
  return sendInGroups(packBySize(fragments, MAX_REQUEST_BYTES), async (group) => {
    await context.http.send(batchUrl(context.config), {
      method: 'POST',
      headers: requestHeaders(context.config),
      body: `{"post":[${fragments.slice(group.start, group.end).join(',')}]}`,
      signal: context.signal,
      // A run id LangSmith already holds answers 409: that delivery happened before.
      acceptStatuses: [409],
    });
    return undefined;
  });
}

function runFor(item: OutboxItem, project: string): object {
  const { event } = item;
  const id = runIdFor(item);
  return {
    id,
    trace_id: id,
    dotted_order: `${event.started_at.replace(/[-:.]/g, '').slice(0, -1)}000Z${id}`,
    name: event.trace.trace_name ?? event.trace.generation_name ?? event.trace.span_name ?? modelOf(event),
    run_type: event.operation === 'embeddings' ? 'embedding' : 'llm',
    start_time: event.started_at,
    end_time: event.ended_at,
    session_name: project,
    inputs: event.input ? { messages: event.input.map(toOpenAiMessage) } : undefined,
    outputs: event.output ? { choices: toOpenAiChoices(event) } : undefined,
    error: errorText(event),
    // LangSmith derives time-to-first-token from the first `new_token` event.
    events:
      event.first_token_ms === null
        ? undefined
        : [
            {
              name: 'new_token',
              time: new Date(Date.parse(event.started_at) + event.first_token_ms).toISOString(),
            },
          ],
    extra: { metadata: runMetadata(event), invocation_params: event.parameters },
  };
}

/**
 * A UUIDv7 (LangSmith's preferred run id: time-ordered) whose time is the generation's start and
 * whose other bits hash the idempotency key, so every delivery of the item names the same run.
 */
const runIdFor = (item: OutboxItem) => uuidV7(item.event.started_at, `${item.idempotencyKey}:run`);

const modelOf = (event: BroadcastEvent) => event.model ?? event.requested_model ?? event.operation;

/** `ls_*` keys and `usage_metadata` are what LangSmith reads for model, tokens and cost. */
function runMetadata(event: BroadcastEvent): Record<string, unknown> {
  const { usage, cost } = event;
  return {
    ...event.trace.metadata,
    ls_provider: event.provider ?? undefined,
    ls_model_name: event.model ?? event.requested_model ?? undefined,
    ls_model_type: event.operation === 'embeddings' ? undefined : 'chat',
    usage_metadata: {
      input_tokens: usage.prompt_tokens,
      output_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      input_token_details: { cache_read: usage.cached_tokens, cache_creation: usage.cache_write_tokens },
      output_token_details: { reasoning: usage.reasoning_tokens },
      // The total always (what the gateway billed); its breakdown with `broadcast_generation_cost`.
      ...(cost ? { input_cost: cost.input_usd, output_cost: cost.output_usd } : {}),
      total_cost: event.total_cost,
    },
    session_id: event.session_id ?? undefined,
    user_id: event.user_id ?? undefined,
    trace_id: event.trace.trace_id,
    parent_span_id: event.trace.parent_span_id ?? undefined,
    generation_id: event.generation_id,
    provider_name: event.provider_name,
    requested_model: event.requested_model,
    api_type: event.api_type,
    status: event.status,
    finish_reason: event.finish_reason,
    streamed: event.streamed,
    latency_ms: event.latency_ms,
    generation_time_ms: event.generation_time_ms,
    api_key_name: event.api_key_name,
    tools: event.tools,
    total_cost: event.total_cost,
    ...(cost ? { is_byok: cost.is_byok } : {}),
    ...(event.identity ? { identity: event.identity } : {}),
    ...(event.request_context ? { request_context: event.request_context } : {}),
  };
}
