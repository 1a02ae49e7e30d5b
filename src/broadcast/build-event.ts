import { hash } from 'node:crypto';
import type { GenerationRecordInput } from '../billing/generation-log.js';
import { sliceWhole } from '../platform/whole-characters.js';
import { reportedFinishReason } from '../spec/finish-reason.js';
import type { ContentPart, GenerationRequest } from '../spec/generation-request.js';
import {
  type BroadcastEvent,
  type BroadcastMessage,
  type BroadcastTrace,
  MAX_BROADCAST_TEXT_CHARS,
} from './broadcast-event.js';

/** What the model produced, collected while the answer passed through (only when someone listens). */
export interface CollectedOutput {
  text: string;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
}

/** Collects streamed output up to the text limit, so a long answer costs bounded memory. */
export function createOutputCollector() {
  const chunks: string[] = [];
  let chars = 0;
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  return {
    text(delta: string) {
      if (chars > MAX_BROADCAST_TEXT_CHARS) return;
      chunks.push(delta);
      chars += delta.length;
    },
    toolCallStart(index: number, id: string, name: string) {
      calls.set(index, { id, name, arguments: '' });
    },
    toolCallDelta(index: number, delta: string) {
      const call = calls.get(index);
      if (call && call.arguments.length <= MAX_BROADCAST_TEXT_CHARS) call.arguments += delta;
    },
    result(): CollectedOutput {
      return { text: chunks.join(''), toolCalls: [...calls.values()] };
    },
  };
}

/**
 * What an event keeps of the request: its text (media parts dropped), the parameters it reports and
 * how many tools were offered. Small and plain: it is kept until the group commit, and when the
 * commit runs in a SQLite thread it is copied there to be built into the event (tool schemas and
 * response formats, which can be large, are not).
 */
export interface EventRequest {
  instructions?: string | undefined;
  input: GenerationRequest['input'];
  parameters: Record<string, string | number | boolean>;
  toolsOffered: number;
}

/** The request as an event keeps it (see EventRequest). */
export function eventRequestOf(request: Omit<GenerationRequest, 'model'>): EventRequest {
  return {
    instructions: request.instructions,
    // What inputMessages reads, nothing more: no media (a tool result's images, base64 parts), no
    // reasoning blocks (signatures), no cache marks on items.
    input: request.input.map((item): GenerationRequest['input'][number] => {
      switch (item.type) {
        case 'message':
          return {
            type: 'message',
            role: item.role,
            content: item.content.filter((part) => part.type === 'text'),
          };
        case 'function-call':
          return { type: 'function-call', callId: item.callId, name: item.name, arguments: item.arguments };
        default:
          return { type: 'function-call-output', callId: item.callId, output: item.output };
      }
    }),
    parameters: parametersOf(request),
    toolsOffered: request.tools?.length ?? 0,
  };
}

const TRUNCATED = '…[truncated]';
const cut = (text: string) =>
  text.length > MAX_BROADCAST_TEXT_CHARS ? `${sliceWhole(text, MAX_BROADCAST_TEXT_CHARS)}${TRUNCATED}` : text;

const hex = (text: string, length: number) => hash('sha256', text, 'hex').slice(0, length);

const TRACE_ID = /^[0-9a-f]{32}$/i;
const SPAN_ID = /^[0-9a-f]{16}$/i;
const SPECIAL_TRACE_KEYS = new Set([
  'trace_id',
  'trace_name',
  'span_name',
  'generation_name',
  'parent_span_id',
]);
const MAX_METADATA_VALUE_CHARS = 2_048;

const stringOrNull = (value: unknown): string | null =>
  typeof value === 'string' && value.length > 0 ? value : typeof value === 'number' ? String(value) : null;

/** An id of W3C Trace Context's shape: hex of its length, and not all zeros (which it calls invalid). */
const validId = (shape: RegExp, text: string): boolean => shape.test(text) && /[1-9a-f]/i.test(text);

/**
 * The request's `trace` (reference §3.3): ids a tracing tool accepts (32/16 hex) are used as given;
 * other strings are hashed into that shape (and kept as `external_trace_id`), so any client id
 * still groups its generations. Every other key is custom metadata.
 */
export function traceOf(generationId: string, trace: Record<string, unknown> | null): BroadcastTrace {
  const given = trace ?? {};
  const externalTraceId = stringOrNull(given.trace_id);
  const parent = stringOrNull(given.parent_span_id);
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(given)) {
    if (SPECIAL_TRACE_KEYS.has(key) || value === null || value === undefined) continue;
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    metadata[key] =
      text.length > MAX_METADATA_VALUE_CHARS
        ? `${sliceWhole(text, MAX_METADATA_VALUE_CHARS)}${TRUNCATED}`
        : text;
  }
  return {
    trace_id: externalTraceId
      ? validId(TRACE_ID, externalTraceId)
        ? externalTraceId.toLowerCase()
        : hex(`trace:${externalTraceId}`, 32)
      : hex(`trace:${generationId}`, 32),
    span_id: hex(`span:${generationId}`, 16),
    parent_span_id: parent
      ? validId(SPAN_ID, parent)
        ? parent.toLowerCase()
        : hex(`span:${parent}`, 16)
      : null,
    external_trace_id: externalTraceId,
    trace_name: stringOrNull(given.trace_name),
    span_name: stringOrNull(given.span_name),
    generation_name: stringOrNull(given.generation_name),
    metadata,
  };
}

/** Text parts only: media is stripped (reference §3.3). */
const textOf = (content: readonly ContentPart[]) =>
  cut(
    content
      .filter((part): part is Extract<ContentPart, { type: 'text' }> => part.type === 'text')
      .map((part) => part.text)
      .join('\n'),
  );

