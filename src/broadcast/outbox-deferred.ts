import { deserialize, serialize } from 'node:v8';
import { newTimeOrderedId } from '../platform/ids.js';
import type { BroadcastOutboxTable } from '../storage/database-schema.js';
import { buildBroadcastEvent, type EventSources } from './build-event.js';
import type { TargetSource } from './destination-rules.js';
import { compiledTarget, type OutboxSources } from './outbox-build.js';
import { fanOutMark, payloadGroups, stowedText, stowPayloadsByDestination } from './outbox-events.js';

/**
 * A deferred row's payload: this prefix, then the base64 of the V8 serialization (`node:v8`) of
 * what its events are built from. Base64, not bytes: the column is text on both backends, and
 * PostgreSQL text holds no NUL.
 */
const PAYLOAD_PREFIX = 'v8:';

/** What a deferred row keeps: the destinations when the generation ended, and the event's sources. */
interface DeferredSources {
  targets: TargetSource[];
  event: EventSources;
}

/**
 * A generation's broadcast events as one outbox row of status `deferred`, built later by the
 * delivery worker that takes it (`buildDeferredRow`), not here: the request thread copies what the
 * events are made from into the row (one V8 serialization, as a message to another thread would
 * cost), and neither it nor the thread that commits builds, trims or serializes an event — the
 * worker does, in its thread at the idle priority. Stored in the group commit with its record, like
 * the rows built now, so the events are as durable; leased to this instance's worker when it runs
 * one. Its `destination_id` is a fan-out mark counting every destination of the workspace (the
 * gauge counts it so until it is built), its `fanout` lists them (so it is listed as pending for
 * each). Null when the workspace has no destination.
 */
export function deferredOutboxRow(sources: OutboxSources, nowMs: number): BroadcastOutboxTable | null {
  const { targets, event, lease } = sources;
  if (targets.length === 0) return null;
  const at = new Date(nowMs).toISOString();
  const kept: DeferredSources = { targets, event };
  const destinations: string[] = [];
  for (const target of targets) destinations.push(target.id);
  return {
    id: newTimeOrderedId(nowMs),
    destination_id: fanOutMark(targets.length, 0),
    workspace_id: event.record.workspace_id,
    generation_id: event.record.id,
    idempotency_key: '',
    payload: PAYLOAD_PREFIX + serialize(kept).toString('base64'),
    status: 'deferred',
    attempts: lease ? 1 : 0,
    next_attempt_at: at,
    lease_until: lease ? new Date(nowMs + lease.ms).toISOString() : null,
    leased_by: lease?.owner ?? null,
    last_error: null,
    last_status: null,
    created_at: at,
    dead_at: null,
    fanout: destinations.join(','),
  };
}

/**
 * Builds a deferred row where the worker holds it: the event is built from the row's sources and
 * each destination that selects it (rules as they were when the generation ended) gets its
 * payload, as `outboxRowsFor` would have made them; the row becomes, in memory, a fan-out row of
 * those destinations whose parts carry their own payloads (the stored row stays deferred until it
 * is settled: delivered everywhere, it is deleted; otherwise rows of their own replace it). Answers
 * how many destinations select the event: none, and the row is done with. Throws when the payload
 * cannot be read.
 */
export function buildDeferredRow(row: BroadcastOutboxTable): number {
  if (!row.payload.startsWith(PAYLOAD_PREFIX))
    throw new Error('deferred broadcast row has an unknown payload format');
  const sources = deserialize(
    Buffer.from(row.payload.slice(PAYLOAD_PREFIX.length), 'base64'),
  ) as DeferredSources;
  const targets = [];
  for (const source of sources.targets) targets.push(compiledTarget(source));
  const groups = payloadGroups(
    targets,
    buildBroadcastEvent(sources.event),
    sources.event.record.key_hash,
    sources.event.region,
  );
  const payloads = new Map<string, Buffer>();
  for (const group of groups) {
    const bytes = stowedText(group.text);
    for (const destinationId of group.destinations) payloads.set(destinationId, bytes);
  }
  row.status = 'fanout';
  row.fanout = [...payloads.keys()].join(',');
  stowPayloadsByDestination(row, payloads);
  return payloads.size;
}

/** Whether a row is a deferred row not built yet. */
export const isDeferred = (row: BroadcastOutboxTable) => row.status === 'deferred';
