import regjsparser, { type Quantifier } from 'regjsparser';
import { findAdjacentRepetitions } from './regex-adjacent-repetitions.js';
import {
  anyOverlap,
  createStartAnalysis,
  EVERYTHING,
  PARSER_FEATURES,
  type PatternNode,
} from './regex-first-characters.js';

type PatternQuantifier = Quantifier<typeof PARSER_FEATURES>;
const SHOWN_CHARACTERS = 60;

const shown = (raw: string): string =>
  raw.length <= SHOWN_CHARACTERS ? raw : `${raw.slice(0, SHOWN_CHARACTERS - 1)}…`;

const LOOKAROUND_NAMES: Record<string, string> = {
  lookahead: 'lookahead',
  negativeLookahead: 'negative lookahead',
  lookbehind: 'lookbehind',
  negativeLookbehind: 'negative lookbehind',
};

/** A quantifier that can repeat its body (max above one, bounded or not). */
const repeats = (quantifier: PatternQuantifier): boolean =>
  quantifier.max === undefined || quantifier.max > 1;
/** A quantifier that chooses between several repetition counts above one: `+`, `{1,3}`, not `?` or `{3}`. */
const choosesCount = (quantifier: PatternQuantifier): boolean =>
  repeats(quantifier) && quantifier.min !== quantifier.max;

/**
 * The first construct of the pattern that custom filters refuse on sight, or null: lookaround,
 * backreferences, a quantifier choosing a count inside a repeated group (star height above one:
 * `(a+)+`, also bounded: `(a{1,9}){1,9}`), a repeated group that can match empty text, an
 * alternation under a repetition whose alternatives can begin with the same character, adjacent
 * repetitions that can split the same text in more than MAX_SPLITS ways, and patterns that match
 * empty text. Bounded repetitions count: recheck's automaton analysis treats them as constant work,
 * yet `(?:a|a){1,25}b` takes V8 minutes on 40 characters. Conservative by design: a refused pattern
 * may be harmless; an accepted one still goes through recheck. The pattern must compile with `u`.
 */
export function findStructuralProblem(pattern: string): string | null {
  let root: PatternNode;
  try {
    root = regjsparser.parse(pattern, 'u', PARSER_FEATURES);
  } catch (error) {
    if (error instanceof RangeError) return 'the pattern is nested too deeply to be checked';
    return 'the pattern uses syntax the safety check cannot analyse';
  }
  const starts = createStartAnalysis();

  function sequenceProblem(sequence: readonly PatternNode[]): string | null {
    const found = findAdjacentRepetitions(sequence, starts.of);
    if (!found) return null;
    const span = pattern.slice(found.from.range[0], found.to.range[1]);
    return `adjacent repetitions ${shown(span)} can split the same text in many ways and backtrack catastrophically`;
  }

  function visit(node: PatternNode, repeating: PatternQuantifier | null): string | null {
    switch (node.type) {
      case 'group': {
        const lookaround = LOOKAROUND_NAMES[node.behavior];
        if (lookaround) return `${lookaround} ${shown(node.raw)} is not allowed`;
        return sequenceProblem(node.body) ?? visitAll(node.body, repeating);
      }
      case 'reference':
        return `backreference ${shown(node.raw)} is not allowed`;
      case 'quantifier': {
        if (repeating && choosesCount(node)) {
          return `nested quantifier ${shown(repeating.raw)} can backtrack catastrophically`;
        }
        const inner = visit(node.body[0], repeating ?? (repeats(node) ? node : null));
        if (inner) return inner;
        if (repeats(node) && starts.of(node.body[0]).nullable) {
          return `repetition ${shown(node.raw)} of something that can match empty text can backtrack catastrophically`;
        }
        return null;
      }
      case 'disjunction': {
        if (repeating) {
          // An alternative that can match nothing may overlap whatever follows it.
          const firsts = node.body.map((alternative) => {
            const start = starts.of(alternative);
            return start.nullable ? EVERYTHING : start.first;
          });
          if (anyOverlap(firsts)) {
            return `alternation ${shown(repeating.raw)} has alternatives that can match the same text and can backtrack catastrophically`;
          }
        }
        return visitAll(node.body, repeating);
      }
      case 'alternative':
        return sequenceProblem(node.body) ?? visitAll(node.body, repeating);
      default:
        return null;
    }
  }

  function visitAll(nodes: readonly PatternNode[], repeating: PatternQuantifier | null): string | null {
    for (const child of nodes) {
      const problem = visit(child, repeating);
      if (problem) return problem;
    }
    return null;
  }

  try {
    const problem = visit(root, null);
    if (problem) return problem;
    // A filter that matches empty text would redact or block at every position of every prompt.
    if (starts.of(root).nullable) return 'the pattern can match empty text';
    return null;
  } catch (error) {
    if (error instanceof RangeError) return 'the pattern is nested too deeply to be checked';
    throw error;
  }
}
