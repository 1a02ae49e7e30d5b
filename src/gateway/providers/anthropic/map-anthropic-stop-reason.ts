import type { FinishReason } from '../../../spec/finish-reason.js';

export function mapAnthropicStopReason(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'max_tokens':
    // The answer was cut by the context window rather than max_tokens: truncated all the same.
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool-calls';
    case 'refusal':
      return 'content-filter';
    default:
      // pause_turn (a server tool paused a long turn) and anything newer.
      return 'other';
  }
}
