/**
 * Why a generation stopped, in one vocabulary: `stop` (natural end or stop sequence), `length`
 * (output token limit), `tool-calls`, `content-filter`, `error`, or `other` for anything unmapped.
 */
export type FinishReason = 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'other';

/** Finish reasons in the dialect-neutral (OpenAI) spelling the reference reports. */
const reportedFinishReasons: Record<string, string> = {
  stop: 'stop',
  length: 'length',
  'tool-calls': 'tool_calls',
  'content-filter': 'content_filter',
  error: 'error',
  // A reason no mapping knows (its text is `native_finish_reason`): `stop`, as the answer said.
  other: 'stop',
};

/**
 * A stored finish reason as the API reports it (`tool_calls`, `content_filter`; `other` as `stop`):
 * what `GET /generation` shows and what broadcast events carry, so a filter rule written as the
 * API spells it matches. Null for none or for a value no mapping knows.
 */
export function reportedFinishReason(reason: string | null): string | null {
  return reason === null ? null : (reportedFinishReasons[reason] ?? null);
}
