/**
 * Why a generation stopped, in one vocabulary: `stop` (natural end or stop sequence), `length`
 * (output token limit), `tool-calls`, `content-filter`, `error`, or `other` for anything unmapped.
 */
export type FinishReason = 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'other';
