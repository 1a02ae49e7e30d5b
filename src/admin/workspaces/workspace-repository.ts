import { type Kysely, sql, type Transaction } from 'kysely';
import type { Storage, StorageKind } from '../../storage/database.js';
import type { Database, WorkspaceTable } from '../../storage/database-schema.js';

export type WorkspaceRow = WorkspaceTable;

/** What deleting a workspace came to; the service turns the refusals into 400/404. */
export type WorkspaceDeletion =
  | { outcome: 'not_found' }
  | { outcome: 'default' }
  | { outcome: 'active_keys'; count: number }
  | { outcome: 'deleted'; keyHashes: string[] };

/**
 * Reads a workspace row inside a transaction and, on PostgreSQL, locks it until the transaction
 * ends. Inserting an API key takes a share lock on its workspace row (the foreign key), so while this
 * lock is held no key can appear in the workspace: checks such as "no active keys" stay true until
 * commit. SQLite needs no lock: its transactions run one at a time.
 */
export async function lockWorkspaceRow(
  trx: Transaction<Database>,
  kind: StorageKind,
  id: string,
): Promise<WorkspaceRow | undefined> {
  const query = trx.selectFrom('workspaces').selectAll().where('id', '=', id);
  return (kind === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
}

/** Active (not disabled) API keys of a workspace. */
export async function countActiveKeys(db: Kysely<Database>, workspaceId: string): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select(sql<number>`count(*)`.as('count'))
    .where('workspace_id', '=', workspaceId)
    .where('disabled', '=', 0)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

/** Data access for workspaces; nothing here knows HTTP. */
export function createWorkspaceRepository(storage: Storage) {
  const { db, kind } = storage;
  return {
    async findDefault(): Promise<WorkspaceRow | undefined> {
      return db.selectFrom('workspaces').selectAll().where('is_default', '=', 1).executeTakeFirst();
    },

    async findById(id: string): Promise<WorkspaceRow | undefined> {
      return db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();
    },

    async findBySlug(slug: string): Promise<WorkspaceRow | undefined> {
      return db.selectFrom('workspaces').selectAll().where('slug', '=', slug).executeTakeFirst();
    },

    /** Oldest first (the default workspace leads), ties broken by id so pages never overlap. */
    async list(options: { offset: number; limit: number; onlyId?: string }): Promise<WorkspaceRow[]> {
      let query = db.selectFrom('workspaces').selectAll();
      if (options.onlyId !== undefined) query = query.where('id', '=', options.onlyId);
      return query
        .orderBy('created_at', 'asc')
        .orderBy('id', 'asc')
        .offset(options.offset)
        .limit(options.limit)
        .execute();
    },

    async count(): Promise<number> {
      const row = await db
        .selectFrom('workspaces')
        .select(sql<number>`count(*)`.as('count'))
        .executeTakeFirst();
      return Number(row?.count ?? 0);
    },

    async insert(row: WorkspaceRow): Promise<void> {
      await db.insertInto('workspaces').values(row).execute();
    },

    async update(id: string, changes: Partial<Omit<WorkspaceRow, 'id'>>): Promise<WorkspaceRow | undefined> {
      const result = await db.updateTable('workspaces').set(changes).where('id', '=', id).executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return undefined;
      return this.findById(id);
    },

    /**
     * Deletes a workspace and everything that belongs to it, in one transaction: members, budgets,
     * daily usage, its guardrails and their assignments, BYOK credentials and its disabled keys (with
     * their usage rows). Refuses the default workspace and a workspace with active keys.
     */
    async delete(id: string): Promise<WorkspaceDeletion> {
      return db.transaction().execute(async (trx): Promise<WorkspaceDeletion> => {
        const workspace = await lockWorkspaceRow(trx, kind, id);
        if (!workspace) return { outcome: 'not_found' };
        if (workspace.is_default === 1) return { outcome: 'default' };
        const active = await countActiveKeys(trx, id);
        if (active > 0) return { outcome: 'active_keys', count: active };

        const keyHashes = (
          await trx.selectFrom('api_keys').select('hash').where('workspace_id', '=', id).execute()
        ).map((row) => row.hash);
        const guardrails = trx.selectFrom('guardrails').select('id').where('workspace_id', '=', id);
        await trx
          .deleteFrom('guardrail_member_assignments')
          .where((where) =>
            where.or([where('guardrail_id', 'in', guardrails), where('workspace_id', '=', id)]),
          )
          .execute();
        const workspaceKeys = trx.selectFrom('api_keys').select('hash').where('workspace_id', '=', id);
        await trx
          .deleteFrom('guardrail_key_assignments')
          .where((where) =>
            where.or([where('guardrail_id', 'in', guardrails), where('key_hash', 'in', workspaceKeys)]),
          )
          .execute();
        await trx.deleteFrom('guardrails').where('workspace_id', '=', id).execute();
        await trx.deleteFrom('byok_credentials').where('workspace_id', '=', id).execute();
        // Events not yet delivered go with their workspace, as its destinations do.
        await trx.deleteFrom('broadcast_outbox').where('workspace_id', '=', id).execute();
        await trx.deleteFrom('observability_destinations').where('workspace_id', '=', id).execute();
        await trx.deleteFrom('workspace_members').where('workspace_id', '=', id).execute();
        await trx.deleteFrom('workspace_budgets').where('workspace_id', '=', id).execute();
        await trx.deleteFrom('workspace_usage_daily').where('workspace_id', '=', id).execute();
        await trx.deleteFrom('member_usage_daily').where('workspace_id', '=', id).execute();
        await trx.deleteFrom('key_usage_daily').where('key_hash', 'in', workspaceKeys).execute();
        await trx.deleteFrom('api_keys').where('workspace_id', '=', id).execute();
        await trx.deleteFrom('workspaces').where('id', '=', id).execute();
        return { outcome: 'deleted', keyHashes };
      });
    },
  };
}

export type WorkspaceRepository = ReturnType<typeof createWorkspaceRepository>;
