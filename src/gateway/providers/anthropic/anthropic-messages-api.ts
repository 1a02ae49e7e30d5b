import type { Usage } from '../../../spec/usage.js';

/**
 * The parts of Anthropic Messages replies and stream events the adapter reads, checked field by
 * field: a wrong type reads as absent. Wire reference: https://docs.anthropic.com/en/api/messages
 * and https://docs.anthropic.com/en/docs/build-with-claude/streaming.
 */
const asRecord = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
const asString = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
/** A token count; Infinity (what JSON.parse makes of 1e999) is kept: billing caps counts at the context. */
const asCount = (value: unknown): number | undefined =>
  typeof value === 'number' && value >= 0 ? value : undefined;

/** Anthropic's usage counters as sent; a stream reports them in pieces, so each may be absent. */
export interface AnthropicUsageCounts {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheCreation?: number;
}

export function readAnthropicUsage(value: unknown): AnthropicUsageCounts {
  const usage = asRecord(value) ?? {};
  const counts: AnthropicUsageCounts = {};
  const input = asCount(usage.input_tokens);
  if (input !== undefined) counts.input = input;
  const output = asCount(usage.output_tokens);
  if (output !== undefined) counts.output = output;
  const cacheRead = asCount(usage.cache_read_input_tokens);
  if (cacheRead !== undefined) counts.cacheRead = cacheRead;
  const cacheCreation = asCount(usage.cache_creation_input_tokens);
  if (cacheCreation !== undefined) counts.cacheCreation = cacheCreation;
  return counts;
}

/**
 * Anthropic's `input_tokens` counts only the uncached part of the prompt; cache reads and writes
 * are reported beside it. Canonical `inputTokens` is the whole prompt, with the cached counts as
 * subsets, so the three are added up here.
 */
export function toCanonicalUsage(counts: AnthropicUsageCounts): Usage {
  const cacheRead = counts.cacheRead ?? 0;
  const cacheCreation = counts.cacheCreation ?? 0;
  return {
    inputTokens: (counts.input ?? 0) + cacheRead + cacheCreation,
    outputTokens: counts.output ?? 0,
    cachedInputTokens: cacheRead,
    cacheWriteTokens: cacheCreation,
    // Anthropic bills thinking as output and does not report it apart.
    reasoningTokens: 0,
  };
}

export type AnthropicContentBlockView =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  /** Server tool blocks and anything newer: nothing the canonical result holds. */
  | { type: 'other' };

function readContentBlock(value: unknown): AnthropicContentBlockView {
  const block = asRecord(value) ?? {};
  switch (block.type) {
    case 'text':
      return { type: 'text', text: asString(block.text) ?? '' };
    case 'thinking': {
      const signature = asString(block.signature);
      return {
        type: 'thinking',
        thinking: asString(block.thinking) ?? '',
        ...(signature ? { signature } : {}),
      };
    }
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: asString(block.data) ?? '' };
    case 'tool_use':
      return {
        type: 'tool_use',
        id: asString(block.id) ?? '',
        name: asString(block.name) ?? '',
        input: block.input,
      };
    default:
      return { type: 'other' };
  }
}

export interface AnthropicMessageView {
  id?: string;
  model?: string;
  content: AnthropicContentBlockView[];
  stopReason?: string;
  /** The stop sequence that ended the message (`stop_reason: stop_sequence`). */
  stopSequence?: string;
  usage: AnthropicUsageCounts;
}

/** A non-streamed reply; undefined when it is not a message with a content list. */
export function readAnthropicMessage(reply: unknown): AnthropicMessageView | undefined {
  const message = asRecord(reply);
  if (!message || !Array.isArray(message.content)) return undefined;
  const view: AnthropicMessageView = {
    content: message.content.map(readContentBlock),
    usage: readAnthropicUsage(message.usage),
  };
  const id = asString(message.id);
  if (id !== undefined) view.id = id;
  const model = asString(message.model);
  if (model !== undefined) view.model = model;
  const stopReason = asString(message.stop_reason);
  if (stopReason !== undefined) view.stopReason = stopReason;
  const stopSequence = asString(message.stop_sequence);
  if (stopSequence !== undefined) view.stopSequence = stopSequence;
  return view;
}

export interface AnthropicErrorView {
  errorType: string;
  message: string;
}

