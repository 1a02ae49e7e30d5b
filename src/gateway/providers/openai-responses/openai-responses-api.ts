import type { Usage } from '../../../spec/usage.js';

/**
 * The parts of OpenAI Responses replies and stream events the adapter reads, checked field by
 * field: a wrong type reads as absent. Wire reference:
 * https://platform.openai.com/docs/api-reference/responses/object and
 * https://platform.openai.com/docs/api-reference/responses-streaming.
 */
const asRecord = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
const asString = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const asIndex = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
/** A token count; Infinity (what JSON.parse makes of 1e999) is kept: billing caps counts at the context. */
const asCount = (value: unknown): number => (typeof value === 'number' && value > 0 ? value : 0);

/** Responses usage: `input_tokens` already includes the cached part, `output_tokens` the reasoning. */
export function readOpenAiResponsesUsage(value: unknown): Usage | undefined {
  const usage = asRecord(value);
  if (!usage) return undefined;
  return {
    inputTokens: asCount(usage.input_tokens),
    outputTokens: asCount(usage.output_tokens),
    cachedInputTokens: asCount(asRecord(usage.input_tokens_details)?.cached_tokens),
    // OpenAI caches prompts implicitly and reports no cache writes.
    cacheWriteTokens: 0,
    reasoningTokens: asCount(asRecord(usage.output_tokens_details)?.reasoning_tokens),
  };
}

export interface OpenAiResponsesErrorView {
  code: string | null;
  message: string;
}

/** `{code, message}`, as a failed response's `error` and as the stream's `error` event carry it. */
export function readOpenAiResponsesError(value: unknown): OpenAiResponsesErrorView | undefined {
  const error = asRecord(value);
  if (!error) return undefined;
  return {
    code: asString(error.code) ?? null,
    message: asString(error.message) ?? 'Upstream response failed',
  };
}

/**
 * The HTTP status OpenAI would have sent for an error code, so a failure inside a 200 stream is as
 * retryable as the same failure before the headers. The codes are those of the response object's
 * `error.code`; anything else is treated as an upstream fault, as the chat adapter does.
 */
export function statusForOpenAiResponsesError(code: string | null): number {
  switch (code) {
    case 'rate_limit_exceeded':
      return 429;
    case 'server_error':
      return 500;
    case 'vector_store_timeout':
      return 504;
    case 'context_length_exceeded':
    case 'invalid_prompt':
      return 400;
    default:
      // invalid_image, image_too_large, unsupported_image_media_type…: the request's content.
      if (code !== null && (code.startsWith('invalid_') || code.includes('image'))) return 400;
      return 502;
  }
}

export type OpenAiResponsesOutputItemView =
  /** An assistant message: its `output_text` parts, joined. */
  | { type: 'message'; text: string; refusal: string }
  /**
   * Reasoning: the summary texts, or the raw reasoning texts when a model sends those instead, and
   * the reasoning itself encrypted (`include: ["reasoning.encrypted_content"]`), to be sent back.
   */
  | { type: 'reasoning'; texts: string[]; encryptedContent?: string }
  | { type: 'function_call'; id?: string; callId: string; name: string; arguments: string }
  /** Built-in tool calls (web search, file search…) and anything newer. */
  | { type: 'other' };

function textsOf(parts: unknown, partType: string, field = 'text'): string[] {
  if (!Array.isArray(parts)) return [];
  return parts.flatMap((value) => {
    const part = asRecord(value);
    const text = asString(part?.[field]);
    return part?.type === partType && text !== undefined ? [text] : [];
  });
}

export function readOpenAiResponsesOutputItem(value: unknown): OpenAiResponsesOutputItemView {
  const item = asRecord(value) ?? {};
  switch (item.type) {
    case 'message':
      return {
        type: 'message',
        text: textsOf(item.content, 'output_text').join(''),
        // A refusal part's text is in `refusal`, not `text`.
        refusal: textsOf(item.content, 'refusal', 'refusal').join(''),
      };
    case 'reasoning': {
      const summary = textsOf(item.summary, 'summary_text');
      const reasoning: OpenAiResponsesOutputItemView = {
        type: 'reasoning',
        texts: summary.length > 0 ? summary : textsOf(item.content, 'reasoning_text'),
      };
      const encrypted = asString(item.encrypted_content);
      if (encrypted) reasoning.encryptedContent = encrypted;
      return reasoning;
    }
    case 'function_call': {
      const call: OpenAiResponsesOutputItemView = {
        type: 'function_call',
        callId: asString(item.call_id) ?? '',
        name: asString(item.name) ?? '',
        arguments: asString(item.arguments) ?? '',
      };
      const id = asString(item.id);
      if (id !== undefined) call.id = id;
      return call;
    }
    default:
      return { type: 'other' };
  }
}

