import type { TSchema } from 'typebox';
import type { BroadcastEvent } from '../broadcast-event.js';
import {
  DeliveryError,
  type DestinationType,
  type ExportContext,
  type OutboxItem,
  type SendOutcome,
} from '../destination-type.js';
import type { OtlpTraceOptions } from '../otlp-spans.js';

/**
 * The OTLP encoder and the OpenTelemetry packages under it (~20 MB resident) are loaded by the
 * first OTLP delivery, not at start: a gateway with no such destination never pays for them.
 */
let otlpSpans: Promise<typeof import('../otlp-spans.js')> | null = null;
export const loadOtlpSpans = () => {
  // A failed import is not remembered: the next delivery tries again.
  otlpSpans ??= import('../otlp-spans.js').catch((error: unknown) => {
    otlpSpans = null;
    throw error;
  });
  return otlpSpans;
};

/** The test-connection payload: a valid request that carries no span (reference §3.3). */
export const EMPTY_OTLP_REQUEST = '{"resourceSpans":[]}';

import { type ConfigProblem, headerProblems, jsonObject, mergeHeaders } from './exporter-support.js';

/**
 * The OTLP/HTTP JSON delivery the OTLP destinations share (otel-collector, webhook, arize, grafana,
 * newrelic, sentry, ramp): each of them is the generic collector exporter with a URL, an auth
 * header and, for some, attributes or limits of their own.
 */

/** Where and how an OTLP destination posts. */
export interface OtlpTarget {
  url: string;
  method?: 'POST' | 'PUT';
  /** The destination's own headers (auth): custom headers never override them. */
  headers?: Record<string, string>;
  /** The config's custom `headers`. */
  custom?: Record<string, string> | undefined;
}

export interface OtlpDeliveryOptions extends OtlpTraceOptions {
  /**
   * The receiver's request size limit in bytes: a batch whose body is larger goes out as several
   * requests (a single event larger than this is still sent alone).
   */
  maxRequestBytes?: number;
}

/** What sets one OTLP destination type apart from the others. */
export interface OtlpDestinationSpec<C extends { headers?: Record<string, string> }> {
  type: string;
  configSchema: TSchema;
  defaults: Partial<C>;
  secretFields: readonly string[];
  /** Other config fields its `headers` send (DestinationType.headerFields). */
  headerFields?: readonly string[];
  /** The type's own rules; custom headers are always checked after them. */
  validate?: (config: C) => ConfigProblem[];
  /**
   * The traces URL. `originOverride` is given only to types whose config names no URL (it replaces
   * their fixed host); `urls()` asks without it.
   */
  url: (context: Pick<ExportContext<C>, 'config' | 'originOverride'>) => string;
  /** The auth headers (none for a plain collector, whose auth is in the custom headers). */
  headers?: (config: C) => Record<string, string>;
  /** Secrets its headers carry in part (DestinationType.sentSecrets); their whole values are added. */
  sentSecrets?: (config: C) => string[];
  /** Attributes and limits of the receiver. */
  delivery?: (config: C) => OtlpDeliveryOptions;
  /** Reference §3.3: only the generic collector is tested on save. */
  testOnSave?: boolean;
}

/** A destination type posting batches of up to 100 spans (the SDK BatchSpanProcessor's habit) as OTLP JSON. */
export function otlpDestination<C extends { headers?: Record<string, string> }>(
  spec: OtlpDestinationSpec<C>,
): DestinationType<C> {
  const target = (context: Pick<ExportContext<C>, 'config' | 'originOverride'>): OtlpTarget => ({
    url: spec.url(context),
    headers: spec.headers?.(context.config),
    custom: context.config.headers,
  });
  return {
    type: spec.type,
    configSchema: spec.configSchema,
    defaults: spec.defaults,
    secretFields: spec.secretFields,
    // What its auth headers carry (a composed value, a key cut out of a DSN) is scrubbed as sent.
    sentSecrets: (config) => [
      ...(spec.sentSecrets?.(config) ?? []),
      ...Object.values(spec.headers?.(config) ?? {}),
    ],
    ...(spec.headerFields ? { headerFields: spec.headerFields } : {}),
    validate: (config) => [...(spec.validate?.(config) ?? []), ...headerProblems(config.headers)],
    urls: (config) => [spec.url({ config })],
    maxBatch: 100,
    testOnSave: spec.testOnSave ?? false,
    send: (items, context) =>
      deliverOtlpTraces(items, context, target(context), spec.delivery?.(context.config)),
    testConnection: (context) => testOtlpConnection(context, target(context)),
  };
}

/** Collectors accept far more (confighttp defaults to 20 MiB); vendors' gateways are stricter. */
const DEFAULT_MAX_REQUEST_BYTES = 4_000_000;

/**
 * Posts the batch as OTLP JSON. Span ids come from the generation ids, so a retried batch carries
 * the same ids and a receiver that keys on them stores each span once.
 */
