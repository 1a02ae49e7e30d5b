import { createRequire } from 'node:module';
import type Compromise from 'compromise';
import { sliceText } from './text-slices.js';

/**
 * The NLP half of the person-name and address detectors (compromise, a rule-based English tagger).
 * Parsing costs about 3–5 ms per KB on the event loop (docs/governance.md, "Content filters"), so
 * each request gets a character budget: texts are parsed in slices until it is spent, and what is
 * left unparsed is reported as skipped rather than stalling every other request.
 */

export interface Span {
  start: number;
  end: number;
}

export interface LanguageFindings {
  /** Names found by compromise, after the precision rules of `keepPerson`. */
  people: Span[];
  /** Street addresses compromise tagged (`#Address`), extended over a following place name. */
  addresses: Span[];
  /** False when the budget ran out before the end of the text. */
  complete: boolean;
}

/** Slices small enough that one parse blocks the event loop for a few milliseconds only. */
export const LANGUAGE_SLICE_CHARACTERS = 2_000;
export const DEFAULT_LANGUAGE_CHARACTER_BUDGET = 4_000;

/** compromise's term, with the fields `compute('offset')` adds (its typings do not export Term). */
interface PlacedTerm {
  text: string;
  post: string;
  offset?: { start: number; length: number };
  tags?: Set<string>;
  index?: [number, number];
}

export interface LanguageBudget {
  /** Parses `text` while budget remains; the same text (and string) is parsed once per request. */
  analyse(text: string): LanguageFindings;
}

export function createLanguageBudget(characters: number): LanguageBudget {
  let remaining = characters;
  const cache = new Map<string, LanguageFindings>();
  return {
    analyse(text) {
      const cached = cache.get(text);
      if (cached) return cached;
      const findings: LanguageFindings = { people: [], addresses: [], complete: true };
      for (const slice of sliceText(text, LANGUAGE_SLICE_CHARACTERS)) {
        const length = slice.end - slice.start;
        if (length > remaining) {
          findings.complete = false;
          break;
        }
        remaining -= length;
        analyseSlice(text.slice(slice.start, slice.end), slice.start, findings);
      }
      cache.set(text, findings);
      return findings;
    },
  };
}

/**
 * Parses several short texts as one (joined by blank lines) and hands each its own findings: the
 * hundreds of string literals of a JSON tool output cost one parse, not one each (a parse has a
 * fixed cost of about a millisecond whatever its length).
 */
export function analyseTogether(budget: LanguageBudget, texts: string[]): LanguageFindings[] {
  if (texts.length === 1) return [budget.analyse(texts[0]!)];
  const starts: number[] = [];
  let joined = '';
  for (const text of texts) {
    if (joined.length > 0) joined += '\n\n';
    starts.push(joined.length);
    joined += text;
  }
  const together = budget.analyse(joined);
  const findings = texts.map(() => ({
    people: [] as Span[],
    addresses: [] as Span[],
    complete: together.complete,
  }));
  const place = (span: Span, into: 'people' | 'addresses') => {
    let index = starts.length - 1;
    while (index > 0 && starts[index]! > span.start) index -= 1;
    const start = starts[index]!;
    const end = Math.min(span.end, start + texts[index]!.length);
    if (end > span.start) findings[index]![into].push({ start: span.start - start, end: end - start });
  };
  for (const span of together.people) place(span, 'people');
  for (const span of together.addresses) place(span, 'addresses');
  return findings;
}

type Nlp = typeof Compromise;
let library: { nlp: Nlp; steps: string[] | undefined } | null = null;

/**
 * compromise and its lexicon take ~44 MB of memory: loaded the first time a guardrail with a name
 * or address filter is compiled, not when the gateway starts.
 */
function languageLibrary(): { nlp: Nlp; steps: string[] | undefined } {
  if (!library) {
    const nlp = createRequire(import.meta.url)('compromise') as Nlp;
    // compromise's default steps without phrase chunking, which neither names nor addresses use
    // (a tenth of the parse time; the detector tests pin the results).
    const steps = (nlp.world() as { hooks?: string[] }).hooks?.filter((step) => step !== 'chunks');
    library = { nlp, steps };
  }
  return library;
}

let warm = false;
/** The first parse builds compromise's lexicon (tens of ms): done at compile time, not on a request. */
export function warmLanguageModel(): void {
  if (warm) return;
  warm = true;
  languageLibrary().nlp('Jane Doe lives at 42 Baker Street, London.').people();
}

