import type { Detector } from '../../../src/gateway/pipeline/content-filters/content-filter-types.js';
import { createLanguageBudget } from '../../../src/gateway/pipeline/content-filters/language-analysis.js';

/** The texts a detector matched in `text`, with an NLP budget large enough for any test text. */
export function matched(detector: Detector, text: string): string[] {
  const budget = createLanguageBudget(1_000_000);
  return detector({ text, language: () => budget.analyse(text) }).map((match) =>
    text.slice(match.start, match.end),
  );
}
