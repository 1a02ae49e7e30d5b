import type { CachedKey } from '../../admin/keys/key-cache.js';
import { formatUsd } from '../../admin/workspaces/budget-rules.js';
import type { CreditBalance } from '../../billing/credit-balance.js';
import { nanosToUsd } from '../../billing/money.js';
import type { SpendCounters, SpendScope } from '../../billing/spend-counters.js';
import {
  type ResetInterval,
  sumWindows,
  windowEndsAt,
  windowStartDays,
} from '../../billing/usage-windows.js';
import type { BudgetInterval } from '../../storage/database-schema.js';
import type { EffectivePolicy } from '../policy/effective-policy.js';
import type { SpendRows } from '../policy/policy-repository.js';

/** What a refused reservation answers: 402 for credits and key limits, 403 for budgets and guardrails. */
export interface ScopeDenial {
  status: 402 | 403;
  errorType: 'payment_required' | 'permission_denied';
  message(neededNanos: number, availableNanos: number): string;
}

export interface ScopePlan {
  scopes: SpendScope[];
  denials: Map<string, ScopeDenial>;
}

/** The window id a reset interval is counted in at `now` (part of the counter id). */
function windowId(reset: ResetInterval | null, now: Date): string {
  const start = windowStartDays(now);
  return reset === 'daily'
    ? start.day
    : reset === 'weekly'
      ? start.week
      : reset === 'monthly'
        ? start.month
        : 'all';
}

function spentIn(spend: SpendRows, reset: ResetInterval | null, includeByok: boolean, now: Date): number {
  const days = spend.days.map((day) => ({ day: day.day, nanos: day.usage + (includeByok ? day.byok : 0) }));
  const lifetime = spend.lifetime.usage + (includeByok ? spend.lifetime.byok : 0);
  const totals = sumWindows(days, lifetime, now);
  return reset ? totals[reset] : totals.usage;
}

const keySpendRows = (key: CachedKey): SpendRows => ({
  days: key.usage.days.map((day) => ({ day: day.day, usage: day.usage, byok: day.byok })),
  lifetime: key.usage.lifetime,
});

const PERIOD: Record<ResetInterval, string> = { daily: 'day', weekly: 'week', monthly: 'month' };

/** Broadest first, so that the scope a refusal names is the broadest exceeded budget. */
const BUDGET_ORDER: BudgetInterval[] = ['lifetime', 'monthly', 'weekly', 'daily'];

/**
 * The limits one attempt reserves against: the account's credits (not for BYOK attempts, which the
 * provider bills), the key's spending limit, the workspace's budgets and each applicable
 * guardrail's limit, each in its current window. BYOK spend counts toward the key limit only with
 * `include_byok_in_limit` and toward budgets only with `include_byok_in_budgets`.
 */
/** The refusals of the credits and key-limit scopes, the same for every request (made once). */
const CREDITS_DENIAL: ScopeDenial = {
  status: 402,
  errorType: 'payment_required',
  message: (needed, available) =>
    `Insufficient credits: this request may cost up to $${nanosToUsd(needed)} but $${nanosToUsd(available)} remain. Add more with \`switchyard credits add <usd>\`, or send fewer max tokens.`,
};
const KEY_LIMIT_DENIAL: ScopeDenial = {
  status: 402,
  errorType: 'payment_required',
  message: (needed, available) =>
    `Key limit exceeded: this request may cost up to $${nanosToUsd(needed)} but the key has $${nanosToUsd(available)} left of its limit. Raise the key's limit, or send fewer max tokens.`,
};

