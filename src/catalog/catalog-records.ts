import type { EndpointLiveStats } from './endpoint-health.js';
import type { SnapshotEndpoint, SnapshotModel, SnapshotProvider } from './snapshot-types.js';

/** Spec 2.2's Model: exactly its fields, in its order. */
export function toModelRecord(model: SnapshotModel) {
  const pricing: Record<string, unknown> = {
    prompt: model.pricing.prompt,
    completion: model.pricing.completion,
    image: typeof model.pricing.image === 'string' ? model.pricing.image : '0',
    request: typeof model.pricing.request === 'string' ? model.pricing.request : '0',
  };
  for (const [key, value] of Object.entries(model.pricing)) {
    if (!(key in pricing) && typeof value === 'string') pricing[key] = value;
  }
  return {
    id: model.id,
    canonical_slug: model.canonical_slug,
    name: model.name,
    description: model.description ?? '',
    created: model.created,
    context_length: model.context_length,
    architecture: {
      input_modalities: model.architecture.input_modalities,
      output_modalities: model.architecture.output_modalities,
      modality: model.architecture.modality,
      tokenizer: model.architecture.tokenizer,
      instruct_type: model.architecture.instruct_type ?? null,
    },
    pricing,
    top_provider: model.top_provider,
    per_request_limits: model.per_request_limits ?? null,
    supported_parameters: model.supported_parameters,
    supported_voices: model.supported_voices ?? null,
    default_parameters: model.default_parameters ?? null,
    knowledge_cutoff: model.knowledge_cutoff ?? null,
    expiration_date: model.expiration_date ?? null,
    links: { details: `/api/v1/models/${model.canonical_slug}/endpoints` },
  };
}

function percentiles(endpoint: SnapshotEndpoint, kind: 'latency' | 'throughput') {
  const stats = endpoint.stats;
  if (!stats) return null;
  return {
    p50: stats[`p50_${kind}`],
    p75: stats[`p75_${kind}`],
    p90: stats[`p90_${kind}`],
    p99: stats[`p99_${kind}`],
  };
}

/** Implicit caching: the provider caches by itself, so it prices cache reads but no cache writes. */
const supportsImplicitCaching = (endpoint: SnapshotEndpoint): boolean =>
  typeof endpoint.pricing.input_cache_read === 'string' && endpoint.pricing.input_cache_write === undefined;

/** The reference's PublicEndpoint, for `/models/{author}/{slug}/endpoints`. */
export function toEndpointRecord(endpoint: SnapshotEndpoint, live: EndpointLiveStats | null = null) {
  return {
    name: `${endpoint.provider_name} | ${endpoint.model_permaslug}`,
    model_id: endpoint.model_permaslug,
    model_name: endpoint.model_name,
    provider_name: endpoint.provider_name,
    tag: endpoint.provider_slug,
    context_length: endpoint.context_length,
    max_completion_tokens: endpoint.max_completion_tokens,
    max_prompt_tokens: endpoint.max_prompt_tokens,
    pricing: {
      ...endpoint.pricing,
      image: typeof endpoint.pricing.image === 'string' ? endpoint.pricing.image : '0',
      request: typeof endpoint.pricing.request === 'string' ? endpoint.pricing.request : '0',
    },
    quantization: endpoint.quantization,
    supported_parameters: endpoint.supported_parameters,
    supports_implicit_caching: supportsImplicitCaching(endpoint),
    status: endpoint.status,
    // The snapshot carries no uptime: it comes from this gateway's own calls, null until there are
    // some. Latency and throughput are this gateway's figures once it has them, else the snapshot's.
    uptime_last_5m: live?.uptime5m ?? null,
    uptime_last_30m: live?.uptime30m ?? null,
    uptime_last_1d: live?.uptime1d ?? null,
    latency_last_30m: live?.latency30m ?? percentiles(endpoint, 'latency'),
    throughput_last_30m: live?.throughput30m ?? percentiles(endpoint, 'throughput'),
  };
}

/** Spec 2.12's ZDR endpoint record. */
export function toZdrRecord(endpoint: SnapshotEndpoint, live: EndpointLiveStats | null = null) {
  const record = toEndpointRecord(endpoint, live);
  return {
    name: record.name,
    model_id: record.model_id,
    model_name: record.model_name,
    provider_name: record.provider_name,
    tag: record.tag,
    quantization: endpoint.quantization ?? 'unknown',
    status: String(endpoint.status),
    context_length: record.context_length,
    // Spec 2.12 has integers here: an endpoint without its own limit is bounded by its context.
    max_completion_tokens: record.max_completion_tokens ?? record.context_length,
    max_prompt_tokens: record.max_prompt_tokens ?? record.context_length,
    pricing: {
      prompt: endpoint.pricing.prompt,
      completion: endpoint.pricing.completion,
      image: record.pricing.image,
      request: record.pricing.request,
    },
    supported_parameters: record.supported_parameters,
    supports_implicit_caching: record.supports_implicit_caching,
    latency_last_30m: record.latency_last_30m,
    throughput_last_30m: record.throughput_last_30m,
    uptime_last_5m: record.uptime_last_5m,
    uptime_last_30m: record.uptime_last_30m,
    uptime_last_1d: record.uptime_last_1d,
  };
}

export function toProviderRecord(provider: SnapshotProvider) {
  return {
    name: provider.name,
    slug: provider.slug,
    privacy_policy_url: provider.privacy_policy_url ?? null,
    terms_of_service_url: provider.terms_of_service_url ?? null,
    status_page_url: provider.status_page_url ?? null,
    headquarters: provider.headquarters ?? null,
  };
}
