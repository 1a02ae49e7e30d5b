import type { Detector } from '../content-filter-types.js';
import { regexMatches } from './regex-matches.js';

/**
 * US Social Security numbers written AAA-GG-SSSS (dashes only: bare nine-digit runs are ids as
 * often as SSNs). Numbers the SSA never issues are excluded: area 000, 666 and 900–999, group 00,
 * serial 0000. Not part of a longer run of digits, letters or dashes.
 */
export const SSN_PATTERN = /(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])/g;

export const detectSocialSecurityNumbers: Detector = ({ text }) =>
  text.includes('-') ? regexMatches(SSN_PATTERN, text) : [];
