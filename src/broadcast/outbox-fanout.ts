import { newTimeOrderedId } from '../platform/ids.js';
import type { BroadcastOutboxTable } from '../storage/database-schema.js';
import { rowIdempotencyKey } from './idempotency-key.js';
import { destinationsOf, partOf, payloadText } from './outbox-events.js';
import type { OutboxRepository } from './outbox-repository.js';

interface FanOut {
  row: BroadcastOutboxTable;
  /** Parts not settled yet. */
  waiting: number;
  /** Rows of their own for the parts not delivered (retried, postponed, handed back, dead). */
  kept: BroadcastOutboxTable[];
}

/**
 * The outbox as the worker settles it, fan-out rows included (see `outboxRowsFor`). The worker sees
 * a fan-out row as its parts, one per destination (`expand`), and settles each part like a row of
 * its own: here, a part's outcome is noted, and when the row's last part is settled, one
 * transaction deletes the fan-out row — if this worker still holds its lease — and stores a row of
 * its own for each part that was not delivered, in the state the worker gave it (due again with its
 * error, postponed, handed back, or dead). So the common case, every destination delivered, costs
 * one delete for all of them. A part's outcome lives in memory until then: if the process dies, the
 * fan-out row's lease expires and it is claimed and delivered again whole — at least once, as any
 * row, under each destination's stable idempotency key.
 */
