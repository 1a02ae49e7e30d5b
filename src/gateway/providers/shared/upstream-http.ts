import type { IncomingHttpHeaders } from 'node:http';
import type { EventSourceMessage } from 'eventsource-parser';
import { Agent, type Dispatcher, errors } from 'undici';
import { ITERATOR_ENDED } from '../../../platform/iterator-ended.js';
import type { CancelSignal } from '../../../spec/cancel-signal.js';
import type { AdapterCall } from '../../../spec/provider-adapter.js';
import { UpstreamError } from '../../../spec/upstream-error.js';
import {
  createServerSentEventReader,
  MAX_EVENT_BYTES,
  parseUpstreamJson,
  type ServerSentEventReader,
} from './server-sent-events.js';

/** A reply read whole: the non-streamed calls' answers and every error body. */
export interface UpstreamText {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * A streamed reply's SSE events, read as they arrive, and how far the event under way got: after
 * the stream failed, the characters received of the event it was cut in (0 at an event boundary).
 */
export interface UpstreamEventStream extends AsyncIterableIterator<EventSourceMessage> {
  unfinishedEventLength(): number;
}

/** A 2xx reply to a streamed call: its SSE events, read as they arrive. */
export interface UpstreamEvents {
  status: number;
  headers: IncomingHttpHeaders;
  events: UpstreamEventStream;
}

/** What `postForText` and `postForEvents` send. */
export interface UpstreamPost {
  url: string;
  headers: Record<string, string>;
  body: string;
  signal: CancelSignal;
  headersTimeoutMs: number;
  idleTimeoutMs: number;
  /** The largest 2xx reply `postForText` accepts; MAX_REPLY_BYTES when absent. */
  maxReplyBytes?: number;
  /** The largest SSE event `postForEvents` accepts; MAX_EVENT_BYTES when absent. */
  maxEventBytes?: number;
}

/** Longest upstream error body kept for messages and metadata. */
const MAX_ERROR_BODY = 64 * 1024;

/** Largest non-streamed reply accepted from an upstream, unless a call sets its own bound. */
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
   * A POST whose whole reply is wanted (non-streamed calls). A 2xx reply is capped at the call's
   * `maxReplyBytes` or MAX_REPLY_BYTES (an UpstreamError past it); an error reply longer than
   * MAX_ERROR_BODY is answered without its text.
   */
  function postForText(call: UpstreamPost): Promise<UpstreamText> {
    return new Promise<UpstreamText>((resolve, reject) => {
      new TextCall(call.signal, resolve, reject).send(agent, call);
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
      new EventsCall(call.signal, resolve, reject).send(agent, call);
    });
  }

  return {
    postForText,
    postForEvents,
    close: () => agent.close(),
    /** Ends every upstream request still running, for a shutdown that cannot wait for them. */
    destroy: () => agent.destroy(),
  };
}

export type UpstreamHttp = ReturnType<typeof createUpstreamHttp>;

