import type { FinishReason } from '../../../spec/finish-reason.js';

/**
 * The Responses API has no finish reason: a response ends `completed`, `incomplete` (with
 * `incomplete_details.reason`) or `failed`, and a turn that calls tools is still `completed`, so
 * the output decides between `stop` and `tool-calls`.
 */
export function mapOpenAiResponsesFinishReason(options: {
  status: string | undefined;
  incompleteReason: string | undefined;
  hasFunctionCalls: boolean;
}): FinishReason {
  switch (options.status) {
    case 'completed':
      return options.hasFunctionCalls ? 'tool-calls' : 'stop';
    case 'incomplete':
      if (options.incompleteReason === 'max_output_tokens') return 'length';
      if (options.incompleteReason === 'content_filter') return 'content-filter';
      return 'other';
    case 'failed':
      return 'error';
    default:
      // cancelled, or a status added later.
      return 'other';
  }
}

/** The native reason reported beside the mapped one: the incomplete reason when there is one. */
export function nativeOpenAiResponsesFinishReason(options: {
  status: string | undefined;
  incompleteReason: string | undefined;
}): string | null {
  return options.incompleteReason ?? options.status ?? null;
}
