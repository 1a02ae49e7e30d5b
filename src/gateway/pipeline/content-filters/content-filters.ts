/**
 * The content-filter engine of guardrails (spec 2.5, reference §4.2): compile a guardrail set's
 * builtin and custom filters once, then apply them to each request before the upstream sees it.
 * A pure module: no routes, no storage.
 */
export { applyContentFilters } from './apply-content-filters.js';
export { type CompileOptions, compileContentFilters } from './compile-content-filters.js';
export type {
  CompiledContentFilters,
  ContentFilterOutcome,
  FilterHit,
} from './content-filter-types.js';
export { DEFAULT_LANGUAGE_CHARACTER_BUDGET } from './language-analysis.js';
