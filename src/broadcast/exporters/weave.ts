import { type Static, Type } from 'typebox';
import { sliceWhole } from '../../platform/whole-characters.js';
import type { BroadcastEvent } from '../broadcast-event.js';
import { DeliveryError, type DestinationType, type OutboxItem } from '../destination-type.js';
import {
  type ConfigProblem,
  CustomHeadersSchema,
  headerProblems,
  jsonObject,
  mergeHeaders,
  spanName,
  urlProblems,
  uuidFromSeed,
  withoutNulls,
} from './exporter-support.js';

/**
 * Weights & Biases Weave, through its trace server's public Service API
 * (https://docs.wandb.ai/weave/reference/service-api): one `POST /call/upsert_batch` per batch
 * carrying, for each generation, a `start` and an `end` item for the same call id. Weave merges the
 * parts of a call by `(project_id, id)`, so resending a batch with the same ids adds nothing.
 */
const weaveConfigSchema = Type.Object(
  {
    apiKey: Type.String({ minLength: 1 }),
    /** The W&B team or user name; with `project` it forms Weave's `project_id` `entity/project`. */
    entity: Type.String({ minLength: 1 }),
    project: Type.String({ minLength: 1 }),
    baseUrl: Type.Optional(Type.String({ format: 'uri' })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type WeaveConfig = Static<typeof weaveConfigSchema>;

const DEFAULT_BASE_URL = 'https://trace.wandb.ai';
/** Weave's limits (weave/trace_server/constants.py): longer names fail the request with a 400. */
const MAX_DISPLAY_NAME_LENGTH = 1024;

interface WeaveStartItem {
  mode: 'start';
  req: { start: Record<string, unknown> };
}
interface WeaveEndItem {
  mode: 'end';
  req: { end: Record<string, unknown> };
}

export const weaveDestination: DestinationType<WeaveConfig> = {
  type: 'weave',
  configSchema: weaveConfigSchema,
  defaults: { baseUrl: DEFAULT_BASE_URL },
  secretFields: ['apiKey'],
  // Sent as HTTP Basic with the fixed user `api` (weaveHeaders).
  sentSecrets: (config) => [`api:${config.apiKey}`],
  validate: validateWeaveConfig,
  urls: (config) => [upsertUrl(config), queryStatsUrl(config)],
  // Two batch items per event; 50 events keep a request far below the trace server's ~31 MiB limit
  // even with long conversations (each message is capped at 32 KiB of text).
  maxBatch: 50,
  testOnSave: false,
  send: async (items, context) => {
    const batch = items.flatMap((item) => weaveCallItems(item, context.config));
    await context.http.send(upsertUrl(context.config), {
      method: 'POST',
      headers: weaveHeaders(context.config),
      body: JSON.stringify({ batch }),
      signal: context.signal,
    });
    return undefined;
  },
  testConnection: async (context) => {
    // `/health` answers without credentials; a stats query on the project is the cheapest call that
    // checks both the key and access to `entity/project`, and it stores nothing.
    const response = await context.http.send(queryStatsUrl(context.config), {
      method: 'POST',
      headers: weaveHeaders(context.config),
      body: JSON.stringify({ project_id: projectId(context.config), limit: 1 }),
      signal: context.signal,
    });
    if (!isCountAnswer(response.body)) {
      throw new DeliveryError(
        `Weave answered ${response.status} without a call count: not a Weave trace server`,
        {
          retryable: false,
          status: response.status,
        },
      );
    }
  },
};

function validateWeaveConfig(config: WeaveConfig): ConfigProblem[] {
  const problems = urlProblems({ baseUrl: config.baseUrl });
  // The trace server splits `project_id` on '/', so a slash inside either part names another project.
  if (config.entity.includes('/')) problems.push({ field: 'entity', message: 'must not contain "/"' });
  if (config.project.includes('/')) problems.push({ field: 'project', message: 'must not contain "/"' });
  return [...problems, ...headerProblems(config.headers)];
}

const baseUrl = (config: WeaveConfig) => (config.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
const upsertUrl = (config: WeaveConfig) => `${baseUrl(config)}/call/upsert_batch`;
const queryStatsUrl = (config: WeaveConfig) => `${baseUrl(config)}/calls/query_stats`;
const projectId = (config: WeaveConfig) => `${config.entity}/${config.project}`;

function weaveHeaders(config: WeaveConfig): Record<string, string> {
  return mergeHeaders(config.headers, {
    'content-type': 'application/json',
    // The trace server takes HTTP Basic with the user `api` and the W&B API key as password.
    authorization: `Basic ${Buffer.from(`api:${config.apiKey}`).toString('base64')}`,
  });
}

const isCountAnswer = (body: string) => typeof jsonObject(body)?.count === 'number';

/** The start and end parts of one Weave call for one generation. */
function weaveCallItems(item: OutboxItem, config: WeaveConfig): [WeaveStartItem, WeaveEndItem] {
  const { event } = item;
  const project_id = projectId(config);
  // Canonical lowercase (the form Weave's validator round-trips); version 8: the bits are derived.
  const id = uuidFromSeed(item.idempotencyKey, 8);
  const start: Record<string, unknown> = {
    project_id,
    id,
    // Weave accepts a 32-hex OTel trace id as is, so the call joins the client's other spans.
    trace_id: event.trace.trace_id,
    op_name: `switchyard.${event.operation}`,
    display_name: displayName(event),
    started_at: event.started_at,
    attributes: weaveAttributes(event),
    // Privacy mode: the call still needs `inputs`, so it is empty rather than absent.
    inputs:
      event.input === null ? {} : { model: event.model ?? event.requested_model, messages: event.input },
  };
  if (event.trace.parent_span_id !== null) start.parent_id = event.trace.parent_span_id;
  if (event.session_id !== null) start.thread_id = event.session_id;
  const end: Record<string, unknown> = {
    project_id,
    id,
    ended_at: event.ended_at,
    summary: { usage: weaveUsage(event) },
  };
  if (event.output !== null) end.output = weaveOutput(event);
  const exception = exceptionText(event);
  if (exception !== null) end.exception = exception;
  return [
    { mode: 'start', req: { start } },
    { mode: 'end', req: { end } },
  ];
}

const displayName = (event: BroadcastEvent) => sliceWhole(spanName(event), MAX_DISPLAY_NAME_LENGTH);

/**
 * Weave keys usage by model so it can price each model itself (summary.weave.costs); a generation
 * no model answered used nothing and sends an empty map.
 */
function weaveUsage(event: BroadcastEvent): Record<string, Record<string, number>> {
  if (event.model === null) return {};
  const { usage } = event;
  return {
    [event.model]: {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      requests: 1,
    },
  };
}

/** The OpenAI chat shape (`choices[].message`), which Weave's UI renders as a conversation. */
function weaveOutput(event: BroadcastEvent): Record<string, unknown> {
  const messages = event.output ?? [];
  return {
    model: event.model,
    choices: messages.map((message, index) => ({
      index,
      message,
      finish_reason: index === messages.length - 1 ? event.finish_reason : null,
    })),
  };
}

function exceptionText(event: BroadcastEvent): string | null {
  if (event.error === null) return event.status === 'failed' ? 'failed' : null;
  const { type, message } = event.error;
  return [type, message].filter((part) => part !== null && part !== '').join(': ') || 'failed';
}

/** Everything but the bodies: what Weave can filter on. Null fields are left out. */
function weaveAttributes(event: BroadcastEvent): Record<string, unknown> {
  const attributes: Record<string, unknown> = {
    generation_id: event.generation_id,
    operation: event.operation,
    api_type: event.api_type,
    status: event.status,
    streamed: event.streamed,
    api_key_name: event.api_key_name,
    latency_ms: event.latency_ms,
    total_cost: event.total_cost,
    usage: event.usage,
    parameters: event.parameters,
    tools: event.tools,
  };
  const optional: Record<string, unknown> = {
    model: event.model,
    requested_model: event.requested_model,
    provider: event.provider,
    provider_name: event.provider_name,
    finish_reason: event.finish_reason,
    first_token_ms: event.first_token_ms,
    generation_time_ms: event.generation_time_ms,
    user_id: event.user_id,
    session_id: event.session_id,
    trace_name: event.trace.trace_name,
    span_name: event.trace.span_name,
    generation_name: event.trace.generation_name,
    external_trace_id: event.trace.external_trace_id,
    cost: event.cost,
    identity: event.identity,
    request_context: event.request_context,
  };
  Object.assign(attributes, withoutNulls(optional));
  if (Object.keys(event.trace.metadata).length > 0) attributes.metadata = event.trace.metadata;
  return attributes;
}
