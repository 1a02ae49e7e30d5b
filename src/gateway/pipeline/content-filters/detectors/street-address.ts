import type { Detection, Detector } from '../content-filter-types.js';
import { mergeDetections } from './merge-detections.js';
import { regexMatches } from './regex-matches.js';

/**
 * Street addresses: a house number, one to four capitalised words (or an ordinal such as "5th")
 * and a street suffix (Street, St, Avenue, Ave, Road, Rd, Boulevard, Blvd, Lane, Drive…),
 * optionally followed by a direction, a unit (Apt, Suite, Unit, #), and ", City", a two-letter
 * state and a ZIP code; and PO boxes. Compromise's `#Address` spans are added (it also knows
 * lower-case forms like "4 main st"), extended over a place name that follows. A city or country
 * alone is not an address: "we went to Paris" is left as it is.
 * Every repetition is bounded, so each match attempt costs a constant (linear time overall).
 */
const SUFFIX =
  '(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Terrace|Ter|Way|Circle|Cir|Parkway|Pkwy|Highway|Hwy|Square|Sq|Trail|Trl|Crescent|Cres|Close|Alley|Plaza|Row|Mews|Gardens)';
// word lengths are bounded so that a failed attempt backtracks over a constant stretch
const WORD = "(?:\\p{Lu}[\\p{L}'’-]{0,30}|\\d{1,3}(?:st|nd|rd|th))";
const DIRECTION = '(?:N|S|E|W|NE|NW|SE|SW|North|South|East|West)';
const UNIT = '(?:,?\\s+(?:Apt|Apartment|Suite|Ste|Unit|Floor|Fl|#)\\.?\\s*[\\p{L}\\d-]{1,6})?';
// a city of one to three capitalised words ("St. Louis" too); a full stop after it ends the sentence
const CITY = "(?:(?:St|Ft|Mt)\\.\\s+)?\\p{Lu}[\\p{L}'’-]{0,30}(?:\\s+\\p{Lu}[\\p{L}'’-]{0,30}){0,2}";
const LOCALITY = `(?:,\\s*${CITY}(?:,?\\s+\\p{Lu}{2}\\b)?(?:,?\\s+\\d{5}(?:-\\d{4})?)?)?`;
const STREET = `\\d{1,6}[A-Za-z]?\\s+(?:${DIRECTION}\\.?\\s+)?${WORD}(?:\\s+${WORD}){0,3}\\s+${SUFFIX}\\b\\.?(?:\\s+${DIRECTION}\\b)?${UNIT}${LOCALITY}`;
const PO_BOX = '[Pp]\\.?\\s?[Oo]\\.?\\s+[Bb]ox\\s+\\d{1,6}\\b';
export const ADDRESS_PATTERN = new RegExp(`(?<![\\p{L}\\d-])(?:${STREET}|${PO_BOX})`, 'gu');

export const detectAddresses: Detector = ({ text, language }) => {
  if (!/\d/.test(text)) return [];
  const detections: Detection[] = regexMatches(ADDRESS_PATTERN, text);
  return mergeDetections(detections.concat(language().addresses));
};
