import type { Quantifier } from 'regjsparser';
import { anyOverlap, type PARSER_FEATURES, type PatternNode, type Start } from './regex-first-characters.js';

type PatternQuantifier = Quantifier<typeof PARSER_FEATURES>;

/**
 * Ways adjacent repetitions may split the same text at one start position before it is refused:
 * `a{0,9}a{0,9}` (100 ways) passes, `a{0,30}a{0,30}` (961 ways, 0.4 s on 2,000 characters in V8)
 * does not.
 */
export const MAX_SPLITS = 100;
/** How far ahead of a repetition to look; bounds the work on a sequence of thousands of elements. */
const LOOKAHEAD = 1_000;
/**
 * Element comparisons one pattern may cost in all. The check runs on the event loop when a guardrail
 * is saved: a 100 KB pattern of 50,000 optional characters would otherwise hold it for half a
 * minute. A pattern that needs more is refused as one whose splits could not be counted.
 */
const MAX_COMPARISONS = 200_000;

/** How many counts a quantifier can choose between; Infinity when unbounded. */
const choices = (quantifier: PatternQuantifier): number =>
  quantifier.max === undefined ? Number.POSITIVE_INFINITY : quantifier.max - quantifier.min + 1;

/** A sequence with the groups that are plain sequences themselves inlined: `(?:a*)(?:a*)` is `a*a*`. */
function flatten(nodes: readonly PatternNode[]): PatternNode[] {
  return nodes.flatMap((node) => {
    if (node.type !== 'group' || (node.behavior !== 'normal' && node.behavior !== 'ignore')) return [node];
    const [only] = node.body;
    if (node.body.length === 1 && only?.type === 'alternative') return flatten(only.body);
    if (node.body.length === 1 && only?.type === 'disjunction') return [node];
    return flatten(node.body);
  });
}

/**
 * Finds repetitions in a sequence that can split the same text between them: after a repetition,
 * every following element that can begin with a character the repetition could continue with
 * keeps the split open (`a{0,30}a{0,30}`, `\w+\s?\w+`); the first one that cannot, and cannot be
 * skipped, closes it (`[a-z]{1,20} [a-z]{1,20}` splits one way only). recheck's automaton analysis
 * counts bounded repetitions as constant work and misses these; this counts the ways.
 */
export function findAdjacentRepetitions(
  sequence: readonly PatternNode[],
  startOf: (node: PatternNode) => Start,
): { from: PatternNode; to: PatternNode } | null {
  const elements = flatten(sequence);
  let comparisons = 0;
  for (const [index, first] of elements.entries()) {
    if (first.type !== 'quantifier' || choices(first) < 2) continue;
    const continuing = startOf(first.body[0]).first;
    let splits = choices(first);
    const end = Math.min(elements.length, index + 1 + LOOKAHEAD);
    for (let next = index + 1; next < end; next += 1) {
      const element = elements[next]!;
      comparisons += 1;
      if (comparisons > MAX_COMPARISONS) return { from: first, to: element };
      const start = startOf(element.type === 'quantifier' ? element.body[0] : element);
      if (!anyOverlap([continuing, start.first])) {
        if (startOf(element).nullable) continue;
        break;
      }
      if (element.type === 'quantifier' && choices(element) > 1) {
        splits *= choices(element);
        if (splits > MAX_SPLITS) return { from: first, to: element };
      }
    }
  }
  return null;
}
