import type { GenerationRequest } from '../../spec/generation-request.js';
import type { EffectivePolicy } from '../policy/effective-policy.js';
import { LANGUAGE_SLUGS } from './content-filters/builtin-detectors.js';
import type { ContentFilterThreads } from './content-filters/content-filter-threads.js';
import {
  applyContentFilters,
  type CompiledContentFilters,
  type ContentFilterOutcome,
  compileContentFilters,
} from './content-filters/content-filters.js';
import { applyPromptEdits } from './content-filters/prompt-segments.js';

type PromptRequest = Omit<GenerationRequest, 'model'>;

/** What the content-filter stage did to one request. */
export interface ContentFilterStage {
  /** The request the upstream sees (redactions applied). */
  request: PromptRequest;
  blocked: { message: string; metadata?: Record<string, unknown> } | null;
  redacted: Array<{ filter: string; label: string; count: number }>;
  flagged: Array<{ filter: string; label: string; count: number }>;
  /** The `switchyard_metadata.pipeline` entry (reference §8, type `guardrail`). */
  entry: Record<string, unknown>;
}

/** Compiled once per resolved policy, which the policy cache keeps until the workspace changes. */
const compiled = new WeakMap<EffectivePolicy, CompiledContentFilters>();

/**
 * Prompts of at most this many characters, with no NLP filter, are scanned on the request thread:
 * the regex builtins take ~0.3 ms there (bench/content-filters.ts), about what a thread's round
 * trip costs. Larger ones, and any with an NLP filter, go to a content-filter thread.
 */
export const INLINE_PROMPT_CHARACTERS = 8_192;

/** The characters of prompt text the filters read (`promptText`'s segments), stopping past `limit`. */
function promptCharactersOver(request: PromptRequest, limit: number): boolean {
  let total = request.instructions?.length ?? 0;
  for (const item of request.input) {
    if (item.type === 'message') {
      for (const part of item.content) if (part.type === 'text') total += part.text.length;
    } else total += item.type === 'function-call' ? item.arguments.length : item.output.length;
    if (total > limit) return true;
  }
  return total > limit;
}

/**
 * Runs the applicable guardrails' content filters over the prompt: null when nothing matched;
 * otherwise the redacted request, or the block, with the pipeline entry that reports it. With
 * `threads`, a prompt with an NLP filter or over INLINE_PROMPT_CHARACTERS is scanned in a thread
 * (a failed thread rejects with a ContentFilterThreadError: the request is not sent unscanned).
 */
export async function runContentFilters(
  policy: EffectivePolicy,
  request: PromptRequest,
  threads: ContentFilterThreads | null,
): Promise<ContentFilterStage | null> {
  const filters = policy.filters;
  if (!filters) return null;
  // The engine reads the prompt only; the model id is not part of what it scans.
  const scanned = { ...request, model: '' } as GenerationRequest;
  let outcome: ContentFilterOutcome;
  if (
    threads &&
    (filters.builtins.some((filter) => LANGUAGE_SLUGS.has(filter.slug)) ||
      promptCharactersOver(request, INLINE_PROMPT_CHARACTERS))
  ) {
    const { edits, ...scan } = await threads.scan(filters, scanned);
    outcome = { ...scan, request: applyPromptEdits(scanned, edits) };
  } else {
    let filter = compiled.get(policy);
    if (!filter) {
      filter = compileContentFilters({ builtins: filters.builtins, custom: filters.custom });
      compiled.set(policy, filter);
    }
    outcome = applyContentFilters(filter, scanned);
  }
  if (!outcome.blocked && outcome.redacted.length === 0 && outcome.flagged.length === 0) return null;
  const action = outcome.blocked ? 'blocked' : outcome.redacted.length > 0 ? 'redacted' : 'flagged';
  const labels = [...new Set([...outcome.redacted, ...outcome.flagged].map((match) => match.label))];
  const first = filters.guardrails[0];
  const { model: _model, ...redacted } = outcome.request;
  return {
    request: outcome.request === scanned ? request : (redacted as PromptRequest),
    blocked: outcome.blocked,
    redacted: outcome.redacted,
    flagged: outcome.flagged,
    entry: {
      type: 'guardrail',
      name: 'content-filter',
      summary: outcome.blocked
        ? outcome.blocked.message
        : `${action === 'redacted' ? 'Redacted' : 'Flagged'}: ${labels.join(', ')}`,
      ...(first ? { guardrail_id: first.id, guardrail_scope: first.scope } : {}),
      data: {
        action,
        flagged: outcome.flagged.length > 0,
        guardrails: filters.guardrails.map((guardrail) => ({ id: guardrail.id, scope: guardrail.scope })),
        redacted: outcome.redacted,
        flagged_filters: outcome.flagged,
        // Name and address checks beyond the per-request budget are skipped, never failed.
        ...(outcome.skipped.length > 0 ? { skipped: outcome.skipped } : {}),
      },
    },
  };
}
