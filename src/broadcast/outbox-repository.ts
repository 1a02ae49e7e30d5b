import { sql } from 'kysely';
import { sliceWhole } from '../platform/whole-characters.js';
import type { Storage } from '../storage/database.js';
import type { BroadcastOutboxTable, ObservabilityDestinationTable } from '../storage/database-schema.js';
import type { AtomicStep, StoredOutboxRow } from '../storage/sqlite-thread.js';

/** A row's status as listed and counted: a fan-out row is pending (for each destination it lists). */
export const listedStatus = sql<
  'pending' | 'dead'
>`case when status = 'fanout' then 'pending' else status end`;

/** Ids per statement when held rows are read back (well under either backend's parameter limit). */
const HELD_IDS_PER_READ = 500;

/** The longest error text kept on a row. */
const MAX_ERROR_CHARS = 1_000;
const errorText = (message: string) => sliceWhole(message.replaceAll('\u0000', ''), MAX_ERROR_CHARS);

/**
 * Data access of the broadcast outbox. A worker claims due rows by setting a lease (`lease_until`,
 * `leased_by`) and counting the attempt in the same statement; on PostgreSQL the candidate rows are
 * locked `FOR UPDATE SKIP LOCKED`, so two workers never claim the same row, and SQLite serializes
 * writers. A claimed row is deleted once delivered, rescheduled, or marked dead. A worker that dies
 * leaves its lease to expire, after which any worker claims the row again.
 */
