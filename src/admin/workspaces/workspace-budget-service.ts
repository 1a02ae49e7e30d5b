import type { Static } from 'typebox';
import { nanosToUsd, usdToNanos } from '../../billing/money.js';
import { earliestWindowDay, sumWindows, type UsageTotals } from '../../billing/usage-windows.js';
import { invalidRequest, notFound } from '../../errors/app-error.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import type { ChangeBus } from '../../platform/change-bus.js';
import type { Clock } from '../../platform/clock.js';
import type { BudgetInterval } from '../../storage/database-schema.js';
import { assertStrictlyDecreasing } from './budget-rules.js';
import { publishPolicyChange } from './workspace-access.js';
import type { WorkspaceBudgetRepository, WorkspaceBudgetRow } from './workspace-budget-repository.js';
import type { BudgetRecordSchema } from './workspace-schemas.js';
import type { WorkspaceService } from './workspace-service.js';

export type BudgetRecord = Static<typeof BudgetRecordSchema>;

/** Narrowest first, the order budgets are listed in. */
const LIST_ORDER: BudgetInterval[] = ['daily', 'weekly', 'monthly', 'lifetime'];

const windowOf = (interval: BudgetInterval, totals: UsageTotals): number =>
  interval === 'daily'
    ? totals.daily
    : interval === 'weekly'
      ? totals.weekly
      : interval === 'monthly'
        ? totals.monthly
        : totals.usage;

/**
 * Workspace budgets (reference §5): at most one per interval, limits strictly decreasing as the
 * interval narrows. Each record also shows what the workspace spent in the budget's current window
 * (`usage_usd`), BYOK spend included when `include_byok_in_budgets` is on. Enforcement is the
 * gateway's; it reads the same tables.
 */
export function createWorkspaceBudgetService(options: {
  workspaces: WorkspaceService;
  budgets: WorkspaceBudgetRepository;
  bus: ChangeBus;
  clock: Clock;
}) {
  const { workspaces, budgets, bus, clock } = options;

  /** Spend in each interval's current window, in nano-dollars. */
  async function spendFor(workspaceId: string, includeByok: boolean) {
    const now = clock.now();
    const usage = await budgets.usage(workspaceId, earliestWindowDay(now));
    const paid = sumWindows(
      usage.days.map((day) => ({ day: day.day, nanos: day.usage })),
      usage.lifetime.usage,
      now,
    );
    const byok = sumWindows(
      usage.days.map((day) => ({ day: day.day, nanos: day.byok })),
      usage.lifetime.byok,
      now,
    );
    return (interval: BudgetInterval) =>
      windowOf(interval, paid) + (includeByok ? windowOf(interval, byok) : 0);
  }

  function toRecord(row: WorkspaceBudgetRow, spent: (interval: BudgetInterval) => number): BudgetRecord {
    return {
      id: row.id,
      workspace_id: row.workspace_id,
      interval: row.interval,
      limit_usd: nanosToUsd(Number(row.limit_nanos)),
      reset_interval: row.interval === 'lifetime' ? null : row.interval,
      usage_usd: nanosToUsd(spent(row.interval)),
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  return {
    async list(idOrSlug: string, principal: Principal) {
      const workspace = await workspaces.resolve(idOrSlug, principal);
      const includeByok = workspace.include_byok_in_budgets === 1;
      const rows = await budgets.list(workspace.id);
      rows.sort((a, b) => LIST_ORDER.indexOf(a.interval) - LIST_ORDER.indexOf(b.interval));
      const spent = await spendFor(workspace.id, includeByok);
      return { data: rows.map((row) => toRecord(row, spent)), include_byok_in_budgets: includeByok };
    },

    async get(idOrSlug: string, interval: BudgetInterval, principal: Principal) {
      const workspace = await workspaces.resolve(idOrSlug, principal);
      const includeByok = workspace.include_byok_in_budgets === 1;
      const row = await budgets.find(workspace.id, interval);
      if (!row) throw notFound(`The workspace has no ${interval} budget`);
      return {
        data: toRecord(row, await spendFor(workspace.id, includeByok)),
        include_byok_in_budgets: includeByok,
      };
    },

    async put(
      idOrSlug: string,
      interval: BudgetInterval,
      input: { limit_usd: number; include_byok_in_budgets?: boolean },
      principal: Principal,
    ) {
      const workspace = await workspaces.resolve(idOrSlug, principal);
      const limitNanos = usdToNanos(input.limit_usd);
      if (limitNanos < 1) {
        throw invalidRequest('Invalid request parameters: body.limit_usd must be at least 0.000000001');
      }
      const result = await budgets.upsert({
        workspaceId: workspace.id,
        interval,
        limitNanos,
        includeByok: input.include_byok_in_budgets,
        at: clock.now().toISOString(),
        verify: assertStrictlyDecreasing,
      });
      if (!result) throw notFound('Workspace not found');
      await publishPolicyChange(bus, workspace.id);
      const spent = await spendFor(workspace.id, result.includeByok);
      return { data: toRecord(result.budget, spent), include_byok_in_budgets: result.includeByok };
    },

    /** Idempotent (spec 3): `deleted: true` whether or not the budget existed. */
    async delete(idOrSlug: string, interval: BudgetInterval, principal: Principal) {
      const workspace = await workspaces.resolve(idOrSlug, principal);
      if (await budgets.delete(workspace.id, interval)) await publishPolicyChange(bus, workspace.id);
      return { deleted: true as const };
    },
  };
}

export type WorkspaceBudgetService = ReturnType<typeof createWorkspaceBudgetService>;
