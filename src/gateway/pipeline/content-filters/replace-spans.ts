/** A match to replace with a label. */
export interface Replacement {
  start: number;
  end: number;
  label: string;
}

/**
 * Replaces every span with its label. Overlapping spans (a custom pattern inside an email, two
 * filters over one number) are merged into one, written with the label of the span that starts
 * first (the longest at equal starts), so no part of any match survives.
 */
export function replaceSpans(text: string, replacements: Replacement[]): string {
  const ordered = [...replacements].sort((a, b) => a.start - b.start || b.end - a.end);
  let output = '';
  let cursor = 0;
  let current: Replacement | null = null;
  for (const replacement of ordered) {
    if (current && replacement.start < current.end) {
      current.end = Math.max(current.end, replacement.end);
      continue;
    }
    if (current) {
      output += text.slice(cursor, current.start) + current.label;
      cursor = current.end;
    }
    current = { ...replacement };
  }
  if (current) {
    output += text.slice(cursor, current.start) + current.label;
    cursor = current.end;
  }
  return output + text.slice(cursor);
}
