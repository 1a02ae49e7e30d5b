import type { CatalogConfig, Config } from '../config/config-schema.js';
import { toEndpointRecord, toModelRecord, toProviderRecord, toZdrRecord } from './catalog-records.js';
import { DEMO_PROVIDER_SLUG, demoModels, demoProvider } from './demo-provider.js';
import type { EndpointLiveStats } from './endpoint-health.js';
import { loadSnapshot } from './load-snapshot.js';
import {
  computeFacts,
  isZeroDataRetention,
  type ModelFacts,
  modelVariant,
  summarizeUsage,
  usageKey,
} from './model-facts.js';
import { providerBase } from './provider-base.js';
import type { Snapshot, SnapshotEndpoint, SnapshotModel, SnapshotProvider } from './snapshot-types.js';

export class CatalogConfigError extends Error {
  override name = 'CatalogConfigError';
}

export interface CatalogModel {
  /** Position in the catalogue order; ties in every sort fall back to it. */
  position: number;
  id: string;
  canonicalSlug: string;
  record: ReturnType<typeof toModelRecord>;
  /** The record serialized once, so list responses are joined from ready strings. */
  json: string;
  facts: ModelFacts;
  endpoints: SnapshotEndpoint[];
}

/** This gateway's live figures for an endpoint id, or null when it has not called that endpoint. */
export type LiveStatsOf = (endpointId: string) => EndpointLiveStats | null;

export interface CatalogProvider extends SnapshotProvider {
  /** The base URL requests go to: the config's override or the provider's public one. */
  effectiveBaseUrl: string;
}

export interface Catalog {
  models: readonly CatalogModel[];
  /** Models by id and by canonical slug (a canonical slug may name several variants). */
  lookup(idOrSlug: string): CatalogModel[];
  providers: readonly CatalogProvider[];
  zdrEndpoints: readonly SnapshotEndpoint[];
  /** Endpoint records, with this gateway's live figures where `live` has them. */
  endpointRecords(models: CatalogModel[], live?: LiveStatsOf): ReturnType<typeof toEndpointRecord>[];
  zdrRecords(live?: LiveStatsOf): ReturnType<typeof toZdrRecord>[];
  providerRecords(): ReturnType<typeof toProviderRecord>[];
}

/** Turns a config model into snapshot rows: the model and its single endpoint on the named provider. */
function configModel(
  entry: CatalogConfig['models'][number],
  provider: SnapshotProvider,
  loadedAt: number,
): { model: SnapshotModel; endpoint: SnapshotEndpoint } {
  const input = entry.input_modalities ?? ['text'];
  const output = entry.output_modalities ?? ['text'];
  const pricing = {
    prompt: entry.pricing.prompt,
    completion: entry.pricing.completion,
  } as SnapshotModel['pricing'];
  if (entry.pricing.image) pricing.image = entry.pricing.image;
  if (entry.pricing.request) pricing.request = entry.pricing.request;
  const canonical = entry.id.split(':')[0]!;
  const model: SnapshotModel = {
    id: entry.id,
    canonical_slug: canonical,
    hugging_face_id: null,
    name: entry.name,
    created: entry.created ?? loadedAt,
    description: entry.description ?? '',
    context_length: entry.context_length,
    architecture: {
      modality: `${input.join('+')}->${output.join('+')}`,
      input_modalities: input,
      output_modalities: output,
      tokenizer: entry.tokenizer ?? 'Other',
      instruct_type: null,
    },
    pricing,
    top_provider: {
      context_length: entry.context_length,
      max_completion_tokens: entry.max_completion_tokens ?? null,
      is_moderated: false,
    },
    per_request_limits: null,
    supported_parameters: entry.supported_parameters ?? [],
    default_parameters: null,
    supported_voices: null,
    knowledge_cutoff: null,
    expiration_date: null,
    links: { details: `/api/v1/models/${canonical}/endpoints` },
  };
  const endpoint: SnapshotEndpoint = {
    id: `config:${provider.slug}:${entry.id}`,
    model: entry.id,
    model_permaslug: canonical,
    model_name: entry.name,
    provider_slug: provider.slug,
    provider_name: provider.name,
    provider_model_id: entry.provider_model_id,
    adapter: provider.adapter,
    variant: modelVariant(entry.id),
    context_length: entry.context_length,
    max_prompt_tokens: null,
    max_completion_tokens: entry.max_completion_tokens ?? null,
    quantization: entry.quantization ?? null,
    pricing: { ...pricing, discount: 0 },
    supported_parameters: entry.supported_parameters ?? [],
    data_policy: {
      training: provider.data_policy.training,
      retains_prompts: provider.data_policy.retains_prompts,
      retention_days: null,
    },
    status: 0,
    provider_region: null,
    stats: null,
    is_free: entry.pricing.prompt === '0' && entry.pricing.completion === '0',
    can_abort: true,
    is_byok_only: false,
  };
  return { model, endpoint };
}

/**
 * Builds the in-memory catalogue: the snapshot plus the config's providers and models, minus hidden
 * providers, with every model's facts and serialized record computed once.
 */
