import { sql } from 'kysely';
import { type BroadcastTarget, toBroadcastTarget } from '../../broadcast/destination-rules.js';
import type { Storage } from '../../storage/database.js';
import type {
  ByokCredentialTable,
  GuardrailTable,
  ObservabilityDestinationTable,
  WorkspaceBudgetTable,
  WorkspaceTable,
} from '../../storage/database-schema.js';

/** Spend rows of one window-able scope: per UTC day since the earliest window start, and lifetime. */
export interface SpendRows {
  days: Array<{ day: string; usage: number; byok: number }>;
  lifetime: { usage: number; byok: number };
}

const emptySpend = (): SpendRows => ({ days: [], lifetime: { usage: 0, byok: 0 } });

/** Everything the gateway enforces for one workspace, as stored. */
export interface WorkspacePolicyRows {
  workspace: WorkspaceTable;
  budgets: WorkspaceBudgetTable[];
  spend: SpendRows;
  guardrails: GuardrailTable[];
  /** key hash → guardrail id. */
  keyAssignments: Map<string, string>;
  /** member user id → guardrail id. */
  memberAssignments: Map<string, string>;
  /**
   * Spend of each assigned member's keys in this workspace (guardrail limits are per member), from
   * member_usage_daily: it outlives the keys, so deleting a key does not reset a member's spend.
   */
  memberSpend: Map<string, SpendRows>;
  /** Enabled BYOK credentials, by provider then sort order. */
  byok: ByokCredentialTable[];
  /**
   * The workspace's enabled observability destinations, compiled; empty when its broadcast switch
   * (`is_observability_broadcast_enabled`) is off.
   */
  broadcast: BroadcastTarget[];
}

/** Destinations whose stored rules cannot be read are left out rather than failing every request. */
function compileTargets(rows: ObservabilityDestinationTable[]): BroadcastTarget[] {
  const targets: BroadcastTarget[] = [];
  for (const row of rows) {
    try {
      targets.push(toBroadcastTarget(row));
    } catch {
      // Unreachable for rows the API wrote; a hand-edited row is skipped.
    }
  }
  return targets;
}

/**
 * Reads a workspace's policy in a handful of queries; the policy cache calls it on a miss, never on
 * a request that finds the workspace cached.
 */
export function createPolicyRepository(storage: Storage) {
  const { db } = storage;
  return {
    async load(workspaceId: string, sinceDay: string): Promise<WorkspacePolicyRows | null> {
      const workspace = await db
        .selectFrom('workspaces')
        .selectAll()
        .where('id', '=', workspaceId)
        .executeTakeFirst();
      if (!workspace) return null;
      const [budgets, days, lifetime, guardrails, byok, destinations] = await Promise.all([
        db.selectFrom('workspace_budgets').selectAll().where('workspace_id', '=', workspaceId).execute(),
        db
          .selectFrom('workspace_usage_daily')
          .select(['day', 'usage_nanos', 'byok_usage_nanos'])
          .where('workspace_id', '=', workspaceId)
          .where('day', '>=', sinceDay)
          .execute(),
        db
          .selectFrom('workspace_usage_daily')
          .select([
            sql<string>`coalesce(sum(usage_nanos), 0)`.as('usage'),
            sql<string>`coalesce(sum(byok_usage_nanos), 0)`.as('byok'),
          ])
          .where('workspace_id', '=', workspaceId)
          .executeTakeFirst(),
        db.selectFrom('guardrails').selectAll().where('workspace_id', '=', workspaceId).execute(),
        db
          .selectFrom('byok_credentials')
          .selectAll()
          .where('workspace_id', '=', workspaceId)
          .where('disabled', '=', 0)
          .orderBy('provider')
          .orderBy('sort_order')
          .orderBy('created_at')
          .execute(),
        workspace.is_observability_broadcast_enabled === 1
          ? db
              .selectFrom('observability_destinations')
              .selectAll()
              .where('workspace_id', '=', workspaceId)
              .where('enabled', '=', 1)
              .where('deleted_at', 'is', null)
              .orderBy('created_at')
              .execute()
          : Promise.resolve([]),
      ]);
      const guardrailIds = guardrails.map((guardrail) => guardrail.id);
      const [keyRows, memberRows] =
        guardrailIds.length === 0
          ? [[], []]
          : await Promise.all([
              db
                .selectFrom('guardrail_key_assignments')
                .select(['key_hash', 'guardrail_id'])
                .where('guardrail_id', 'in', guardrailIds)
                .execute(),
              db
                .selectFrom('guardrail_member_assignments')
                .select(['user_id', 'guardrail_id'])
                .where('guardrail_id', 'in', guardrailIds)
                .execute(),
            ]);
      const memberAssignments = new Map(memberRows.map((row) => [row.user_id, row.guardrail_id]));
      const memberSpend = new Map<string, SpendRows>();
      const limited = new Set(
        guardrails.filter((guardrail) => guardrail.limit_nanos !== null).map((guardrail) => guardrail.id),
      );
      const members = [...memberAssignments].filter(([, id]) => limited.has(id)).map(([user]) => user);
      if (members.length > 0) {
        const memberDays = await db
          .selectFrom('member_usage_daily')
          .select(['user_id', 'day', 'usage_nanos', 'byok_usage_nanos'])
          .where('workspace_id', '=', workspaceId)
          .where('user_id', 'in', members)
          .execute();
        for (const row of memberDays) {
          let entry = memberSpend.get(row.user_id);
          if (!entry) {
            entry = emptySpend();
            memberSpend.set(row.user_id, entry);
          }
          const usage = Number(row.usage_nanos);
          const byokUsage = Number(row.byok_usage_nanos);
          entry.lifetime.usage += usage;
          entry.lifetime.byok += byokUsage;
          if (row.day >= sinceDay) entry.days.push({ day: row.day, usage, byok: byokUsage });
        }
      }
      return {
        workspace,
        budgets,
        spend: {
          days: days.map((row) => ({
            day: row.day,
            usage: Number(row.usage_nanos),
            byok: Number(row.byok_usage_nanos),
          })),
          lifetime: { usage: Number(lifetime?.usage ?? 0), byok: Number(lifetime?.byok ?? 0) },
        },
        guardrails,
        keyAssignments: new Map(keyRows.map((row) => [row.key_hash, row.guardrail_id])),
        memberAssignments,
        memberSpend,
        byok,
        broadcast: compileTargets(destinations),
      };
    },
  };
}

export type PolicyRepository = ReturnType<typeof createPolicyRepository>;