/** The error undici is aborted with; it only ends the call, as toUpstreamError reads the signal's reason. */
const abortError = (signal: CancelSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new Error('The request was aborted');

/**
 * One POST through undici's `dispatch`, and the handler undici calls for it. Its callbacks are
 * methods, so a call costs one object where a handler of closures cost about 1.7 KB per call, which
 * a call in flight keeps alive through every young-generation collection (docs/performance.md,
 * session 26). The call's signal aborts it at any point: a call still queued for a connection is
 * aborted when it starts, and `failed` is told at once, so the caller need not wait for a connection
 * to fail. The signal's listener goes when the response ends or fails. The call's promise settles
 * once: later outcomes are ignored, and a failure becomes an UpstreamError.
 */
abstract class UpstreamCall<T> implements Dispatcher.DispatchHandler {
  protected controller: Dispatcher.DispatchController | null = null;
  protected settled = false;
  private readonly onAbort = () => {
    if (this.controller) this.controller.abort(abortError(this.signal));
    else this.failed(this.signal.reason);
  };

  constructor(
    protected readonly signal: CancelSignal,
    private readonly resolve: (value: T) => void,
    private readonly reject: (error: unknown) => void,
  ) {}

  /** Sends `call`; a call whose signal already fired, or that cannot be sent, fails at once. */
  send(agent: Agent, call: UpstreamPost): void {
    if (this.signal.aborted) {
      this.failed(this.signal.reason);
      return;
    }
    try {
      const target = targetOf(call.url);
      this.signal.addEventListener('abort', this.onAbort, { once: true });
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
        this,
      );
    } catch (error) {
      this.failed(error);
    }
  }

  protected succeed(value: T): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve(value);
  }

  protected fail(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.reject(toUpstreamError(error, this.signal));
  }

  /** The call failed: before it started (its signal, or it could not be sent) or while reading. */
  protected abstract failed(error: unknown): void;
  /** The response's final status and headers (an informational 1xx, such as 103 Early Hints, is not). */
  protected abstract started(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: IncomingHttpHeaders,
  ): void;
  abstract onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  protected abstract ended(): void;
  /** The response failed after it started; `failed` unless the subclass answers otherwise. */
  protected abstract broke(error: Error): void;

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.signal.aborted) controller.abort(abortError(this.signal));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (status >= 200) this.started(controller, status, headers);
  }

  onResponseEnd(): void {
    this.signal.removeEventListener('abort', this.onAbort);
    this.ended();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.signal.removeEventListener('abort', this.onAbort);
    this.broke(error);
  }
}

/** `postForText`'s call: the reply read whole. */
class TextCall extends UpstreamCall<UpstreamText> {
  private reading = new WholeReply(MAX_REPLY_BYTES);

  override send(agent: Agent, call: UpstreamPost): void {
    if (call.maxReplyBytes !== undefined) this.reading = new WholeReply(call.maxReplyBytes);
    super.send(agent, call);
  }

  protected failed(error: unknown): void {
    this.fail(error);
  }

  protected started(
    _controller: Dispatcher.DispatchController,
    status: number,
    headers: IncomingHttpHeaders,
  ) {
    this.reading.start(status, headers);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.reading.data(controller, chunk);
  }

  protected ended(): void {
    this.succeed(this.reading.reply());
  }

  protected broke(error: Error): void {
    if (this.reading.answeredError()) this.succeed(this.reading.reply());
    else this.fail(error);
  }
}

/** `postForEvents`' call: a 2xx reply's SSE events queued for its reader, an error reply read whole. */
class EventsCall extends UpstreamCall<UpstreamEvents | UpstreamText> implements UpstreamEventStream {
  /** Set for a non-2xx answer, whose body is read whole. */
  private reading: WholeReply | null = null;
  /**
   * Set while a 2xx answer labelled JSON waits for its first byte: `{` or `[` is a JSON body (an
   * error, read whole), anything else an event stream under the wrong label (Foundry Local sends
   * its SSE as application/json, and OpenAI's SDKs read it). Its chunks so far, all blank.
   */
  private sniffing: { status: number; headers: IncomingHttpHeaders; chunks: Buffer[] } | null = null;
  private readonly queue: EventSourceMessage[] = [];
  private head = 0;
  private bodyEnded = false;
  private failure: unknown = null;
  private paused = false;
  /** The reader's pending read, while nothing was there to answer it. */
  private waiting: {
    resolve: (result: IteratorResult<EventSourceMessage, undefined>) => void;
    reject: (error: unknown) => void;
  } | null = null;
  /** Set once the reader has seen the end or an error, or stopped: every later read is the end. */
  private readerDone = false;
  /**
   * The longest gap between two events (`idleTimeoutMs`). undici's body timeout counts bytes, and an
   * upstream that sends only SSE comments (`: keep-alive`), or one unfinished line a byte at a time,
   * would hold the stream, the client and the reservation for ever.
   */
  private idleMs = 0;
  private lastEventAt = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  private reader: ServerSentEventReader | null = null;

