import type { Detection, Detector } from '../content-filter-types.js';
import { mergeDetections } from './merge-detections.js';
import { regexMatches } from './regex-matches.js';

/**
 * IPv4: four dotted decimal octets 0–255 without leading zeros, not inside a longer dotted run
 * (`1.2.3` and `10.0.19041.1` are versions, not addresses) and not right after `v` or the word
 * "version".
 * IPv6: the eight-group form and every `::`-compressed form of RFC 4291 (with an embedded IPv4 tail
 * and a `%zone` suffix), not inside a longer word or colon run. A compressed form must contain a
 * decimal digit or at least three groups, so `a::b` in Rust or C++ and a bare `::` are left alone.
 */
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4_BODY = `(?:${OCTET}\\.){3}${OCTET}`;
export const IPV4_PATTERN = new RegExp(`(?<![\\w.])${IPV4_BODY}(?!\\w|\\.\\d)`, 'g');

const GROUP = '[0-9A-Fa-f]{1,4}';
const IPV6_BODY = [
  `(?:${GROUP}:){7}${GROUP}`,
  `(?:${GROUP}:){1,4}:${IPV4_BODY}`,
  `::(?:[Ff]{4}(?::0{1,4})?:)?${IPV4_BODY}`,
  `(?:${GROUP}:){1,6}:${GROUP}`,
  `(?:${GROUP}:){1,5}(?::${GROUP}){1,2}`,
  `(?:${GROUP}:){1,4}(?::${GROUP}){1,3}`,
  `(?:${GROUP}:){1,3}(?::${GROUP}){1,4}`,
  `(?:${GROUP}:){1,2}(?::${GROUP}){1,5}`,
  `${GROUP}:(?::${GROUP}){1,6}`,
  `(?:${GROUP}:){1,7}:`,
  `:(?::${GROUP}){1,7}`,
].join('|');
export const IPV6_PATTERN = new RegExp(
  `(?<![\\w:.])(?:${IPV6_BODY})(?:%[0-9A-Za-z]{1,15})?(?![\\w:]|\\.\\d)`,
  'g',
);

const VERSION_WORD = /(?:\bv|\bversion\s*|\bver\.?\s*)$/i;

function notVersion(text: string) {
  return (match: RegExpExecArray) =>
    !VERSION_WORD.test(text.slice(Math.max(0, match.index - 10), match.index));
}

function plausibleIpv6(match: RegExpExecArray): boolean {
  const address = match[0];
  if (!address.includes('::')) return true;
  return /\d/.test(address) || address.split(':').filter((group) => group.length > 0).length >= 3;
}

export const detectIpAddresses: Detector = ({ text }) => {
  const detections: Detection[] = [];
  if (text.includes('.')) detections.push(...regexMatches(IPV4_PATTERN, text, notVersion(text)));
  if (text.includes(':')) detections.push(...regexMatches(IPV6_PATTERN, text, plausibleIpv6));
  return mergeDetections(detections);
};
