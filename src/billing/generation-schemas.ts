import { type TSchema, Type } from 'typebox';
import { storableText } from '../platform/schema-types.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** `?id=`: required, at most 128 characters (ids are `gen-` plus a few dozen). */
export const GenerationQuery = Type.Object(
  {
    id: storableText({ minLength: 1, maxLength: 128, description: 'The generation id (`gen-…`)' }),
  },
  { additionalProperties: false },
);

const Attempt = Type.Object({
  provider: Type.String(),
  provider_name: Type.Optional(Type.String()),
  model: Type.String(),
  endpoint_id: Nullable(Type.String()),
  status: Nullable(Type.Integer()),
  error_type: Nullable(Type.String()),
  latency_ms: Type.Number(),
});

const ProviderResponse = Type.Object({
  provider_name: Type.String(),
  status: Nullable(Type.Integer()),
  latency: Type.Number(),
  endpoint_id: Nullable(Type.String()),
  model_permaslug: Type.String(),
  is_byok: Type.Boolean(),
});

/**
 * The reference gateway's `GenerationResponse` (every required field, null where we have nothing to
 * say), plus our extensions after `workspace_id`: the outcome, the requested model, the raw attempts,
 * end-user `user`, `metadata`, `trace`, and `cost_details` as in a response's usage.
 */
export const GenerationRecordSchema = Type.Object({
  id: Type.String(),
  request_id: Type.Null(),
  upstream_id: Nullable(Type.String()),
  total_cost: Type.Number({ description: 'USD, BYOK included' }),
  cache_discount: Type.Null(),
  upstream_inference_cost: Nullable(Type.Number({ description: 'USD paid to the provider directly (BYOK)' })),
  created_at: Type.String({ format: 'date-time' }),
  model: Type.String({ description: 'The model that answered, or the requested one when none did' }),
  app_id: Type.Null(),
  streamed: Type.Boolean(),
  cancelled: Type.Boolean(),
  provider_name: Nullable(Type.String()),
  latency: Type.Number({ description: 'Milliseconds from request start to end' }),
  moderation_latency: Type.Null(),
  generation_time: Nullable(Type.Number({ description: 'Milliseconds from upstream dispatch to end' })),
  finish_reason: Nullable(Type.String({ description: 'stop, length, tool_calls, content_filter or error' })),
  native_finish_reason: Nullable(Type.String()),
  service_tier: Type.Null(),
  tokens_prompt: Type.Integer(),
  tokens_completion: Type.Integer(),
  native_tokens_prompt: Type.Integer(),
  native_tokens_completion: Type.Integer(),
  native_tokens_completion_images: Nullable(
    Type.Integer({
      description: 'Output tokens of generated images; null on records from before they were counted',
    }),
  ),
  native_tokens_reasoning: Type.Integer(),
  native_tokens_cached: Type.Integer(),
  native_tokens_cache_write: Type.Integer(),
  num_media_prompt: Type.Null(),
  num_input_audio_prompt: Type.Null(),
  num_media_completion: Type.Null(),
  num_search_results: Type.Null(),
  num_fetches: Type.Null(),
  web_search_engine: Type.Null(),
  origin: Type.String({ description: 'The HTTP-Referer header, or empty' }),
  usage: Type.Number({ description: 'USD drawn from credits (0 for BYOK)' }),
  is_byok: Type.Boolean(),
  external_user: Nullable(Type.String()),
  api_type: Type.Union([Type.Literal('completions'), Type.Literal('embeddings')]),
  preset_id: Type.Null(),
  router: Type.Null(),
  provider_responses: Type.Array(ProviderResponse),
  user_agent: Type.Null(),
  http_referer: Nullable(Type.String()),
  data_region: Type.Literal('global'),
  workspace_id: Type.String(),
  response_cache_source_id: Type.Null(),
  session_id: Nullable(Type.String()),
  // Our extensions.
  request_api: Type.Union([
    Type.Literal('responses'),
    Type.Literal('chat-completions'),
    Type.Literal('messages'),
    Type.Literal('embeddings'),
  ]),
  status: Type.Union([
    Type.Literal('completed'),
    Type.Literal('incomplete'),
    Type.Literal('failed'),
    Type.Literal('cancelled'),
  ]),
  http_status: Type.Integer(),
  error_type: Nullable(Type.String()),
  error_message: Nullable(Type.String()),
  requested_model: Nullable(Type.String()),
  provider_slug: Nullable(Type.String()),
  first_token_latency: Nullable(
    Type.Number({ description: 'Milliseconds from request start to first output' }),
  ),
  user: Nullable(Type.String()),
  app_title: Nullable(Type.String()),
  metadata: Nullable(Type.Record(Type.String(), Type.Unknown())),
  trace: Nullable(Type.Record(Type.String(), Type.Unknown())),
  attempts: Type.Array(Attempt),
  cost_details: Type.Object({
    upstream_inference_cost: Nullable(Type.Number()),
    upstream_inference_prompt_cost: Type.Number(),
    upstream_inference_completions_cost: Type.Number(),
  }),
});
