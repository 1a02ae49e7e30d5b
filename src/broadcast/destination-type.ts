import type { TSchema } from 'typebox';
import type { BroadcastEvent } from './broadcast-event.js';
import type { ExporterHttp } from './exporter-http.js';

/** One event of a batch handed to an exporter. */
export interface OutboxItem {
  event: BroadcastEvent;
  /**
   * Stable across retries of the same event to the same destination (`<generation id>:<destination
   * id>` hashed to 32 hex): exporters send it where the receiving API deduplicates (an
   * `Idempotency-Key` header, an event id, an object key, a dedup token).
   */
  idempotencyKey: string;
  /** 1 on the first delivery attempt. */
  attempt: number;
}

/** What an exporter is given besides the events: the destination's config and an HTTP client. */
export interface ExportContext<C> {
  /** The whole config: stored values, defaults applied, secrets decrypted. */
  config: C;
  destination: { id: string; name: string; workspace_id: string };
  http: ExporterHttp;
  /** Aborts the delivery (shutdown, lease lost). */
  signal: AbortSignal;
  /** The current time (tests control it). */
  now: Date;
  /**
   * An origin (`scheme://host[:port]`) the operator set for this type in the gateway config
   * (`broadcast.origin_overrides.<type>`: a proxy, a private link, a test receiver). Exporters whose
   * URL the config does not name (snowflake's account host, newrelic's region host) send to this
   * origin instead, keeping their path; exporters with a URL field ignore it. Undefined normally.
   */
  originOverride?: string;
}

/**
 * How a batch went. An exporter throws DeliveryError when the whole batch failed; when the receiving
 * API answered item by item (Langfuse's 207), it returns the indexes it refused and the rest counts
 * as delivered.
 */
export interface SendOutcome {
  rejected?: Rejection[];
  /**
   * A batch sent as several requests that stopped at a failed one: that request's failure (status
   * and `Retry-After` included), the items it carried, and the items after it, never sent. Items in
   * neither list (nor `rejected`) were delivered.
   */
  stopped?: { error: DeliveryError; failed: number[]; unsent: number[] };
}

/**
 * An item the receiver refused, or whose own request failed: the failure as the worker applies it to
 * that item alone (a status and `Retry-After` it carried are kept, so its backoff and its record in
 * the deliveries listing are what the receiver said).
 */
export interface Rejection {
  index: number;
  retryable: boolean;
  message: string;
  status?: number | null;
  retryAfterMs?: number | null;
}

/** The rejection of item `index` by a failure that concerned it (see Rejection). */
export function rejectionOf(index: number, error: DeliveryError): Rejection {
  return { index, ...deliveryErrorData(error) };
}

/**
 * A batch's outcome when some of its items were refused before sending (`refused`: unreadable,
 * too old) and the others went out as a sub-batch (`sent`: the batch's index of each of its items):
 * the sub-batch's outcome in the batch's indexes, a failure of the whole sub-batch (`sending`
 * rejected) as its stop — so the refused items keep their own refusal and are not sent again.
 */
export async function outcomeBeside(
  refused: readonly Rejection[],
  sent: readonly number[],
  sending: Promise<SendOutcome | undefined>,
): Promise<SendOutcome> {
  let outcome: SendOutcome | undefined;
  try {
    outcome = await sending;
  } catch (error) {
    return {
      rejected: [...refused],
      stopped: { error: asDeliveryError(error), failed: [...sent], unsent: [] },
    };
  }
  /** The batch's index of a sent item's; -1 (settling nothing) for one the exporter made up. */
  const at = (index: number) => sent[index] ?? -1;
  const rejected = [
    ...refused,
    ...(outcome?.rejected ?? []).map((entry) => ({ ...entry, index: at(entry.index) })),
  ];
  if (!outcome?.stopped) return { rejected };
  const { error, failed, unsent } = outcome.stopped;
  return { rejected, stopped: { error, failed: failed.map(at), unsent: unsent.map(at) } };
}

/**
 * A failed delivery. `retryable` false means sending the same request again cannot succeed (a 400
 * or 401 that configuration must fix): the event goes to the dead letters at once.
 */
