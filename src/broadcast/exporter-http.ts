import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
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
    const { signal } = init;
    let settled = false;
    let controller: Dispatcher.DispatchController | null = null;
    let status = 0;
    let headers: ExporterResponse['headers'] = {};
    const chunks: Buffer[] = [];
    let size = 0;
    let cut = false;
    const reply = (): ExporterResponse => ({
      status,
      headers,
      body:
        chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'),
    });
    const finish = (outcome: { reply: ExporterResponse } | { error: unknown }) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if ('reply' in outcome) resolve(outcome.reply);
      else reject(outcome.error);
    };
    const abortReason = () =>
      signal?.reason instanceof Error ? signal.reason : new errors.RequestAbortedError();
    function onAbort() {
      if (controller) controller.abort(abortReason());
      // Still queued for a connection: the exchange fails now, and is aborted when it starts.
      else finish({ error: abortReason() });
    }
    if (signal?.aborted) {
      finish({ error: abortReason() });
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    let target: URL;
    try {
      target = new URL(url);
    } catch (error) {
      finish({ error });
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
        {
          onRequestStart(started) {
            controller = started;
            if (settled || signal?.aborted) started.abort(abortReason());
          },
          onResponseStart(_current, statusCode, responseHeaders) {
            // An informational 1xx (103 Early Hints) comes before the real answer.
            if (statusCode < 200) return;
            status = statusCode;
            headers = responseHeaders as ExporterResponse['headers'];
          },
          onResponseData(current, chunk) {
            if (cut) return;
            const room = MAX_RESPONSE_BYTES - size;
            chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
            size += chunk.length;
            if (size >= MAX_RESPONSE_BYTES) {
              // Enough to report: the rest is not read.
              cut = true;
              current.abort(new Error('response body over its cap'));
            }
          },
          onResponseEnd() {
            finish({ reply: reply() });
          },
          onResponseError(_current, error) {
            finish(cut ? { reply: reply() } : { error });
          },
        },
      );
    } catch (error) {
      finish({ error });
    }
  });
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
