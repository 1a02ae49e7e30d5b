import type { FinishReason } from '../../../spec/finish-reason.js';
import type { ReasoningFormat } from '../../../spec/generation-request.js';
import type { Usage } from '../../../spec/usage.js';
import type { GenerationSummary } from '../dialect.js';
import { labelled, readLabelled } from '../shared/labelled-reasoning.js';
import { billedCost } from '../shared/usage-cost.js';
import type { MessagesBody } from './messages-body-schema.js';

/**
 * Pieces of the Messages reply shared by the JSON result and the stream: the message id, usage
 * with cost, and the stop reason.
 */

/** `msg_…` from the generation id `gen-…`, so a message id leads back to its generation. */
export function messageId(generationId: string): string {
  return `msg_${generationId.startsWith('gen-') ? generationId.slice(4) : generationId}`;
}

/** Anthropic's four token counts, as message_start carries them. */
export interface MessagesTokenCounts {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export interface MessagesUsage extends MessagesTokenCounts {
  /** USD. */
  cost: number;
  is_byok: boolean;
}

/**
 * Anthropic's `input_tokens` counts only the prompt tokens that were neither read from nor written
 * to the cache; canonical `inputTokens` is the whole prompt with both as subsets.
 */
export function messagesTokenCounts(usage: Usage): MessagesTokenCounts {
  return {
    input_tokens: Math.max(0, usage.inputTokens - usage.cachedInputTokens - usage.cacheWriteTokens),
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cachedInputTokens,
  };
}

/** The counts with the cost: the usage of a whole answer and of message_delta. */
export function messagesUsage(summary: GenerationSummary): MessagesUsage {
  return { ...messagesTokenCounts(summary.usage), ...billedCost(summary) };
}

/** Anthropic's stop reasons; an upstream that speaks them (Anthropic, Bedrock) is passed through. */
const ANTHROPIC_STOP_REASONS = new Set([
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'tool_use',
  'pause_turn',
  'refusal',
  'model_context_window_exceeded',
]);

export interface StopReason {
  stop_reason: string;
  stop_sequence: string | null;
}

/**
 * The stop reason a Messages client acts on. A turn that produced tool calls stops with
 * `tool_use` whatever the upstream said (some report a plain stop), because agent loops run the
 * tools only on `tool_use`. `stop_sequence` names the sequence only when the request had exactly
 * one, since the upstreams do not say which matched.
 */
export function stopReason(options: {
  body: MessagesBody;
  finishReason: FinishReason;
  nativeFinishReason: string | null;
  hasToolCalls: boolean;
  /** The sequence the provider said ended the answer. */
  stopSequence?: string | undefined;
}): StopReason {
  const { finishReason, nativeFinishReason, hasToolCalls } = options;
  let reason: string;
  if (nativeFinishReason !== null && ANTHROPIC_STOP_REASONS.has(nativeFinishReason))
    reason = nativeFinishReason;
  else if (finishReason === 'length') reason = 'max_tokens';
  else if (finishReason === 'tool-calls') reason = 'tool_use';
  else if (finishReason === 'content-filter') reason = 'refusal';
  else reason = 'end_turn';
  if (hasToolCalls && (reason === 'end_turn' || reason === 'stop_sequence')) reason = 'tool_use';
  // The provider's word when it named one; else the request's only sequence is the one that hit.
  const sequences = options.body.stop_sequences;
  const sequence =
    reason !== 'stop_sequence'
      ? null
      : (options.stopSequence ?? (sequences?.length === 1 ? (sequences[0] as string) : null));
  return { stop_reason: reason, stop_sequence: sequence };
}

/**
 * A thinking block's `signature`, or a redacted_thinking block's `data`, for reasoning another
 * provider signed or encrypted (Gemini's thought signatures, OpenAI's and xAI's encrypted
 * reasoning): labelled with its format (`google-gemini-v1:<signature>`,
 * ../shared/labelled-reasoning.ts), so that the block sent back reaches that provider and never
 * Anthropic, which would refuse it. Anthropic's own values pass unchanged both ways.
 */
export function messagesOpaque(value: string, format: ReasoningFormat | undefined): string {
  return format === undefined || format === 'anthropic-claude-v1' ? value : labelled(value, format);
}

/** A signature or redacted data as sent back: another provider's, by its label, or Anthropic's. */
export function readMessagesOpaque(value: string): { value: string; format: ReasoningFormat } {
  const read = readLabelled(value);
  return { value: read.value, format: read.format ?? 'anthropic-claude-v1' };
}
