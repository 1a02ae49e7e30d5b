import { sql } from 'kysely';
import { newId } from '../../platform/ids.js';
import type { Storage } from '../../storage/database.js';

/** Which assignments a list covers: one guardrail's, one workspace's, or all of them. */
export type AssignmentScope = { guardrailId: string } | { workspaceId: string } | 'all';

export interface KeyAssignmentRow {
  id: string;
  guardrail_id: string;
  key_hash: string;
  key_name: string;
  key_label: string;
  assigned_by: string;
  created_at: string;
}

export interface MemberAssignmentRow {
  id: string;
  guardrail_id: string;
  user_id: string;
  organization_id: string;
  assigned_by: string;
  created_at: string;
}

interface Page {
  offset: number;
  limit: number;
}

/**
 * Data access for guardrail assignments. A key holds at most one guardrail and a member one per
 * workspace (unique constraints of migration 0003): assigning upserts, so two concurrent requests
 * for the same key both succeed and the later one wins.
 */
export function createGuardrailAssignmentRepository(storage: Storage) {
  const { db } = storage;

  // Joined with the key (name and label), so an assignment of a deleted key is not listed.
  const keyAssignments = (scope: AssignmentScope) => {
    let query = db
      .selectFrom('guardrail_key_assignments as assignment')
      .innerJoin('api_keys as key', 'key.hash', 'assignment.key_hash')
      .innerJoin('guardrails as guardrail', 'guardrail.id', 'assignment.guardrail_id');
    if (scope !== 'all' && 'guardrailId' in scope) {
      query = query.where('assignment.guardrail_id', '=', scope.guardrailId);
    } else if (scope !== 'all') {
      query = query.where('guardrail.workspace_id', '=', scope.workspaceId);
    }
    return query;
  };

  const memberAssignments = (scope: AssignmentScope) => {
    let query = db.selectFrom('guardrail_member_assignments as assignment');
    if (scope !== 'all' && 'guardrailId' in scope) {
      query = query.where('assignment.guardrail_id', '=', scope.guardrailId);
    } else if (scope !== 'all') {
      query = query.where('assignment.workspace_id', '=', scope.workspaceId);
    }
    return query;
  };

  return {
    async listKeys(scope: AssignmentScope, page: Page): Promise<{ rows: KeyAssignmentRow[]; total: number }> {
      const [rows, count] = await Promise.all([
        keyAssignments(scope)
          .select([
            'assignment.id as id',
            'assignment.guardrail_id as guardrail_id',
            'assignment.key_hash as key_hash',
            'key.name as key_name',
            'key.label as key_label',
            'assignment.assigned_by as assigned_by',
            'assignment.created_at as created_at',
          ])
          .orderBy('assignment.created_at', 'desc')
          .orderBy('assignment.id', 'asc')
          .offset(page.offset)
          .limit(page.limit)
          .execute(),
        keyAssignments(scope).select(sql<number>`count(*)`.as('count')).executeTakeFirst(),
      ]);
      return { rows, total: Number(count?.count ?? 0) };
    },

    async listMembers(
      scope: AssignmentScope,
      page: Page,
    ): Promise<{ rows: MemberAssignmentRow[]; total: number }> {
      const [rows, count] = await Promise.all([
        memberAssignments(scope)
          .select([
            'assignment.id as id',
            'assignment.guardrail_id as guardrail_id',
            'assignment.user_id as user_id',
            'assignment.organization_id as organization_id',
            'assignment.assigned_by as assigned_by',
            'assignment.created_at as created_at',
          ])
          .orderBy('assignment.created_at', 'desc')
          .orderBy('assignment.id', 'asc')
          .offset(page.offset)
          .limit(page.limit)
          .execute(),
        memberAssignments(scope).select(sql<number>`count(*)`.as('count')).executeTakeFirst(),
      ]);
      return { rows, total: Number(count?.count ?? 0) };
    },

    /** The given hashes that name keys of the workspace. */
    async keysOfWorkspace(hashes: string[], workspaceId: string): Promise<Set<string>> {
      const rows = await db
        .selectFrom('api_keys')
        .select('hash')
        .where('hash', 'in', hashes)
        .where('workspace_id', '=', workspaceId)
        .execute();
      return new Set(rows.map((row) => row.hash));
    },

    /** The given users that are members of the workspace or created one of its keys. */
    async usersOfWorkspace(userIds: string[], workspaceId: string): Promise<Set<string>> {
      const [members, creators] = await Promise.all([
        db
          .selectFrom('workspace_members')
          .select('user_id')
          .where('workspace_id', '=', workspaceId)
          .where('user_id', 'in', userIds)
          .execute(),
        db
          .selectFrom('api_keys')
          .select('creator_user_id')
          .where('workspace_id', '=', workspaceId)
          .where('creator_user_id', 'in', userIds)
          .execute(),
      ]);
      return new Set([...members.map((row) => row.user_id), ...creators.map((row) => row.creator_user_id!)]);
    },

    /**
     * Gives each key this guardrail, replacing what it held. Keys that already hold it keep their
     * assignment untouched; the count is of keys whose assignment was created or moved.
     */
    async assignKeys(options: {
      guardrailId: string;
      hashes: string[];
      assignedBy: string;
      at: string;
    }): Promise<number> {
      return db.transaction().execute(async (trx) => {
        const holding = await trx
          .selectFrom('guardrail_key_assignments')
          .select('key_hash')
          .where('guardrail_id', '=', options.guardrailId)
          .where('key_hash', 'in', options.hashes)
          .execute();
        const already = new Set(holding.map((row) => row.key_hash));
        const moving = options.hashes.filter((hash) => !already.has(hash));
        if (moving.length === 0) return 0;
        await trx
          .insertInto('guardrail_key_assignments')
          .values(
            moving.map((hash) => ({
              id: newId(),
              guardrail_id: options.guardrailId,
              key_hash: hash,
              assigned_by: options.assignedBy,
              created_at: options.at,
            })),
          )
          .onConflict((conflict) =>
            conflict.column('key_hash').doUpdateSet((update) => ({
              id: update.ref('excluded.id'),
              guardrail_id: update.ref('excluded.guardrail_id'),
              assigned_by: update.ref('excluded.assigned_by'),
              created_at: update.ref('excluded.created_at'),
            })),
          )
          .execute();
        return moving.length;
      });
    },

    async unassignKeys(guardrailId: string, hashes: string[]): Promise<number> {
      const result = await db
        .deleteFrom('guardrail_key_assignments')
        .where('guardrail_id', '=', guardrailId)
        .where('key_hash', 'in', hashes)
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /** Like `assignKeys`, per member and workspace. */
    async assignMembers(options: {
      guardrailId: string;
      workspaceId: string;
      organizationId: string;
      userIds: string[];
      assignedBy: string;
      at: string;
    }): Promise<number> {
      return db.transaction().execute(async (trx) => {
        const holding = await trx
          .selectFrom('guardrail_member_assignments')
          .select('user_id')
          .where('guardrail_id', '=', options.guardrailId)
          .where('user_id', 'in', options.userIds)
          .execute();
        const already = new Set(holding.map((row) => row.user_id));
        const moving = options.userIds.filter((userId) => !already.has(userId));
        if (moving.length === 0) return 0;
        await trx
          .insertInto('guardrail_member_assignments')
          .values(
            moving.map((userId) => ({
              id: newId(),
              guardrail_id: options.guardrailId,
              workspace_id: options.workspaceId,
              user_id: userId,
              organization_id: options.organizationId,
              assigned_by: options.assignedBy,
              created_at: options.at,
            })),
          )
          .onConflict((conflict) =>
            conflict.columns(['workspace_id', 'user_id']).doUpdateSet((update) => ({
              id: update.ref('excluded.id'),
              guardrail_id: update.ref('excluded.guardrail_id'),
              organization_id: update.ref('excluded.organization_id'),
              assigned_by: update.ref('excluded.assigned_by'),
              created_at: update.ref('excluded.created_at'),
            })),
          )
          .execute();
        return moving.length;
      });
    },

    async unassignMembers(guardrailId: string, userIds: string[]): Promise<number> {
      const result = await db
        .deleteFrom('guardrail_member_assignments')
        .where('guardrail_id', '=', guardrailId)
        .where('user_id', 'in', userIds)
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type GuardrailAssignmentRepository = ReturnType<typeof createGuardrailAssignmentRepository>;
