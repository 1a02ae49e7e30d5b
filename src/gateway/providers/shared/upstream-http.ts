import type { IncomingHttpHeaders } from 'node:http';
import { Agent, type Dispatcher, errors, request } from 'undici';
import type { AdapterCall } from '../../../spec/provider-adapter.js';
import { UpstreamError } from '../../../spec/upstream-error.js';
import { parseUpstreamJson } from './server-sent-events.js';

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Dispatcher.ResponseData['body'];
}

/** Longest upstream error body kept for messages and metadata. */
const MAX_ERROR_BODY = 64 * 1024;

/**
 * The upstream HTTP client: one undici Agent with keep-alive pools per origin. undici's
 * `request` (not `fetch`) keeps WHATWG streams and Response objects off the hot path.
 */
export function createUpstreamHttp(options: { connectionsPerOrigin?: number } = {}) {
  const agent = new Agent({
    connections: options.connectionsPerOrigin ?? 256,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
  });

  async function post(call: {
    url: string;
    headers: Record<string, string>;
    body: string;
    signal: AbortSignal;
    headersTimeoutMs: number;
    idleTimeoutMs: number;
  }): Promise<UpstreamResponse> {
    try {
      const response = await request(call.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...call.headers },
        body: call.body,
        signal: call.signal,
        dispatcher: agent,
        headersTimeout: call.headersTimeoutMs,
        bodyTimeout: call.idleTimeoutMs,
      });
      return { status: response.statusCode, headers: response.headers, body: response.body };
    } catch (error) {
      throw toUpstreamError(error, call.signal);
    }
  }

  return { post, close: () => agent.close() };
}

export type UpstreamHttp = ReturnType<typeof createUpstreamHttp>;

/** undici's errors, in the canonical vocabulary. */
export function toUpstreamError(error: unknown, signal?: AbortSignal): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (signal?.aborted) {
    const reason = signal.reason;
    if (reason instanceof UpstreamError) return reason;
    return new UpstreamError({ message: 'The request was aborted', kind: 'aborted' });
  }
  if (
    error instanceof errors.HeadersTimeoutError ||
    error instanceof errors.BodyTimeoutError ||
    error instanceof errors.ConnectTimeoutError
  ) {
    return new UpstreamError({ message: `Upstream timed out: ${error.message}`, kind: 'timeout' });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new UpstreamError({ message: `Upstream connection failed: ${message}`, kind: 'connection' });
}

/**
 * Reads a (small) body to text, stopping at a cap; used for error bodies and non-streamed replies.
 * Listens to the stream's events rather than iterating it: one promise per body, not one per chunk.
 */
export function readText(
  body: UpstreamResponse['body'],
  limit: number,
  signal?: AbortSignal,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Destroyed with the error, which comes back through onError: undici emits an 'error' for a
        // body destroyed before its end, and with no listener left that would end the process.
        body.off('data', onData);
        body.destroy(
          new UpstreamError({
            message: `Upstream response exceeds ${limit} bytes`,
            kind: 'invalid-response',
          }),
        );
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(toUpstreamError(error, signal));
    };
    // Destroyed without an error (and so without 'end'): the body will never be complete.
    const onClose = () => onError(new Error('Premature close'));
    if (body.destroyed) {
      onClose();
      return;
    }
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
    body.on('close', onClose);
  });
}

function retryAfter(headers: IncomingHttpHeaders): number | null {
  const value = headers['retry-after'];
  if (typeof value !== 'string') return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** Turns a non-2xx upstream response into an UpstreamError carrying its message and retry hint. */
export async function errorFromResponse(
  response: UpstreamResponse,
  signal?: AbortSignal,
): Promise<UpstreamError> {
  let raw: string;
  try {
    raw = await readText(response.body, MAX_ERROR_BODY, signal);
  } catch {
    raw = '';
  }
  let message = `Upstream returned HTTP ${response.status}`;
  try {
    const parsed = JSON.parse(raw) as { error?: { message?: unknown } | string; message?: unknown };
    const detail =
      typeof parsed.error === 'string'
        ? parsed.error
        : typeof parsed.error?.message === 'string'
          ? parsed.error.message
          : typeof parsed.message === 'string'
            ? parsed.message
            : null;
    if (detail) message = detail;
  } catch {
    // Not JSON (an HTML error page, say): the status says enough; `raw` keeps the text.
  }
  return new UpstreamError({
    message,
    kind: 'http',
    status: response.status,
    raw: raw.slice(0, 2000),
    retryAfterSeconds: retryAfter(response.headers),
  });
}

/** Largest non-streamed reply accepted from an upstream. */
const MAX_REPLY_BYTES = 32 * 1024 * 1024;

/**
 * POSTs one adapter call upstream with the call's timeouts and returns the response when it
 * succeeded; a non-2xx answer becomes the adapter's UpstreamError (`toError` reads a provider's own
 * error shape where the generic reader is not enough).
 */
export async function openUpstream(
  http: UpstreamHttp,
  call: AdapterCall,
  request: {
    url: string;
    headers: Record<string, string>;
    body: string;
    signal: AbortSignal;
    toError?: (response: UpstreamResponse, signal: AbortSignal) => Promise<UpstreamError>;
  },
): Promise<UpstreamResponse> {
  const response = await http.post({
    url: request.url,
    headers: request.headers,
    body: request.body,
    signal: request.signal,
    headersTimeoutMs: call.timeouts.headersMs,
    idleTimeoutMs: call.timeouts.idleMs,
  });
  if (response.status >= 400) throw await (request.toError ?? errorFromResponse)(response, request.signal);
  return response;
}

/** A non-streamed reply's JSON, size-capped and parsed as foreign input. */
export async function readUpstreamJson(response: UpstreamResponse, signal: AbortSignal): Promise<unknown> {
  return parseUpstreamJson(await readText(response.body, MAX_REPLY_BYTES, signal));
}
