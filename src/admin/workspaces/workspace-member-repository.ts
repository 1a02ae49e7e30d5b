import { sql } from 'kysely';
import type { Storage } from '../../storage/database.js';
import type { WorkspaceMemberTable } from '../../storage/database-schema.js';
import { lockWorkspaceRow } from './workspace-repository.js';

export type WorkspaceMemberRow = WorkspaceMemberTable;

/** Data access for workspace members. */
export function createWorkspaceMemberRepository(storage: Storage) {
  const { db, kind } = storage;
  return {
    async list(options: {
      workspaceId: string;
      offset: number;
      limit: number;
    }): Promise<WorkspaceMemberRow[]> {
      return db
        .selectFrom('workspace_members')
        .selectAll()
        .where('workspace_id', '=', options.workspaceId)
        .orderBy('created_at', 'asc')
        .orderBy('user_id', 'asc')
        .offset(options.offset)
        .limit(options.limit)
        .execute();
    },

    async count(workspaceId: string): Promise<number> {
      const row = await db
        .selectFrom('workspace_members')
        .select(sql<number>`count(*)`.as('count'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirst();
      return Number(row?.count ?? 0);
    },

    /**
     * Inserts the rows whose user is not yet a member and returns those actually inserted; a member
     * added concurrently by another request is skipped by the unique constraint, not an error.
     */
    async add(rows: WorkspaceMemberRow[]): Promise<WorkspaceMemberRow[]> {
      if (rows.length === 0) return [];
      const inserted = await db
        .insertInto('workspace_members')
        .values(rows)
        .onConflict((conflict) => conflict.columns(['workspace_id', 'user_id']).doNothing())
        .returningAll()
        .execute();
      const order = new Map(rows.map((row, index) => [row.id, index]));
      return inserted.sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
    },

    /**
     * Removes members unless one of them still has an active key in the workspace, with their guardrail
     * assignments in it. The check and the deletes share a transaction holding the workspace row, so
     * no key can be created in between.
     */
    async remove(options: {
      workspaceId: string;
      userIds: string[];
    }): Promise<{ removed: number } | { blocked: string[] } | { missing: true }> {
      const { workspaceId, userIds } = options;
      return db.transaction().execute(async (trx) => {
        if (!(await lockWorkspaceRow(trx, kind, workspaceId))) return { missing: true as const };
        const holders = await trx
          .selectFrom('api_keys')
          .select('creator_user_id')
          .distinct()
          .where('workspace_id', '=', workspaceId)
          .where('disabled', '=', 0)
          .where('creator_user_id', 'in', userIds)
          .execute();
        const blocked = holders.map((row) => row.creator_user_id).filter((id): id is string => id !== null);
        if (blocked.length > 0) return { blocked: blocked.sort() };
        const result = await trx
          .deleteFrom('workspace_members')
          .where('workspace_id', '=', workspaceId)
          .where('user_id', 'in', userIds)
          .executeTakeFirst();
        // A member who left holds no guardrail here: the assignment would otherwise stay listed.
        await trx
          .deleteFrom('guardrail_member_assignments')
          .where('workspace_id', '=', workspaceId)
          .where('user_id', 'in', userIds)
          .execute();
        return { removed: Number(result.numDeletedRows) };
      });
    },
  };
}

export type WorkspaceMemberRepository = ReturnType<typeof createWorkspaceMemberRepository>;
