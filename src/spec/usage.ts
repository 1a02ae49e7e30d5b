/** Token counts as the upstream reported them; the basis of a generation's cost. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens read from the provider's prompt cache (a subset of inputTokens). */
  cachedInputTokens: number;
  /** Input tokens written to the prompt cache (a subset of inputTokens). */
  cacheWriteTokens: number;
  /** Output tokens spent on reasoning (a subset of outputTokens). */
  reasoningTokens: number;
  /**
   * Output tokens of generated images (a subset of outputTokens, apart from reasoningTokens),
   * billed at the endpoint's `image_output` price; absent when the answer holds no image.
   */
  imageOutputTokens?: number;
}

export const emptyUsage = (): Usage => ({
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
});
