import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, type Dispatcher, errors } from 'undici';
import { sliceWhole } from '../platform/whole-characters.js';
import { DeliveryError } from './destination-type.js';

/** What a receiver answered (2xx, or a status the caller listed in `acceptStatuses`). */
export interface ExporterResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as text, cut at MAX_RESPONSE_BYTES. */
  body: string;
}

export interface ExporterRequest {
  method?: 'POST' | 'PUT' | 'GET' | 'HEAD';
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  signal?: AbortSignal;
  /** Statuses besides 2xx that count as delivered (e.g. 409 "already exists" for an idempotent id). */
  acceptStatuses?: readonly number[];
}

/** The HTTP client exporters use: timeouts, SSRF rules and status → DeliveryError in one place. */
export interface ExporterHttp {
  send(url: string, init?: ExporterRequest): Promise<ExporterResponse>;
  /** Refuses a URL the gateway must not call (scheme, private address literal); null when it may. */
  checkUrl(url: string): string | null;
  close(): Promise<void>;
}

const MAX_RESPONSE_BYTES = 1 << 20;
const CONNECT_TIMEOUT_MS = 5_000;
const HEADERS_TIMEOUT_MS = 15_000;
const BODY_TIMEOUT_MS = 15_000;
/** The longest `Retry-After` honoured; a receiver asking for more is retried after this. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/** Whether an address is one the gateway must not reach (loopback, private, link-local, …). */
export function isPrivateAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return true;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    // IPv4-compatible (::a.b.c.d, deprecated) and the rest of ::/96 embed an IPv4 address too.
    else if (v6.parts.slice(0, 6).every((part) => part === 0)) return true;
  }
  return parsed.range() !== 'unicast';
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return null;
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed) * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}

const RETRYABLE_STATUSES = new Set([408, 425, 429]);

/**
 * Creates the exporters' HTTP client. Unless `allowPrivateNetworks`, a URL whose host is (or
 * resolves to) a loopback, private, link-local or otherwise non-public address is refused — checked
 * on the literal before the call and on every DNS answer at connect time, so a name that resolves
 * to 127.0.0.1 cannot be used to reach the gateway's own network. Redirects are not followed.
 */
export function createExporterHttp(options: { allowPrivateNetworks: boolean }): ExporterHttp {
  const { allowPrivateNetworks } = options;
  const guardedLookup: LookupFunction = (hostname, lookupOptions, callback) => {
    dnsLookup(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as unknown as LookupAddress[];
      const allowed = allowPrivateNetworks ? list : list.filter((entry) => !isPrivateAddress(entry.address));
      if (allowed.length === 0) {
        const refused = Object.assign(new Error(`${hostname} resolves only to non-public addresses`), {
          code: 'ESWITCHYARD_PRIVATE_ADDRESS',
        });
        return callback(refused, '', 0);
      }
      if ((lookupOptions as { all?: boolean }).all)
        return (callback as never as (e: null, a: LookupAddress[]) => void)(null, allowed);
      const first = allowed[0] as LookupAddress;
      callback(null, first.address, first.family);
    });
  };
  const agent = new Agent({
    connect: { timeout: CONNECT_TIMEOUT_MS, lookup: guardedLookup },
    headersTimeout: HEADERS_TIMEOUT_MS,
    bodyTimeout: BODY_TIMEOUT_MS,
    keepAliveTimeout: 10_000,
    connections: 16,
  });

  function checkUrl(url: string): string | null {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return 'is not a valid URL';
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'must be an http or https URL';
    if (parsed.username || parsed.password) return 'must not carry credentials in the URL';
    // `localhost.` is `localhost`: a fully qualified name's trailing dot changes nothing.
    const host = parsed.hostname
      .replace(/^\[|\]$/g, '')
      .replace(/\.+$/, '')
      .toLowerCase();
    if (!allowPrivateNetworks) {
      if (isIP(host) !== 0 && isPrivateAddress(host)) return 'points to a non-public address';
      if (host === 'localhost' || host.endsWith('.localhost')) return 'points to a non-public address';
    }
    return null;
  }

  async function send(url: string, init: ExporterRequest = {}): Promise<ExporterResponse> {
    const refusal = checkUrl(url);
    if (refusal) throw new DeliveryError(`destination URL ${refusal}`, { retryable: false });
    let reply: ExporterResponse;
    try {
      reply = await exchange(agent, url, init);
    } catch (error) {
      throw connectionError(error);
    }
    const { status, headers, body } = reply;
    if ((status >= 200 && status < 300) || init.acceptStatuses?.includes(status)) return reply;
    const retryable = status >= 500 || RETRYABLE_STATUSES.has(status);
    throw new DeliveryError(`receiver answered ${status}: ${snippet(body)}`, {
      retryable,
      status,
      retryAfterMs: parseRetryAfter(headers['retry-after']),
    });
  }

  return { send, checkUrl, close: () => agent.close() };
}

