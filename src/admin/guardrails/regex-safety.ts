import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { checkSync as CheckSync, Diagnostics } from 'recheck';
import { createRecheckRunner, type RecheckRunner } from './recheck-runner.js';
import { findStructuralProblem } from './regex-structure.js';

export type PatternVerdict = { ok: true } | { ok: false; reason: string };

export const MAX_PATTERN_LENGTH = 100_000;
/**
 * How the content-filter engine compiles custom patterns. `u` because prompts are Unicode text: `.`
 * and classes then match whole characters (never half a surrogate pair that a redaction would cut),
 * and `\p{…}` works. Its strictness (escaping a non-syntax character such as `\-` is an error) is
 * explained in the refusal.
 */
export const CUSTOM_FILTER_FLAGS = 'gu';
/**
 * recheck's limit per pattern. Measured on typical filters on an idle 2-core machine: the automaton
 * checker answers in 1–30 ms, the fuzzer (used once repetition counts add up past 30, e.g.
 * `[a-zA-Z0-9]{48}`) in 40–300 ms, and it needs 1.3–1.7 s to convict a pattern the automaton cannot
 * decide; at load average 14 the fuzzer took 0.8–1.2 s on the OpenAI key pattern. Past the limit
 * the pattern is refused as not proved safe.
 */
export const RECHECK_TIMEOUT_MS = 3_000;

const refused = (reason: string): PatternVerdict => ({ ok: false, reason });
const ANALYSIS_FAILED = refused(
  'the pattern could not be proved safe from catastrophic backtracking (the analysis failed)',
);

/** Rules that need no ReDoS analysis: length, compilation with the runtime flags, structure. */
function quickVerdict(pattern: string): PatternVerdict | null {
  if (pattern.length === 0) return refused('the pattern is empty');
  if (pattern.length > MAX_PATTERN_LENGTH) {
    return refused(`the pattern is longer than ${MAX_PATTERN_LENGTH} characters`);
  }
  try {
    new RegExp(pattern, CUSTOM_FILTER_FLAGS);
  } catch (error) {
    // V8 repeats the whole pattern in its message; only the part after the last colon says why.
    const why =
      String((error as Error).message)
        .split(': ')
        .pop() ?? 'invalid';
    let withoutUnicode = true;
    try {
      new RegExp(pattern);
    } catch {
      withoutUnicode = false;
    }
    return refused(
      withoutUnicode
        ? `the pattern is not valid with the u flag (${why}): escape only the syntax characters ^ $ \\ . * + ? ( ) [ ] { } | / and write any other character unescaped`
        : `the pattern is not a valid JavaScript regular expression (${why})`,
    );
  }
  const problem = findStructuralProblem(pattern);
  return problem ? refused(problem) : null;
}

function verdictOf(pattern: string, diagnostics: Diagnostics): PatternVerdict {
  if (diagnostics.status === 'safe') return { ok: true };
  if (diagnostics.status === 'vulnerable') {
    const complexity =
      diagnostics.complexity.type === 'exponential'
        ? 'exponential'
        : diagnostics.complexity.summary.replace(' (fuzz)', '');
    const hotspot = diagnostics.hotspot.find((spot) => spot.temperature === 'heat') ?? diagnostics.hotspot[0];
    const where = hotspot ? ` near ${pattern.slice(hotspot.start, hotspot.end).slice(0, 60)}` : '';
    return refused(`the pattern can backtrack catastrophically (${complexity} time)${where}`);
  }
  const kind = diagnostics.error.kind;
  return refused(
    kind === 'timeout' || kind === 'cancel'
      ? 'the pattern could not be proved safe from catastrophic backtracking in the time allowed'
      : 'the pattern could not be proved safe from catastrophic backtracking (the analyser does not support it)',
  );
}

/**
 * Whether a custom filter pattern may be saved (reference §4.2): compiles with the runtime flags, no
 * lookaround or backreference, no construct known to backtrack catastrophically (regex-structure.ts),
 * and proved free of exponential and polynomial backtracking by recheck. Synchronous, for tools and tests: it blocks the
 * calling thread for up to RECHECK_TIMEOUT_MS, and recheck's shared agent may keep computing after it
 * answered (see recheck-runner.ts); the API uses `checkCustomPatternAsync`.
 */
