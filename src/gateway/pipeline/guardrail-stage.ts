import type { GenerationRequest } from '../../spec/generation-request.js';
import type { EffectivePolicy } from '../policy/effective-policy.js';
import {
  applyContentFilters,
  type CompiledContentFilters,
  compileContentFilters,
} from './content-filters/content-filters.js';

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
 * Runs the applicable guardrails' content filters over the prompt: null when nothing matched;
 * otherwise the redacted request, or the block, with the pipeline entry that reports it.
 */
export function runContentFilters(
  policy: EffectivePolicy,
  request: PromptRequest,
): ContentFilterStage | null {
  const filters = policy.filters;
  if (!filters) return null;
  let filter = compiled.get(policy);
  if (!filter) {
    filter = compileContentFilters({ builtins: filters.builtins, custom: filters.custom });
    compiled.set(policy, filter);
  }
  // The engine reads the prompt only; the model id is not part of what it scans.
  const scanned = { ...request, model: '' } as GenerationRequest;
  const outcome = applyContentFilters(filter, scanned);
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