function analyseSlice(text: string, base: number, findings: LanguageFindings): void {
  const { nlp, steps } = languageLibrary();
  // tokenize() is typed as the tokenizer-only view, but the full plugin set is loaded
  const document = steps ? (nlp.tokenize(text).compute(steps) as ReturnType<Nlp>) : nlp(text);
  document.compute('offset');
  const sentences = document.document as unknown as PlacedTerm[][];
  for (const terms of joinAdjacent(document.people().docs as unknown as PlacedTerm[][])) {
    const name = trimToCapitalised(terms);
    const span = keepPerson(name, sentences) ? spanOf(name, base) : null;
    if (span) findings.people.push(span);
  }
  for (const terms of document.match('#Address+').docs as unknown as PlacedTerm[][]) {
    const span = spanOf(terms, base);
    if (span) findings.addresses.push(extendOverPlace(span, terms, sentences, base));
  }
}

/** compromise returns "John Smith's" as two people, "John" and "Smith's": one name. */
function joinAdjacent(groups: PlacedTerm[][]): PlacedTerm[][] {
  const joined: PlacedTerm[][] = [];
  for (const group of groups) {
    const previous = joined[joined.length - 1];
    const last = previous?.[previous.length - 1]?.index;
    const first = group[0]?.index;
    if (previous && last && first && last[0] === first[0] && last[1] + 1 === first[1])
      previous.push(...group);
    else joined.push([...group]);
  }
  return joined;
}

const PARTICLES = new Set([
  'van',
  'von',
  'de',
  'da',
  'del',
  'der',
  'di',
  'du',
  'la',
  'le',
  'bin',
  'ibn',
  'al',
]);

/** Names are written capitalised: "Grace period" is cut to "Grace" (and then judged alone). */
function trimToCapitalised(terms: PlacedTerm[]): PlacedTerm[] {
  const end = terms.findIndex(
    (term, index) => index > 0 && !isCapitalised(term) && !PARTICLES.has(term.text),
  );
  const name = end < 0 ? terms : terms.slice(0, end);
  while (name.length > 1 && PARTICLES.has(name[name.length - 1]!.text)) name.pop();
  return name;
}

const isCapitalised = (term: PlacedTerm) => /^\p{Lu}/u.test(term.text);
const NAME_TAGS = ['FirstName', 'LastName', 'Honorific'];

/**
 * compromise also tags capitalised common words as names ("Grace period ends", "Mark the date",
 * "the Rose Bowl"). Kept: two or more words of which one is a known first name, surname or
 * honorific ("Sarah Connor", "Ms. Okafor"); one capitalised word that is not an honorific and,
 * at a sentence start, is followed by a verb or punctuation ("Mary said…", "Jack, can you…").
 */
function keepPerson(terms: PlacedTerm[], sentences: PlacedTerm[][]): boolean {
  if (terms.length === 0 || !isCapitalised(terms[0]!)) return false;
  if (terms.length > 1) return terms.some((term) => NAME_TAGS.some((tag) => term.tags?.has(tag)));
  const term = terms[0]!;
  if (term.tags?.has('Honorific')) return false;
  const [sentence, position] = term.index ?? [0, 0];
  if (position !== 0) return true;
  if (/[,:;!?]/.test(term.post)) return true;
  const next = sentences[sentence]?.[position + 1];
  return next === undefined || next.tags?.has('Verb') === true;
}

function spanOf(terms: PlacedTerm[], base: number): Span | null {
  const first = terms[0]?.offset;
  const last = terms[terms.length - 1];
  if (!first || !last?.offset) return null;
  let end = last.offset.start + last.offset.length;
  // "Smith's" → redact the name, keep the possessive
  if (/['’]s$/i.test(last.text)) end -= 2;
  return { start: base + first.start, end: base + end };
}

/** "42 Baker Street, London": a city, region or country right after the street belongs to it. */
function extendOverPlace(span: Span, terms: PlacedTerm[], sentences: PlacedTerm[][], base: number): Span {
  const last = terms[terms.length - 1]!;
  const [sentence, position] = last.index ?? [0, 0];
  let end = span.end;
  for (let index = position + 1; index < (sentences[sentence]?.length ?? 0); index += 1) {
    const term = sentences[sentence]![index]!;
    if (!term.tags?.has('Place') && !term.tags?.has('Value')) break;
    if (!term.offset) break;
    end = base + term.offset.start + term.offset.length;
    if (/[.!?;]/.test(term.post)) break;
  }
  return { start: span.start, end };
}
