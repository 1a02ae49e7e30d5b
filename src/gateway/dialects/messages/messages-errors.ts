import type { GenerationFailure } from '../dialect.js';

/**
 * Anthropic's native error `type` for an HTTP status (https://docs.anthropic.com/en/api/errors).
 * SDKs show it to users and some branch on it; the gateway's own typed `error_type` (spec 2.7)
 * travels beside it.
 */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 408:
    case 504:
    case 524:
      return 'timeout_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      // Other client errors (409, 412, 422…) are still the request's fault, not the service's.
      return status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error';
  }
}

export interface MessagesErrorObject {
  type: string;
  message: string;
  error_type: string;
  metadata?: Record<string, unknown>;
}

/** The `error` member of both the HTTP error body and the in-stream `error` event. */
export function messagesErrorObject(failure: GenerationFailure): MessagesErrorObject {
  const error: MessagesErrorObject = {
    type: anthropicErrorType(failure.status),
    message: failure.message,
    error_type: failure.errorType,
  };
  if (failure.metadata) error.metadata = failure.metadata;
  return error;
}

/**
 * Anthropic's error envelope (reference §9.3): `{ type: 'error', error: {…}, request_id }`, the
 * request id being the generation id when one was assigned.
 */
export function renderMessagesFailure(failure: GenerationFailure, generationId: string | null) {
  // The routing metadata rides beside `error` (reference §8), not inside it.
  const { switchyard_metadata: routing, ...rest } = failure.metadata ?? {};
  const error = messagesErrorObject({ ...failure, metadata: Object.keys(rest).length ? rest : undefined });
  return routing === undefined
    ? { type: 'error', error, request_id: generationId }
    : { type: 'error', error, request_id: generationId, switchyard_metadata: routing };
}
