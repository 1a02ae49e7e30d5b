import type { Detector } from '../content-filter-types.js';

/**
 * Person names, found by compromise (names in its lexicon, honorifics, first-name + surname
 * patterns) with the precision rules in language-analysis.ts. Names compromise does not know and
 * that have no context ("Priya Raghunathan") are missed: this is an NLP heuristic, not a guarantee.
 */
export const detectPersonNames: Detector = ({ text, language }) =>
  /\p{Lu}/u.test(text) ? language().people.map(({ start, end }) => ({ start, end })) : [];
