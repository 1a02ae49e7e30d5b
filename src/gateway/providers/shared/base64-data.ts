/**
 * Base64 data as the providers that take it as a field (Anthropic's base64 sources, Gemini's
 * inlineData) want it: the standard alphabet without whitespace. The surfaces accept line breaks
 * (MIME encoders wrap lines) and the URL-safe alphabet (src/gateway/dialects/shared/request-rules.ts);
 * data that has neither is returned as it is, without a copy.
 */
export function standardBase64(data: string): string {
  if (!/[\s_-]/.test(data)) return data;
  return data.replace(/\s+/g, '').replace(/-/g, '+').replace(/_/g, '/');
}