export function spendScopes(
  key: CachedKey,
  credits: CreditBalance,
  now: Date,
  policy: EffectivePolicy | null = null,
  isByok = false,
): ScopePlan {
  const scopes: SpendScope[] = [];
  const denials = new Map<string, ScopeDenial>();
  if (!isByok) {
    const totals = credits.current();
    scopes.push({
      id: 'credits',
      limitNanos: totals.grantedNanos,
      baseNanos: totals.usedNanos,
      windowEndsAt: null,
      // Zero-priced requests (the demo provider, free models) pass even with no credits left: here
      // credits cap what the account spends upstream, and a free request spends nothing.
      refuseWhenExhausted: false,
    });
    denials.set('credits', CREDITS_DENIAL);
  }
  const limit = key.row.limit_nanos;
  const includeByokInLimit = key.row.include_byok_in_limit === 1;
  if (limit !== null && (!isByok || includeByokInLimit)) {
    const reset = key.row.limit_reset;
    const id = `key:${key.row.hash}:${reset ?? 'lifetime'}:${windowId(reset, now)}`;
    scopes.push({
      id,
      limitNanos: limit,
      baseNanos: spentIn(keySpendRows(key), reset, includeByokInLimit, now),
      windowEndsAt: reset ? windowEndsAt(reset, now) : null,
    });
    denials.set(id, KEY_LIMIT_DENIAL);
  }
  if (!policy) return { scopes, denials };

  if (policy.budgets.length > 0 && (!isByok || policy.includeByokInBudgets)) {
    const budgets = [...policy.budgets].sort(
      (a, b) => BUDGET_ORDER.indexOf(a.interval) - BUDGET_ORDER.indexOf(b.interval),
    );
    for (const budget of budgets) {
      const reset = budget.interval === 'lifetime' ? null : budget.interval;
      const id = `budget:${budget.workspace_id}:${budget.interval}:${windowId(reset, now)}`;
      const limitNanos = Number(budget.limit_nanos);
      scopes.push({
        id,
        limitNanos,
        baseNanos: spentIn(policy.workspaceSpend, reset, policy.includeByokInBudgets, now),
        windowEndsAt: reset ? windowEndsAt(reset, now) : null,
        // An exhausted budget refuses every request, free ones included (reference §5).
        refuseWhenExhausted: true,
      });
      denials.set(id, {
        status: 403,
        errorType: 'permission_denied',
        message: (needed, available) =>
          available <= 0
            ? `Workspace ${budget.interval} budget of ${formatUsd(limitNanos)} exceeded. Contact your org admin.`
            : `Workspace ${budget.interval} budget of ${formatUsd(limitNanos)} would be exceeded: this request may cost up to $${nanosToUsd(needed)} but $${nanosToUsd(available)} remain. Contact your org admin, or send fewer max tokens.`,
      });
    }
  }

  if (!isByok) {
    for (const guardrailLimit of policy.limits) {
      const { guardrail, reset } = guardrailLimit;
      const id = `guardrail:${guardrail.id}:${guardrailLimit.holder}:${reset ?? 'lifetime'}:${windowId(reset, now)}`;
      const spend = guardrailLimit.spend ?? keySpendRows(key);
      scopes.push({
        id,
        limitNanos: guardrailLimit.limitNanos,
        baseNanos: spentIn(spend, reset, false, now),
        windowEndsAt: reset ? windowEndsAt(reset, now) : null,
        refuseWhenExhausted: true,
      });
      const holder = guardrailLimit.holder.startsWith('member:') ? 'member' : 'key';
      denials.set(id, {
        status: 403,
        errorType: 'permission_denied',
        message: (needed, available) =>
          available <= 0
            ? `Guardrail "${guardrail.name}" limit of ${formatUsd(guardrailLimit.limitNanos)}${reset ? ` per ${PERIOD[reset]}` : ''} exceeded for this ${holder}.`
            : `Guardrail "${guardrail.name}" limit of ${formatUsd(guardrailLimit.limitNanos)} would be exceeded: this request may cost up to $${nanosToUsd(needed)} but $${nanosToUsd(available)} remain for this ${holder}. Send fewer max tokens.`,
      });
    }
  }
  return { scopes, denials };
}

export type { SpendCounters };
