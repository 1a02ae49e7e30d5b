import type { BroadcastOutboxTable } from '../storage/database-schema.js';
import type { GenerationCommit, StoredOutboxRow } from '../storage/sqlite-thread.js';
import { buildBroadcastEvent, type EventSources } from './build-event.js';
import { type BroadcastTarget, type TargetSource, targetOf } from './destination-rules.js';
import { outboxRowsFor } from './outbox-events.js';

/**
 * Everything a generation's broadcast outbox rows are built from, as plain data (structured-clone
 * safe): the request path gathers it when the generation ends, and the rows are built at the group
 * commit — in the SQLite thread that runs the commit when there is one (src/storage/sqlite-thread.ts),
 * else on the request thread. Either way `buildOutboxRows` makes the same rows.
 */
export interface OutboxSources {
  /** The workspace's destinations when the generation ended. */
  targets: TargetSource[];
  event: EventSources;
  /** This instance's delivery worker and its lease length; null when it runs none. */
  lease: { owner: string; ms: number } | null;
  /** Keep the built event with each row for a worker sending from the same thread (`outboxRowsFor`). */
  keepEvent: boolean;
}

/** Targets made from plain data in this thread, by that data's JSON: rules compiled once. */
const compiled = new Map<string, BroadcastTarget>();
/** The cache's bound: destinations edited over a long run leave old entries behind. */
const MAX_COMPILED = 1_000;

function compiledTarget(source: TargetSource): BroadcastTarget {
  const key = JSON.stringify(source);
  let target = compiled.get(key);
  if (!target) {
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    target = targetOf(source);
    compiled.set(key, target);
  }
  return target;
}

/**
 * A generation's outbox rows (see `outboxRowsFor`), created at `nowMs` (epoch milliseconds: the
 * group commit that stores them, when their lease starts). `targets`: the compiled targets of
 * `sources.targets`, when the caller holds them (the request thread); otherwise they are made here,
 * their rules compiled once per thread.
 */
export function buildOutboxRows(
  sources: OutboxSources,
  nowMs: number,
  targets: readonly BroadcastTarget[] = sources.targets.map(compiledTarget),
): BroadcastOutboxTable[] {
  const { record } = sources.event;
  return outboxRowsFor({
    targets,
    event: buildBroadcastEvent(sources.event),
    keyHash: record.key_hash,
    workspaceId: record.workspace_id,
    region: sources.event.region,
    now: new Date(nowMs),
    lease: sources.lease ? { owner: sources.lease.owner, until: new Date(nowMs + sources.lease.ms) } : null,
    keepEvent: sources.keepEvent,
  });
}

/**
 * The rows of a batch's generations, created at `nowMs`. A generation whose rows cannot be built is
 * noted in `unbuilt` and loses its events, not its record. What the SQLite thread that runs the
 * commit and the request thread (when no thread does) both call.
 */
export function buildOutboxBatch(
  sources: readonly OutboxSources[],
  nowMs: number,
): { rows: BroadcastOutboxTable[]; unbuilt: GenerationCommit['unbuilt'] } {
  const rows: BroadcastOutboxTable[] = [];
  const unbuilt: GenerationCommit['unbuilt'] = [];
  for (const source of sources) {
    try {
      for (const row of buildOutboxRows(source, nowMs)) rows.push(row);
    } catch (error) {
      unbuilt.push({
        id: source.event.record.id,
        message: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return { rows, unbuilt };
}

/**
 * The rows a commit stored: those of the records it `skipped` (stored before, their events with
 * them) left out.
 */
export function rowsOfNewRecords(
  rows: readonly BroadcastOutboxTable[],
  skipped: readonly string[],
): readonly BroadcastOutboxTable[] {
  if (skipped.length === 0 || rows.length === 0) return rows;
  const before = new Set(skipped);
  return rows.filter((row) => !before.has(row.generation_id));
}

/**
 * The stored rows a worker is told of (or remembers): those leased to one, by id and lease, less
 * those of the records the commit `skipped` (none: rows a claim or a hand-over holds).
 */
export function leasedRows(
  rows: readonly BroadcastOutboxTable[],
  skipped: readonly string[] = [],
): StoredOutboxRow[] {
  const leased: StoredOutboxRow[] = [];
  for (const row of rowsOfNewRecords(rows, skipped)) {
    if (row.leased_by === null || row.lease_until === null) continue;
    leased.push({ id: row.id, leased_by: row.leased_by, lease_until: row.lease_until });
  }
  return leased;
}