export class DeliveryError extends Error {
  override name = 'DeliveryError';
  readonly retryable: boolean;
  /** The receiver's `Retry-After`, in milliseconds, when it sent one. */
  readonly retryAfterMs: number | null;
  /** The HTTP status received; null when none arrived (connection refused, timeout, reset). */
  readonly status: number | null;
  constructor(
    message: string,
    options: { retryable: boolean; retryAfterMs?: number | null; status?: number | null; cause?: unknown },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.retryable = options.retryable;
    this.retryAfterMs = options.retryAfterMs ?? null;
    this.status = options.status ?? null;
  }
}

/** A DeliveryError as plain data (what crosses the thread boundary, and what a Rejection holds). */
export interface DeliveryErrorData {
  message: string;
  retryable: boolean;
  retryAfterMs: number | null;
  status: number | null;
}

export function deliveryErrorData(error: unknown): DeliveryErrorData {
  const failure = asDeliveryError(error);
  return {
    message: failure.message,
    retryable: failure.retryable,
    retryAfterMs: failure.retryAfterMs,
    status: failure.status,
  };
}

export function deliveryErrorFrom(data: DeliveryErrorData): DeliveryError {
  return new DeliveryError(data.message, {
    retryable: data.retryable,
    retryAfterMs: data.retryAfterMs,
    status: data.status,
  });
}

/** A failure as a DeliveryError: itself, or anything else an exporter threw (retryable). */
export function asDeliveryError(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  return new DeliveryError(`exporter failed: ${(error as Error)?.message ?? String(error)}`, {
    retryable: true,
    cause: error,
  });
}

/**
 * One of the seventeen destination types (reference §3.1). The registry (destination-types.ts)
 * lists them; the destinations API validates configs with `configSchema` and `validate`, seals
 * `secretFields`, and the outbox worker calls `send`.
 */
export interface DestinationType<C extends object = Record<string, unknown>> {
  /** The lowercase identifier, e.g. `langfuse`. */
  type: string;
  /**
   * The stored config: a TypeBox object with `additionalProperties: false`, required fields
   * required, optional ones optional (defaults are not in the schema: see `defaults`). URL fields
   * carry `format: 'uri'` plus the rules of `validate`.
   */
  configSchema: TSchema;
  /** Values given to optional fields omitted at creation (reference §3.1 defaults). */
  defaults: Partial<C>;
  /**
   * Config fields that are credentials: sealed at rest and returned masked. `headers` (when the
   * type accepts custom headers) is always treated as secret, value by value, by the API layer.
   */
  secretFields: readonly string[];
  /**
   * The secrets in the forms the exporter sends them, where those are not the fields themselves
   * (a Basic pair with a fixed user, a key cut out of a DSN, an auth header it composes): taken out
   * of receivers' answers like the fields are, as given and base64-encoded.
   */
  sentSecrets?(config: C): string[];
  /**
   * Other config fields the exporter sends as HTTP header values (a workspace or user name): checked
   * at save to hold only what a header can, as secret fields are; one that cannot would fail every
   * delivery.
   */
  headerFields?: readonly string[];
  /**
   * Rules a schema cannot say (a DSN's shape, a URL's scheme, fields that depend on each other).
   * Returns problems as `{ field, message }` with `field` the config key, e.g. `baseUrl`; empty when
   * the config is valid. Called on the whole config (defaults applied) after the schema passed.
   */
  validate?(config: C): Array<{ field: string; message: string }>;
  /** Every URL the exporter will call with this config (the API checks them against SSRF rules). */
  urls(config: C): string[];
  /** Largest batch one `send` takes; the worker splits bigger ones. */
  maxBatch: number;
  /** Delivers a batch; throws DeliveryError (or returns per-item rejections). */
  send(items: readonly OutboxItem[], context: ExportContext<C>): Promise<SendOutcome | undefined>;
  /**
   * Checks that the destination accepts data with these credentials, sending nothing that would be
   * stored (an empty OTLP payload with `X-Test-Connection: true`, an authenticated no-op call).
   * Throws DeliveryError when it does not.
   */
  testConnection(context: Omit<ExportContext<C>, 'destination'>): Promise<void>;
  /** Whether a create, or a PATCH that changes `config`, must pass `testConnection` first (reference §3.3). */
  testOnSave: boolean;
}
