import { nanosToUsd } from '../../../billing/money.js';
import type { GenerationSummary } from '../dialect.js';

/**
 * The cost members of every dialect's `usage` object (reference §1.2): what the generation cost in
 * USD credits, converted once from the billed nano-dollars, and whether it ran on the caller's
 * own provider key.
 */
export function billedCost(summary: GenerationSummary): { cost: number; is_byok: boolean } {
  return { cost: nanosToUsd(summary.cost.totalNanos), is_byok: summary.isByok };
}

/**
 * The cost split into its input and output sides, in USD, for the `cost_details` block; each
 * dialect names the sides in its own words (`prompt`/`completions`, `input`/`output`).
 */
export function costSplit(summary: GenerationSummary): { input: number; output: number } {
  return { input: nanosToUsd(summary.cost.inputNanos), output: nanosToUsd(summary.cost.outputNanos) };
}
