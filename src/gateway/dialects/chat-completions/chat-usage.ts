import type { FinishReason } from '../../../spec/finish-reason.js';
import type { GenerationSummary } from '../dialect.js';
import { billedCost, costSplit } from '../shared/usage-cost.js';

/** The `usage` object of reference §1.2 (`ChatUsage`): tokens, cost in USD credits, BYOK flag. */
export function chatUsage(summary: GenerationSummary) {
  const { usage } = summary;
  const split = costSplit(summary);
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: {
      cached_tokens: usage.cachedInputTokens,
      cache_write_tokens: usage.cacheWriteTokens,
    },
    // image_tokens only when the answer held images, whose tokens are priced apart (their cost is
    // in the completions'); no object spread for the answers without them.
    completion_tokens_details: usage.imageOutputTokens
      ? { reasoning_tokens: usage.reasoningTokens, image_tokens: usage.imageOutputTokens }
      : { reasoning_tokens: usage.reasoningTokens },
    ...billedCost(summary),
    cost_details: {
      upstream_inference_cost: null,
      upstream_inference_prompt_cost: split.input,
      upstream_inference_completions_cost: split.output,
    },
  };
}

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error';

/**
 * Canonical finish reason → the chat enum. `other` (an upstream reason nobody mapped) becomes `stop`,
 * the chat enum having no such value; the raw reason still travels in `native_finish_reason`.
 */
export function mapChatFinishReason(reason: FinishReason): ChatFinishReason {
  switch (reason) {
    case 'tool-calls':
      return 'tool_calls';
    case 'content-filter':
      return 'content_filter';
    case 'other':
      return 'stop';
    default:
      return reason;
  }
}
