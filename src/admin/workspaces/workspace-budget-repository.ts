import { sql } from 'kysely';
import { newId } from '../../platform/ids.js';
import type { Storage } from '../../storage/database.js';
import type { BudgetInterval, WorkspaceBudgetTable } from '../../storage/database-schema.js';
import { lockWorkspaceRow } from './workspace-repository.js';

export type WorkspaceBudgetRow = WorkspaceBudgetTable;

/** A workspace's spend: all-time totals and the per-day rows from some day on (nano-dollars). */
export interface WorkspaceUsageRows {
  lifetime: { usage: number; byok: number };
  days: Array<{ day: string; usage: number; byok: number }>;
}

/** Data access for workspace budgets and the workspace's daily usage they are measured against. */
export function createWorkspaceBudgetRepository(storage: Storage) {
  const { db, kind } = storage;
  return {
    async list(workspaceId: string): Promise<WorkspaceBudgetRow[]> {
      return db.selectFrom('workspace_budgets').selectAll().where('workspace_id', '=', workspaceId).execute();
    },

    async find(workspaceId: string, interval: BudgetInterval): Promise<WorkspaceBudgetRow | undefined> {
      return db
        .selectFrom('workspace_budgets')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('interval', '=', interval)
        .executeTakeFirst();
    },

    /**
     * Creates or replaces the budget of one interval (and optionally the workspace-wide BYOK flag).
     * `verify` sees every limit as it would be after the change and throws to refuse it; it runs in
     * the same transaction, with the workspace row held, so two concurrent changes cannot together
     * break a rule that each one alone keeps. Undefined when the workspace does not exist.
     */
    async upsert(options: {
      workspaceId: string;
      interval: BudgetInterval;
      limitNanos: number;
      includeByok: boolean | undefined;
      at: string;
      verify: (limits: Map<BudgetInterval, number>) => void;
    }): Promise<{ budget: WorkspaceBudgetRow; includeByok: boolean } | undefined> {
      const { workspaceId, interval, limitNanos, at } = options;
      return db.transaction().execute(async (trx) => {
        const workspace = await lockWorkspaceRow(trx, kind, workspaceId);
        if (!workspace) return undefined;
        const existing = await trx
          .selectFrom('workspace_budgets')
          .selectAll()
          .where('workspace_id', '=', workspaceId)
          .execute();
        const limits = new Map(existing.map((row) => [row.interval, Number(row.limit_nanos)]));
        limits.set(interval, limitNanos);
        options.verify(limits);
        const current = existing.find((row) => row.interval === interval);
        let budget: WorkspaceBudgetRow;
        if (current) {
          await trx
            .updateTable('workspace_budgets')
            .set({ limit_nanos: limitNanos, updated_at: at })
            .where('id', '=', current.id)
            .execute();
          budget = { ...current, limit_nanos: limitNanos, updated_at: at };
        } else {
          budget = {
            id: newId(),
            workspace_id: workspaceId,
            interval,
            limit_nanos: limitNanos,
            created_at: at,
            updated_at: at,
          };
          await trx.insertInto('workspace_budgets').values(budget).execute();
        }
        let includeByok = workspace.include_byok_in_budgets === 1;
        if (options.includeByok !== undefined && options.includeByok !== includeByok) {
          includeByok = options.includeByok;
          await trx
            .updateTable('workspaces')
            .set({ include_byok_in_budgets: includeByok ? 1 : 0, updated_at: at })
            .where('id', '=', workspaceId)
            .execute();
        }
        return { budget, includeByok };
      });
    },

    /** True when a budget was there to delete. */
    async delete(workspaceId: string, interval: BudgetInterval): Promise<boolean> {
      const result = await db
        .deleteFrom('workspace_budgets')
        .where('workspace_id', '=', workspaceId)
        .where('interval', '=', interval)
        .executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },

    /** All-time sums and the per-day rows from `sinceDay` on. */
    async usage(workspaceId: string, sinceDay: string): Promise<WorkspaceUsageRows> {
      const lifetime = await db
        .selectFrom('workspace_usage_daily')
        .select([sql<number>`sum(usage_nanos)`.as('usage'), sql<number>`sum(byok_usage_nanos)`.as('byok')])
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirst();
      const days = await db
        .selectFrom('workspace_usage_daily')
        .select(['day', 'usage_nanos', 'byok_usage_nanos'])
        .where('workspace_id', '=', workspaceId)
        .where('day', '>=', sinceDay)
        .execute();
      return {
        lifetime: { usage: Number(lifetime?.usage ?? 0), byok: Number(lifetime?.byok ?? 0) },
        days: days.map((row) => ({
          day: row.day,
          usage: Number(row.usage_nanos),
          byok: Number(row.byok_usage_nanos),
        })),
      };
    },
  };
}

export type WorkspaceBudgetRepository = ReturnType<typeof createWorkspaceBudgetRepository>;
