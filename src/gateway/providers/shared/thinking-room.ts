/**
 * The most of a caller's output cap a thinking budget derived from an effort level takes: providers
 * count thinking inside the cap (Anthropic's `max_tokens`, Gemini's `maxOutputTokens`), and thinking
 * up to the cap's last token would leave the answer one. A quarter stays for the answer.
 */
export function thinkingRoom(maxOutputTokens: number | undefined): number {
  return maxOutputTokens === undefined ? Number.POSITIVE_INFINITY : Math.floor(maxOutputTokens * 0.75);
}
