import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';
import type { BroadcastEvent } from '../broadcast-event.js';
import type { DestinationType, ExportContext, OutboxItem, SendOutcome } from '../destination-type.js';
import {
  CustomHeadersSchema,
  headerProblems,
  type ItemRange,
  jsonObject,
  mergeHeaders,
  observationName,
  packBySize,
  sendInGroups,
  toOpenAiMessage,
  urlProblems,
  uuidFromSeed,
} from './exporter-support.js';

const langfuseConfigSchema = Type.Object(
  {
    publicKey: Type.String({ minLength: 1 }),
    secretKey: Type.String({ minLength: 1 }),
    baseUrl: Type.Optional(Type.String({ format: 'uri' })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type LangfuseConfig = Static<typeof langfuseConfigSchema>;

const DEFAULT_BASE_URL = 'https://us.cloud.langfuse.com';

/**
 * Langfuse refuses ingestion batches above 3.5 MB in total
 * (https://api.reference.langfuse.com/#tag/ingestion); a little room is kept for the envelope.
 */
const MAX_REQUEST_BYTES = 3_400_000;

/**
 * The legacy ingestion API (`POST /api/public/ingestion`): one `trace-create` and one
 * `generation-create` per event, Basic auth with the key pair. It answers 207 with per-event
 * errors instead of a 4xx for invalid events, so `send` maps those back to item indexes.
 */
export const langfuseDestination: DestinationType<LangfuseConfig> = {
  type: 'langfuse',
  configSchema: langfuseConfigSchema,
  defaults: { baseUrl: DEFAULT_BASE_URL },
  // The public key is only an identifier, but the reference returns it masked like a secret.
  secretFields: ['publicKey', 'secretKey'],
  validate: (config) => [...urlProblems({ baseUrl: config.baseUrl }), ...headerProblems(config.headers)],
  urls: (config) => [ingestionUrl(config), projectsUrl(config)],
  maxBatch: 100,
  testOnSave: false,
  send: sendBatch,
  testConnection: async (context) => {
    // Returns the project the keys belong to and stores nothing; bad keys answer 401.
    await context.http.send(projectsUrl(context.config), {
      method: 'GET',
      headers: requestHeaders(context.config),
      signal: context.signal,
    });
  },
};

const ingestionUrl = (config: LangfuseConfig) => `${baseUrlOf(config)}/api/public/ingestion`;
const projectsUrl = (config: LangfuseConfig) => `${baseUrlOf(config)}/api/public/projects`;
const baseUrlOf = (config: LangfuseConfig) => (config.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');

function requestHeaders(config: LangfuseConfig): Record<string, string> {
  const credentials = Buffer.from(`${config.publicKey}:${config.secretKey}`).toString('base64');
  return mergeHeaders(config.headers, {
    authorization: `Basic ${credentials}`,
    'content-type': 'application/json',
  });
}

async function sendBatch(
  items: readonly OutboxItem[],
  context: ExportContext<LangfuseConfig>,
): Promise<SendOutcome | undefined> {
  const fragments: string[] = [];
  for (const item of items) {
    const events: string[] = [];
    for (const event of ingestionEvents(item)) events.push(JSON.stringify(event));
    fragments.push(events.join(','));
  }
  return sendInGroups(packBySize(fragments, MAX_REQUEST_BYTES), async (group) => {
    const body = `{"batch":[${fragments.slice(group.start, group.end).join(',')}]}`;
    const response = await context.http.send(ingestionUrl(context.config), {
      method: 'POST',
      headers: requestHeaders(context.config),
      body,
      signal: context.signal,
    });
    return rejectionsFromMultiStatus(response.body, items, group);
  });
}

/** Envelope ids: Langfuse drops an event whose id it has already processed, so a retry adds nothing. */
const traceEventId = (item: OutboxItem) => uuidFromSeed(`${item.idempotencyKey}:trace-create`);
const generationEventId = (item: OutboxItem) => uuidFromSeed(`${item.idempotencyKey}:generation-create`);

function ingestionEvents(item: OutboxItem): object[] {
  const { event } = item;
  return [
    { id: traceEventId(item), timestamp: event.ended_at, type: 'trace-create', body: traceBody(event) },
    {
      id: generationEventId(item),
      timestamp: event.ended_at,
      type: 'generation-create',
      body: generationBody(event, uuidFromSeed(`${item.idempotencyKey}:generation`)),
    },
  ];
}

function traceBody(event: BroadcastEvent): object {
  // A client-supplied trace id may gather several generations: only a trace that is this
  // generation's alone gets its timestamp and bodies, so later generations do not overwrite them.
  const ownTrace = event.trace.external_trace_id === null;
  return {
    id: event.trace.trace_id,
    name: event.trace.trace_name ?? (ownTrace ? observationName(event) : undefined),
    timestamp: ownTrace ? event.started_at : undefined,
    userId: event.user_id ?? undefined,
    sessionId: event.session_id ?? undefined,
    input: ownTrace && event.input ? event.input.map(toOpenAiMessage) : undefined,
    output: ownTrace && event.output ? event.output.map(toOpenAiMessage) : undefined,
    metadata: Object.keys(event.trace.metadata).length > 0 ? event.trace.metadata : undefined,
  };
}

function generationBody(event: BroadcastEvent, id: string): object {
  const { usage } = event;
  return {
    id,
    traceId: event.trace.trace_id,
    parentObservationId: event.trace.parent_span_id ?? undefined,
    name: observationName(event),
    model: event.model ?? event.requested_model ?? undefined,
    modelParameters: Object.keys(event.parameters).length > 0 ? event.parameters : undefined,
    input: event.input ? event.input.map(toOpenAiMessage) : undefined,
    output: event.output ? event.output.map(toOpenAiMessage) : undefined,
    usage: {
      input: usage.prompt_tokens,
      output: usage.completion_tokens,
      total: usage.total_tokens,
      unit: 'TOKENS',
    },
    usageDetails: { input: usage.prompt_tokens, output: usage.completion_tokens, total: usage.total_tokens },
    // Ingested costs take precedence over Langfuse's own model-price inference.
    // The total always (what the gateway billed); its breakdown with `broadcast_generation_cost`.
    costDetails: event.cost
      ? { input: event.cost.input_usd, output: event.cost.output_usd, total: event.cost.total_usd }
      : { total: event.total_cost },
    startTime: event.started_at,
    endTime: event.ended_at,
    completionStartTime:
      event.first_token_ms === null
        ? undefined
        : new Date(Date.parse(event.started_at) + event.first_token_ms).toISOString(),
    metadata: generationMetadata(event),
    ...levelOf(event),
  };
}

function levelOf(event: BroadcastEvent): { level?: string; statusMessage?: string } {
  if (event.status === 'failed' || event.error) {
    return { level: 'ERROR', statusMessage: event.error?.message ?? event.error?.type ?? event.status };
  }
  if (event.status === 'incomplete' || event.status === 'cancelled') {
    return { level: 'WARNING', statusMessage: event.finish_reason ?? event.status };
  }
  return {};
}

function generationMetadata(event: BroadcastEvent): Record<string, unknown> {
  return {
    generation_id: event.generation_id,
    provider: event.provider,
    provider_name: event.provider_name,
    requested_model: event.requested_model,
    api_type: event.api_type,
    status: event.status,
    finish_reason: event.finish_reason,
    streamed: event.streamed,
    latency_ms: event.latency_ms,
    generation_time_ms: event.generation_time_ms,
    api_key_name: event.api_key_name,
    cached_tokens: event.usage.cached_tokens,
    cache_write_tokens: event.usage.cache_write_tokens,
    reasoning_tokens: event.usage.reasoning_tokens,
    tools: event.tools,
    total_cost: event.total_cost,
    ...(event.cost ? { is_byok: event.cost.is_byok } : {}),
    ...(event.identity ? { identity: event.identity } : {}),
    ...(event.request_context ? { request_context: event.request_context } : {}),
    ...(Object.keys(event.trace.metadata).length > 0 ? { trace_metadata: event.trace.metadata } : {}),
  };
}

const multiStatusSchema = Type.Object({
  errors: Type.Array(
    Type.Object({ id: Type.String(), status: Type.Number(), message: Type.Optional(Type.Unknown()) }),
  ),
});

/**
 * Reads Langfuse's `{ successes, errors }` answer and returns the items one of whose events was
 * refused. An answer that cannot be read counts as delivered: the HTTP status already said so.
 */
function rejectionsFromMultiStatus(
  text: string,
  items: readonly OutboxItem[],
  group: ItemRange,
): SendOutcome | undefined {
  const parsed = jsonObject(text);
  if (!Value.Check(multiStatusSchema, parsed) || parsed.errors.length === 0) return undefined;
  const byEventId = new Map(parsed.errors.map((error) => [error.id, error]));
  const rejected: NonNullable<SendOutcome['rejected']> = [];
  for (let index = group.start; index < group.end; index += 1) {
    const item = items[index] as OutboxItem;
    const errors = [traceEventId(item), generationEventId(item)].flatMap((id) => byEventId.get(id) ?? []);
    if (errors.length === 0) continue;
    const retryable = errors.find((error) => error.status >= 500 || error.status === 429);
    rejected.push({
      index,
      retryable: retryable !== undefined,
      status: (retryable ?? errors[0])?.status ?? null,
      message: errors
        .map((error) => `Langfuse refused the event (${error.status}): ${describe(error.message)}`)
        .join('; '),
    });
  }
  return rejected.length > 0 ? { rejected } : undefined;
}

const describe = (message: unknown) =>
  typeof message === 'string' ? message : message === undefined ? 'no message' : JSON.stringify(message);
