import type { BroadcastEvent, BroadcastMessage } from './broadcast-event.js';
import { spanName } from './exporters/exporter-support.js';

/**
 * The shapes the storage exporters write (reference §3.3): a Langfuse-like trace document per
 * generation for `s3`, and one typed row per generation for the `clickhouse` and `snowflake`
 * tables. Both carry only what the event carries: bodies are absent in privacy mode, and cost
 * detail, identity and request context appear only when the destination asked for them.
 */

/** A Langfuse-style trace (its public API's `TraceWithFullDetails`) holding one generation. */
export interface TraceDocument {
  id: string;
  /** The trace's start: when this generation started. */
  timestamp: string;
  name: string | null;
  userId: string | null;
  sessionId: string | null;
  metadata: Record<string, string>;
  /** Latency in seconds, as Langfuse reports it. */
  latency: number;
  totalCost: number;
  observations: [TraceObservation];
}

export interface TraceObservation {
  id: string;
  traceId: string;
  type: 'GENERATION';
  name: string;
  startTime: string;
  endTime: string;
  /** When the first token arrived; absent when unknown. */
  completionStartTime?: string;
  parentObservationId: string | null;
  model: string | null;
  modelParameters: Record<string, string | number | boolean>;
  /** Absent in privacy mode. */
  input?: BroadcastMessage[];
  output?: BroadcastMessage[];
  usage: { input: number; output: number; total: number; unit: 'TOKENS' };
  usageDetails: Record<string, number>;
  /** `total` always; `input` and `output` when the destination receives the cost detail. */
  costDetails: { total: number; input?: number; output?: number };
  level: 'DEFAULT' | 'ERROR';
  statusMessage: string | null;
  metadata: Record<string, unknown>;
}

/** Builds the object the s3 exporter stores for one event. */
export function traceDocument(event: BroadcastEvent): TraceDocument {
  const { trace } = event;
  const observation: TraceObservation = {
    id: trace.span_id,
    traceId: trace.trace_id,
    type: 'GENERATION',
    name: spanName(event),
    startTime: event.started_at,
    endTime: event.ended_at,
    ...(event.first_token_ms === null
      ? {}
      : { completionStartTime: offsetIso(event.started_at, event.first_token_ms) }),
    parentObservationId: trace.parent_span_id,
    model: event.model,
    modelParameters: event.parameters,
    ...(event.input === null ? {} : { input: event.input }),
    ...(event.output === null ? {} : { output: event.output }),
    usage: {
      input: event.usage.prompt_tokens,
      output: event.usage.completion_tokens,
      total: event.usage.total_tokens,
      unit: 'TOKENS',
    },
    usageDetails: {
      input: event.usage.prompt_tokens,
      output: event.usage.completion_tokens,
      total: event.usage.total_tokens,
      cached_tokens: event.usage.cached_tokens,
      cache_write_tokens: event.usage.cache_write_tokens,
      reasoning_tokens: event.usage.reasoning_tokens,
    },
    costDetails:
      event.cost === null
        ? { total: event.total_cost }
        : { total: event.cost.total_usd, input: event.cost.input_usd, output: event.cost.output_usd },
    level: isError(event) ? 'ERROR' : 'DEFAULT',
    statusMessage: event.error?.message ?? null,
    metadata: generationAttributes(event),
  };
  return {
    id: trace.trace_id,
    timestamp: event.started_at,
    name: trace.trace_name,
    userId: event.user_id,
    sessionId: event.session_id,
    metadata: trace.metadata,
    latency: event.latency_ms / 1000,
    totalCost: event.total_cost,
    observations: [observation],
  };
}

/** The warehouse table's columns, in table order (reference §3.3 plus ROW_ID, the dedup key). */
export const TRACE_ROW_COLUMNS = [
  'ROW_ID',
  'TRACE_ID',
  'SPAN_ID',
  'GENERATION_ID',
  'USER_ID',
  'SESSION_ID',
  'TIMESTAMP',
  'MODEL',
  'PROVIDER',
  'STATUS',
  'SPAN_TYPE',
  'TOTAL_COST',
  'PROMPT_TOKENS',
  'COMPLETION_TOKENS',
  'TOTAL_TOKENS',
  'LATENCY_MS',
  'ATTRIBUTES',
  'INPUT',
  'OUTPUT',
  'METADATA',
  'MODEL_PARAMETERS',
] as const;

