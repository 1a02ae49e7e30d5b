import { sql } from 'kysely';
import type { Storage } from '../storage/database.js';
import type { BroadcastOutboxTable, ObservabilityDestinationTable } from '../storage/database-schema.js';

/** The longest error text kept on a row. */
const MAX_ERROR_CHARS = 1_000;
const errorText = (message: string) => message.replaceAll('\u0000', '').slice(0, MAX_ERROR_CHARS);

/**
 * Data access of the broadcast outbox. A worker claims due rows by setting a lease (`lease_until`,
 * `leased_by`) and counting the attempt in the same statement; on PostgreSQL the candidate rows are
 * locked `FOR UPDATE SKIP LOCKED`, so two workers never claim the same row, and SQLite serializes
 * writers. A claimed row is deleted once delivered, rescheduled, or marked dead. A worker that dies
 * leaves its lease to expire, after which any worker claims the row again.
 */
export function createOutboxRepository(storage: Storage) {
  const { db } = storage;
  const lockClause = storage.kind === 'postgres' ? sql`for update skip locked` : sql``;

  return {
    async claim(options: {
      limit: number;
      now: Date;
      leaseUntil: Date;
      owner: string;
      /** Destinations this worker is delivering to right now: their rows wait for the next round. */
      busy: readonly string[];
    }): Promise<BroadcastOutboxTable[]> {
      const now = options.now.toISOString();
      const busy =
        options.busy.length === 0
          ? sql``
          : sql`and destination_id not in (${sql.join(options.busy.map((id) => sql`${id}`))})`;
      const result = await sql<BroadcastOutboxTable>`
        update broadcast_outbox
           set lease_until = ${options.leaseUntil.toISOString()}, leased_by = ${options.owner},
               attempts = attempts + 1
         where id in (
           select id from broadcast_outbox
            where status = 'pending' and next_attempt_at <= ${now}
              and (lease_until is null or lease_until < ${now}) ${busy}
            order by next_attempt_at, id
            limit ${options.limit}
            ${lockClause})
        returning *`.execute(db);
      return result.rows;
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

    /** Events by status, for the metrics gauge. */
    async countByStatus(): Promise<Array<{ status: string; count: number }>> {
      const rows = await db
        .selectFrom('broadcast_outbox')
        .select(['status', sql<string>`count(*)`.as('count')])
        .groupBy('status')
        .execute();
      return rows.map((row) => ({ status: row.status, count: Number(row.count) }));
    },
  };
}

export type OutboxRepository = ReturnType<typeof createOutboxRepository>;
