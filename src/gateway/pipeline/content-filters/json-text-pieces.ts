/**
 * Function-call arguments (and most tool outputs) are JSON text. Scanning them raw would miss
 * `"a\u0040b.com"` and redacting them raw could break the JSON the provider parses, so valid JSON
 * is cut into its string literals (scanned decoded, written back re-encoded) and the text between
 * them (numbers, punctuation; a label written there is a JSON string).
 */
export interface TextPiece {
  /** The decoded string for a literal, the raw text otherwise. */
  text: string;
  /** The piece as written in the original text (a literal keeps its own escapes when unchanged). */
  raw: string;
  kind: 'plain' | 'json-string' | 'json-structure';
}

/** The pieces of `raw`: several when it is valid JSON with strings, else one plain piece. */
export function splitJsonText(raw: string): TextPiece[] {
  const plain: TextPiece[] = [{ text: raw, raw, kind: 'plain' }];
  if (!/^\s*[[{"]/.test(raw)) return plain;
  try {
    JSON.parse(raw);
  } catch {
    return plain;
  }
  const pieces: TextPiece[] = [];
  let structureStart = 0;
  let index = 0;
  while (index < raw.length) {
    if (raw.charCodeAt(index) !== 34 /* " */) {
      index += 1;
      continue;
    }
    const end = endOfString(raw, index);
    if (index > structureStart) pieces.push(structure(raw.slice(structureStart, index)));
    const literal = raw.slice(index, end);
    pieces.push({ text: JSON.parse(literal) as string, raw: literal, kind: 'json-string' });
    index = end;
    structureStart = end;
  }
  if (structureStart < raw.length) pieces.push(structure(raw.slice(structureStart)));
  return pieces;
}

const structure = (text: string): TextPiece => ({ text, raw: text, kind: 'json-structure' });

/** Writes the pieces back; only the changed ones are re-encoded. */
export function joinJsonText(pieces: TextPiece[], changed: ReadonlyMap<number, string>): string {
  return pieces
    .map((piece, index) => {
      const text = changed.get(index);
      if (text === undefined) return piece.raw;
      return piece.kind === 'json-string' ? JSON.stringify(text) : text;
    })
    .join('');
}

/** Index just past the closing quote of the literal opening at `start` (the JSON is valid). */
function endOfString(raw: string, start: number): number {
  let index = start + 1;
  while (index < raw.length) {
    const code = raw.charCodeAt(index);
    if (code === 92 /* \ */) index += 2;
    else if (code === 34) return index + 1;
    else index += 1;
  }
  return raw.length;
}
