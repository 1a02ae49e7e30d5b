import { sql } from 'kysely';
import type { Storage } from '../../storage/database.js';
import type { GuardrailRow } from './guardrail-record.js';

/** Data access for guardrails; nothing here knows HTTP. */
export function createGuardrailRepository(storage: Storage) {
  const { db } = storage;
  return {
    async insert(row: GuardrailRow): Promise<void> {
      await db.insertInto('guardrails').values(row).execute();
    },

    async find(id: string): Promise<GuardrailRow | undefined> {
      return db.selectFrom('guardrails').selectAll().where('id', '=', id).executeTakeFirst();
    },

    async list(options: { workspaceId: string; offset: number; limit: number }): Promise<GuardrailRow[]> {
      return db
        .selectFrom('guardrails')
        .selectAll()
        .where('workspace_id', '=', options.workspaceId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'asc')
        .offset(options.offset)
        .limit(options.limit)
        .execute();
    },

    async count(workspaceId: string): Promise<number> {
      const row = await db
        .selectFrom('guardrails')
        .select(sql<number>`count(*)`.as('count'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirst();
      return Number(row?.count ?? 0);
    },

    /**
     * Writes `changes` to a guardrail, first storing `unstored` (a default guardrail seen for the first
     * time) unless a concurrent request stored it already. One transaction: no half-materialized row.
     */
    async update(
      id: string,
      changes: Partial<GuardrailRow>,
      unstored?: GuardrailRow,
    ): Promise<GuardrailRow | undefined> {
      return db.transaction().execute(async (trx) => {
        if (unstored) {
          await trx
            .insertInto('guardrails')
            .values(unstored)
            .onConflict((conflict) => conflict.column('id').doNothing())
            .execute();
        }
        await trx.updateTable('guardrails').set(changes).where('id', '=', id).execute();
        return trx.selectFrom('guardrails').selectAll().where('id', '=', id).executeTakeFirst();
      });
    },

    /** Deletes a guardrail with its key and member assignments; false when it was not there. */
    async delete(id: string): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        await trx.deleteFrom('guardrail_key_assignments').where('guardrail_id', '=', id).execute();
        await trx.deleteFrom('guardrail_member_assignments').where('guardrail_id', '=', id).execute();
        const result = await trx.deleteFrom('guardrails').where('id', '=', id).executeTakeFirst();
        return Number(result.numDeletedRows) > 0;
      });
    },

    /** Id and creation time of a workspace, or of every workspace when `id` is omitted. */
    async workspaces(id?: string): Promise<Array<{ id: string; created_at: string }>> {
      let query = db.selectFrom('workspaces').select(['id', 'created_at']);
      if (id !== undefined) query = query.where('id', '=', id);
      return query.execute();
    },
  };
}

export type GuardrailRepository = ReturnType<typeof createGuardrailRepository>;
