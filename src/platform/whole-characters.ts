/**
 * The first `length` UTF-16 units of `text`, one fewer when the cut would split a surrogate pair: a
 * lone surrogate is not Unicode text, and strict JSON and UTF-8 consumers (PostgreSQL's `jsonb`,
 * many ingestion APIs) refuse it, so a cut text must end on a whole character.
 */
export function sliceWhole(text: string, length: number): string {
  if (text.length <= length) return text;
  const last = text.charCodeAt(length - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? length - 1 : length);
}