  override send(agent: Agent, call: UpstreamPost): void {
    this.idleMs = call.idleTimeoutMs;
    this.reader = createServerSentEventReader(
      (event) => {
        this.lastEventAt = Date.now();
        this.queue.push(event);
      },
      call.maxEventBytes ?? MAX_EVENT_BYTES,
      call.maxEventBytes !== undefined,
    );
    super.send(agent, call);
  }

  unfinishedEventLength(): number {
    return this.reader?.unfinished() ?? 0;
  }

  /** Checks the gap since the last event; past `idleMs` the call is aborted as a timeout. */
  private readonly checkIdle = () => {
    this.idleTimer = null;
    if (this.bodyEnded || this.readerDone || this.failure !== null) return;
    const gap = Date.now() - this.lastEventAt;
    if (gap < this.idleMs) {
      this.idleTimer = setTimeout(this.checkIdle, this.idleMs - gap);
      return;
    }
    this.controller?.abort(
      new UpstreamError({
        message: `Upstream sent no event for ${this.idleMs} ms (idle timeout)`,
        kind: 'timeout',
      }),
    );
  };

  private stopIdleTimer(): void {
    if (this.idleTimer === null) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  protected failed(error: unknown): void {
    if (!this.settled) this.fail(error);
    else if (this.failure === null) {
      this.failure = error;
      this.wakeReader();
    }
  }

  /**
   * The reader's next event: one promise per event, settled at once when one is queued, else when
   * the body brings one (or ends, or fails). A class rather than an async generator: a generator's
   * `yield` awaits what it yields and its reader awaits again, which cost each streamed event more
   * promises and microtasks (docs/decisions.md).
   */
  next(): Promise<IteratorResult<EventSourceMessage, undefined>> {
    // Reads are one at a time (`for await` makes them so); a second would leave the first unsettled.
    if (this.waiting !== null)
      return Promise.reject(new Error('A read of the upstream events is already waiting'));
    let result: IteratorResult<EventSourceMessage, undefined> | null;
    try {
      result = this.read();
    } catch (error) {
      return Promise.reject(error);
    }
    if (result !== null) return Promise.resolve(result);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  /** The reader stops (`break`, a thrown error, a timeout): the upstream connection is let go. */
  return(): Promise<IteratorResult<EventSourceMessage, undefined>> {
    this.stopReading();
    return Promise.resolve(ITERATOR_ENDED);
  }

  throw(error?: unknown): Promise<IteratorResult<EventSourceMessage, undefined>> {
    this.stopReading();
    return Promise.reject(error);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The next event, the end, or null while neither has come; throws the stream's failure once. */
  private read(): IteratorResult<EventSourceMessage, undefined> | null {
    if (this.readerDone) return ITERATOR_ENDED;
    const queue = this.queue;
    if (this.head < queue.length) {
      const event = queue[this.head] as EventSourceMessage;
      this.head += 1;
      if (this.head === queue.length) {
        queue.length = 0;
        this.head = 0;
        if (this.paused) {
          this.paused = false;
          this.controller?.resume();
        }
      } else if (this.head >= 1_024 && this.head * 2 >= queue.length) {
        // Read events are let go in blocks, so a reader that always lags a little behind does
        // not keep a long stream whole.
        queue.splice(0, this.head);
        this.head = 0;
      }
      return { done: false, value: event };
    }
    if (this.failure !== null) {
      this.readerDone = true;
      throw toUpstreamError(this.failure, this.signal);
    }
    if (this.bodyEnded) {
      this.readerDone = true;
      return ITERATOR_ENDED;
    }
    return null;
  }

  /** Settles a read that waits, if there is now something to answer it with. */
  private wakeReader(): void {
    const waiting = this.waiting;
    if (waiting === null) return;
    let result: IteratorResult<EventSourceMessage, undefined> | null;
    try {
      result = this.read();
    } catch (error) {
      this.waiting = null;
      waiting.reject(error);
      return;
    }
    if (result === null) return;
    this.waiting = null;
    waiting.resolve(result);
  }

  private stopReading(): void {
    if (this.readerDone) return;
    this.readerDone = true;
    this.stopIdleTimer();
    // Events not read are let go: every later read is the end.
    this.queue.length = 0;
    this.head = 0;
    // Stopping early must release the upstream connection.
    if (!this.bodyEnded && this.failure === null) {
      this.failure = new Error('The stream was closed by its reader');
      this.controller?.abort(this.failure as Error);
    }
    // A read still waiting settles as the end: nothing more will be read.
    this.wakeReader();
  }

  protected started(
    _controller: Dispatcher.DispatchController,
    status: number,
    headers: IncomingHttpHeaders,
  ) {
    if (status >= 400) {
      this.reading = new WholeReply(MAX_ERROR_BODY);
      this.reading.start(status, headers);
    } else if (isJsonReply(headers)) {
      // A JSON body to a streamed request is no stream: compatible servers send their error that
      // way with a 200 status. The first byte tells.
      this.sniffing = { status, headers, chunks: [] };
    } else {
      this.startEvents(status, headers);
    }
  }

  private startEvents(status: number, headers: IncomingHttpHeaders): void {
    if (this.idleMs > 0) {
      this.lastEventAt = Date.now();
      this.idleTimer = setTimeout(this.checkIdle, this.idleMs);
    }
    this.succeed({ status, headers, events: this });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.sniffing) {
      const sniffing = this.sniffing;
      sniffing.chunks.push(chunk);
      const first = firstNonBlank(chunk);
      if (first === -1) return;
      this.sniffing = null;
      if (first === 0x7b || first === 0x5b) {
        this.reading = new WholeReply(MAX_ERROR_BODY);
        this.reading.start(sniffing.status, sniffing.headers);
        for (const held of sniffing.chunks) this.reading.data(controller, held);
        return;
      }
      this.startEvents(sniffing.status, sniffing.headers);
      chunk = sniffing.chunks.length === 1 ? chunk : Buffer.concat(sniffing.chunks);
    }
    if (this.reading) {
      this.reading.data(controller, chunk);
      return;
    }
    try {
      this.reader?.feed(chunk);
    } catch (error) {
      controller.abort(error as Error);
      return;
    }
    if (!this.paused && this.queue.length - this.head >= MAX_QUEUED_EVENTS) {
      this.paused = true;
      controller.pause();
    }
    this.wakeReader();
  }

  protected ended(): void {
    this.stopIdleTimer();
    if (this.sniffing) {
      // Nothing but blanks: an empty stream, which the adapter reads as one that never finished.
      const { status, headers } = this.sniffing;
      this.sniffing = null;
      this.startEvents(status, headers);
      this.stopIdleTimer();
    }
    if (this.reading) this.succeed(this.reading.reply());
    else {
      this.bodyEnded = true;
      this.wakeReader();
    }
  }

  protected broke(error: Error): void {
    this.stopIdleTimer();
    if (this.reading?.answeredError()) this.succeed(this.reading.reply());
    else this.failed(error);
  }
}

const isJsonReply = (headers: IncomingHttpHeaders): boolean => {
  const type = headers['content-type'];
  return typeof type === 'string' && /^\s*application\/json\s*(?:;|$)/i.test(type);
};

/** The first byte of a chunk that is not JSON whitespace; -1 when there is none. */
function firstNonBlank(chunk: Buffer): number {
  for (const byte of chunk) if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) return byte;
  return -1;
}

/**
 * A reply's body collected whole, up to `limit` bytes. Past it, a 2xx reply fails with an
 * UpstreamError; an error reply is ended early and answered without its text (a prefix of a huge
 * error page says nothing useful).
 */
class WholeReply {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private truncated = false;

