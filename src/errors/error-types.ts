/**
 * The typed `error_type` vocabulary of spec 2.7 (reference §9.3) and the HTTP status each one
 * travels with. Every surface (chat `error.metadata.error_type`, Responses top-level `error_type`,
 * Messages `error.error_type`) takes its value from here.
 */
export const errorTypeStatus = {
  context_length_exceeded: 400,
  max_tokens_exceeded: 400,
  token_limit_exceeded: 400,
  string_too_long: 400,
  authentication: 401,
  permission_denied: 403,
  payment_required: 402,
  rate_limit_exceeded: 429,
  provider_overloaded: 503,
  provider_unavailable: 502,
  invalid_request: 400,
  invalid_prompt: 400,
  not_found: 404,
  precondition_failed: 412,
  payload_too_large: 413,
  unprocessable: 422,
  content_policy_violation: 400,
  refusal: 400,
  invalid_image: 400,
  image_too_large: 400,
  image_too_small: 400,
  unsupported_image_format: 400,
  image_not_found: 404,
  image_download_failed: 400,
  server: 500,
  timeout: 504,
  unmapped: 500,
} as const;

export type ErrorType = keyof typeof errorTypeStatus;

/** The error_type a bare HTTP status stands for when nothing more specific is known. */
export function errorTypeForStatus(status: number): ErrorType {
  switch (status) {
    case 400:
      return 'invalid_request';
    case 401:
      return 'authentication';
    case 402:
      return 'payment_required';
    case 403:
      return 'permission_denied';
    case 404:
      return 'not_found';
    case 408:
    case 504:
    case 524:
      return 'timeout';
    case 412:
      return 'precondition_failed';
    case 413:
      return 'payload_too_large';
    case 422:
      return 'unprocessable';
    case 429:
      return 'rate_limit_exceeded';
    case 502:
      return 'provider_unavailable';
    case 503:
    case 529:
      return 'provider_overloaded';
    default:
      return status >= 500 ? 'server' : status >= 400 ? 'invalid_request' : 'unmapped';
  }
}
