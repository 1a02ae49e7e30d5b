/**
 * Cuts text into consecutive slices of at most `size` characters, at a sentence end when there is
 * one in the second half of the window, else at whitespace, else hard. The NLP parser never sees a
 * match cut in two unless a sentence is longer than the window.
 */
export function sliceText(text: string, size: number): Array<{ start: number; end: number }> {
  const slices: Array<{ start: number; end: number }> = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) end = cutPoint(text, start, end);
    slices.push({ start, end });
    start = end;
  }
  return slices;
}

function cutPoint(text: string, start: number, end: number): number {
  const floor = start + Math.floor((end - start) / 2);
  let whitespace = -1;
  for (let index = end - 1; index > floor; index -= 1) {
    const character = text.charCodeAt(index);
    // newline, or a space after . ! ?
    if (character === 10) return index + 1;
    if (character === 32 || character === 9) {
      const before = text[index - 1];
      if (before === '.' || before === '!' || before === '?') return index + 1;
      if (whitespace < 0) whitespace = index + 1;
    }
  }
  return whitespace > 0 ? whitespace : end;
}
