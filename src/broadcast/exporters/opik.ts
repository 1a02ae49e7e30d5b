import { type Static, Type } from 'typebox';
import type { BroadcastEvent } from '../broadcast-event.js';
import {
  DeliveryError,
  type DestinationType,
  type ExportContext,
  type OutboxItem,
} from '../destination-type.js';
import {
  type ConfigProblem,
  CustomHeadersSchema,
  headerProblems,
  jsonObject,
  mergeHeaders,
  observationName,
  uuidV7,
  withoutNulls,
} from './exporter-support.js';

/**
 * Comet Opik, through its REST API (https://www.comet.com/docs/opik/reference/rest-api/overview):
 * each generation becomes one trace (`POST /v1/private/traces/batch`) holding one `llm` span
 * (`POST /v1/private/spans/batch`). Opik stores traces and spans by id and keeps the latest write of
 * an id, so a retried batch with the same ids replaces rather than duplicates.
 */
const opikConfigSchema = Type.Object(
  {
    apiKey: Type.String({ minLength: 1 }),
    /** The Comet workspace name, sent as `Comet-Workspace`. */
    workspace: Type.String({ minLength: 1 }),
    /** Opik creates the project on first write when it does not exist. */
    projectName: Type.String({ minLength: 1 }),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type OpikConfig = Static<typeof opikConfigSchema>;

/** Opik Cloud. The config names no URL; an operator's `origin_overrides.opik` replaces the origin. */
const OPIK_CLOUD_API = 'https://www.comet.com/opik/api';
const TRACES_PATH = '/v1/private/traces/batch';
const SPANS_PATH = '/v1/private/spans/batch';
const PROJECTS_PATH = '/v1/private/projects?size=1';

export const opikDestination: DestinationType<OpikConfig> = {
  type: 'opik',
  configSchema: opikConfigSchema,
  defaults: {},
  secretFields: ['apiKey'],
  // Sent as `Comet-Workspace`.
  headerFields: ['workspace'],
  validate: validateOpikConfig,
  urls: () => [TRACES_PATH, SPANS_PATH, PROJECTS_PATH].map((path) => `${OPIK_CLOUD_API}${path}`),
  // Opik takes up to 1000 traces or spans per batch; 100 generations keep the body well below its
  // request size limit with long conversations.
  maxBatch: 100,
  testOnSave: false,
  send: async (items, context) => {
    const headers = { ...opikHeaders(context.config), 'content-type': 'application/json' };
    const traces = items.map((item) => opikTrace(item, context.config));
    const spans = items.map((item) => opikSpan(item, context.config));
    // Traces first, so no span ever points at a trace Opik has not seen; a failure of either throws
    // and the retry sends both again under the same ids.
    await context.http.send(opikUrl(context, TRACES_PATH), {
      method: 'POST',
      headers,
      body: JSON.stringify({ traces }),
      signal: context.signal,
    });
    await context.http.send(opikUrl(context, SPANS_PATH), {
      method: 'POST',
      headers,
      body: JSON.stringify({ spans }),
      signal: context.signal,
    });
    return undefined;
  },
  testConnection: async (context) => {
    // Listing one project is an authenticated read in the workspace: it checks the key and the
    // workspace together and writes nothing.
    const response = await context.http.send(opikUrl(context, PROJECTS_PATH), {
      method: 'GET',
      headers: { ...opikHeaders(context.config), accept: 'application/json' },
      signal: context.signal,
    });
    if (!isProjectPage(response.body)) {
      throw new DeliveryError(`Opik answered ${response.status} without a project page: not an Opik API`, {
        retryable: false,
        status: response.status,
      });
    }
  },
};

function validateOpikConfig(config: OpikConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  // Opik refuses blank project names (422), and a blank workspace header fails authentication.
  if (config.workspace.trim() === '') problems.push({ field: 'workspace', message: 'must not be blank' });
  if (config.projectName.trim() === '') problems.push({ field: 'projectName', message: 'must not be blank' });
  return [...problems, ...headerProblems(config.headers)];
}

function opikUrl(context: Pick<ExportContext<OpikConfig>, 'originOverride'>, path: string): string {
  if (!context.originOverride) return `${OPIK_CLOUD_API}${path}`;
  const cloud = new URL(OPIK_CLOUD_API);
  return `${context.originOverride.replace(/\/+$/, '')}${cloud.pathname}${path}`;
}

/** The credentials; `content-type` and `accept`, set by the requests that need them, are reserved too. */
function opikHeaders(config: OpikConfig): Record<string, string> {
  // Opik Cloud takes the bare API key, without a `Bearer ` prefix.
  const own = { authorization: config.apiKey, 'Comet-Workspace': config.workspace };
  return mergeHeaders(config.headers, own, ['content-type', 'accept']);
}

const isProjectPage = (body: string) => Array.isArray(jsonObject(body)?.content);

/** The trace: the request as a whole, named after the client's `trace_name` when it gave one. */
function opikTrace(item: OutboxItem, config: OpikConfig): Record<string, unknown> {
  const { event } = item;
  const trace: Record<string, unknown> = {
    id: uuidV7(event.started_at, `${item.idempotencyKey}:trace`),
    project_name: config.projectName,
    name: event.trace.trace_name ?? observationName(event),
    start_time: event.started_at,
    end_time: event.ended_at,
    metadata: traceMetadata(event),
  };
  Object.assign(trace, bodies(event));
  if (event.session_id !== null) trace.thread_id = event.session_id;
  if (event.first_token_ms !== null) trace.ttft = event.first_token_ms;
  const errorInfo = opikErrorInfo(event);
  if (errorInfo) trace.error_info = errorInfo;
  return trace;
}

/** The one `llm` span: model, provider, usage and cost, which Opik aggregates up to the trace. */
function opikSpan(item: OutboxItem, config: OpikConfig): Record<string, unknown> {
  const { event } = item;
  const { usage } = event;
  const span: Record<string, unknown> = {
    id: uuidV7(event.started_at, `${item.idempotencyKey}:span`),
    project_name: config.projectName,
    trace_id: uuidV7(event.started_at, `${item.idempotencyKey}:trace`),
    name: observationName(event),
    type: 'llm',
    start_time: event.started_at,
    end_time: event.ended_at,
    metadata: spanMetadata(event),
    usage: {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
    },
    // The gateway's own bill; without it Opik would estimate from its price list, which may differ.
    total_estimated_cost: event.cost?.total_usd ?? event.total_cost,
  };
  Object.assign(span, bodies(event));
  if (event.model !== null) span.model = event.model;
  if (event.provider !== null) span.provider = event.provider;
  const errorInfo = opikErrorInfo(event);
  if (errorInfo) span.error_info = errorInfo;
  return span;
}

/** Input and output in the OpenAI chat shape Opik renders as a conversation; none in privacy mode. */
function bodies(event: BroadcastEvent): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  if (event.input !== null) result.input = { messages: event.input };
  if (event.output !== null) {
    const messages = event.output;
    result.output = {
      choices: messages.map((message, index) => ({
        index,
        message,
        finish_reason: index === messages.length - 1 ? event.finish_reason : null,
      })),
    };
  }
  return result;
}

/** Opik requires `exception_type` and a non-blank `traceback`; a gateway error has no stack. */
function opikErrorInfo(event: BroadcastEvent): Record<string, string> | null {
  if (event.error === null && event.status !== 'failed') return null;
  const exceptionType = event.error?.type || 'error';
  const message = event.error?.message || event.status;
  return { exception_type: exceptionType, message, traceback: `${exceptionType}: ${message}` };
}

function traceMetadata(event: BroadcastEvent): Record<string, unknown> {
  return withoutNulls({
    ...event.trace.metadata,
    generation_id: event.generation_id,
    api_key_name: event.api_key_name,
    user_id: event.user_id,
    session_id: event.session_id,
    external_trace_id: event.trace.external_trace_id,
  });
}

/** Everything but the bodies; null fields and the parts the destination did not ask for are left out. */
function spanMetadata(event: BroadcastEvent): Record<string, unknown> {
  return withoutNulls({
    ...event.trace.metadata,
    generation_id: event.generation_id,
    operation: event.operation,
    api_type: event.api_type,
    status: event.status,
    finish_reason: event.finish_reason,
    streamed: event.streamed,
    requested_model: event.requested_model,
    provider_name: event.provider_name,
    api_key_name: event.api_key_name,
    latency_ms: event.latency_ms,
    first_token_ms: event.first_token_ms,
    generation_time_ms: event.generation_time_ms,
    cached_tokens: event.usage.cached_tokens,
    cache_write_tokens: event.usage.cache_write_tokens,
    reasoning_tokens: event.usage.reasoning_tokens,
    total_cost: event.total_cost,
    parameters: event.parameters,
    tools: event.tools,
    parent_span_id: event.trace.parent_span_id,
    span_name: event.trace.span_name,
    cost: event.cost,
    identity: event.identity,
    request_context: event.request_context,
  });
}
