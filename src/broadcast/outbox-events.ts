import { newTimeOrderedId } from '../platform/ids.js';
import { sliceWhole } from '../platform/whole-characters.js';
import type { BroadcastOutboxTable } from '../storage/database-schema.js';
import type { BroadcastEvent, BroadcastMessage } from './broadcast-event.js';
import { type BroadcastTarget, eventForDestination, selects } from './destination-rules.js';
import { idempotencyKeyOf } from './idempotency-key.js';

/** The largest stored payload; bigger events lose their oldest input messages, then long texts. */
export const MAX_PAYLOAD_CHARS = 262_144;
const SHORT_TEXT_CHARS = 4_096;

const shorten = (messages: BroadcastMessage[] | null) =>
  messages?.map((message) => ({
    ...message,
    content:
      message.content.length > SHORT_TEXT_CHARS
        ? `${sliceWhole(message.content, SHORT_TEXT_CHARS)}…[truncated]`
        : message.content,
  })) ?? null;

/**
 * The event's JSON within MAX_PAYLOAD_CHARS (characters of JSON text): first the oldest input
 * messages after the system prompt give way (a note says how many), then every text is cut short,
 * then the bodies go, then the trace metadata. A long conversation still reaches the destination
 * with its system prompt, latest turns, output, usage and cost. Linear in the event's size: each
 * message is serialized once to measure it.
 */
export function fitPayload(event: BroadcastEvent): string {
  return fitEvent(event).text;
}

/**
 * `fitPayload`, with the event its text encodes when nothing had to give way (null when the text is
 * a trimmed copy: then only the text is the event as stored).
 */
function fitEvent(event: BroadcastEvent): { text: string; event: BroadcastEvent | null } {
  const text = JSON.stringify(event);
  if (text.length <= MAX_PAYLOAD_CHARS) return { text, event };
  return { text: fitLarge(event, text), event: null };
}

function fitLarge(event: BroadcastEvent, serialized: string): string {
  let text = serialized;
  let fitted = event;
  const input = event.input;
  if (input && input.length > 1) {
    let head = 0;
    while (head < input.length - 1 && input[head]?.role === 'system') head += 1;
    const sizes = input.map((message) => JSON.stringify(message).length + 1);
    const note = (omitted: number): BroadcastMessage => ({
      role: 'system',
      content: `[${omitted} earlier messages omitted]`,
    });
    let total = text.length;
    let dropped = 0;
    // Drop from just after the system prompt, keeping at least the last message.
    while (
      head + dropped < input.length - 1 &&
      total + JSON.stringify(note(dropped + 1)).length > MAX_PAYLOAD_CHARS
    ) {
      total -= sizes[head + dropped] ?? 0;
      dropped += 1;
    }
    if (dropped > 0) {
      fitted = { ...event, input: [...input.slice(0, head), note(dropped), ...input.slice(head + dropped)] };
      text = JSON.stringify(fitted);
      if (text.length <= MAX_PAYLOAD_CHARS) return text;
    }
  }
  fitted = { ...fitted, input: shorten(fitted.input), output: shorten(fitted.output) };
  text = JSON.stringify(fitted);
  if (text.length <= MAX_PAYLOAD_CHARS) return text;
  fitted = { ...fitted, input: null, output: null };
  text = JSON.stringify(fitted);
  if (text.length <= MAX_PAYLOAD_CHARS) return text;
  return JSON.stringify({ ...fitted, trace: { ...fitted.trace, metadata: {} }, parameters: {} });
}

/**
 * The outbox rows of one generation. The destinations that select the event (key allowlist, region,
 * sampling, filter rules) are grouped by what they receive (privacy mode and the three flags): a
 * group of one gets a row of its own; a larger group gets one fan-out row (`fanout` lists its
 * destinations) holding the event once. The worker delivers a fan-out row to each of its
 * destinations and splits it into rows of their own only for those not delivered at the first try
 * (src/broadcast/outbox-fanout.ts): three destinations cost the group commit one row, not three.
 */