export function createOutboxRepository(storage: Storage) {
  const { db } = storage;
  /**
   * Reads that take no lock: on the read-only connection where there is one (the broadcast worker's
   * thread on SQLite), so they run at that thread's priority rather than queue for its SQLite
   * thread (at nice 19, which the group commits share the core with), and their rows are not
   * copied from thread to thread.
   */
  const reads = storage.reader ?? db;
  const lockClause = storage.kind === 'postgres' ? sql`for update skip locked` : sql``;

  return {
    async claim(options: {
      /** Rows of one destination at most. */
      limit: number;
      /** Fan-out rows at most (claimed first; 0: none). */
      fanOutLimit: number;
      now: Date;
      leaseUntil: Date;
      owner: string;
      /** Destinations this worker is delivering to right now: their rows wait for the next round. */
      busy: readonly string[];
    }): Promise<{ fanOuts: BroadcastOutboxTable[]; rows: BroadcastOutboxTable[] }> {
      const now = options.now.toISOString();
      const busy =
        options.busy.length === 0
          ? sql``
          : sql`and destination_id not in (${sql.join(options.busy.map((id) => sql`${id}`))})`;
      const claimOf = async (status: 'fanout' | 'pending', limit: number, filter: typeof busy) => {
        /** The rows of `status` this claim may take: due, not leased (or their lease ran out). */
        const claimable = sql`status = ${status} and next_attempt_at <= ${now}
               and (lease_until is null or lease_until < ${now}) ${filter}`;
        // Most claims find nothing (an empty outbox; or every due row is leased to this worker,
        // handed over at its commit). On SQLite the update below opens a write transaction even
        // then, ~0.3–1 ms on the request thread several times a second; this read costs ~15 µs,
        // answered by the claim index alone.
        if (storage.kind === 'sqlite') {
          const due = await sql`
            select 1 as due from broadcast_outbox where ${claimable} limit 1`.execute(reads);
          if (due.rows.length === 0) return [];
        }
        const result = await sql<BroadcastOutboxTable>`
          update broadcast_outbox
             set lease_until = ${options.leaseUntil.toISOString()}, leased_by = ${options.owner},
                 attempts = attempts + 1
           where id in (
             select id from broadcast_outbox
              where ${claimable}
              order by next_attempt_at, id
              limit ${limit}
              ${lockClause})
          returning *`.execute(db);
        return result.rows;
      };
      // Fan-out rows (whoever is busy: the worker keeps the parts it cannot send now until it can),
      // then rows of one destination, each with a limit of its own so neither kind starves the
      // other; each statement reads one ordered range of the claim index.
      const fanOuts = options.fanOutLimit > 0 ? await claimOf('fanout', options.fanOutLimit, sql``) : [];
      const rows = options.limit > 0 ? await claimOf('pending', options.limit, busy) : [];
      return { fanOuts, rows };
    },

    /**
     * Claimed again while this worker still holds it (its lease ran out while a part waited for a
     * busy destination): the claim's attempt is given back; the lease it renewed is kept.
     */
    async uncount(ids: readonly string[], owner: string): Promise<void> {
      if (ids.length === 0) return;
      await db
        .updateTable('broadcast_outbox')
        .set({ attempts: sql<number>`attempts - 1` })
        .where('id', 'in', ids)
        .where('leased_by', '=', owner)
        .execute();
    },

    /**
     * The rows a group commit stored for this worker, read back by the worker (a SQLite thread built
     * them; see `GenerationLog`'s `onOutboxStored`): those still leased to `owner` under the lease
     * they were stored with. A row claimed again since (its lease ran out, and a claim, this
     * worker's too, renewed it) belongs to that claim and is left out, so no row is held twice.
     */
    async heldRows(rows: readonly StoredOutboxRow[], owner: string): Promise<BroadcastOutboxTable[]> {
      const leases = new Map(rows.map((row) => [row.id, row.lease_until]));
      const ids = [...leases.keys()];
      const held: BroadcastOutboxTable[] = [];
      for (let start = 0; start < ids.length; start += HELD_IDS_PER_READ) {
        const found = await reads
          .selectFrom('broadcast_outbox')
          .selectAll()
          .where('id', 'in', ids.slice(start, start + HELD_IDS_PER_READ))
          .where('leased_by', '=', owner)
          .execute();
        for (const row of found) if (row.lease_until === leases.get(row.id)) held.push(row);
      }
      return held;
    },

    /** Delivered: the rows are done with. */
    async remove(ids: readonly string[]): Promise<void> {
      if (ids.length === 0) return;
      await db.deleteFrom('broadcast_outbox').where('id', 'in', ids).execute();
    },

    /**
     * Failed for now: back to pending at `nextAttemptAt`, the error kept for the listing. Like `bury`,
     * it only touches a row this worker still holds: one whose lease another worker took is theirs.
     */
    async reschedule(
      id: string,
      options: { nextAttemptAt: Date; error: string; status: number | null; owner: string },
    ): Promise<void> {
      await db
        .updateTable('broadcast_outbox')
        .set({
          next_attempt_at: options.nextAttemptAt.toISOString(),
          lease_until: null,
          leased_by: null,
          last_error: errorText(options.error),
          last_status: options.status,
        })
        .where('id', '=', id)
        .where('leased_by', '=', options.owner)
        .execute();
    },

    /** Not tried (the destination asked to wait): pending again at `at`, the claim's attempt not counted. */
    async postpone(ids: readonly string[], at: Date, owner: string): Promise<void> {
      if (ids.length === 0) return;
      await db
        .updateTable('broadcast_outbox')
        .set({
          next_attempt_at: at.toISOString(),
          lease_until: null,
          leased_by: null,
          attempts: sql<number>`attempts - 1`,
        })
        .where('id', 'in', ids)
        .where('leased_by', '=', owner)
        .execute();
    },

    /** Fan-out rows delivered to every destination, deleted unless another worker took them meanwhile. */
    async removeHeld(ids: readonly string[], owner: string): Promise<void> {
      if (ids.length === 0) return;
      await db.deleteFrom('broadcast_outbox').where('id', 'in', ids).where('leased_by', '=', owner).execute();
    },

    /** An error text as a row keeps it. */
    errorText,

    /**
     * A fan-out row's last part settled: the row is deleted and `kept` (rows of their own for the
     * parts not delivered) stored in its place, in one transaction — unless this worker no longer
     * holds the row (its lease expired and another worker claimed it: theirs to deliver whole).
     */
    async settleFanout(id: string, owner: string, kept: readonly BroadcastOutboxTable[]): Promise<void> {
      const remove = db
        .deleteFrom('broadcast_outbox')
        .where('id', '=', id)
        .where('leased_by', '=', owner)
        .compile();
      const insert =
        kept.length === 0
          ? null
          : db
              .insertInto('broadcast_outbox')
              .values([...kept])
              .onConflict((conflict) => conflict.columns(['generation_id', 'destination_id']).doNothing())
              .compile();
      const thread = storage.sqliteThread;
      if (thread) {
        // Sent to the SQLite thread whole (see `atomically`): this worker's thread may run at the
        // lowest priority, and must not hold the write lock between two of its statements.
        const steps: AtomicStep[] = [
          { sql: remove.sql, parameters: remove.parameters, requireChanges: true },
        ];
        if (insert) steps.push({ sql: insert.sql, parameters: insert.parameters });
        await thread.atomically(steps);
        return;
      }
      await db.transaction().execute(async (trx) => {
        const deleted = await trx.executeQuery(remove);
        if (Number(deleted.numAffectedRows ?? 0) !== 1 || !insert) return;
        await trx.executeQuery(insert);
      });
    },

    /** Dead letters older than `before` are deleted (the retention). */
    async purgeDead(before: Date): Promise<void> {
      await db
        .deleteFrom('broadcast_outbox')
        .where('status', '=', 'dead')
        .where('dead_at', '<', before.toISOString())
        .execute();
    },

    /** Given up: the row stays as a dead letter (listed, counted, retried by hand). */
    async bury(
      id: string,
      options: { now: Date; error: string; status: number | null; owner: string },
    ): Promise<void> {
      await db
        .updateTable('broadcast_outbox')
        .set({
          status: 'dead',
          dead_at: options.now.toISOString(),
          lease_until: null,
          leased_by: null,
          last_error: errorText(options.error),
          last_status: options.status,
        })
        .where('id', '=', id)
        .where('leased_by', '=', options.owner)
        .execute();
    },

    /** Claimed but not attempted (shutdown, lease too short to finish): free again, the attempt not counted. */
    async release(ids: readonly string[], owner: string): Promise<void> {
      if (ids.length === 0) return;
      await db
        .updateTable('broadcast_outbox')
        .set({ lease_until: null, leased_by: null, attempts: sql<number>`attempts - 1` })
        .where('id', 'in', ids)
        .where('leased_by', '=', owner)
        .execute();
    },

    async destinations(ids: readonly string[]): Promise<ObservabilityDestinationTable[]> {
      if (ids.length === 0) return [];
      return db.selectFrom('observability_destinations').selectAll().where('id', 'in', ids).execute();
    },

    /** Whether the outbox holds any event (pending, fanned out or dead): one read of an index. */
    async holdsAny(): Promise<boolean> {
      const row = await db.selectFrom('broadcast_outbox').select('id').limit(1).executeTakeFirst();
      return row !== undefined;
    },

    /**
     * Events (one per destination) by status, for the metrics gauge: a fan-out row is pending once
     * per destination it lists. Read from the claim index alone (status, destination_id): the
     * number of destinations is in a fan-out row's `destination_id` (`*<destinations>:<n>`). The
     * row itself is not read, so a scrape costs ~6 ms per 20,000 rows instead of ~42 (reading
     * `status` or `fanout` from the table walks each payload's overflow pages, as they come after
     * it). Fan-out rows stored before the count was in their mark (`*<n>`) are counted from their
     * `fanout` list by a second read, of those rows only.
     */
    async countByStatus(): Promise<Array<{ status: string; count: number }>> {
      const destinations =
        storage.kind === 'postgres'
          ? sql`cast(split_part(substr(destination_id, 2), ':', 1) as integer)`
          : sql`cast(substr(destination_id, 2, instr(destination_id, ':') - 2) as integer)`;
      const marked = sql`destination_id like '*%:%'`;
      // Grouped by the column, not by the listed status: that expression would sort every row.
      const rows = await db
        .selectFrom('broadcast_outbox')
        .select([
          'status',
          sql<string>`sum(case when status <> 'fanout' then 1 when ${marked} then ${destinations} else 0 end)`.as(
            'count',
          ),
          sql<string>`sum(case when status = 'fanout' and not (${marked}) then 1 else 0 end)`.as('unmarked'),
        ])
        .groupBy('status')
        .execute();
      const listed = new Map<string, number>();
      for (const row of rows) {
        const status = row.status === 'fanout' ? 'pending' : row.status;
        listed.set(status, (listed.get(status) ?? 0) + Number(row.count));
      }
      const counts = [...listed].map(([status, count]) => ({ status, count }));
      if (rows.some((row) => Number(row.unmarked) > 0)) {
        const earlier = await db
          .selectFrom('broadcast_outbox')
          .select(sql<string>`sum(length(fanout) - length(replace(fanout, ',', '')) + 1)`.as('count'))
          .where('status', '=', 'fanout')
          .where(sql<boolean>`not (${marked})`)
          .executeTakeFirst();
        const pending = counts.find((row) => row.status === 'pending');
        if (pending) pending.count += Number(earlier?.count ?? 0);
      }
      return counts;
    },
  };
}

export type OutboxRepository = ReturnType<typeof createOutboxRepository>;
