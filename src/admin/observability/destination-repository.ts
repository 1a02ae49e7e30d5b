import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import { listedStatus } from '../../broadcast/outbox-repository.js';
import type { Storage } from '../../storage/database.js';
import type { BroadcastOutboxTable, Database } from '../../storage/database-schema.js';
import { lockWorkspaceRow } from '../workspaces/workspace-repository.js';
import type { DestinationRow } from './destination-record.js';

/** What the API lists: a fan-out row is pending (for each destination it lists). */
export type DeliveryStatus = 'pending' | 'dead';
export type DeliveryRow = { status: DeliveryStatus } & Pick<
  BroadcastOutboxTable,
  | 'id'
  | 'generation_id'
  | 'attempts'
  | 'next_attempt_at'
  | 'last_status'
  | 'last_error'
  | 'created_at'
  | 'dead_at'
>;

/** What inserting within the per-type limit came to. */
export type InsertOutcome = 'inserted' | 'limit_reached' | 'no_workspace';

/** The columns a PATCH may set. */
export type DestinationChanges = Partial<Omit<DestinationRow, 'id' | 'workspace_id' | 'type' | 'created_at'>>;

/** Live (not deleted) destinations of one type in a workspace. */
async function countOfType(executor: Kysely<Database>, workspaceId: string, type: string): Promise<number> {
  const row = await executor
    .selectFrom('observability_destinations')
    .select(sql<number>`count(*)`.as('count'))
    .where('workspace_id', '=', workspaceId)
    .where('type', '=', type)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

/**
 * A destination's outbox rows of one status: its own, and — pending — the fan-out rows it is one of
 * while their deliveries are in flight (src/broadcast/outbox-fanout.ts). Destination ids are UUIDs:
 * no LIKE wildcard in them.
 */
const forDestination =
  (destinationId: string, status: DeliveryStatus) =>
  (eb: ExpressionBuilder<Database, 'broadcast_outbox'>) => {
    const own = eb.and([eb('destination_id', '=', destinationId), eb('status', '=', status)]);
    if (status !== 'pending') return own;
    return eb.or([own, eb.and([eb('status', '=', 'fanout'), eb('fanout', 'like', `%${destinationId}%`)])]);
  };

/** A row whose config columns are still the ones read (a change computed from them is not stale). */
const configIs =
  (expected: Pick<DestinationRow, 'config' | 'secrets_ciphertext'>) =>
  (eb: ExpressionBuilder<Database, 'observability_destinations'>) =>
    eb.and([
      eb('config', '=', expected.config),
      expected.secrets_ciphertext === null
        ? eb('secrets_ciphertext', 'is', null)
        : eb('secrets_ciphertext', '=', expected.secrets_ciphertext),
    ]);

/** Data access for observability destinations and their outbox rows; nothing here knows HTTP. */
export function createDestinationRepository(storage: Storage) {
  const { db, kind } = storage;
  const live = () => db.selectFrom('observability_destinations').selectAll().where('deleted_at', 'is', null);

  return {
    /**
     * Inserts unless the workspace already has `limit` live destinations of the row's type. The count
     * and the insert share one transaction; on PostgreSQL the workspace row is locked first, so
     * concurrent creates in one workspace queue up and each sees the others' rows (SQLite runs its
     * transactions one at a time already).
     */
    async insertWithinLimit(row: DestinationRow, limit: number): Promise<InsertOutcome> {
      return db.transaction().execute(async (trx) => {
        if (!(await lockWorkspaceRow(trx, kind, row.workspace_id))) return 'no_workspace';
        if ((await countOfType(trx, row.workspace_id, row.type)) >= limit) return 'limit_reached';
        await trx.insertInto('observability_destinations').values(row).execute();
        return 'inserted';
      });
    },

    countOfType: (workspaceId: string, type: string) => countOfType(db, workspaceId, type),

    /** A destination that is not deleted. */
    async findById(id: string): Promise<DestinationRow | undefined> {
      return live().where('id', '=', id).executeTakeFirst();
    },

    /** A page of a workspace's destinations, newest first (ties by id, so pages never overlap). */
    async list(options: { workspaceId: string; offset: number; limit: number }): Promise<DestinationRow[]> {
      return live()
        .where('workspace_id', '=', options.workspaceId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .offset(options.offset)
        .limit(options.limit)
        .execute();
    },

    async count(workspaceId: string): Promise<number> {
      const row = await db
        .selectFrom('observability_destinations')
        .select(sql<number>`count(*)`.as('count'))
        .where('workspace_id', '=', workspaceId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return Number(row?.count ?? 0);
    },

    /**
     * Applies `changes` to a live destination. With `expected`, only while its stored config is still
     * the one the change was computed from (a config PATCH merges into what it read: a concurrent
     * config PATCH in between would otherwise be lost). Undefined when nothing was updated.
     */
    async update(
      id: string,
      changes: DestinationChanges,
      expected?: Pick<DestinationRow, 'config' | 'secrets_ciphertext'>,
    ): Promise<DestinationRow | undefined> {
      let query = db
        .updateTable('observability_destinations')
        .set(changes)
        .where('id', '=', id)
        .where('deleted_at', 'is', null);
      if (expected) query = query.where(configIs(expected));
      const result = await query.executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return undefined;
      return this.findById(id);
    },

    /** Every stored destination, deleted ones included (their config is still in the database). */
    async everyRow(): Promise<DestinationRow[]> {
      return db.selectFrom('observability_destinations').selectAll().orderBy('id').execute();
    },

    /**
     * Replaces a row's config columns while they are still `expected` (a concurrent PATCH wins), on
     * deleted rows too and without touching `updated_at`: the config's meaning does not change.
     */
    async replaceConfigColumns(
      id: string,
      columns: Pick<DestinationRow, 'config' | 'secrets_ciphertext'>,
      expected: Pick<DestinationRow, 'config' | 'secrets_ciphertext'>,
    ): Promise<boolean> {
      const result = await db
        .updateTable('observability_destinations')
        .set(columns)
        .where('id', '=', id)
        .where(configIs(expected))
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },

    /** Marks a live destination deleted; false when it was missing or already deleted. */
    /**
     * Marks the destination deleted and removes its outbox rows (pending events and dead letters,
     * which nobody can list or retry any more) in one transaction.
     */
    async softDelete(id: string, at: string): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const result = await trx
          .updateTable('observability_destinations')
          .set({ deleted_at: at, updated_at: at })
          .where('id', '=', id)
          .where('deleted_at', 'is', null)
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) === 0) return false;
        await trx.deleteFrom('broadcast_outbox').where('destination_id', '=', id).execute();
        return true;
      });
    },

    /** A page of one destination's outbox rows of one status, newest first. */
    async listDeliveries(options: {
      destinationId: string;
      status: DeliveryStatus;
      offset: number;
      limit: number;
    }): Promise<DeliveryRow[]> {
      return db
        .selectFrom('broadcast_outbox')
        .select([
          'id',
          'generation_id',
          listedStatus.as('status'),
          'attempts',
          'next_attempt_at',
          'last_status',
          'last_error',
          'created_at',
          'dead_at',
        ])
        .where(forDestination(options.destinationId, options.status))
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .offset(options.offset)
        .limit(options.limit)
        .execute();
    },

    async countDeliveries(destinationId: string, status: DeliveryStatus): Promise<number> {
      const row = await db
        .selectFrom('broadcast_outbox')
        .select(sql<number>`count(*)`.as('count'))
        .where(forDestination(destinationId, status))
        .executeTakeFirst();
      return Number(row?.count ?? 0);
    },

    /**
     * Sends a destination's dead letters back to the queue, due now, with a fresh attempt budget; the
     * last error stays for the record until the next attempt replaces it. Returns how many.
     */
    async requeueDead(destinationId: string, at: string): Promise<number> {
      const result = await db
        .updateTable('broadcast_outbox')
        .set({
          status: 'pending',
          attempts: 0,
          next_attempt_at: at,
          dead_at: null,
          lease_until: null,
          leased_by: null,
        })
        .where('destination_id', '=', destinationId)
        .where('status', '=', 'dead')
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
  };
}

export type DestinationRepository = ReturnType<typeof createDestinationRepository>;
