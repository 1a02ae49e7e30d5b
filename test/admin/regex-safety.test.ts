import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkCustomPattern,
  checkCustomPatternAsync,
  createPatternChecker,
  MAX_PATTERN_LENGTH,
} from '../../src/admin/guardrails/regex-safety.js';

/** Patterns a filter author writes every day; each must be accepted by both entry points. */
const safe: Record<string, string> = {
  'OpenAI key (reference §4.2)': '\\b(sk-[a-zA-Z0-9]{48})\\b',
  SSN: '\\b\\d{3}-\\d{2}-\\d{4}\\b',
  'email of one domain': '\\b[A-Za-z0-9._%+-]{1,20}@example\\.com\\b',
  'named groups': '(?<area>\\d{3})-(?<line>\\d{4})',
  'non-capturing group with disjoint alternatives': '(?:foo|bar)-\\d{4}',
  anchors: '^secret$',
  classes: '[A-Z]{2}\\d{6}',
  'phone number with optional separators': '\\+?\\d{1,3}[ -]?\\(?\\d{3}\\)?[ -]?\\d{3}[ -]?\\d{4}',
  'card number in groups': '\\b(?:\\d{4}[ -]?){3}\\d{4}\\b',
  'IPv4 written out': '\\b\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\b',
  'two words': '\\b[A-Z][a-z]{1,20} [A-Z][a-z]{1,20}\\b',
  'separator-led repetition': 'id(?:-[0-9])*',
  'Unicode property escapes': '\\p{Lu}\\p{Ll}{2,10}',
  'AWS access key id': 'AKIA[0-9A-Z]{16}',
};

/** One pattern per refused kind, and words the reason must contain. */
const refused: Record<string, { pattern: string; reason: RegExp }> = {
  empty: { pattern: '', reason: /empty/ },
  'too long': { pattern: 'x'.repeat(MAX_PATTERN_LENGTH + 1), reason: /longer than 100000/ },
  'not a regex': { pattern: '(ab', reason: /not a valid JavaScript regular expression/ },
  'invalid with the u flag only': { pattern: '\\d{3}\\-\\d{4}', reason: /not valid with the u flag/ },
  lookahead: { pattern: 'pass(?=word)', reason: /^lookahead \(\?=word\) is not allowed$/ },
  'negative lookahead': { pattern: 'pass(?!word)', reason: /^negative lookahead/ },
  lookbehind: { pattern: '(?<=\\$)\\d+', reason: /^lookbehind/ },
  'negative lookbehind': { pattern: '(?<!\\$)\\d+', reason: /^negative lookbehind/ },
  'numbered backreference': { pattern: '(a)\\1', reason: /^backreference \\1 is not allowed$/ },
  'named backreference': { pattern: '(?<word>a)\\k<word>', reason: /^backreference \\k<word>/ },
  'nested quantifier (a+)+': {
    pattern: '(a+)+',
    reason: /^nested quantifier \(a\+\)\+ can backtrack catastrophically$/,
  },
  'nested quantifier (\\d*)*': { pattern: '(\\d*)*', reason: /^nested quantifier \(\\d\*\)\*/ },
  'nested quantifier (a{2,})+': { pattern: '(a{2,})+', reason: /^nested quantifier \(a\{2,\}\)\+/ },
  'overlapping alternation (a|a)*': { pattern: '(a|a)*', reason: /^alternation \(a\|a\)\* has alternatives/ },
  'overlapping alternation (a|ab)*': { pattern: '(a|ab)*', reason: /^alternation \(a\|ab\)\*/ },
  'alternation with an empty alternative': { pattern: 'x(?:a|b?)*y', reason: /^alternation \(\?:a\|b\?\)\*/ },
  // recheck calls these safe (bounded repetition is constant work to its automaton); V8 takes
  // minutes on (?:a|a){1,25}b over 40 characters.
  'overlapping alternation under a bounded repetition': {
    pattern: '(?:a|a){1,25}b',
    reason: /^alternation \(\?:a\|a\)\{1,25\}/,
  },
  'nested bounded quantifiers': {
    pattern: '(a{1,9}){1,9}b',
    reason: /^nested quantifier \(a\{1,9\}\)\{1,9\}/,
  },
  'a repeated group with a variable count inside (even a bounded one)': {
    pattern: '\\b(?:\\d{1,3}\\.){3}\\d{1,3}\\b',
    reason: /^nested quantifier/,
  },
  'adjacent repetitions that split the same text': {
    pattern: 'a{0,30}a{0,30}b',
    reason: /^adjacent repetitions a\{0,30\}a\{0,30\} can split the same text/,
  },
  'adjacent unbounded repetitions': { pattern: '\\w+\\s?\\w+', reason: /^adjacent repetitions/ },
  'a repetition of something that can match empty text': {
    pattern: 'x(?:a?b?){1,20}',
    reason: /^repetition \(\?:a\?b\?\)\{1,20\} of something that can match empty text/,
  },
  'matches empty text': { pattern: 'a*', reason: /can match empty text/ },
  'polynomial (recheck)': {
    pattern: '[\\w.+-]+@[\\w-]+\\.[\\w.-]+',
    reason: /can backtrack catastrophically \(2nd degree polynomial time\)/,
  },
  'nested too deeply': {
    pattern: `${'(?:'.repeat(10_000)}a${')'.repeat(10_000)}`,
    reason: /nested too deeply/,
  },
};