/** `{"type":"error","error":{"type":…,"message":…}}`, in a stream or (rarely) as a 200 body. */
export function readAnthropicError(value: unknown): AnthropicErrorView | undefined {
  const record = asRecord(value);
  if (record?.type !== 'error') return undefined;
  const error = asRecord(record.error) ?? {};
  return {
    errorType: asString(error.type) ?? 'api_error',
    message: asString(error.message) ?? 'Upstream stream error',
  };
}

/**
 * The HTTP status Anthropic gives each error type (https://docs.anthropic.com/en/api/errors), so an
 * error event inside a 200 stream is as retryable as the same error before the headers would be.
 */
export function statusForAnthropicError(errorType: string): number {
  switch (errorType) {
    case 'overloaded_error':
      return 529;
    case 'api_error':
      return 500;
    case 'timeout_error':
      return 504;
    case 'rate_limit_error':
      return 429;
    case 'authentication_error':
      return 401;
    case 'billing_error':
      return 402;
    case 'permission_error':
      return 403;
    case 'not_found_error':
      return 404;
    case 'request_too_large':
      return 413;
    default:
      return 400;
  }
}

export type AnthropicStreamEvent =
  | { type: 'message_start'; id?: string; model?: string; usage: AnthropicUsageCounts }
  | { type: 'content_block_start'; index: number; block: AnthropicContentBlockView }
  | {
      type: 'content_block_delta';
      index: number;
      delta:
        | { type: 'text_delta'; text: string }
        | { type: 'thinking_delta'; thinking: string }
        | { type: 'input_json_delta'; partialJson: string }
        | { type: 'signature_delta'; signature: string }
        /** Anything newer. */
        | { type: 'other' };
    }
  | { type: 'content_block_stop'; index: number }
  | { type: 'message_delta'; stopReason?: string; stopSequence?: string; usage: AnthropicUsageCounts }
  | { type: 'message_stop' }
  | { type: 'error'; error: AnthropicErrorView }
  /** ping, and event types added later: Anthropic's versioning policy allows new ones. */
  | { type: 'other' };

type BlockDelta = Extract<AnthropicStreamEvent, { type: 'content_block_delta' }>['delta'];

function readDelta(value: unknown): BlockDelta {
  const delta = asRecord(value) ?? {};
  switch (delta.type) {
    case 'text_delta':
      return { type: 'text_delta', text: asString(delta.text) ?? '' };
    case 'thinking_delta':
      return { type: 'thinking_delta', thinking: asString(delta.thinking) ?? '' };
    case 'input_json_delta':
      return { type: 'input_json_delta', partialJson: asString(delta.partial_json) ?? '' };
    case 'signature_delta':
      return { type: 'signature_delta', signature: asString(delta.signature) ?? '' };
    default:
      return { type: 'other' };
  }
}

/** One parsed stream event. The type is read from the data, which Anthropic always repeats there. */
export function readAnthropicStreamEvent(data: unknown): AnthropicStreamEvent {
  const event = asRecord(data) ?? {};
  const index = Number.isSafeInteger(event.index) ? (event.index as number) : -1;
  switch (event.type) {
    case 'message_start': {
      const message = asRecord(event.message) ?? {};
      const start: AnthropicStreamEvent = { type: 'message_start', usage: readAnthropicUsage(message.usage) };
      const id = asString(message.id);
      if (id !== undefined) start.id = id;
      const model = asString(message.model);
      if (model !== undefined) start.model = model;
      return start;
    }
    case 'content_block_start':
      return { type: 'content_block_start', index, block: readContentBlock(event.content_block) };
    case 'content_block_delta':
      return { type: 'content_block_delta', index, delta: readDelta(event.delta) };
    case 'content_block_stop':
      return { type: 'content_block_stop', index };
    case 'message_delta': {
      const delta: AnthropicStreamEvent = { type: 'message_delta', usage: readAnthropicUsage(event.usage) };
      const stopReason = asString(asRecord(event.delta)?.stop_reason);
      if (stopReason !== undefined) delta.stopReason = stopReason;
      const stopSequence = asString(asRecord(event.delta)?.stop_sequence);
      if (stopSequence !== undefined) delta.stopSequence = stopSequence;
      return delta;
    }
    case 'message_stop':
      return { type: 'message_stop' };
    case 'error':
      return { type: 'error', error: readAnthropicError(event) as AnthropicErrorView };
    default:
      return { type: 'other' };
  }
}
