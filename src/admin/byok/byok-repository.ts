import { sql } from 'kysely';
import type { Storage } from '../../storage/database.js';
import type { ByokRow } from './byok-record.js';

/** Data access for BYOK credentials; nothing here knows HTTP or sees a plaintext secret. */
export function createByokRepository(storage: Storage) {
  const { db } = storage;
  return {
    async insert(row: ByokRow): Promise<void> {
      await db.insertInto('byok_credentials').values(row).execute();
    },

    async findById(id: string): Promise<ByokRow | undefined> {
      return db.selectFrom('byok_credentials').selectAll().where('id', '=', id).executeTakeFirst();
    },

    /** A page of a workspace's credentials in priority order: sort_order, then oldest first. */
    async list(options: { workspaceId: string; offset: number; limit: number }): Promise<ByokRow[]> {
      return db
        .selectFrom('byok_credentials')
        .selectAll()
        .where('workspace_id', '=', options.workspaceId)
        .orderBy('sort_order', 'asc')
        .orderBy('created_at', 'asc')
        .orderBy('id', 'asc')
        .offset(options.offset)
        .limit(options.limit)
        .execute();
    },

    async count(workspaceId: string): Promise<number> {
      const row = await db
        .selectFrom('byok_credentials')
        .select(sql<number>`count(*)`.as('count'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirst();
      return Number(row?.count ?? 0);
    },

    /** Every credential of a workspace for one provider, in the same priority order (for routing). */
    async listForProvider(workspaceId: string, provider: string): Promise<ByokRow[]> {
      return db
        .selectFrom('byok_credentials')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('provider', '=', provider)
        .orderBy('sort_order', 'asc')
        .orderBy('created_at', 'asc')
        .orderBy('id', 'asc')
        .execute();
    },

    async update(
      id: string,
      changes: Partial<Omit<ByokRow, 'id' | 'workspace_id'>>,
    ): Promise<ByokRow | undefined> {
      const result = await db
        .updateTable('byok_credentials')
        .set(changes)
        .where('id', '=', id)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return undefined;
      return this.findById(id);
    },

    /** Removes the row, sealed secret included: nothing of a deleted credential stays behind. */
    async delete(id: string): Promise<boolean> {
      const result = await db.deleteFrom('byok_credentials').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },

    /** Which of `hashes` are API keys of the workspace. */
    async keyHashesOf(workspaceId: string, hashes: readonly string[]): Promise<Set<string>> {
      if (hashes.length === 0) return new Set();
      const rows = await db
        .selectFrom('api_keys')
        .select('hash')
        .where('workspace_id', '=', workspaceId)
        .where('hash', 'in', [...hashes])
        .execute();
      return new Set(rows.map((row) => row.hash));
    },
  };
}

export type ByokRepository = ReturnType<typeof createByokRepository>;