describe('custom filter patterns: save-time safety', () => {
  for (const [name, pattern] of Object.entries(safe)) {
    it(`accepts ${name}: ${pattern}`, async () => {
      assert.deepEqual(checkCustomPattern(pattern), { ok: true });
      assert.deepEqual(await checkCustomPatternAsync(pattern), { ok: true });
      // The runtime compiles it with these flags.
      assert.ok(new RegExp(pattern, 'gu'));
    });
  }

  for (const [name, { pattern, reason }] of Object.entries(refused)) {
    it(`refuses ${name}`, async () => {
      const verdict = checkCustomPattern(pattern);
      assert.equal(verdict.ok, false);
      if (!verdict.ok) assert.match(verdict.reason, reason);
      assert.deepEqual(await checkCustomPatternAsync(pattern), verdict);
    });
  }

  it('refuses the usual unbounded email regex (quadratic when searched), which is why the builtin email filter exists', () => {
    const verdict = checkCustomPattern('[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}');
    assert.equal(verdict.ok, false);
    if (!verdict.ok) assert.match(verdict.reason, /adjacent repetitions|polynomial/);
  });

  it('names the first refused pattern of a save, cheap rules before any analysis', async () => {
    const checker = createPatternChecker();
    assert.equal(await checker.firstRefusal(['\\d{3}', 'secret']), null);
    const refusal = await checker.firstRefusal(['[\\w.+-]+@[\\w-]+\\.[\\w.-]+', 'x(?=y)']);
    // The lookahead is found without analysing the first pattern.
    assert.deepEqual(refusal, { index: 1, reason: 'lookahead (?=y) is not allowed' });
  });

  it('bounds the time one save spends, and remembers patterns proved before', async () => {
    let clock = 0;
    let step = 0;
    const checker = createPatternChecker({
      now: () => {
        clock += step;
        return clock;
      },
    });
    assert.equal(await checker.firstRefusal(['AKIA[0-9A-Z]{16}']), null);
    // From now on every look at the clock finds the save's budget spent.
    step = 20_000;
    const refusal = await checker.firstRefusal(['ghp_[A-Za-z0-9]{36}']);
    assert.equal(refusal?.index, 0);
    assert.match(refusal?.reason ?? '', /time allowed for one save/);
    // Proved before: no analysis, so no time needed.
    assert.equal(await checker.firstRefusal(['AKIA[0-9A-Z]{16}']), null);
  });
});

describe('the structure check stays cheap on huge patterns', () => {
  it('refuses a pattern of 50,000 optional characters (its comparisons are bounded)', () => {
    let pattern = '';
    for (let index = 0; index < 49_990; index += 1)
      pattern += `${String.fromCharCode(0x4e00 + (index % 20_000))}?`;
    // Before its comparisons were bounded this took ~27 s on the event loop; now a fraction of that.
    const verdict = checkCustomPattern(`${pattern}Z0`);
    assert.equal(verdict.ok, false);
  });
});
