import type { GenerationFailure } from '../dialect.js';

/**
 * Failures of a generation that only ran out of room. The reference gateway turns them into an
 * `incomplete` response (finish "length") rather than a failed one, mid-stream.
 */
const LENGTH_ERROR_TYPES: ReadonlySet<string> = new Set([
  'context_length_exceeded',
  'max_tokens_exceeded',
  'token_limit_exceeded',
  'string_too_long',
]);

export const isLengthFailure = (failure: GenerationFailure): boolean =>
  LENGTH_ERROR_TYPES.has(failure.errorType);

/**
 * The OpenAI-native `error.code` inside a failed Response (OpenAPI `ResponsesErrorField.code`),
 * mapped from our `error_type` as the reference gateway maps it; the typed `error_type` travels
 * beside it at the top level of the response.
 */
export function responsesErrorCode(errorType: string): string {
  switch (errorType) {
    case 'rate_limit_exceeded':
      return 'rate_limit_exceeded';
    case 'context_length_exceeded':
    case 'invalid_request':
      return 'invalid_prompt';
    case 'content_policy_violation':
      return 'image_content_policy_violation';
    default:
      return 'server_error';
  }
}
