import type { CachedKey } from '../../admin/keys/key-cache.js';
import type { CreditBalance } from '../../billing/credit-balance.js';
import { nanosToUsd } from '../../billing/money.js';
import type { SpendCounters, SpendScope } from '../../billing/spend-counters.js';
import { sumWindows, windowEndsAt, windowStartDays } from '../../billing/usage-windows.js';

/**
 * The limits a generation reserves against: the account's credits and the key's spending limit in
 * its current window.
 */
export function spendScopes(key: CachedKey, credits: CreditBalance, now: Date): SpendScope[] {
  const totals = credits.current();
  const scopes: SpendScope[] = [
    {
      id: 'credits',
      limitNanos: totals.grantedNanos,
      baseNanos: totals.usedNanos,
      windowEndsAt: null,
      // Zero-priced requests (the demo provider, free models) pass even with no credits left: here
      // credits cap what the account spends upstream, and a free request spends nothing.
      refuseWhenExhausted: false,
    },
  ];
  const limit = key.row.limit_nanos;
  if (limit !== null) {
    const reset = key.row.limit_reset;
    const days = key.usage.days.map((day) => ({
      day: day.day,
      nanos: day.usage + (key.row.include_byok_in_limit ? day.byok : 0),
    }));
    const lifetime = key.usage.lifetime.usage + (key.row.include_byok_in_limit ? key.usage.lifetime.byok : 0);
    const totalsByWindow = sumWindows(days, lifetime, now);
    const start = windowStartDays(now);
    const windowId =
      reset === 'daily'
        ? start.day
        : reset === 'weekly'
          ? start.week
          : reset === 'monthly'
            ? start.month
            : 'all';
    scopes.push({
      id: `key:${key.row.hash}:${reset ?? 'lifetime'}:${windowId}`,
      limitNanos: limit,
      baseNanos: reset ? totalsByWindow[reset] : totalsByWindow.usage,
      windowEndsAt: reset ? windowEndsAt(reset, now) : null,
    });
  }
  return scopes;
}

/** The 402 message for a refused reservation, naming what ran out and what the request needed. */
export function denialMessage(scopeId: string, neededNanos: number, availableNanos: number): string {
  if (scopeId === 'credits') {
    return `Insufficient credits: this request may cost up to $${nanosToUsd(neededNanos)} but $${nanosToUsd(availableNanos)} remain. Add more with \`switchyard credits add <usd>\`, or send fewer max tokens.`;
  }
  return `Key limit exceeded: this request may cost up to $${nanosToUsd(neededNanos)} but the key has $${nanosToUsd(availableNanos)} left of its limit. Raise the key's limit, or send fewer max tokens.`;
}

export type { SpendCounters };
