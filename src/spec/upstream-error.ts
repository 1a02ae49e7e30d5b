/**
 * A failed upstream call. `retryable` says whether another endpoint may succeed where this one
 * failed (connection errors, timeouts, 408/409/429/5xx); an invalid request is not retryable.
 */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
  /** HTTP status from the upstream, or null when no response arrived. */
  readonly status: number | null;
  readonly retryable: boolean;
  /** What went wrong, for metadata and logs: the upstream's message or body, shortened. */
  readonly raw: string | null;
  readonly retryAfterSeconds: number | null;
  readonly kind: 'http' | 'connection' | 'timeout' | 'invalid-response' | 'aborted';

  constructor(options: {
    message: string;
    kind: UpstreamError['kind'];
    status?: number | null;
    raw?: string | null;
    retryAfterSeconds?: number | null;
    retryable?: boolean;
  }) {
    super(options.message);
    this.kind = options.kind;
    this.status = options.status ?? null;
    this.raw = options.raw ?? null;
    this.retryAfterSeconds = options.retryAfterSeconds ?? null;
    this.retryable = options.retryable ?? isRetryable(options.kind, this.status);
  }
}

function isRetryable(kind: UpstreamError['kind'], status: number | null): boolean {
  if (kind === 'aborted') return false;
  if (kind !== 'http' || status === null) return true;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * A request this upstream protocol cannot carry (audio to Anthropic, a file link to chat
 * completions, arguments that are not JSON). Raised by an adapter before anything is sent: routing
 * moves on to a candidate that can carry it, and when none can the client gets a 400 with this
 * message. `field: 'input'`: the message is a rule about the conversation, which the 400 names by
 * the path the client sent it in (`body.messages`, `body.input`) before the rule.
 */
export class UnsupportedRequestError extends Error {
  override name = 'UnsupportedRequestError';
  readonly field: 'input' | undefined;

  constructor(message: string, options?: { field: 'input' }) {
    super(message);
    this.field = options?.field;
  }
}
