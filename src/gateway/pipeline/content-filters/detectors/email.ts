import type { Detector } from '../content-filter-types.js';
import { regexMatches } from './regex-matches.js';

/**
 * RFC 5322's dot-atom form, the practical subset every mail provider issues: a local part of atom
 * characters in dot-separated runs, `@`, dot-separated DNS labels (letters, digits, inner hyphens,
 * ≤ 63 characters) and an alphabetic top-level domain. Quoted local parts and IP-literal domains
 * are not matched. The lookbehind lets a match start only where a run of address characters starts,
 * so a long run without `@` is read once, not once per position (linear time).
 */
const ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
const NOT_AFTER = "(?<![A-Za-z0-9!#$%&'*+/=?^_`{|}~.-])";
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
export const EMAIL_PATTERN = new RegExp(
  `${NOT_AFTER}${ATOM}+(?:\\.${ATOM}+)*@(?:${LABEL}\\.)+[A-Za-z]{2,63}(?![A-Za-z0-9-])`,
  'g',
);

export const detectEmails: Detector = ({ text }) =>
  text.includes('@') ? regexMatches(EMAIL_PATTERN, text) : [];
