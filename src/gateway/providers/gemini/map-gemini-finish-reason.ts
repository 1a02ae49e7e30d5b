import type { FinishReason } from '../../../spec/finish-reason.js';

/**
 * Gemini's `finishReason` in the canonical vocabulary. Gemini says `STOP` also when it ends a turn
 * with function calls, so the caller tells us whether the response carried any.
 */
export function mapGeminiFinishReason(
  reason: string | null | undefined,
  options: { hasFunctionCalls: boolean },
): FinishReason {
  switch (reason) {
    case 'STOP':
      return options.hasFunctionCalls ? 'tool-calls' : 'stop';
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'RECITATION':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
    case 'IMAGE_PROHIBITED_CONTENT':
    case 'IMAGE_RECITATION':
      return 'content-filter';
    case 'MALFORMED_FUNCTION_CALL':
    case 'UNEXPECTED_TOOL_CALL':
    case 'TOO_MANY_TOOL_CALLS':
    case 'MALFORMED_RESPONSE':
      return 'error';
    default:
      return 'other';
  }
}
