import type { AstNode, CharacterClassBody } from 'regjsparser';

/** The regjsparser features custom patterns are parsed with (their syntax under the `u` flag). */
export const PARSER_FEATURES = { namedGroups: true, lookbehind: true, unicodePropertyEscape: true } as const;
export type PatternNode = AstNode<typeof PARSER_FEATURES>;

/** Sorted, disjoint, inclusive code point ranges. */
export type CodePointSet = ReadonlyArray<readonly [number, number]>;

const MAX_CODE_POINT = 0x10ffff;
export const EVERYTHING: CodePointSet = [[0, MAX_CODE_POINT]];
const DIGITS: CodePointSet = [[0x30, 0x39]];
const WORD: CodePointSet = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
// ECMAScript WhiteSpace and LineTerminator (what \s matches).
const SPACE: CodePointSet = normalize([
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);
const LINE_TERMINATORS: CodePointSet = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];

function normalize(ranges: Array<readonly [number, number]>): CodePointSet {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const [low, high] of sorted) {
    const last = merged[merged.length - 1];
    if (last && low <= last[1] + 1) last[1] = Math.max(last[1], high);
    else merged.push([low, high]);
  }
  return merged;
}

const union = (...sets: CodePointSet[]): CodePointSet => normalize(sets.flat());

function complement(set: CodePointSet): CodePointSet {
  const result: Array<[number, number]> = [];
  let next = 0;
  for (const [low, high] of set) {
    if (low > next) result.push([next, low - 1]);
    next = high + 1;
  }
  if (next <= MAX_CODE_POINT) result.push([next, MAX_CODE_POINT]);
  return result;
}

/** Whether any two of the sets share a character; one sort of all ranges, not a comparison per pair. */
export function anyOverlap(sets: readonly CodePointSet[]): boolean {
  // Each set is disjoint within itself, so two ranges that overlap belong to different sets.
  const ranges = sets.flat().sort((a, b) => a[0] - b[0]);
  let reach = -1;
  for (const [low, high] of ranges) {
    if (low <= reach) return true;
    reach = Math.max(reach, high);
  }
  return false;
}

export interface Start {
  /** Characters a match of the node can begin with (a superset: precision is not needed to refuse). */
  first: CodePointSet;
  /** Whether the node can match the empty string. */
  nullable: boolean;
}

function classItem(item: CharacterClassBody): CodePointSet {
  switch (item.type) {
    case 'value':
      return [[item.codePoint, item.codePoint]];
    case 'characterClassRange':
      return [[item.min.codePoint, item.max.codePoint]];
    case 'characterClassEscape':
      return escapeSet(item.value);
    default:
      // Unicode property escapes: not worth a table; "anything" only makes the check stricter.
      return EVERYTHING;
  }
}

function escapeSet(letter: 'd' | 'D' | 'w' | 'W' | 's' | 'S'): CodePointSet {
  const base = letter.toLowerCase() === 'd' ? DIGITS : letter.toLowerCase() === 'w' ? WORD : SPACE;
  return letter === letter.toUpperCase() ? complement(base) : base;
}

/**
 * First characters and nullability of regjsparser nodes, for a pattern compiled with the `u` flag
 * and without `i` or `s` (how custom filters run). Results are memoized per node, so asking for
 * every alternation of a large pattern stays linear in its size.
 */
export function createStartAnalysis() {
  const memo = new WeakMap<object, Start>();

  function sequence(nodes: readonly PatternNode[]): Start {
    const parts: CodePointSet[] = [];
    for (const node of nodes) {
      const start = of(node);
      parts.push(start.first);
      if (!start.nullable) return { first: union(...parts), nullable: false };
    }
    return { first: union(...parts), nullable: true };
  }

  function compute(node: PatternNode): Start {
    switch (node.type) {
      case 'value':
        return { first: [[node.codePoint, node.codePoint]], nullable: false };
      case 'dot':
        return { first: complement(LINE_TERMINATORS), nullable: false };
      case 'characterClassEscape':
        return { first: escapeSet(node.value), nullable: false };
      case 'characterClassRange':
        return { first: classItem(node), nullable: false };
      case 'characterClass': {
        const set = union(...node.body.map(classItem));
        return { first: node.negative ? complement(set) : set, nullable: false };
      }
      case 'unicodePropertyEscape':
        return { first: EVERYTHING, nullable: false };
      case 'anchor':
        return { first: [], nullable: true };
      case 'reference':
        // What a backreference matches depends on the input; refused elsewhere anyway.
        return { first: EVERYTHING, nullable: true };
      case 'group':
        if (node.behavior !== 'normal' && node.behavior !== 'ignore') return { first: [], nullable: true };
        return sequence(node.body);
      case 'alternative':
        return sequence(node.body);
      case 'disjunction': {
        const starts = node.body.map(of);
        return {
          first: union(...starts.map((start) => start.first)),
          nullable: starts.some((start) => start.nullable),
        };
      }
      case 'quantifier': {
        const inner = of(node.body[0]);
        return { first: inner.first, nullable: node.min === 0 || inner.nullable };
      }
      default:
        return { first: EVERYTHING, nullable: true };
    }
  }

  function of(node: PatternNode): Start {
    let start = memo.get(node);
    if (!start) {
      start = compute(node);
      memo.set(node, start);
    }
    return start;
  }

  return { of };
}