/** The canonical input as chat messages: instructions first, function calls and outputs kept. */
export function inputMessages(
  request: Pick<GenerationRequest, 'instructions' | 'input'>,
): BroadcastMessage[] {
  const messages: BroadcastMessage[] = [];
  if (request.instructions) messages.push({ role: 'system', content: cut(request.instructions) });
  for (const item of request.input) {
    if (item.type === 'message') {
      messages.push({
        role: item.role === 'developer' ? 'system' : item.role,
        content: textOf(item.content),
      });
    } else if (item.type === 'function-call') {
      const call = { id: item.callId, name: item.name, arguments: cut(item.arguments) };
      const last = messages.at(-1);
      // Consecutive calls of one assistant turn stay one message, as chat APIs show them.
      if (last?.role === 'assistant' && last.tool_calls && last.content === '') last.tool_calls.push(call);
      else messages.push({ role: 'assistant', content: '', tool_calls: [call] });
    } else {
      messages.push({ role: 'tool', content: cut(item.output), tool_call_id: item.callId });
    }
  }
  return messages;
}

function outputMessages(output: CollectedOutput | null): BroadcastMessage[] {
  if (!output || (output.text === '' && output.toolCalls.length === 0)) return [];
  const message: BroadcastMessage = { role: 'assistant', content: cut(output.text) };
  if (output.toolCalls.length > 0) {
    message.tool_calls = output.toolCalls.map((call) => ({ ...call, arguments: cut(call.arguments) }));
  }
  return [message];
}

function parametersOf(request: Omit<GenerationRequest, 'model'>): Record<string, string | number | boolean> {
  const parameters: Record<string, string | number | boolean> = {};
  const set = (name: string, value: string | number | boolean | undefined) => {
    if (value !== undefined) parameters[name] = value;
  };
  set('temperature', request.temperature);
  set('top_p', request.topP);
  set('top_k', request.topK);
  set('max_output_tokens', request.maxOutputTokens);
  set('frequency_penalty', request.frequencyPenalty);
  set('presence_penalty', request.presencePenalty);
  set('seed', request.seed);
  if (request.stop?.length) set('stop', JSON.stringify(request.stop));
  if (request.responseFormat) set('response_format', request.responseFormat.type);
  if (request.reasoning?.effort) set('reasoning_effort', request.reasoning.effort);
  if (request.toolChoice)
    set('tool_choice', typeof request.toolChoice === 'string' ? request.toolChoice : request.toolChoice.name);
  return parameters;
}

const usd = (nanos: number) => nanos / 1e9;
const unixNanos = (epochMs: number) => (BigInt(Math.round(epochMs)) * 1_000_000n).toString();

export interface EventSources {
  record: GenerationRecordInput;
  /** The canonical request as sent upstream (content filters' redactions applied), as an event keeps it. */
  request: EventRequest;
  output: CollectedOutput | null;
  keyName: string;
  /** The gateway's region (config `broadcast.region`). */
  region: string;
  /** Epoch milliseconds when the request arrived and when it ended. */
  startedAtMs: number;
  endedAtMs: number;
}

/** The whole event, bodies and every optional part included; `eventForDestination` trims it per destination. */
export function buildBroadcastEvent(sources: EventSources): BroadcastEvent {
  const { record } = sources;
  const output = outputMessages(sources.output);
  const requestMetadata = record.metadata
    ? Object.fromEntries(Object.entries(record.metadata).map(([key, value]) => [key, String(value)]))
    : null;
  return {
    v: 1,
    generation_id: record.id,
    trace: traceOf(record.id, record.trace),
    started_at: new Date(sources.startedAtMs).toISOString(),
    ended_at: new Date(sources.endedAtMs).toISOString(),
    start_time_unix_nano: unixNanos(sources.startedAtMs),
    end_time_unix_nano: unixNanos(sources.endedAtMs),
    operation: record.api_type === 'embeddings' ? 'embeddings' : 'chat',
    api_type: record.api_type,
    requested_model: record.requested_model,
    model: record.model,
    provider: record.provider_slug,
    provider_name: record.provider_name,
    status: record.status,
    finish_reason: reportedFinishReason(record.finish_reason),
    error:
      record.error_type || record.error_message
        ? { type: record.error_type, message: record.error_message }
        : null,
    streamed: record.streamed,
    usage: {
      prompt_tokens: record.tokens_prompt,
      completion_tokens: record.tokens_completion,
      total_tokens: record.tokens_prompt + record.tokens_completion,
      cached_tokens: record.tokens_cached,
      cache_write_tokens: record.tokens_cache_write,
      reasoning_tokens: record.tokens_reasoning,
    },
    total_cost: usd(record.cost_nanos),
    latency_ms: record.latency_ms,
    first_token_ms: record.first_token_ms,
    generation_time_ms: record.generation_time_ms,
    api_key_name: sources.keyName,
    user_id: record.user_id,
    session_id: record.session_id,
    input: inputMessages(sources.request),
    output,
    parameters: sources.request.parameters,
    tools: {
      offered: sources.request.toolsOffered,
      called: output.reduce((sum, message) => sum + (message.tool_calls?.length ?? 0), 0),
    },
    cost: {
      total_usd: usd(record.cost_nanos),
      input_usd: usd(record.input_cost_nanos),
      output_usd: usd(record.output_cost_nanos),
      is_byok: record.is_byok,
      currency: 'USD',
    },
    identity: {
      api_key_hash: record.key_hash,
      workspace_id: record.workspace_id,
      member_user_id: record.member_user_id ?? null,
    },
    request_context: {
      app_referer: record.app_referer,
      app_title: record.app_title,
      http_status: record.http_status,
      attempts: record.attempts.length,
      region: sources.region,
      request_metadata: requestMetadata,
    },
  };
}
