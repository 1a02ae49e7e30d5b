import { invalidRequest } from '../../errors/app-error.js';
import type { BudgetInterval } from '../../storage/database-schema.js';
import { BUDGET_INTERVALS } from './workspace-schemas.js';

/** Dollars with at least two decimals and as many more as the amount needs ($500.00, $0.0015). */
export function formatUsd(nanos: number): string {
  const sign = nanos < 0 ? '-' : '';
  const whole = Math.floor(Math.abs(nanos) / 1e9);
  const fraction = String(Math.abs(nanos) % 1e9)
    .padStart(9, '0')
    .replace(/0+$/, '')
    .padEnd(2, '0');
  return `${sign}$${whole}.${fraction}`;
}

/**
 * Reference §5: among the budgets that are set, lifetime > monthly > weekly > daily. Comparing each
 * set interval with the next narrower set one is enough, the order being transitive.
 */
export function assertStrictlyDecreasing(limits: Map<BudgetInterval, number>): void {
  const set = BUDGET_INTERVALS.filter((interval) => limits.has(interval));
  for (let index = 0; index + 1 < set.length; index += 1) {
    const broader = set[index]!;
    const narrower = set[index + 1]!;
    const broaderLimit = limits.get(broader)!;
    const narrowerLimit = limits.get(narrower)!;
    if (broaderLimit <= narrowerLimit) {
      throw invalidRequest(
        `Budget limits must be strictly decreasing as scope narrows: the ${broader} limit (${formatUsd(broaderLimit)}) must be greater than the ${narrower} limit (${formatUsd(narrowerLimit)}).`,
      );
    }
  }
}
