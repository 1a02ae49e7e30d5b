import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { estimatedImageTokens } from '../../../src/gateway/pipeline/image-token-estimate.js';

describe('the tokens an image is estimated at', () => {
  it("is Gemini's documented count for the model and the size asked for", () => {
    const cases: Array<[string, string | undefined, number]> = [
      ['google/gemini-2.5-flash-image', undefined, 1290],
      ['google/gemini-2.5-flash-image', '4K', 1290],
      ['google/gemini-3-pro-image', undefined, 1120],
      ['google/gemini-3-pro-image-preview', '2K', 1120],
      ['google/gemini-3-pro-image', '4K', 2000],
      ['google/gemini-3-pro-image', '4096', 2000],
      ['google/gemini-3.1-flash-image', '0.5K', 747],
      ['google/gemini-3.1-flash-image', '1K', 1120],
      ['google/gemini-3.1-flash-image-preview', '2048', 1680],
      ['google/gemini-3.1-flash-image', '4K', 2520],
      // A Gemini 3 image model without documented counts makes 1K images.
      ['google/gemini-3.1-flash-lite-image', undefined, 1120],
      ['openai/gpt-5-image', undefined, 1290],
    ];
    for (const [model, size, tokens] of cases)
      assert.equal(estimatedImageTokens(model, size), tokens, `${model} ${size ?? '(no size)'}`);
  });
});