/**
 * One exchange through `dispatch` with a handler of our own: the reply's bytes are collected
 * straight into the text, without the Readable body, async iterator and AsyncResource undici's
 * `request()` makes per call (80–90 µs of CPU less per keep-alive request, over 40% of the
 * exchange; a webhook sends one per generation — docs/decisions.md). A body over
 * MAX_RESPONSE_BYTES is cut there: the rest is not read and the connection is closed. The signal
 * aborts the exchange at any point, also while it waits for a connection.
 */
function exchange(agent: Agent, url: string, init: ExporterRequest): Promise<ExporterResponse> {
  return new Promise<ExporterResponse>((resolve, reject) => {
    const handler = new ExchangeHandler(init.signal, resolve, reject);
    if (!handler.start()) return;
    let target: URL;
    try {
      target = new URL(url);
    } catch (error) {
      handler.fail(error);
      return;
    }
    try {
      agent.dispatch(
        {
          origin: target.origin,
          path: `${target.pathname}${target.search}`,
          method: init.method ?? 'POST',
          headers: init.headers,
          body: init.body,
        },
        handler,
      );
    } catch (error) {
      handler.fail(error);
    }
  });
}

/**
 * The dispatch handler of one exchange. A class rather than an object literal of closures made per
 * call: its methods are one set of functions for the life of the process, so their optimized code
 * outlives the isolate's mark-compacts, where per-call closures were recompiled after each one
 * (docs/decisions.md, "The broadcast worker's per-row steps are loops").
 */
class ExchangeHandler implements Dispatcher.DispatchHandler {
  private settled = false;
  private controller: Dispatcher.DispatchController | null = null;
  private status = 0;
  private headers: ExporterResponse['headers'] = {};
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private cut = false;
  /** Bound once per exchange: the signal's listener must be the same function to be removed. */
  private readonly onAbort: () => void;

  constructor(
    private readonly signal: AbortSignal | undefined,
    private readonly resolve: (reply: ExporterResponse) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.onAbort = this.abort.bind(this);
  }

  /** Listens to the signal; false (and the exchange failed) when it is already aborted. */
  start(): boolean {
    const { signal } = this;
    if (!signal) return true;
    if (signal.aborted) {
      this.fail(this.abortReason());
      return false;
    }
    signal.addEventListener('abort', this.onAbort, { once: true });
    return true;
  }

  fail(error: unknown): void {
    if (this.settle()) this.reject(error);
  }

  /** Marks the exchange settled (false when it already was) and stops listening to the signal. */
  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.signal?.removeEventListener('abort', this.onAbort);
    return true;
  }

  private succeed(): void {
    if (!this.settle()) return;
    const { chunks } = this;
    this.resolve({
      status: this.status,
      headers: this.headers,
      body:
        chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'),
    });
  }

  private abortReason(): Error {
    const reason: unknown = this.signal?.reason;
    return reason instanceof Error ? reason : new errors.RequestAbortedError();
  }

  private abort(): void {
    if (this.controller) this.controller.abort(this.abortReason());
    // Still queued for a connection: the exchange fails now, and is aborted when it starts.
    else this.fail(this.abortReason());
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled || this.signal?.aborted) controller.abort(this.abortReason());
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    // An informational 1xx (103 Early Hints) comes before the real answer.
    if (statusCode < 200) return;
    this.status = statusCode;
    this.headers = headers as ExporterResponse['headers'];
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.cut) return;
    const room = MAX_RESPONSE_BYTES - this.size;
    this.chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    this.size += chunk.length;
    if (this.size >= MAX_RESPONSE_BYTES) {
      // Enough to report: the rest is not read.
      this.cut = true;
      controller.abort(new Error('response body over its cap'));
    }
  }

  onResponseEnd(): void {
    this.succeed();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.cut) this.succeed();
    else this.fail(error);
  }
}

const snippet = (text: string) => (text.length > 300 ? `${sliceWhole(text, 300)}…` : text || '(empty body)');

function connectionError(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  const code = (error as { code?: string }).code;
  // undici refuses a request it cannot send at all (a header value with a line break): the same
  // request will be refused again, so it is not retried.
  if (code === 'ESWITCHYARD_PRIVATE_ADDRESS' || error instanceof errors.InvalidArgumentError) {
    return new DeliveryError((error as Error).message, { retryable: false, cause: error });
  }
  const aborted = error instanceof errors.RequestAbortedError || (error as Error).name === 'AbortError';
  const message = aborted
    ? 'delivery aborted'
    : `receiver unreachable: ${(error as Error).message ?? String(error)}${code ? ` (${code})` : ''}`;
  return new DeliveryError(message, { retryable: true, cause: error });
}