export function buildCatalog(options: { config: Config; snapshot?: Snapshot; now: Date }): Catalog {
  const { config } = options;
  const snapshot = options.snapshot ?? loadSnapshot(config.catalog.snapshot_dir ?? undefined);
  const providers: SnapshotProvider[] = [...snapshot.providers];
  const knownSlugs = new Set(providers.map((provider) => provider.slug));
  // The built-in demo provider joins like a configured one, unless it is switched off.
  const demoOn = config.providers[DEMO_PROVIDER_SLUG]?.enabled !== false;
  const extraProviders = [...(demoOn ? [demoProvider] : []), ...config.catalog.providers];
  const extraModels = [...(demoOn ? demoModels : []), ...config.catalog.models];
  const offset = demoOn ? 1 : 0;
  const modelOffset = demoOn ? demoModels.length : 0;
  extraProviders.forEach((entry, position) => {
    const index = position - offset;
    if (knownSlugs.has(entry.slug)) {
      throw new CatalogConfigError(
        `catalog.providers[${index}].slug: provider "${entry.slug}" already exists`,
      );
    }
    knownSlugs.add(entry.slug);
    providers.push({
      slug: entry.slug,
      name: entry.name,
      adapter: entry.adapter ?? 'OpenAIAdapter',
      base_url: entry.base_url,
      headquarters: entry.headquarters ?? null,
      data_policy: { training: entry.training ?? false, retains_prompts: entry.retains_prompts ?? false },
      privacy_policy_url: entry.privacy_policy_url ?? null,
      terms_of_service_url: entry.terms_of_service_url ?? null,
      status_page_url: entry.status_page_url ?? null,
    });
  });
  // Endpoints of a provider missing from providers.json (the snapshot has one) still count as known.
  for (const endpoint of snapshot.endpoints) knownSlugs.add(providerBase(endpoint.provider_slug));

  const hidden = new Set<string>();
  config.catalog.hidden_providers.forEach((slug, index) => {
    if (!knownSlugs.has(slug))
      throw new CatalogConfigError(`catalog.hidden_providers[${index}]: unknown provider "${slug}"`);
    hidden.add(slug);
  });
  for (const [slug, settings] of Object.entries(config.providers)) {
    if (settings.enabled === false) hidden.add(slug);
  }

  const models = [...snapshot.models];
  const endpoints = [...snapshot.endpoints];
  const ids = new Set(models.map((model) => model.id));
  const loadedAt = Math.floor(options.now.getTime() / 1000);
  extraModels.forEach((entry, position) => {
    const index = position - modelOffset;
    if (ids.has(entry.id))
      throw new CatalogConfigError(`catalog.models[${index}].id: model "${entry.id}" already exists`);
    const provider = providers.find((candidate) => candidate.slug === entry.provider);
    if (!provider) {
      throw new CatalogConfigError(`catalog.models[${index}].provider: unknown provider "${entry.provider}"`);
    }
    ids.add(entry.id);
    const added = configModel(entry, provider, loadedAt);
    models.push(added.model);
    endpoints.push(added.endpoint);
  });

  const endpointsByModel = new Map<string, SnapshotEndpoint[]>();
  const hiddenEndpointModels = new Set<string>();
  for (const endpoint of endpoints) {
    if (hidden.has(providerBase(endpoint.provider_slug))) {
      hiddenEndpointModels.add(endpoint.model);
      continue;
    }
    endpointsByModel.set(endpoint.model, [...(endpointsByModel.get(endpoint.model) ?? []), endpoint]);
  }
  const usage = summarizeUsage(snapshot.usage);
  const catalogModels: CatalogModel[] = [];
  for (const model of models) {
    const own = endpointsByModel.get(model.id) ?? [];
    // Every provider of this model is hidden: it can no longer be served, so it leaves the list.
    if (own.length === 0 && hiddenEndpointModels.has(model.id)) continue;
    const record = toModelRecord(model);
    const facts = computeFacts({
      model,
      endpoints: own,
      usage: usage.get(usageKey(model.canonical_slug, modelVariant(model.id))),
    });
    catalogModels.push({
      position: catalogModels.length,
      id: model.id,
      canonicalSlug: model.canonical_slug,
      record,
      json: JSON.stringify(record),
      facts,
      endpoints: own,
    });
  }

  const lookupTable = new Map<string, CatalogModel[]>();
  for (const model of catalogModels) {
    for (const key of new Set([model.id, model.canonicalSlug])) {
      lookupTable.set(key, [...(lookupTable.get(key) ?? []), model]);
    }
  }
  const listedModels = new Set(catalogModels.map((model) => model.id));
  const listedEndpoints = endpoints.filter(
    (endpoint) => listedModels.has(endpoint.model) && !hidden.has(providerBase(endpoint.provider_slug)),
  );
  const zdrEndpoints = listedEndpoints.filter(isZeroDataRetention);
  const endpointOrder = new Map(listedEndpoints.map((endpoint, index) => [endpoint, index]));
  const visibleProviders: CatalogProvider[] = providers
    .filter((provider) => !hidden.has(provider.slug))
    .map((provider) => ({
      ...provider,
      effectiveBaseUrl: config.providers[provider.slug]?.base_url ?? provider.base_url,
    }));

  return {
    models: catalogModels,
    lookup: (key) => lookupTable.get(key) ?? [],
    providers: visibleProviders,
    zdrEndpoints,
    endpointRecords: (selected, live) =>
      selected
        .flatMap((model) => model.endpoints)
        .sort((a, b) => (endpointOrder.get(a) ?? 0) - (endpointOrder.get(b) ?? 0))
        .map((endpoint) => toEndpointRecord(endpoint, live?.(endpoint.id) ?? null)),
    zdrRecords: (live) => zdrEndpoints.map((endpoint) => toZdrRecord(endpoint, live?.(endpoint.id) ?? null)),
    providerRecords: () => visibleProviders.map(toProviderRecord),
  };
}