export interface OpenAiResponseView {
  id?: string;
  model?: string;
  /** completed, incomplete, failed, cancelled, in_progress, queued. */
  status?: string;
  output: OpenAiResponsesOutputItemView[];
  usage?: Usage;
  error?: OpenAiResponsesErrorView;
  incompleteReason?: string;
}

/** A Response object; undefined when it is not an object with an `output` list. */
export function readOpenAiResponse(value: unknown): OpenAiResponseView | undefined {
  const response = asRecord(value);
  if (!response || !Array.isArray(response.output)) return undefined;
  const view: OpenAiResponseView = { output: response.output.map(readOpenAiResponsesOutputItem) };
  const id = asString(response.id);
  if (id !== undefined) view.id = id;
  const model = asString(response.model);
  if (model !== undefined) view.model = model;
  const status = asString(response.status);
  if (status !== undefined) view.status = status;
  const usage = readOpenAiResponsesUsage(response.usage);
  if (usage) view.usage = usage;
  const error = readOpenAiResponsesError(response.error);
  if (error) view.error = error;
  const incompleteReason = asString(asRecord(response.incomplete_details)?.reason);
  if (incompleteReason !== undefined) view.incompleteReason = incompleteReason;
  return view;
}

type LifecycleType =
  | 'response.created'
  | 'response.in_progress'
  | 'response.completed'
  | 'response.incomplete'
  | 'response.failed';

export type OpenAiResponsesStreamEvent =
  | { type: LifecycleType; response: OpenAiResponseView }
  | {
      type: 'response.output_item.added' | 'response.output_item.done';
      outputIndex?: number;
      item: OpenAiResponsesOutputItemView;
    }
  | { type: 'response.output_text.delta'; delta: string }
  | { type: 'response.refusal.delta'; delta: string }
  | {
      type: 'response.reasoning_summary_text.delta' | 'response.reasoning_text.delta';
      /** Which reasoning text the delta extends: its item and summary (or content) index. */
      section: string;
      delta: string;
    }
  | { type: 'response.function_call_arguments.delta'; itemId?: string; outputIndex?: number; delta: string }
  | { type: 'error'; error: OpenAiResponsesErrorView }
  /** OpenAI's sign of life while a model reasons without streaming anything. */
  | { type: 'keepalive' }
  /** content_part.*, output_text.done, *.done and event types added later. */
  | { type: 'other' };

/** One parsed stream event. The type is read from the data, which OpenAI always repeats there. */
export function readOpenAiResponsesStreamEvent(data: unknown): OpenAiResponsesStreamEvent {
  const event = asRecord(data) ?? {};
  const delta = asString(event.delta) ?? '';
  switch (event.type) {
    case 'response.created':
    case 'response.in_progress':
    case 'response.completed':
    case 'response.incomplete':
    case 'response.failed':
      return { type: event.type, response: readOpenAiResponse(event.response) ?? { output: [] } };
    case 'response.output_item.added':
    case 'response.output_item.done': {
      const itemEvent: OpenAiResponsesStreamEvent = {
        type: event.type,
        item: readOpenAiResponsesOutputItem(event.item),
      };
      const outputIndex = asIndex(event.output_index);
      if (outputIndex !== undefined) itemEvent.outputIndex = outputIndex;
      return itemEvent;
    }
    case 'response.output_text.delta':
      return { type: 'response.output_text.delta', delta };
    case 'response.refusal.delta':
      return { type: 'response.refusal.delta', delta };
    case 'response.reasoning_summary_text.delta':
    case 'response.reasoning_text.delta': {
      const part = event.type === 'response.reasoning_text.delta' ? event.content_index : event.summary_index;
      const section = `${asString(event.item_id) ?? asIndex(event.output_index)}:${asIndex(part) ?? 0}`;
      return { type: event.type, section, delta };
    }
    case 'response.function_call_arguments.delta': {
      const argumentsEvent: OpenAiResponsesStreamEvent = {
        type: 'response.function_call_arguments.delta',
        delta,
      };
      const itemId = asString(event.item_id);
      if (itemId !== undefined) argumentsEvent.itemId = itemId;
      const outputIndex = asIndex(event.output_index);
      if (outputIndex !== undefined) argumentsEvent.outputIndex = outputIndex;
      return argumentsEvent;
    }
    case 'keepalive':
      return { type: 'keepalive' };
    case 'error':
      // OpenAI nests the fields (`{"type":"error","error":{"code","message"}}`); its reference once
      // showed them flat, which some compatible servers send.
      return {
        type: 'error',
        error: readOpenAiResponsesError(asRecord(event.error) ?? event) ?? {
          code: null,
          message: 'Upstream stream error',
        },
      };
    default:
      return { type: 'other' };
  }
}