export function outboxRowsFor(options: {
  targets: readonly BroadcastTarget[];
  event: BroadcastEvent;
  keyHash: string;
  workspaceId: string;
  region: string;
  now: Date;
  /**
   * The delivery worker of this instance: rows are stored already leased to it (the attempt
   * counted), so it sends them from memory after the commit; if the process dies, the lease expires
   * and any worker claims them. Null when this instance runs no worker.
   */
  lease: { owner: string; until: Date } | null;
  /**
   * Keep the built event with each row (`eventOfBuiltRow`) for a worker that sends from this
   * thread. Off when the delivery thread sends (it parses the payload text): kept, the event's
   * whole object graph would live as long as the row lingers in the hand-off queue, and every
   * scavenge of the request thread would copy it.
   */
  keepEvent: boolean;
}): BroadcastOutboxTable[] {
  const { event, now } = options;
  // Destinations with the same privacy and flags receive the same text: serialized once.
  const groups = new Map<string, BroadcastTarget[]>();
  for (const target of options.targets) {
    if (!selects(target, event, options.keyHash, options.region)) continue;
    const variant = `${target.privacyMode}:${target.cost}:${target.identity}:${target.requestContext}`;
    const group = groups.get(variant);
    if (group) group.push(target);
    else groups.set(variant, [target]);
  }
  if (groups.size === 0) return [];
  const at = now.toISOString();
  const rows: BroadcastOutboxTable[] = [];
  for (const group of groups.values()) {
    const first = group[0] as BroadcastTarget;
    const payload = fitEvent(eventForDestination(first, event));
    const single = group.length === 1;
    const row: BroadcastOutboxTable = {
      id: newTimeOrderedId(now.getTime()),
      // A fan-out row's `*<destinations>:<n>` is no destination's id: unique per generation, never
      // matched by a query for one destination's rows, and it says how many destinations the row
      // stands for where the outbox gauge can read it without the row (see `countByStatus`).
      destination_id: single ? first.id : `${FANOUT_MARK}${group.length}:${rows.length}`,
      workspace_id: options.workspaceId,
      generation_id: event.generation_id,
      idempotency_key: single ? idempotencyKeyOf(event.generation_id, first.id) : '',
      payload: payload.text,
      status: single ? 'pending' : 'fanout',
      attempts: options.lease ? 1 : 0,
      next_attempt_at: at,
      lease_until: options.lease ? options.lease.until.toISOString() : null,
      leased_by: options.lease?.owner ?? null,
      last_error: null,
      last_status: null,
      created_at: at,
      dead_at: null,
      fanout: single ? null : group.map((target) => target.id).join(','),
    };
    rows.push(row);
    if (payload.event && options.keepEvent) builtEvents.set(row, payload.event);
  }
  return rows;
}

/** How a fan-out row's `destination_id` starts (destination ids are UUIDs). */
const FANOUT_MARK = '*';

/** The destinations a row is for: its own, or a fan-out row's. */
export function destinationsOf(row: BroadcastOutboxTable): string[] {
  return row.fanout === null ? [row.destination_id] : row.fanout.split(',');
}

/**
 * A fan-out row's part for one destination, as the worker delivers it: the destination's id and an
 * id of its own (`<row id>/<destination id>`) that the fan-out's bookkeeping maps back to the row.
 * Its idempotency key is left empty, made where it is needed (`rowIdempotencyKey`). A part of a row
 * this process built keeps its event. A row of its own is its only part.
 */
export function partOf(row: BroadcastOutboxTable, destinationId: string): BroadcastOutboxTable {
  if (row.fanout === null) return row;
  const part: BroadcastOutboxTable = {
    ...row,
    id: `${row.id}/${destinationId}`,
    destination_id: destinationId,
    idempotency_key: '',
    status: 'pending',
    fanout: null,
  };
  const event = builtEvents.get(row);
  if (event) builtEvents.set(part, event);
  const stowed = stowedPayloads.get(row);
  if (stowed) stowedPayloads.set(part, stowed);
  return part;
}

/**
 * The event a row was built from, while this process holds the row object (a handed-over row):
 * the worker sends it without parsing the payload it just serialized. Rows read from the database
 * are other objects and are parsed.
 */
const builtEvents = new WeakMap<BroadcastOutboxTable, BroadcastEvent>();

export function eventOfBuiltRow(row: BroadcastOutboxTable): BroadcastEvent | undefined {
  return builtEvents.get(row);
}

/**
 * The payloads of rows the worker holds in memory, as UTF-8 bytes outside the JS heap (see
 * `stowPayload`), by row; a fan-out row's parts share its bytes.
 */
const stowedPayloads = new WeakMap<BroadcastOutboxTable, Buffer>();

/**
 * Moves a held row's payload text out of the JS heap: the worker holds a handed-over row until
 * every destination has it (a second or more with batching), and on the request thread a payload
 * kept that long survives a scavenge, which copies it, then is promoted, so the pauses of a
 * broadcasting gateway grow with its events. Kept as a Buffer, only a small view is on the heap;
 * `payloadText` gives the text back where it is needed (a send, a part kept as a row of its own).
 * The row's `payload` field is empty from then on: read it only through `payloadText`.
 */
export function stowPayload(row: BroadcastOutboxTable): void {
  if (stowedPayloads.has(row)) return;
  // Unpooled: a small Buffer.from() is a slice of a shared 8 KB slab, which one held payload would
  // keep whole (up to MAX_HANDOFF_ROWS slabs for a slow destination that gets one event in five).
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(row.payload, 'utf8'));
  bytes.write(row.payload, 'utf8');
  stowedPayloads.set(row, bytes);
  row.payload = '';
}

/**
 * A row's payload as it goes to a send: its stowed UTF-8 bytes as they are (the delivery thread
 * decodes them, not the request thread), or the text still in the row.
 */
export function payloadToSend(row: BroadcastOutboxTable): string | Uint8Array {
  return stowedPayloads.get(row) ?? row.payload;
}

/** A row's payload text, whether it is in the row or stowed. */
export function payloadText(row: BroadcastOutboxTable): string {
  return stowedPayloads.get(row)?.toString('utf8') ?? row.payload;
}
