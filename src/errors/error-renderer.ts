import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance } from 'fastify';
import { NO_NUL_PATTERN, NOT_BLANK_PATTERN } from '../platform/schema-types.js';
import { AppError } from './app-error.js';

export interface ErrorEnvelope {
  error: { code: number; message: string; metadata?: Record<string, unknown> };
}

/** Fastify's own error codes for body parsing, mapped to what a client should read. */
const parserErrors: Record<string, { status: number; message: (error: FastifyError) => string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, message: () => 'Malformed JSON in request body' },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    message: () => "Body cannot be empty when content-type is set to 'application/json'",
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    message: () => 'Unsupported Content-Type: request bodies must be application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    message: () => 'Content-Length does not match the body',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, message: () => 'Request body is too large' },
  FST_ERR_CTP_INVALID_TYPE: { status: 400, message: () => 'Invalid Content-Type header' },
};

function describeValidation(error: FastifyError): string {
  const first = error.validation?.[0];
  if (!first) return error.message;
  const part = error.validationContext ?? 'body';
  const params = first.params as Record<string, unknown>;
  let field = first.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (typeof params.missingProperty === 'string')
    field = field ? `${field}.${params.missingProperty}` : params.missingProperty;
  if (typeof params.additionalProperty === 'string') {
    const name = field ? `${field}.${params.additionalProperty}` : params.additionalProperty;
    return `Invalid request parameters: ${part}.${name} is not a known field`;
  }
  const where = field ? `${part}.${field}` : part;
  if (first.keyword === 'pattern' && params.pattern === NO_NUL_PATTERN) {
    return `Invalid request parameters: ${where} must not contain NUL characters or unpaired surrogates`;
  }
  if (first.keyword === 'pattern' && params.pattern === NOT_BLANK_PATTERN) {
    return `Invalid request parameters: ${where} must not be blank (whitespace only)`;
  }
  if (Array.isArray(params.allowedValues)) {
    return `Invalid request parameters: ${where} must be one of: ${params.allowedValues.map((value) => (value === null ? 'null' : String(value))).join(', ')}`;
  }
  return `Invalid request parameters: ${where} ${first.message ?? 'is invalid'}`;
}

/** Turns any thrown value into the status, headers and envelope a client receives. */
export function renderError(error: unknown): {
  status: number;
  headers: Record<string, string>;
  body: ErrorEnvelope;
} {
  if (error instanceof AppError) {
    const body: ErrorEnvelope = { error: { code: error.status, message: error.message } };
    if (error.metadata) body.error.metadata = error.metadata;
    return { status: error.status, headers: error.headers ?? {}, body };
  }
  const fastifyError = error as FastifyError;
  if (fastifyError?.validation) {
    return {
      status: 400,
      headers: {},
      body: { error: { code: 400, message: describeValidation(fastifyError) } },
    };
  }
  const known = fastifyError?.code ? parserErrors[fastifyError.code] : undefined;
  if (known) {
    return {
      status: known.status,
      headers: {},
      body: { error: { code: known.status, message: known.message(fastifyError) } },
    };
  }
  if (isForeignKeyViolation(error)) {
    // The row a write referred to went away meanwhile (a workspace deleted while something was
    // being created in it): for the client, that resource is not found.
    return {
      status: 404,
      headers: {},
      body: { error: { code: 404, message: 'Resource not found: it was deleted while this request ran' } },
    };
  }
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { status, headers: {}, body: { error: { code: status, message: fastifyError.message } } };
  }
  return { status: 500, headers: {}, body: { error: { code: 500, message: 'Internal Server Error' } } };
}

/** PostgreSQL SQLSTATE 23503 or better-sqlite3's SQLITE_CONSTRAINT_FOREIGNKEY. */
function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/** Installs the one error renderer and the 404 handler; nothing else writes error bodies. */
export function installErrorRenderer(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const rendered = renderError(error);
    if (rendered.status >= 500) request.log.error({ err: error }, 'request failed');
    return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
  });
  app.setNotFoundHandler((request, reply) => {
    const body: ErrorEnvelope = {
      error: { code: 404, message: `Route ${request.method} ${request.url.split('?')[0]} not found` },
    };
    return reply.code(404).send(body);
  });
}

/**
 * Errors Node's HTTP parser meets before Fastify sees a request (headers too large, garbage on the
 * socket) still leave in the envelope, written straight to the socket.
 */
export function renderClientError(error: NodeJS.ErrnoException, socket: import('node:stream').Duplex): void {
  if (!socket.writable) return;
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const status = tooLarge ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const message = tooLarge
    ? 'Request header fields too large'
    : status === 408
      ? 'Request timed out'
      : 'Malformed HTTP request';
  const body = JSON.stringify({ error: { code: status, message } });
  // Once the answer is flushed the socket is let go, not only half-closed: a client that never closes
  // its own end (a slowloris, or one that ignores the FIN) would otherwise hold a descriptor for ever.
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