export function createFanoutOutbox(repository: OutboxRepository) {
  const parts = new Map<string, { fanOut: FanOut; part: BroadcastOutboxTable }>();
  /** Fan-out rows with parts not settled yet, by row id. */
  const open = new Map<string, FanOut>();
  /** Rows `expand` found still open since the last `takeReclaimed`. */
  let reclaimed: string[] = [];

  /**
   * Keeps a part as a row of its own, `changes` applied (or drops it when null); returns its row
   * when that was the row's last part.
   */
  function note(
    id: string,
    changes: ((part: BroadcastOutboxTable) => Partial<BroadcastOutboxTable>) | null,
  ): FanOut | null {
    const entry = parts.get(id);
    if (!entry) return null;
    parts.delete(id);
    const { fanOut, part } = entry;
    if (changes) {
      fanOut.kept.push({
        ...part,
        idempotency_key: rowIdempotencyKey(part),
        payload: payloadText(part),
        id: newTimeOrderedId(Date.now()),
        lease_until: null,
        leased_by: null,
        ...changes(part),
      });
    }
    fanOut.waiting -= 1;
    if (fanOut.waiting > 0) return null;
    open.delete(fanOut.row.id);
    return fanOut;
  }

  /** Runs `plain` for the ids of rows of their own and notes the parts; settles finished fan-outs. */
  async function split(
    ids: readonly string[],
    owner: string,
    plain: (ids: string[]) => Promise<void>,
    changes: ((part: BroadcastOutboxTable) => Partial<BroadcastOutboxTable>) | null,
  ): Promise<void> {
    const own: string[] = [];
    const done: FanOut[] = [];
    for (const id of ids) {
      if (!parts.has(id)) {
        own.push(id);
        continue;
      }
      const fanOut = note(id, changes);
      if (fanOut) done.push(fanOut);
    }
    if (own.length > 0) await plain(own);
    // Delivered to every destination (the common case): one statement for all of them.
    const whole = done.filter((fanOut) => fanOut.kept.length === 0).map((fanOut) => fanOut.row.id);
    if (whole.length > 0) await repository.removeHeld(whole, owner);
    for (const fanOut of done) {
      if (fanOut.kept.length > 0) await repository.settleFanout(fanOut.row.id, owner, fanOut.kept);
    }
  }

  /**
   * The rows as the worker queues them, by destination: a row of its own for its destination, a
   * fan-out row once for each of its destinations — standing for its part there, which `partFor`
   * makes when it is sent (so a row waiting in three queues is one object, not four). A fan-out
   * row whose parts this worker still holds (its lease ran out while a slow destination kept one
   * waiting, and the worker claimed it back) is left out: those parts are settled as they are,
   * rather than sent again to the destinations already delivered.
   */
  function openRows(
    rows: readonly BroadcastOutboxTable[],
  ): Array<[destinationId: string, row: BroadcastOutboxTable]> {
    const queued: Array<[string, BroadcastOutboxTable]> = [];
    for (const row of rows) {
      if (row.fanout === null) {
        queued.push([row.destination_id, row]);
        continue;
      }
      const held = open.get(row.id);
      if (held) {
        // The claim renewed its lease: the parts still waiting carry it, so they are not handed
        // back for a lease that is in fact fresh. (The worker gives the claim's attempt back.)
        held.row.lease_until = row.lease_until;
        for (const entry of parts.values()) {
          if (entry.fanOut === held) entry.part.lease_until = row.lease_until;
        }
        reclaimed.push(row.id);
        continue;
      }
      const destinations = destinationsOf(row);
      open.set(row.id, { row, waiting: destinations.length, kept: [] });
      for (const destinationId of destinations) queued.push([destinationId, row]);
    }
    return queued;
  }

  /**
   * What the worker sends to `destinationId` for a row `open` queued there: the row itself, or
   * the fan-out row's part for that destination, made now and settled like a row of its own.
   * Asked once per queued entry.
   */
  function partFor(row: BroadcastOutboxTable, destinationId: string): BroadcastOutboxTable {
    if (row.fanout === null) return row;
    const fanOut = open.get(row.id);
    const part = partOf(fanOut?.row ?? row, destinationId);
    if (fanOut) parts.set(part.id, { fanOut, part });
    return part;
  }

  return {
    open: openRows,

    partFor,

    /** `open` and `partFor` at once: every part made now (tests, and what does not queue). */
    expand(rows: readonly BroadcastOutboxTable[]): BroadcastOutboxTable[] {
      return openRows(rows).map(([destinationId, row]) => partFor(row, destinationId));
    },

    /** The ids of rows claimed again while still open (see `expand`), once. */
    takeReclaimed(): string[] {
      const ids = reclaimed;
      reclaimed = [];
      return ids;
    },

    /** Whether `id` is a part of a fan-out row this worker holds. */
    isPart(id: string): boolean {
      return parts.has(id);
    },

    /** Delivered, or nobody wants them any more. */
    remove(ids: readonly string[], owner: string): Promise<void> {
      return split(ids, owner, (own) => repository.remove(own), null);
    },

    reschedule(
      id: string,
      options: { nextAttemptAt: Date; error: string; status: number | null; owner: string },
    ): Promise<void> {
      return split(
        [id],
        options.owner,
        () => repository.reschedule(id, options),
        () => ({
          next_attempt_at: options.nextAttemptAt.toISOString(),
          last_error: repository.errorText(options.error),
          last_status: options.status,
        }),
      );
    },

    postpone(ids: readonly string[], at: Date, owner: string): Promise<void> {
      return split(
        ids,
        owner,
        (own) => repository.postpone(own, at, owner),
        (part) => ({ next_attempt_at: at.toISOString(), attempts: part.attempts - 1 }),
      );
    },

    bury(
      id: string,
      options: { now: Date; error: string; status: number | null; owner: string },
    ): Promise<void> {
      return split(
        [id],
        options.owner,
        () => repository.bury(id, options),
        () => ({
          status: 'dead',
          dead_at: options.now.toISOString(),
          last_error: repository.errorText(options.error),
          last_status: options.status,
        }),
      );
    },

    release(ids: readonly string[], owner: string): Promise<void> {
      return split(
        ids,
        owner,
        (own) => repository.release(own, owner),
        (part) => ({ attempts: part.attempts - 1 }),
      );
    },
  };
}

export type FanoutOutbox = ReturnType<typeof createFanoutOutbox>;
