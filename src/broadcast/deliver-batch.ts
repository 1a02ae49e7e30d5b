import type { BroadcastEvent } from './broadcast-event.js';
import { type DestinationView, eventForDestination } from './destination-rules.js';
import {
  DeliveryError,
  type ExportContext,
  type OutboxItem,
  outcomeBeside,
  type SendOutcome,
} from './destination-type.js';
import { destinationType } from './destination-types.js';
import type { ExporterHttp } from './exporter-http.js';
import { rowIdempotencyKey } from './idempotency-key.js';

/** One stored event to send: its payload as stored, and the event itself when still at hand. */
export interface StoredItem {
  /** The event's JSON: text, or its UTF-8 bytes (a payload the worker stowed; decoded where it is sent). */
  payload: string | Uint8Array;
  /** The event the payload was serialized from (a row this process just built); else it is parsed. */
  event?: BroadcastEvent;
  /** The row's key; empty for a fan-out row's part, made here from the generation and destination. */
  idempotencyKey: string;
  generationId: string;
  attempt: number;
}

/** One batch for one destination, as the outbox worker hands it over. */
export interface DeliveryRequest {
  /** The destination type (`webhook`, `langfuse`, …). */
  type: string;
  items: StoredItem[];
  config: Record<string, unknown>;
  destination: ExportContext<unknown>['destination'];
  now: Date;
  originOverride?: string;
  /**
   * The destination's privacy mode and flags as they are now. An event is stored as the destination
   * wanted it then; one still queued or dead when privacy mode is switched on (or a flag off) is
   * sent without what the destination no longer wants: it is narrowed here, never widened.
   */
  view?: DestinationView;
  signal: AbortSignal;
}

/**
 * What sends batches to receivers: in this thread (tests, `broadcast.delivery_thread: false`) or in
 * the delivery thread (delivery-thread.ts). Resolves with the exporter's outcome (indexes are the
 * request's), or rejects with a DeliveryError when the batch failed as a whole.
 */
export interface Deliverer {
  deliver(request: DeliveryRequest): Promise<SendOutcome | undefined>;
  /**
   * Gets ready to send (the delivery thread starts and loads its exporters at the first batch,
   * so a gateway without destinations never pays its memory). Never rejects.
   */
  warm?(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Parses the batch's payloads and sends the readable ones with the type's exporter. A payload that
 * is not valid JSON is refused alone (not retryable: it never will be); the outcome's indexes are
 * mapped back to the request's.
 */
export async function deliverBatch(
  request: Omit<DeliveryRequest, 'signal'> & { signal: AbortSignal },
  http: ExporterHttp,
): Promise<SendOutcome | undefined> {
  const type = destinationType(request.type);
  if (!type) throw new DeliveryError(`unknown destination type ${request.type}`, { retryable: false });
  const unreadable: NonNullable<SendOutcome['rejected']> = [];
  const items: OutboxItem[] = [];
  /** Request index of each item sent. */
  const positions: number[] = [];
  // A loop, not a callback made per batch (docs/decisions.md, "The broadcast worker's per-row steps
  // are loops").
  for (const [index, stored] of request.items.entries()) {
    let event = stored.event;
    if (event === undefined) {
      try {
        event = JSON.parse(payloadJson(stored.payload)) as BroadcastEvent;
      } catch {
        unreadable.push({ index, retryable: false, message: 'the stored event is not valid JSON' });
        continue;
      }
    }
    if (request.view) event = eventForDestination(request.view, event);
    const idempotencyKey = rowIdempotencyKey({
      idempotency_key: stored.idempotencyKey,
      generation_id: stored.generationId,
      destination_id: request.destination.id,
    });
    items.push({ event, idempotencyKey, attempt: stored.attempt });
    positions.push(index);
  }
  if (items.length === 0) return { rejected: unreadable };
  const sending = type.send(items, {
    config: request.config,
    destination: request.destination,
    http,
    signal: request.signal,
    now: request.now,
    originOverride: request.originOverride,
  });
  if (unreadable.length === 0) return (await sending) ?? undefined;
  // The unreadable items keep their own refusal; a failure concerns the items sent.
  return outcomeBeside(unreadable, positions, sending);
}

const utf8 = new TextDecoder();

/** A payload's JSON text (bytes are UTF-8; an invalid sequence becomes U+FFFD, as Buffer decodes it). */
const payloadJson = (payload: string | Uint8Array): string =>
  typeof payload === 'string' ? payload : utf8.decode(payload);

/** Sends in this thread, with the given HTTP client. */
export function createInProcessDeliverer(http: ExporterHttp): Deliverer {
  return {
    deliver: (request) => deliverBatch(request, http),
    close: async () => undefined,
  };
}