export function checkCustomPattern(pattern: string): PatternVerdict {
  const quick = quickVerdict(pattern);
  if (quick) return quick;
  try {
    // recheck takes ~33 MB of memory: loaded only by the tools and tests that use this entry point.
    const { checkSync } = createRequire(import.meta.url)('recheck') as { checkSync: typeof CheckSync };
    return verdictOf(pattern, checkSync(pattern, CUSTOM_FILTER_FLAGS, { timeout: RECHECK_TIMEOUT_MS }));
  } catch {
    return ANALYSIS_FAILED;
  }
}

let sharedRunner: RecheckRunner | null = null;
const defaultRunner = (): RecheckRunner => {
  sharedRunner ??= createRecheckRunner();
  return sharedRunner;
};

/** recheck's verdict; `definite` is false when it could not decide (time, unsupported syntax). */
async function analyse(
  runner: RecheckRunner,
  pattern: string,
  timeoutMs: number,
): Promise<{ verdict: PatternVerdict; definite: boolean }> {
  try {
    const diagnostics = await runner.check(
      pattern,
      CUSTOM_FILTER_FLAGS,
      Math.min(RECHECK_TIMEOUT_MS, timeoutMs),
    );
    return { verdict: verdictOf(pattern, diagnostics), definite: diagnostics.status !== 'unknown' };
  } catch {
    return { verdict: ANALYSIS_FAILED, definite: false };
  }
}

/**
 * The same verdict without blocking the event loop: the analysis runs in a process of its own,
 * killed at the time limit.
 */
export async function checkCustomPatternAsync(pattern: string): Promise<PatternVerdict> {
  return quickVerdict(pattern) ?? (await analyse(defaultRunner(), pattern, RECHECK_TIMEOUT_MS)).verdict;
}

/** Total time one save may spend proving patterns safe; patterns proved before are remembered. */
export const SAVE_BUDGET_MS = 15_000;
const REMEMBERED_VERDICTS = 1_000;

/**
 * Checks the patterns of one save within SAVE_BUDGET_MS, cheap rules first so a plain mistake is
 * reported at once. Definite verdicts are remembered (by hash: patterns can be 100 KB), so a PATCH
 * that sends the full list again, or a retry after running out of time, does not analyse them again.
 */
export function createPatternChecker(options: { now?: () => number; runner?: RecheckRunner } = {}) {
  const now = options.now ?? (() => performance.now());
  const runner = options.runner ?? defaultRunner();
  const remembered = new Map<string, PatternVerdict>();
  const keyOf = (pattern: string) => createHash('sha256').update(pattern).digest('base64');

  return {
    async firstRefusal(patterns: readonly string[]): Promise<{ index: number; reason: string } | null> {
      for (const [index, pattern] of patterns.entries()) {
        const quick = quickVerdict(pattern);
        if (quick && !quick.ok) return { index, reason: quick.reason };
      }
      const deadline = now() + SAVE_BUDGET_MS;
      for (const [index, pattern] of patterns.entries()) {
        const key = keyOf(pattern);
        let verdict = remembered.get(key);
        if (!verdict) {
          const left = deadline - now();
          if (left <= 0) {
            return {
              index,
              reason:
                'the pattern could not be proved safe from catastrophic backtracking in the time allowed for one save; save fewer new patterns at once',
            };
          }
          const analysed = await analyse(runner, pattern, left);
          verdict = analysed.verdict;
          if (analysed.definite) {
            if (remembered.size >= REMEMBERED_VERDICTS)
              remembered.delete(remembered.keys().next().value as string);
            remembered.set(key, verdict);
          }
        }
        if (!verdict.ok) return { index, reason: verdict.reason };
      }
      return null;
    },
  };
}

export type PatternChecker = ReturnType<typeof createPatternChecker>;
