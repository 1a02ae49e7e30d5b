import type { Detector } from '../content-filter-types.js';
import { regexMatches } from './regex-matches.js';

/**
 * Phone numbers in three shapes; anything else (a bare run of digits, a year, a price, a date, a
 * version) is not a phone number:
 * - international: `+`, a country code, then 8–15 digits in all, unbroken (`+14155552671`) or in
 *   groups separated by a space, dot or dash, with at most one parenthesised group
 *   (`+44 20 7946 0958`, `+49 (0)30 1234567`, `+1 (415) 555-2671`);
 * - North American: (NXX) NXX-XXXX, NXX-NXX-XXXX, NXX.NXX.XXXX or NXX NXX XXXX with N = 2–9 (area
 *   codes and exchanges never start with 0 or 1), optionally after `1` or `+1`;
 * - national with a trunk prefix: a leading 0 and at least two separated groups, 9–11 digits in all
 *   (`020 7946 0958`, `06 12 34 56 78`, `030-1234567`).
 * Bare runs of digits without `+` are left alone: they are order numbers and ids as often as phones.
 * Separators are mandatory between groups, so each shape is matched without ambiguity (linear time).
 */
const SEPARATOR = '[ .\\-]';
const INTERNATIONAL = `\\+[1-9]\\d{6,14}(?!\\d)|\\+[1-9]\\d{0,2}(?:${SEPARATOR}?\\(\\d{1,4}\\)${SEPARATOR}?\\d{1,8})?(?:${SEPARATOR}\\d{1,8}){0,6}`;
const NORTH_AMERICAN = `(?:\\+?1${SEPARATOR}?)?(?:\\([2-9]\\d{2}\\) ?|[2-9]\\d{2}${SEPARATOR})[2-9]\\d{2}${SEPARATOR}\\d{4}`;
const TRUNK = `0\\d{1,4}(?:${SEPARATOR}\\d{2,8}){1,4}`;
export const PHONE_PATTERN = new RegExp(
  `(?<![\\w+.\\-])(?:(?<international>${INTERNATIONAL})|(?<northAmerican>${NORTH_AMERICAN})|(?<trunk>${TRUNK}))(?!\\w|[.\\-]\\d)`,
  'g',
);

function digitCount(text: string): number {
  let count = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code >= 48 && code <= 57) count += 1;
  }
  return count;
}

function acceptable(match: RegExpExecArray): boolean {
  const digits = digitCount(match[0]);
  if (match.groups?.international) return digits >= 8 && digits <= 15;
  if (match.groups?.trunk) return digits >= 9 && digits <= 11;
  return true;
}

export const detectPhoneNumbers: Detector = ({ text }) =>
  /\d/.test(text) ? regexMatches(PHONE_PATTERN, text, acceptable) : [];
