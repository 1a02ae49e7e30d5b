import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { type Static, Type } from 'typebox';
import type { GenerationAttempt, GenerationLog, GenerationRecordRow } from '../billing/generation-log.js';
import { GenerationQuery, GenerationRecordSchema } from '../billing/generation-schemas.js';
import { nanosToUsd } from '../billing/money.js';
import { notFound } from '../errors/app-error.js';
import { ErrorSchema } from '../errors/error-schema.js';
import { reportedFinishReason } from '../spec/finish-reason.js';
import type { Principal } from './pipeline/authenticate.js';

type GenerationRecord = Static<typeof GenerationRecordSchema>;

/**
 * A key sees its own generations; a management key sees every generation of its workspace. Anything
 * else is indistinguishable from an unknown id, so ids cannot be probed with another key.
 */
function visibleTo(row: GenerationRecordRow, principal: Principal): boolean {
  if (row.key_hash === principal.keyHash) return true;
  return principal.isManagement && row.workspace_id === principal.workspaceId;
}

function parseJson<T>(text: string | null, fallback: T): T {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/** A stored row in the reference's `GenerationResponse` shape (USD numbers, booleans, ISO time). */
export function generationRecord(row: GenerationRecordRow): GenerationRecord {
  const byok = row.is_byok === 1;
  const attempts = parseJson<GenerationAttempt[]>(row.attempts, []);
  return {
    id: row.id,
    request_id: null,
    upstream_id: row.upstream_id,
    total_cost: nanosToUsd(row.cost_nanos),
    cache_discount: null,
    upstream_inference_cost: byok ? nanosToUsd(row.cost_nanos) : null,
    created_at: row.created_at,
    model: row.model ?? row.requested_model ?? '',
    app_id: null,
    streamed: row.streamed === 1,
    cancelled: row.cancelled === 1,
    provider_name: row.provider_name,
    latency: row.latency_ms,
    moderation_latency: null,
    generation_time: row.generation_time_ms,
    finish_reason: reportedFinishReason(row.finish_reason),
    native_finish_reason: row.native_finish_reason,
    service_tier: null,
    // We count no tokens of our own: the provider's (native) counts are the only counts.
    tokens_prompt: row.tokens_prompt,
    tokens_completion: row.tokens_completion,
    native_tokens_prompt: row.tokens_prompt,
    native_tokens_completion: row.tokens_completion,
    native_tokens_completion_images: row.tokens_completion_images,
    native_tokens_reasoning: row.tokens_reasoning,
    native_tokens_cached: row.tokens_cached,
    native_tokens_cache_write: row.tokens_cache_write,
    num_media_prompt: null,
    num_input_audio_prompt: null,
    num_media_completion: null,
    num_search_results: null,
    num_fetches: null,
    web_search_engine: null,
    origin: row.app_referer ?? '',
    usage: byok ? 0 : nanosToUsd(row.cost_nanos),
    is_byok: byok,
    external_user: row.user_id,
    api_type: row.api_type === 'embeddings' ? 'embeddings' : 'completions',
    preset_id: null,
    router: null,
    provider_responses: attempts.map((attempt) => ({
      provider_name: attempt.provider_name ?? attempt.provider,
      status: attempt.status,
      latency: attempt.latency_ms,
      endpoint_id: attempt.endpoint_id,
      model_permaslug: attempt.model,
      is_byok: byok,
    })),
    user_agent: null,
    http_referer: row.app_referer,
    data_region: 'global',
    workspace_id: row.workspace_id,
    response_cache_source_id: null,
    session_id: row.session_id,
    request_api: row.api_type,
    status: row.status,
    http_status: row.http_status,
    error_type: row.error_type,
    error_message: row.error_message,
    requested_model: row.requested_model,
    provider_slug: row.provider_slug,
    first_token_latency: row.first_token_ms,
    user: row.user_id,
    app_title: row.app_title,
    metadata: parseJson<Record<string, unknown> | null>(row.metadata, null),
    trace: parseJson<Record<string, unknown> | null>(row.trace, null),
    attempts,
    cost_details: {
      upstream_inference_cost: byok ? nanosToUsd(row.cost_nanos) : null,
      upstream_inference_prompt_cost: nanosToUsd(row.input_cost_nanos),
      upstream_inference_completions_cost: nanosToUsd(row.output_cost_nanos),
    },
  };
}

/** `GET /generation?id=` (reference `getGeneration`): one generation's metadata, cost and timing. */
export const generationRoutes =
  (log: Pick<GenerationLog, 'find'>): FastifyPluginAsync =>
  async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/generation',
      {
        config: { auth: 'any' },
        schema: {
          tags: ['Generations'],
          summary: 'Request and usage metadata of one generation made with this key (or its workspace)',
          querystring: GenerationQuery,
          response: {
            200: Type.Object({ data: GenerationRecordSchema }),
            400: ErrorSchema,
            401: ErrorSchema,
            404: ErrorSchema,
            429: ErrorSchema,
          },
        },
      },
      async (request) => {
        if (!request.principal) throw new Error('authenticated route without a principal');
        const row = await log.find(request.query.id);
        if (!row || !visibleTo(row, request.principal)) throw notFound('Generation not found');
        return { data: generationRecord(row) };
      },
    );
  };
