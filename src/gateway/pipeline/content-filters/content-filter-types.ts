import type { FilterAction } from '../../../admin/guardrails/builtin-filter-catalog.js';
import type { GenerationRequest } from '../../../spec/generation-request.js';
import type { LanguageFindings } from './language-analysis.js';
import type { PromptEdit } from './prompt-segments.js';

/** A match inside one piece of prompt text: UTF-16 offsets, `end` exclusive. */
export interface Detection {
  start: number;
  end: number;
  /** The prompt-injection pattern that matched (reported in a block's `metadata.patterns`). */
  name?: string;
}

/** What a detector reads: one piece of prompt text, and its language analysis on demand. */
export interface DetectionInput {
  text: string;
  /** Parsed lazily and at most once per text; the regex detectors never call it. */
  language(): LanguageFindings;
}

export type Detector = (input: DetectionInput) => Detection[];

/** One filter ready to run: a builtin or a custom pattern, with what its action writes. */
export interface CompiledFilter {
  /** The builtin slug, or `custom:<index>` (position in the custom array given to the compiler). */
  id: string;
  action: FilterAction;
  /** Replaces a redacted match; also names the filter in `redacted`/`flagged`/`blocked`. */
  label: string;
  blockMessage: string;
  /** Prompt injection with `scan_scope: 'user_only'`: user messages and function-call outputs only. */
  userOnly: boolean;
  /** Set for person-name and address: their misses are reported when the NLP budget runs out. */
  usesLanguage: boolean;
  /** Builtins share one detector function, so a filter listed twice is scanned once per text. */
  detect: Detector;
  /** Prompt injection blocks with its own message and the names of the matched patterns. */
  reportsPatterns: boolean;
}

export interface CompiledContentFilters {
  /** Builtins first, then custom patterns, each in the order given, exact duplicates removed. */
  filters: readonly CompiledFilter[];
  /** Stored patterns that no longer compile with flags `gu` (and unknown builtin slugs); the others apply. */
  skipped: ReadonlyArray<{ filter: string; pattern: string; reason: string }>;
  /** Characters of prompt text the NLP detectors may parse per request. */
  languageCharacterBudget: number;
}

export interface FilterHit {
  filter: string;
  label: string;
  /** Matches the filter found (overlapping matches of two filters are replaced once). */
  count: number;
}

export interface ContentFilterOutcome {
  /** A new object with redactions applied; the same object when no text changed. */
  request: GenerationRequest;
  blocked: null | { label: string; message: string; metadata?: Record<string, unknown> };
  redacted: FilterHit[];
  flagged: FilterHit[];
  /** Scans not done, e.g. `{ filter: 'person-name', reason: 'nlp-budget-exceeded' }`. */
  skipped: Array<{ filter: string; reason: string }>;
}

/** A scan's findings without the rebuilt request (`scanContentFilters`). */
export interface ContentFilterScan extends Omit<ContentFilterOutcome, 'request'> {
  /** The prompt's fields that redactions rewrite (`applyPromptEdits` writes them in). */
  edits: PromptEdit[];
}
