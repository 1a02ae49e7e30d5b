import type { Detection } from '../content-filter-types.js';

/**
 * Every non-empty match of a global regex, kept when `accept` says so. An empty match would insert
 * a label between every two characters, so it is skipped (and the scan moves on one character).
 */
export function regexMatches(
  pattern: RegExp,
  text: string,
  accept?: (match: RegExpExecArray) => boolean,
): Detection[] {
  const detections: Detection[] = [];
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    if (match[0].length === 0) {
      pattern.lastIndex = advance(text, match.index, pattern.unicode);
      continue;
    }
    if (!accept || accept(match)) detections.push({ start: match.index, end: match.index + match[0].length });
  }
  return detections;
}

function advance(text: string, index: number, unicode: boolean): number {
  const code = text.charCodeAt(index);
  // in unicode mode a surrogate pair is one character
  return unicode && code >= 0xd800 && code <= 0xdbff && index + 1 < text.length ? index + 2 : index + 1;
}
