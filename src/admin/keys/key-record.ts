import { nanosToUsd } from '../../billing/money.js';
import { sumWindows, type UsageTotals } from '../../billing/usage-windows.js';
import type { KeyRow, KeyUsageRows } from './key-repository.js';

/** The API key record of spec 2.3. */
export interface KeyRecord {
  hash: string;
  name: string;
  label: string;
  disabled: boolean;
  limit: number | null;
  limit_remaining: number | null;
  limit_reset: 'daily' | 'weekly' | 'monthly' | null;
  include_byok_in_limit: boolean;
  usage: number;
  usage_daily: number;
  usage_weekly: number;
  usage_monthly: number;
  byok_usage: number;
  byok_usage_daily: number;
  byok_usage_weekly: number;
  byok_usage_monthly: number;
  created_at: string;
  updated_at: string | null;
  expires_at: string | null;
  creator_user_id: string | null;
  workspace_id: string;
}

export interface KeySpend {
  paid: UsageTotals;
  byok: UsageTotals;
}

export function keySpend(usage: KeyUsageRows, now: Date): KeySpend {
  return {
    paid: sumWindows(
      usage.days.map((day) => ({ day: day.day, nanos: day.usage })),
      usage.lifetime.usage,
      now,
    ),
    byok: sumWindows(
      usage.days.map((day) => ({ day: day.day, nanos: day.byok })),
      usage.lifetime.byok,
      now,
    ),
  };
}

/** Nano-dollars left under the key's limit in its current reset window; null when unlimited. */
export function limitRemainingNanos(row: KeyRow, spend: KeySpend): number | null {
  if (row.limit_nanos === null) return null;
  const window = (totals: UsageTotals) =>
    row.limit_reset === 'daily'
      ? totals.daily
      : row.limit_reset === 'weekly'
        ? totals.weekly
        : row.limit_reset === 'monthly'
          ? totals.monthly
          : totals.usage;
  const spent = window(spend.paid) + (row.include_byok_in_limit ? window(spend.byok) : 0);
  return Math.max(0, row.limit_nanos - spent);
}

export function toKeyRecord(row: KeyRow, usage: KeyUsageRows, now: Date): KeyRecord {
  const spend = keySpend(usage, now);
  const remaining = limitRemainingNanos(row, spend);
  return {
    hash: row.hash,
    name: row.name,
    label: row.label,
    disabled: row.disabled === 1,
    limit: row.limit_nanos === null ? null : nanosToUsd(row.limit_nanos),
    limit_remaining: remaining === null ? null : nanosToUsd(remaining),
    limit_reset: row.limit_reset,
    include_byok_in_limit: row.include_byok_in_limit === 1,
    usage: nanosToUsd(spend.paid.usage),
    usage_daily: nanosToUsd(spend.paid.daily),
    usage_weekly: nanosToUsd(spend.paid.weekly),
    usage_monthly: nanosToUsd(spend.paid.monthly),
    byok_usage: nanosToUsd(spend.byok.usage),
    byok_usage_daily: nanosToUsd(spend.byok.daily),
    byok_usage_weekly: nanosToUsd(spend.byok.weekly),
    byok_usage_monthly: nanosToUsd(spend.byok.monthly),
    created_at: row.created_at,
    updated_at: row.updated_at,
    expires_at: row.expires_at,
    creator_user_id: row.creator_user_id,
    workspace_id: row.workspace_id,
  };
}
