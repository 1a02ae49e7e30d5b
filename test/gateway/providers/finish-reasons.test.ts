import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mapAnthropicStopReason } from '../../../src/gateway/providers/anthropic/map-anthropic-stop-reason.js';
import { mapGeminiFinishReason } from '../../../src/gateway/providers/gemini/map-gemini-finish-reason.js';

describe('provider finish reasons in the canonical vocabulary', () => {
  it('Anthropic: a turn cut by max_tokens or by the context window is truncated (length)', () => {
    assert.deepEqual(
      [
        'end_turn',
        'stop_sequence',
        'max_tokens',
        'model_context_window_exceeded',
        'tool_use',
        'refusal',
        'pause_turn',
        undefined,
      ].map((reason) => mapAnthropicStopReason(reason)),
      ['stop', 'stop', 'length', 'length', 'tool-calls', 'content-filter', 'other', 'other'],
    );
  });

  it('Gemini: STOP with function calls is tool-calls; safety reasons filter', () => {
    assert.equal(mapGeminiFinishReason('STOP', { hasFunctionCalls: true }), 'tool-calls');
    assert.equal(mapGeminiFinishReason('STOP', { hasFunctionCalls: false }), 'stop');
    assert.equal(mapGeminiFinishReason('MAX_TOKENS', { hasFunctionCalls: false }), 'length');
    assert.equal(mapGeminiFinishReason('SAFETY', { hasFunctionCalls: false }), 'content-filter');
    for (const reason of ['IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION'])
      assert.equal(mapGeminiFinishReason(reason, { hasFunctionCalls: false }), 'content-filter', reason);
  });
});
