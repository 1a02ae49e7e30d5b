import type { IncomingHttpHeaders } from 'node:http';
import type { EventSourceMessage } from 'eventsource-parser';
import { Agent, type Dispatcher, errors } from 'undici';
import type { CancelSignal } from '../../../spec/cancel-signal.js';
import type { AdapterCall } from '../../../spec/provider-adapter.js';
import { UpstreamError } from '../../../spec/upstream-error.js';
import { createServerSentEventReader, parseUpstreamJson } from './server-sent-events.js';

/** A reply read whole: the non-streamed calls' answers and every error body. */
export interface UpstreamText {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** A 2xx reply to a streamed call: its SSE events, read as they arrive. */
export interface UpstreamEvents {
  status: number;
  headers: IncomingHttpHeaders;
  events: AsyncGenerator<EventSourceMessage>;
}

/** What `postForText` and `postForEvents` send. */
export interface UpstreamPost {
  url: string;
  headers: Record<string, string>;
  body: string;
  signal: CancelSignal;
  headersTimeoutMs: number;
  idleTimeoutMs: number;
}

/** Longest upstream error body kept for messages and metadata. */
const MAX_ERROR_BODY = 64 * 1024;

/** Largest non-streamed reply accepted from an upstream. */
const MAX_REPLY_BYTES = 32 * 1024 * 1024;

/** Events parsed and not yet read past which a stream stops reading its socket until they are. */
const MAX_QUEUED_EVENTS = 256;

/**
 * The upstream HTTP client: one undici Agent with keep-alive pools per origin, driven through
 * `dispatch` with handlers of our own. A reply's bytes go straight from undici's parser to the JSON
 * text or the SSE parser: no `fetch()`, no web or Node streams, no Readable body per call (the
 * Readable of undici's `request` and its events cost about a tenth of a generation's CPU;
 * docs/performance.md, session 10).
 */
export function createUpstreamHttp(options: { connectionsPerOrigin?: number } = {}) {
  const agent = new Agent({
    connections: options.connectionsPerOrigin ?? 256,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
  });

  /**
   * Sends one POST; `handler` sees the response. The call's signal aborts it at any point: a call
   * still queued for a connection is aborted when it starts, and `onAbortBeforeStart` is told at
   * once, so the caller need not wait for a connection to fail. The signal's listener goes when the
   * response ends or fails.
   */
  function dispatch(
    call: UpstreamPost,
    handler: Required<
      Pick<
        Dispatcher.DispatchHandler,
        'onResponseStart' | 'onResponseData' | 'onResponseEnd' | 'onResponseError'
      >
    >,
    onAbortBeforeStart: (reason: unknown) => void,
  ): void {
    const { signal } = call;
    const target = targetOf(call.url);
    let controller: Dispatcher.DispatchController | null = null;
    // The error undici is aborted with only ends the call: toUpstreamError reads the signal's reason.
    const aborted = () =>
      signal.reason instanceof Error ? signal.reason : new Error('The request was aborted');
    const onAbort = () => {
      if (controller) controller.abort(aborted());
      else onAbortBeforeStart(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    agent.dispatch(
      {
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...call.headers },
        body: call.body,
        headersTimeout: call.headersTimeoutMs,
        bodyTimeout: call.idleTimeoutMs,
      },
      {
        onRequestStart(started) {
          controller = started;
          if (signal.aborted) started.abort(aborted());
        },
        // An informational 1xx (103 Early Hints) comes before the real answer: not the reply.
        onResponseStart(current, status, headers, message) {
          if (status >= 200) handler.onResponseStart(current, status, headers, message);
        },
        onResponseData: handler.onResponseData,
        onResponseEnd(current, trailers) {
          signal.removeEventListener('abort', onAbort);
          handler.onResponseEnd(current, trailers);
        },
        onResponseError(current, error) {
          signal.removeEventListener('abort', onAbort);
          handler.onResponseError(current, error);
        },
      },
    );
  }

  /**
   * A POST whose whole reply is wanted (non-streamed calls). A 2xx reply is capped at
   * MAX_REPLY_BYTES (an UpstreamError past it); an error reply longer than MAX_ERROR_BODY is
   * answered without its text.
   */
  function postForText(call: UpstreamPost): Promise<UpstreamText> {
    return new Promise<UpstreamText>((resolve, reject) => {
      const { settle } = settleOnce(resolve, reject, call.signal);
      if (call.signal.aborted) {
        settle({ error: call.signal.reason });
        return;
      }
      const reading = readWhole(MAX_REPLY_BYTES);
      try {
        dispatch(
          call,
          {
            onResponseStart: (_controller, status, headers) => reading.start(status, headers),
            onResponseData: (controller, chunk) => reading.data(controller, chunk),
            onResponseEnd: () => settle({ reply: reading.reply() }),
            onResponseError: (_controller, error) =>
              settle(reading.answeredError() ? { reply: reading.reply() } : { error }),
          },
          (reason) => settle({ error: reason }),
        );
      } catch (error) {
        settle({ error });
      }
    });
  }

  /**
   * A POST whose reply is an SSE stream: resolves at the response's headers with its events, or, for
   * a non-2xx answer, with the error body read whole (as `postForText`). Events wait in a queue for
   * the reader; past MAX_QUEUED_EVENTS the socket is paused until the reader has caught up, so a slow
   * client slows the upstream instead of filling memory. A reader that stops early aborts the call,
   * which releases its connection.
   */
  function postForEvents(call: UpstreamPost): Promise<UpstreamEvents | UpstreamText> {
    return new Promise<UpstreamEvents | UpstreamText>((resolve, reject) => {
      const { signal } = call;
      const opening = settleOnce(resolve, reject, signal);
      const open = opening.settle;
      if (signal.aborted) {
        open({ error: signal.reason });
        return;
      }
      /** Set for a non-2xx answer, whose body is read whole. */
      let reading: ReturnType<typeof readWhole> | null = null;
      let controller: Dispatcher.DispatchController | null = null;
      const queue: EventSourceMessage[] = [];
      let head = 0;
      let ended = false;
      let failure: unknown = null;
      let paused = false;
      let wake: (() => void) | null = null;
      const feed = createServerSentEventReader((event) => queue.push(event));
      const fail = (error: unknown) => {
        if (!opening.settled) open({ error });
        else if (failure === null) {
          failure = error;
          wake?.();
        }
      };

      async function* events(): AsyncGenerator<EventSourceMessage> {
        try {
          while (true) {
            if (head < queue.length) {
              const event = queue[head] as EventSourceMessage;
              head += 1;
              if (head === queue.length) {
                queue.length = 0;
                head = 0;
                if (paused) {
                  paused = false;
                  controller?.resume();
                }
              } else if (head >= 1_024 && head * 2 >= queue.length) {
                // Read events are let go in blocks, so a reader that always lags a little behind
                // does not keep a long stream whole.
                queue.splice(0, head);
                head = 0;
              }
              yield event;
            } else if (failure !== null) {
              throw toUpstreamError(failure, signal);
            } else if (ended) {
              return;
            } else {
              await new Promise<void>((resume) => {
                wake = resume;
              });
              wake = null;
            }
          }
        } finally {
          // Stopping early (client gone, first-token timeout) must release the upstream connection.
          if (!ended && failure === null) {
            failure = new Error('The stream was closed by its reader');
            controller?.abort(failure as Error);
          }
        }
      }

      try {
        dispatch(
          call,
          {
            onResponseStart(current, status, headers) {
              controller = current;
              if (status >= 400) {
                reading = readWhole(MAX_ERROR_BODY);
                reading.start(status, headers);
              } else open({ reply: { status, headers, events: events() } });
            },
            onResponseData(current, chunk) {
              if (reading) {
                reading.data(current, chunk);
                return;
              }
              try {
                feed(chunk);
              } catch (error) {
                current.abort(error as Error);
                return;
              }
              if (!paused && queue.length - head >= MAX_QUEUED_EVENTS) {
                paused = true;
                current.pause();
              }
              wake?.();
            },
            onResponseEnd() {
              if (reading) open({ reply: reading.reply() });
              else {
                ended = true;
                wake?.();
              }
            },
            onResponseError(_controller, error) {
              if (reading?.answeredError()) open({ reply: reading.reply() });
              else fail(error);
            },
          },
          (reason) => fail(reason),
        );
      } catch (error) {
        fail(error);
      }
    });
  }

  return { postForText, postForEvents, close: () => agent.close() };
}

export type UpstreamHttp = ReturnType<typeof createUpstreamHttp>;

/** A call's promise settled once: later outcomes are ignored, a failure becomes an UpstreamError. */
function settleOnce<T>(resolve: (value: T) => void, reject: (error: unknown) => void, signal: CancelSignal) {
  let settled = false;
  return {
    get settled() {
      return settled;
    },
    settle(outcome: { reply: T } | { error: unknown }): void {
      if (settled) return;
      settled = true;
      if ('reply' in outcome) resolve(outcome.reply);
      else reject(toUpstreamError(outcome.error, signal));
    },
  };
}

/**
 * A reply's body collected whole, up to `limit` bytes. Past it, a 2xx reply fails with an
 * UpstreamError; an error reply is ended early and answered without its text (a prefix of a huge
 * error page says nothing useful).
 */
function readWhole(limit: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  let status = 0;
  let headers: IncomingHttpHeaders = {};
  let truncated = false;
  return {
    /**
     * Whether the call failed after an error status arrived (its body over the cap, or cut): it
     * answers with that status and no text, as the status and its Retry-After say what matters.
     */
    answeredError(): boolean {
      if (status < 400) return false;
      chunks.length = 0;
      truncated = true;
      return true;
    },
    start(statusCode: number, responseHeaders: IncomingHttpHeaders) {
      status = statusCode;
      headers = responseHeaders;
      if (statusCode >= 400) limit = Math.min(limit, MAX_ERROR_BODY);
    },
    data(controller: Dispatcher.DispatchController, chunk: Buffer) {
      if (truncated) return;
      if (size + chunk.length > limit) {
        if (status >= 400) {
          chunks.length = 0;
          truncated = true;
          controller.abort(new Error('error body over its cap'));
        } else {
          controller.abort(
            new UpstreamError({
              message: `Upstream response exceeds ${limit} bytes`,
              kind: 'invalid-response',
            }),
          );
        }
        return;
      }
      size += chunk.length;
      chunks.push(chunk);
    },
    reply(): UpstreamText {
      const text =
        chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8');
      return { status, headers, text };
    },
  };
}

/** Upstream URLs split for `dispatch`; they come from the catalogue and config, so the cache stays small. */
const targets = new Map<string, { origin: string; path: string }>();
const MAX_CACHED_TARGETS = 1_000;

function targetOf(url: string): { origin: string; path: string } {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new UpstreamError({ message: `Unsupported upstream URL ${parsed.protocol}`, kind: 'connection' });
    target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    if (targets.size >= MAX_CACHED_TARGETS) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/** undici's errors, in the canonical vocabulary. */
export function toUpstreamError(error: unknown, signal?: CancelSignal): UpstreamError {
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

function retryAfter(headers: IncomingHttpHeaders): number | null {
  const value = headers['retry-after'];
  if (typeof value !== 'string') return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** Turns a non-2xx upstream reply into an UpstreamError carrying its message and retry hint. */
export function errorFromText(reply: UpstreamText): UpstreamError {
  const raw = reply.text;
  let message = `Upstream returned HTTP ${reply.status}`;
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
    status: reply.status,
    raw: raw.slice(0, 2000),
    retryAfterSeconds: retryAfter(reply.headers),
  });
}

/**
 * POSTs one streamed adapter call upstream with the call's timeouts and returns its SSE events once
 * it answered 2xx; a non-2xx answer becomes the adapter's UpstreamError. The events end when the body
 * does (the adapter decides whether the stream was complete); a failure while reading them is an
 * UpstreamError. The caller reads them at once, to their end or until it stops (`for await` with
 * `break`, or `return()` after a first `next()`): a stream never read holds its connection until
 * the call's signal aborts it.
 */
export async function openUpstream(
  http: UpstreamHttp,
  call: Pick<AdapterCall, 'timeouts'>,
  request: AdapterPost,
): Promise<AsyncGenerator<EventSourceMessage>> {
  const reply = await http.postForEvents(postOf(call, request));
  if ('text' in reply) throw (request.toError ?? errorFromText)(reply);
  return reply.events;
}

/**
 * POSTs one non-streamed adapter call and returns its JSON reply, size-capped and parsed as foreign
 * input; a non-2xx answer becomes the adapter's UpstreamError.
 */
export async function requestUpstreamJson(
  http: UpstreamHttp,
  call: Pick<AdapterCall, 'timeouts'>,
  request: AdapterPost,
): Promise<unknown> {
  const reply = await http.postForText(postOf(call, request));
  if (reply.status >= 400) throw (request.toError ?? errorFromText)(reply);
  return parseUpstreamJson(reply.text);
}

/** An adapter's POST; `toError` reads a provider's own error shape where the generic reader is not enough. */
interface AdapterPost {
  url: string;
  headers: Record<string, string>;
  body: string;
  signal: CancelSignal;
  toError?: (reply: UpstreamText) => UpstreamError;
}

const postOf = (call: Pick<AdapterCall, 'timeouts'>, request: AdapterPost): UpstreamPost => ({
  url: request.url,
  headers: request.headers,
  body: request.body,
  signal: request.signal,
  headersTimeoutMs: call.timeouts.headersMs,
  idleTimeoutMs: call.timeouts.idleMs,
});