async function deliverOtlpTraces(
  items: readonly OutboxItem[],
  context: ExportContext<object>,
  target: OtlpTarget,
  options: OtlpDeliveryOptions = {},
): Promise<SendOutcome | undefined> {
  if (items.length === 0) return undefined;
  const { encodeOtlpTraces } = await loadOtlpSpans();
  const all: number[] = [];
  for (let index = 0; index < items.length; index += 1) all.push(index);
  const chunks = splitBySize(
    all,
    (indexes) => {
      const events: BroadcastEvent[] = [];
      for (const index of indexes) events.push((items[index] as OutboxItem).event);
      return encodeOtlpTraces(events, options);
    },
    options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES,
  );
  return sendChunks(
    chunks.map((chunk) => ({ ...chunk, headers: {} })),
    context,
    target,
  );
}

/** One request of a batch: the items it carries (by index), its body and its own extra headers. */
export interface OtlpChunk {
  indexes: number[];
  body: string;
  headers: Record<string, string>;
}

/**
 * Sends the requests in order and stops at the first failure: an OTLP receiver that refused one
 * request (often over load) is not sent the rest of the batch at once (unlike `sendInGroups`). A
 * batch of one request throws its failure; a longer one returns it as `stopped`, with the items of
 * the failed request and those never sent, so the worker settles what was delivered, applies the
 * failure (status, `Retry-After`) to the failed items alone, and keeps the unsent ones' attempts.
 */
export async function sendChunks(
  chunks: readonly OtlpChunk[],
  context: ExportContext<object>,
  target: OtlpTarget,
): Promise<SendOutcome | undefined> {
  for (const [position, chunk] of chunks.entries()) {
    try {
      await postOtlp(context, target, chunk);
    } catch (error) {
      // A batch of one request failed as a whole: thrown, as any exporter does.
      if (!(error instanceof DeliveryError) || chunks.length === 1) throw error;
      return {
        stopped: {
          error,
          failed: chunk.indexes,
          unsent: chunks.slice(position + 1).flatMap((later) => later.indexes),
        },
      };
    }
  }
  return undefined;
}

async function postOtlp(context: ExportContext<object>, target: OtlpTarget, chunk: OtlpChunk): Promise<void> {
  const response = await context.http.send(target.url, {
    method: target.method ?? 'POST',
    headers: otlpHeaders(target, chunk.headers),
    body: chunk.body,
    signal: context.signal,
  });
  const rejectedSpans = partialSuccessRejections(response.body);
  // OTLP/HTTP: a partial success with rejected spans must not be retried; when it names every span
  // of the request, nothing was stored and the batch is dead on arrival.
  if (rejectedSpans && rejectedSpans.count >= chunk.indexes.length) {
    throw new DeliveryError(`receiver rejected every span: ${rejectedSpans.message || 'no reason given'}`, {
      retryable: false,
      status: response.status,
    });
  }
}

/**
 * The reference's test: an empty OTLP payload marked `X-Test-Connection: true`, to the URL and with
 * the auth the deliveries use. 2xx passes; 400 too, since some receivers refuse an empty request
 * after accepting the credentials (reference §3.3).
 */
export async function testOtlpConnection(
  context: Omit<ExportContext<object>, 'destination'>,
  target: OtlpTarget,
): Promise<void> {
  await context.http.send(target.url, {
    method: target.method ?? 'POST',
    headers: otlpHeaders(target, { 'X-Test-Connection': 'true' }),
    body: EMPTY_OTLP_REQUEST,
    signal: context.signal,
    acceptStatuses: [400],
  });
}

/** The content type, the destination's auth and the request's own headers over the custom ones. */
function otlpHeaders(target: OtlpTarget, extra: Record<string, string>): Record<string, string> {
  return mergeHeaders(target.custom, { 'Content-Type': 'application/json', ...target.headers, ...extra });
}

/**
 * Halves a group until each body fits (or holds a single event). OTLP groups spans by resource, so
 * a body is no concatenation of per-item fragments that `packBySize` could pack.
 */
function splitBySize(
  indexes: number[],
  encode: (indexes: number[]) => string,
  maxBytes: number,
): Array<{ indexes: number[]; body: string }> {
  const body = encode(indexes);
  if (indexes.length <= 1 || Buffer.byteLength(body) <= maxBytes) return [{ indexes, body }];
  const middle = Math.ceil(indexes.length / 2);
  return [
    ...splitBySize(indexes.slice(0, middle), encode, maxBytes),
    ...splitBySize(indexes.slice(middle), encode, maxBytes),
  ];
}

/** `partialSuccess` of an OTLP/HTTP JSON response; null when absent, unreadable or empty. */
function partialSuccessRejections(body: string): { count: number; message: string } | null {
  if (!body.includes('partialSuccess')) return null;
  const partial = jsonObject(body)?.partialSuccess;
  if (typeof partial !== 'object' || partial === null) return null;
  const { rejectedSpans, errorMessage } = partial as { rejectedSpans?: unknown; errorMessage?: unknown };
  const count = Number(rejectedSpans ?? 0);
  if (!Number.isFinite(count) || count <= 0) return null;
  return { count, message: typeof errorMessage === 'string' ? errorMessage : '' };
}
