import { Type } from 'typebox';

const Prices = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Decimal strings, USD per token or unit',
});
const Percentiles = Type.Union([
  Type.Object({ p50: Type.Number(), p75: Type.Number(), p90: Type.Number(), p99: Type.Number() }),
  Type.Null(),
]);
const NullableNumber = Type.Union([Type.Number(), Type.Null()]);
const NullableInteger = Type.Union([Type.Integer(), Type.Null()]);

/** Spec 2.2. */
export const ModelSchema = Type.Object({
  id: Type.String(),
  canonical_slug: Type.String(),
  name: Type.String(),
  description: Type.String(),
  created: Type.Integer(),
  context_length: Type.Integer(),
  architecture: Type.Object({
    input_modalities: Type.Array(Type.String()),
    output_modalities: Type.Array(Type.String()),
    modality: Type.String(),
    tokenizer: Type.String(),
    instruct_type: Type.Union([Type.String(), Type.Null()]),
  }),
  pricing: Prices,
  top_provider: Type.Object({
    context_length: NullableInteger,
    is_moderated: Type.Boolean(),
    max_completion_tokens: NullableInteger,
  }),
  per_request_limits: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  supported_parameters: Type.Array(Type.String()),
  supported_voices: Type.Union([Type.Array(Type.String()), Type.Null()]),
  default_parameters: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  knowledge_cutoff: Type.Union([Type.String(), Type.Null()]),
  expiration_date: Type.Union([Type.String(), Type.Null()]),
  links: Type.Object({ details: Type.String() }),
});

const endpointFields = {
  name: Type.String(),
  model_id: Type.String(),
  model_name: Type.String(),
  provider_name: Type.String(),
  tag: Type.String(),
  context_length: Type.Integer(),
  max_completion_tokens: NullableInteger,
  max_prompt_tokens: NullableInteger,
  pricing: Prices,
  supported_parameters: Type.Array(Type.String()),
  supports_implicit_caching: Type.Boolean(),
  uptime_last_5m: NullableNumber,
  uptime_last_30m: NullableNumber,
  uptime_last_1d: NullableNumber,
  latency_last_30m: Percentiles,
  throughput_last_30m: Percentiles,
};

/** The reference's PublicEndpoint. */
export const EndpointSchema = Type.Object({
  ...endpointFields,
  quantization: Type.Union([Type.String(), Type.Null()]),
  status: Type.Integer(),
});

/** Spec 2.12. */
export const ZdrEndpointSchema = Type.Object({
  ...endpointFields,
  max_completion_tokens: Type.Integer(),
  max_prompt_tokens: Type.Integer(),
  quantization: Type.String(),
  status: Type.String(),
});

export const ProviderSchema = Type.Object({
  name: Type.String(),
  slug: Type.String(),
  privacy_policy_url: Type.Union([Type.String(), Type.Null()]),
  terms_of_service_url: Type.Union([Type.String(), Type.Null()]),
  status_page_url: Type.Union([Type.String(), Type.Null()]),
  headquarters: Type.Union([Type.String(), Type.Null()]),
});

export const EndpointsParams = Type.Object({
  author: Type.String({ minLength: 1, maxLength: 200 }),
  slug: Type.String({ minLength: 1, maxLength: 200 }),
});
