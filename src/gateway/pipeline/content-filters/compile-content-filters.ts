import {
  BUILTIN_FILTERS,
  type BuiltinFilter,
  type CustomFilter,
} from '../../../admin/guardrails/builtin-filter-catalog.js';
import { BUILTIN_DETECTORS, LANGUAGE_SLUGS } from './builtin-detectors.js';
import type { CompiledContentFilters, CompiledFilter, Detector } from './content-filter-types.js';
import { regexMatches } from './detectors/regex-matches.js';
import { DEFAULT_LANGUAGE_CHARACTER_BUDGET, warmLanguageModel } from './language-analysis.js';

const DEFAULT_LABELS = { block: '[BLOCKED]', redact: '[REDACTED]', flag: '[FLAGGED]' } as const;

export interface CompileOptions {
  /** Characters of prompt text the NLP detectors may parse per request (docs/governance.md). */
  languageCharacterBudget?: number;
}

/**
 * Compiles the union of several guardrails' filters once; the caller caches the result per
 * guardrail set. A filter listed twice with the same action (and scope, or label) runs once.
 */
export function compileContentFilters(
  filters: { builtins: BuiltinFilter[]; custom: CustomFilter[] },
  options: CompileOptions = {},
): CompiledContentFilters {
  const compiled: CompiledFilter[] = [];
  const skipped: Array<{ filter: string; pattern: string; reason: string }> = [];
  const seen = new Set<string>();

  for (const builtin of filters.builtins) {
    const facts = BUILTIN_FILTERS[builtin.slug];
    const detect = BUILTIN_DETECTORS[builtin.slug];
    if (!facts || !detect) {
      // the guardrail API refuses unknown slugs; a stored one from a newer version is reported, not fatal
      skipped.push({ filter: String(builtin.slug), pattern: '', reason: 'Unknown builtin filter slug' });
      continue;
    }
    const isInjection = builtin.slug === 'regex-prompt-injection';
    const userOnly = isInjection && builtin.scan_scope === 'user_only';
    const key = JSON.stringify(['builtin', builtin.slug, builtin.action, userOnly]);
    if (seen.has(key)) continue;
    seen.add(key);
    compiled.push({
      id: builtin.slug,
      action: builtin.action,
      label: facts.label,
      blockMessage: isInjection
        ? 'Request blocked: prompt injection patterns detected'
        : `Request blocked by content filter: ${facts.humanName}`,
      userOnly,
      usesLanguage: LANGUAGE_SLUGS.has(builtin.slug),
      detect,
      reportsPatterns: isInjection,
    });
  }

  filters.custom.forEach((custom, index) => {
    const id = `custom:${index}`;
    const key = JSON.stringify(['custom', custom.pattern, custom.action, custom.label ?? null]);
    if (seen.has(key)) return;
    seen.add(key);
    let pattern: RegExp;
    try {
      pattern = new RegExp(custom.pattern, 'gu');
    } catch (error) {
      skipped.push({ filter: id, pattern: custom.pattern, reason: (error as Error).message });
      return;
    }
    // an empty label counts as none: replacing a match with nothing would hide that it was there
    const label = custom.label || DEFAULT_LABELS[custom.action];
    const detect: Detector = ({ text }) => regexMatches(pattern, text);
    compiled.push({
      id,
      action: custom.action,
      label,
      blockMessage: `Request blocked by content filter: ${label}`,
      userOnly: false,
      usesLanguage: false,
      detect,
      reportsPatterns: false,
    });
  });

  if (compiled.some((filter) => filter.usesLanguage)) warmLanguageModel();
  return {
    filters: compiled,
    skipped,
    languageCharacterBudget: options.languageCharacterBudget ?? DEFAULT_LANGUAGE_CHARACTER_BUDGET,
  };
}
