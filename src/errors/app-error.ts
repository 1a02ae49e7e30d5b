/**
 * The closed list of errors the service raises. Each maps to one HTTP status and one
 * `error_type` of the spec's vocabulary (2.7), so every surface renders it the same way.
 */
export const errorKinds = {
  invalid_request: { status: 400, errorType: 'invalid_request' },
  authentication: { status: 401, errorType: 'authentication' },
  payment_required: { status: 402, errorType: 'payment_required' },
  permission_denied: { status: 403, errorType: 'permission_denied' },
  not_found: { status: 404, errorType: 'not_found' },
  conflict: { status: 409, errorType: 'invalid_request' },
  payload_too_large: { status: 413, errorType: 'payload_too_large' },
  unsupported_media_type: { status: 415, errorType: 'invalid_request' },
  rate_limit_exceeded: { status: 429, errorType: 'rate_limit_exceeded' },
  server: { status: 500, errorType: 'server' },
  unavailable: { status: 503, errorType: 'provider_overloaded' },
} as const;

export type ErrorKind = keyof typeof errorKinds;

export class AppError extends Error {
  override name = 'AppError';
  readonly kind: ErrorKind;
  readonly status: number;
  readonly metadata: Record<string, unknown> | undefined;
  /** Extra response headers, such as Retry-After on a 429. */
  readonly headers: Record<string, string> | undefined;

  constructor(
    kind: ErrorKind,
    message: string,
    options: { metadata?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.kind = kind;
    this.status = errorKinds[kind].status;
    this.metadata = options.metadata;
    this.headers = options.headers;
  }
}

export const invalidRequest = (message: string) => new AppError('invalid_request', message);
export const notFound = (message = 'Resource not found') => new AppError('not_found', message);

export const managementKeyRequired = () =>
  new AppError('permission_denied', 'Only management keys can perform this operation');
