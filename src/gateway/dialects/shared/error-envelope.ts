import type { GenerationFailure } from '../dialect.js';

/** The service's `error` object (reference §9.1): status, message, typed `error_type` in metadata. */
export interface StandardError {
  code: number;
  message: string;
  metadata: Record<string, unknown>;
}

/**
 * A failure as the service-wide `error` object, with `error_type` (spec 2.7) beside what the
 * failure carries (provider_name, raw…). The chat and responses surfaces send it both as the HTTP
 * error body and inside an answer that failed after it began; the `openai` SDK reads `message`.
 */
export function standardError(failure: GenerationFailure): StandardError {
  return {
    code: failure.status,
    message: failure.message,
    metadata: { error_type: failure.errorType, ...failure.metadata },
  };
}

/**
 * The HTTP error body of a failure before any output: `{ error }`, with the routing metadata (when
 * the client asked for it) beside `error`, where reference §8 puts it.
 */
export function renderStandardFailure(
  failure: GenerationFailure,
  _generationId: string | null,
): { error: StandardError; switchyard_metadata?: unknown } {
  const { switchyard_metadata: routing, ...rest } = failure.metadata ?? {};
  const error = standardError({ ...failure, metadata: rest });
  return routing === undefined ? { error } : { error, switchyard_metadata: routing };
}
