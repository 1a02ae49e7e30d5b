import type { GenerationRequest } from '../../../spec/generation-request.js';
import type {
  CompiledContentFilters,
  CompiledFilter,
  ContentFilterOutcome,
  ContentFilterScan,
  Detection,
  DetectionInput,
  Detector,
  FilterHit,
} from './content-filter-types.js';
import { analyseTogether, createLanguageBudget, type LanguageFindings } from './language-analysis.js';
import { type PromptSegment, type PromptText, promptText } from './prompt-segments.js';
import { type Replacement, replaceSpans } from './replace-spans.js';

/**
 * Runs the compiled filters over the prompt side of a request. Every filter reads the original
 * text. Blocking filters run first and the first that matches ends the scan (block beats redact;
 * nothing is redacted or flagged on a blocked request). Then every redacting filter's matches are
 * replaced with its label in one pass per text, and flagging filters are counted.
 * The NLP detectors share a per-request character budget; when it runs out they are reported in
 * `skipped` and the request proceeds (a blocking NLP filter fails open, like a timed-out one).
 */
export function applyContentFilters(
  compiled: CompiledContentFilters,
  request: GenerationRequest,
): ContentFilterOutcome {
  const prompt = promptText(request);
  const { changed, ...scan } = scanPrompt(compiled, prompt);
  return { ...scan, request: prompt.rebuild(changed) };
}

/**
 * `applyContentFilters` without the rebuilt request: the prompt's fields that redactions rewrite,
 * which `applyPromptEdits` writes into the request. What a content-filter thread answers
 * (content-filter-threads.ts): only the rewritten fields cross back, not the request.
 */
export function scanContentFilters(
  compiled: CompiledContentFilters,
  request: GenerationRequest,
): ContentFilterScan {
  const prompt = promptText(request);
  const { changed, ...scan } = scanPrompt(compiled, prompt);
  return { ...scan, edits: prompt.edits(changed) };
}

/** The findings, and the changed segment texts by segment index. */
function scanPrompt(
  compiled: CompiledContentFilters,
  prompt: PromptText,
): Omit<ContentFilterScan, 'edits'> & { changed: Map<number, string> } {
  const outcome: Omit<ContentFilterScan, 'edits'> & { changed: Map<number, string> } = {
    blocked: null,
    redacted: [],
    flagged: [],
    skipped: [],
    changed: new Map(),
  };
  if (compiled.filters.length === 0) return outcome;
  const scanner = createScanner(compiled, prompt.segments);

  for (const filter of compiled.filters) {
    if (filter.action !== 'block') continue;
    const found = scanner.scan(filter);
    if (found.length === 0) continue;
    outcome.blocked = { label: filter.label, message: filter.blockMessage };
    if (filter.reportsPatterns) {
      const patterns = [
        ...new Set(found.flatMap(({ detections }) => detections.map((match) => match.name!))),
      ];
      outcome.blocked.metadata = { patterns };
    }
    outcome.skipped = scanner.skipped();
    return outcome;
  }

  const replacements = new Map<number, Replacement[]>();
  for (const filter of compiled.filters) {
    if (filter.action === 'block') continue;
    const found = scanner.scan(filter);
    const count = found.reduce((total, { detections }) => total + detections.length, 0);
    if (count === 0) continue;
    const hit: FilterHit = { filter: filter.id, label: filter.label, count };
    if (filter.action === 'flag') {
      outcome.flagged.push(hit);
      continue;
    }
    outcome.redacted.push(hit);
    for (const { segment, detections } of found) {
      const label = prompt.segments[segment]!.jsonStructure ? JSON.stringify(filter.label) : filter.label;
      const list = replacements.get(segment) ?? [];
      for (const detection of detections) list.push({ start: detection.start, end: detection.end, label });
      replacements.set(segment, list);
    }
  }

  for (const [segment, list] of replacements) {
    const text = prompt.segments[segment]!.text;
    const replaced = replaceSpans(text, list);
    // a match already equal to its label ("[REDACTED]" redacted again) changes nothing
    if (replaced !== text) outcome.changed.set(segment, replaced);
  }
  outcome.skipped = scanner.skipped();
  return outcome;
}

const NEEDS_LANGUAGE = /[\p{Lu}\d]/u;
const NOTHING_FOUND: LanguageFindings = { people: [], addresses: [], complete: true };

interface Found {
  segment: number;
  detections: Detection[];
}

/**
 * Scans segments for filters, remembering each detector's result per text so a slug listed with
 * two actions (block in one guardrail, redact in another) is scanned once.
 */
function createScanner(compiled: CompiledContentFilters, segments: PromptSegment[]) {
  const cache = new Map<Detector, Array<Detection[] | undefined>>();
  const budget = createLanguageBudget(compiled.languageCharacterBudget);
  const findings: Array<LanguageFindings | undefined> = [];
  const incomplete = new Set<string>();
  let prepared = false;

  // The budget goes first to what users wrote, newest first: that is where personal data arrives.
  function prepareLanguage(): void {
    if (prepared) return;
    prepared = true;
    const groups = new Map<number, number[]>();
    segments.forEach((segment, index) => {
      const members = groups.get(segment.group) ?? [];
      members.push(index);
      groups.set(segment.group, members);
    });
    const ordered = [...groups.values()].sort((a, b) => {
      const userFirst = Number(segments[b[0]!]!.userSupplied) - Number(segments[a[0]!]!.userSupplied);
      return userFirst || b[0]! - a[0]!;
    });
    for (const members of ordered) {
      // names start with a capital and addresses hold a digit: other texts need no parse
      const texts = members.map((index) => segments[index]!.text).filter((text) => NEEDS_LANGUAGE.test(text));
      const analysed = texts.length > 0 ? analyseTogether(budget, texts) : [];
      let next = 0;
      for (const index of members) {
        findings[index] = NEEDS_LANGUAGE.test(segments[index]!.text) ? analysed[next++]! : NOTHING_FOUND;
      }
    }
  }

  // One input per text, shared by every filter (the scan is synchronous, so `scanning` is exact).
  let scanning = '';
  const inputs: Array<DetectionInput | undefined> = [];
  const inputFor = (index: number): DetectionInput => {
    let input = inputs[index];
    if (!input) {
      input = {
        text: segments[index]!.text,
        language: () => {
          prepareLanguage();
          const result = findings[index]!;
          if (!result.complete) incomplete.add(scanning);
          return result;
        },
      };
      inputs[index] = input;
    }
    return input;
  };

  return {
    scan(filter: CompiledFilter): Found[] {
      const perSegment = cache.get(filter.detect) ?? [];
      cache.set(filter.detect, perSegment);
      scanning = filter.id;
      const found: Found[] = [];
      for (let index = 0; index < segments.length; index += 1) {
        if (filter.userOnly && !segments[index]!.userSupplied) continue;
        let detections = perSegment[index];
        if (!detections) {
          detections = filter.detect(inputFor(index));
          perSegment[index] = detections;
        }
        if (detections.length > 0) found.push({ segment: index, detections });
      }
      return found;
    },
    skipped: () => [...incomplete].map((filter) => ({ filter, reason: 'nlp-budget-exceeded' })),
  };
}