  constructor(private limit: number) {}

  /**
   * Whether the call failed after an error status arrived (its body over the cap, or cut): it
   * answers with that status and no text, as the status and its Retry-After say what matters.
   */
  answeredError(): boolean {
    if (this.status < 400) return false;
    this.chunks.length = 0;
    this.truncated = true;
    return true;
  }

  start(status: number, headers: IncomingHttpHeaders): void {
    this.status = status;
    this.headers = headers;
    if (status >= 400) this.limit = Math.min(this.limit, MAX_ERROR_BODY);
  }

  data(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.truncated) return;
    if (this.size + chunk.length > this.limit) {
      if (this.status >= 400) {
        this.chunks.length = 0;
        this.truncated = true;
        controller.abort(new Error('error body over its cap'));
      } else {
        controller.abort(
          new UpstreamError({
            message: `Upstream response exceeds ${this.limit} bytes`,
            kind: 'invalid-response',
          }),
        );
      }
      return;
    }
    this.size += chunk.length;
    this.chunks.push(chunk);
  }

  reply(): UpstreamText {
    const chunks = this.chunks;
    const text =
      chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8');
    return { status: this.status, headers: this.headers, text };
  }
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
 * A 2xx JSON answer to a streamed request: the error it carries (`{"error": {"message", "code"}}`,
 * or vLLM's `{"object": "error", "message", "code"}`), read as an error reply whose status is the
 * code when that is an HTTP error status (else 502); without one, a bad answer to fail over from.
 */
function errorFromJsonAnswer(reply: UpstreamText): UpstreamError {
  let error: { message?: unknown; code?: unknown } | string | undefined;
  try {
    const body = JSON.parse(reply.text) as { error?: typeof error; object?: unknown } | null;
    error = body?.error ?? (body?.object === 'error' ? (body as typeof error) : undefined);
  } catch {
    // Not even JSON: the message below says what came.
  }
  const hasMessage = typeof error === 'string' || typeof error?.message === 'string';
  if (!hasMessage) {
    return new UpstreamError({
      message: `Upstream answered a streamed request with JSON (HTTP ${reply.status}), not an event stream`,
      kind: 'invalid-response',
      raw: reply.text.slice(0, 2000),
    });
  }
  const code = typeof error === 'object' ? error.code : undefined;
  const status =
    Number.isInteger(code) && (code as number) >= 400 && (code as number) <= 599 ? (code as number) : 502;
  return errorFromText({ ...reply, status });
}

/**
 * POSTs one streamed adapter call upstream with the call's timeouts and returns its SSE events once
 * it answered 2xx; a non-2xx answer becomes the adapter's UpstreamError. The events end when the body
 * does (the adapter decides whether the stream was complete); a failure while reading them is an
 * UpstreamError. The caller reads them at once, one read at a time, to their end or until it stops
 * (`for await` with `break`, or `return()`, which lets the connection go): a stream never read holds
 * its connection until the call's signal aborts it.
 */
export async function openUpstream(
  http: UpstreamHttp,
  call: Pick<AdapterCall, 'timeouts'>,
  request: AdapterPost,
): Promise<UpstreamEventStream> {
  const reply = await http.postForEvents(postOf(call, request));
  if ('text' in reply)
    throw reply.status >= 400 ? (request.toError ?? errorFromText)(reply) : errorFromJsonAnswer(reply);
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

/**
 * An adapter's POST; `toError` reads a provider's own error shape where the generic reader is not
 * enough. `maxReplyBytes` and `maxEventBytes` raise the size bounds for a call whose answer may be
 * larger than text ever is (Gemini's images, whole in one event).
 */
interface AdapterPost {
  url: string;
  headers: Record<string, string>;
  body: string;
  signal: CancelSignal;
  toError?: (reply: UpstreamText) => UpstreamError;
  maxReplyBytes?: number;
  maxEventBytes?: number;
}

const postOf = (call: Pick<AdapterCall, 'timeouts'>, request: AdapterPost): UpstreamPost => ({
  url: request.url,
  headers: request.headers,
  body: request.body,
  signal: request.signal,
  headersTimeoutMs: call.timeouts.headersMs,
  idleTimeoutMs: call.timeouts.idleMs,
  maxReplyBytes: request.maxReplyBytes,
  maxEventBytes: request.maxEventBytes,
});