export type TraceRowColumn = (typeof TRACE_ROW_COLUMNS)[number];

/** One warehouse row; JSON columns hold objects here and are encoded by each exporter. */
export interface TraceRow {
  /** The outbox idempotency key: a resent row carries the same value, so the table can drop it. */
  ROW_ID: string;
  TRACE_ID: string;
  SPAN_ID: string;
  GENERATION_ID: string;
  USER_ID: string | null;
  SESSION_ID: string | null;
  /** The generation's start in Unix milliseconds (UTC). */
  TIMESTAMP: number;
  MODEL: string | null;
  PROVIDER: string | null;
  /** `ok`, or `error` for failed and cancelled generations (the raw status is in ATTRIBUTES). */
  STATUS: 'ok' | 'error';
  SPAN_TYPE: 'GENERATION';
  TOTAL_COST: number;
  PROMPT_TOKENS: number;
  COMPLETION_TOKENS: number;
  TOTAL_TOKENS: number;
  LATENCY_MS: number;
  ATTRIBUTES: Record<string, unknown>;
  INPUT: BroadcastMessage[] | null;
  OUTPUT: BroadcastMessage[] | null;
  METADATA: Record<string, string>;
  MODEL_PARAMETERS: Record<string, string | number | boolean>;
}

/** Builds the warehouse row for one event; `rowId` is the item's idempotency key. */
export function traceRow(event: BroadcastEvent, rowId: string): TraceRow {
  return {
    ROW_ID: rowId,
    TRACE_ID: event.trace.trace_id,
    SPAN_ID: event.trace.span_id,
    GENERATION_ID: event.generation_id,
    USER_ID: event.user_id,
    SESSION_ID: event.session_id,
    TIMESTAMP: Date.parse(event.started_at),
    MODEL: event.model,
    PROVIDER: event.provider,
    STATUS: isError(event) ? 'error' : 'ok',
    SPAN_TYPE: 'GENERATION',
    TOTAL_COST: event.total_cost,
    PROMPT_TOKENS: event.usage.prompt_tokens,
    COMPLETION_TOKENS: event.usage.completion_tokens,
    TOTAL_TOKENS: event.usage.total_tokens,
    LATENCY_MS: Math.round(event.latency_ms),
    ATTRIBUTES: generationAttributes(event),
    INPUT: event.input,
    OUTPUT: event.output,
    METADATA: event.trace.metadata,
    MODEL_PARAMETERS: event.parameters,
  };
}

const isError = (event: BroadcastEvent) => event.status === 'failed' || event.status === 'cancelled';

/**
 * Everything about the generation that has no column of its own. Null fields are left out, and
 * the optional parts appear only when the event carries them.
 */
function generationAttributes(event: BroadcastEvent): Record<string, unknown> {
  const { trace } = event;
  const attributes: Record<string, unknown> = {
    generation_id: event.generation_id,
    operation: event.operation,
    api_type: event.api_type,
    requested_model: event.requested_model,
    model: event.model,
    provider: event.provider,
    provider_name: event.provider_name,
    status: event.status,
    finish_reason: event.finish_reason,
    error: event.error,
    streamed: event.streamed,
    first_token_ms: event.first_token_ms,
    generation_time_ms: event.generation_time_ms,
    trace_name: trace.trace_name,
    span_name: trace.span_name,
    generation_name: trace.generation_name,
    parent_span_id: trace.parent_span_id,
    external_trace_id: trace.external_trace_id,
    usage: {
      cached_tokens: event.usage.cached_tokens,
      cache_write_tokens: event.usage.cache_write_tokens,
      reasoning_tokens: event.usage.reasoning_tokens,
    },
    tools: event.tools,
    cost: event.cost,
    identity: event.identity,
    request_context: event.request_context,
  };
  for (const key of Object.keys(attributes)) if (attributes[key] === null) delete attributes[key];
  return attributes;
}

const offsetIso = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();
