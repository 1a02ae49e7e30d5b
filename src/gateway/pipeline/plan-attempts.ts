import { perMillion } from '../../billing/decimal-price.js';
import type { Catalog, CatalogModel } from '../../catalog/catalog.js';
import type { EndpointHealth } from '../../catalog/endpoint-health.js';
import { isZeroDataRetention } from '../../catalog/model-facts.js';
import { providerBase } from '../../catalog/provider-base.js';
import type { SnapshotEndpoint } from '../../catalog/snapshot-types.js';
import type { Config } from '../../config/config-schema.js';
import { AppError, invalidRequest } from '../../errors/app-error.js';
import type { GenerationRequest, OutputModality } from '../../spec/generation-request.js';
import type { UpstreamTarget } from '../../spec/provider-adapter.js';
import type { Percentiles, ProviderPreferences } from '../dialects/dialect.js';
import type { ByokCredential, RoutingRestrictions } from '../policy/effective-policy.js';
import { vendorOf } from '../policy/effective-policy.js';
import { type Protocol, protocolForAdapter, upstreamTargetFor } from '../providers/provider-protocols.js';

/** One endpoint the execution loop may try, with everything needed to call it. */
export interface Candidate {
  model: CatalogModel;
  endpoint: SnapshotEndpoint;
  protocol: Protocol;
  target: UpstreamTarget;
  /** The workspace's BYOK credential this attempt uses, or null for the gateway's own credential. */
  byok: ByokCredential | null;
}

export interface AttemptPlan {
  candidates: Candidate[];
  /** `direct` for one model, `fallback` when a `models` list was given. */
  strategy: 'direct' | 'fallback';
  /** How many endpoints served the requested models before preferences filtered them. */
  totalEndpoints: number;
}

/** What kind of output the route serves: chat-style text, or embeddings. */
export type OutputKind = 'text' | 'embeddings';

export interface PlanInput {
  models: string[];
  provider: ProviderPreferences | null;
  /** The request's features, for `require_parameters`, soft capability preferences and max output. */
  request: Omit<GenerationRequest, 'model'> | null;
  outputKind: OutputKind;
  /** Sticky routing: the endpoint this session last used successfully, when known. */
  stickyEndpointId: string | null;
  /** What the applicable guardrails allow (models, providers, ZDR per vendor); null: no limits. */
  restrictions?: RoutingRestrictions | null;
  /** The workspace's BYOK credentials this key may use, by provider slug, in the order to try them. */
  byok?: ReadonlyMap<string, ByokCredential[]> | null;
}

const GUARDRAIL_REASON = 'the guardrails that apply to this key';

const DEMO_TARGET: UpstreamTarget = { baseUrl: 'builtin:demo', apiKey: null };

/** Service-tier variants (`openai/priority`, `…/flex`) only match when named exactly. */
const isTierVariant = (slug: string): boolean => /\/(priority|flex|batch)$/.test(slug);

/**
 * Whether a preference entry names this endpoint's provider: the exact slug, its base slug (which
 * covers regional variants but not tier variants), or the display name, case-insensitively.
 */
function namesProvider(entry: string, endpoint: SnapshotEndpoint): boolean {
  const wanted = entry.trim().toLowerCase();
  const slug = endpoint.provider_slug.toLowerCase();
  if (wanted === slug || wanted === endpoint.provider_name.toLowerCase()) return true;
  return wanted === providerBase(slug) && !isTierVariant(slug);
}

/** The parameters a request uses, named as the catalogue's `supported_parameters` names them. */
function usedParameters(request: Omit<GenerationRequest, 'model'>): string[] {
  const used: string[] = [];
  if (request.tools?.length) used.push('tools');
  if (request.toolChoice !== undefined) used.push('tool_choice');
  if (request.maxOutputTokens !== undefined) used.push('max_tokens');
  if (request.temperature !== undefined) used.push('temperature');
  if (request.topP !== undefined) used.push('top_p');
  if (request.topK !== undefined) used.push('top_k');
  if (request.frequencyPenalty !== undefined) used.push('frequency_penalty');
  if (request.presencePenalty !== undefined) used.push('presence_penalty');
  if (request.stop?.length) used.push('stop');
  if (request.seed !== undefined) used.push('seed');
  if (request.responseFormat && request.responseFormat.type !== 'text') {
    used.push(request.responseFormat.type === 'json_schema' ? 'structured_outputs' : 'response_format');
  }
  if (request.reasoning) used.push('reasoning');
  return used;
}

/** Prompt plus completion price per token: the figure price sorts and weights use. */
function unitPrice(endpoint: SnapshotEndpoint): number {
  const prompt = Number(endpoint.pricing.prompt);
  const completion = Number(endpoint.pricing.completion);
  const total = (Number.isFinite(prompt) ? prompt : 0) + (Number.isFinite(completion) ? completion : 0);
  return Math.max(0, total);
}

const percentileOf = (value: number | Percentiles): Array<[keyof Percentiles, number]> =>
  typeof value === 'number'
    ? [['p50', value]]
    : (Object.entries(value) as Array<[keyof Percentiles, number]>).filter(([, v]) => typeof v === 'number');

/**
 * Chooses and orders the endpoints a request may try (reference §7): the endpoints of each
 * requested model that this gateway can reach and holds credentials for, filtered by the hard
 * preferences, ordered by `order`, `sort` or the default price-weighted shuffle, with soft
 * preferences and cooling-down endpoints moved back and the session's endpoint moved forward.
 */
export function createAttemptPlanner(options: {
  catalog: Catalog;
  config: Config;
  health: EndpointHealth;
  random?: () => number;
}) {
  const { catalog, config, health } = options;
  const random = options.random ?? Math.random;
  const targets = new Map<string, UpstreamTarget | null>();
  const baseUrls = new Map(catalog.providers.map((provider) => [provider.slug, provider.effectiveBaseUrl]));

  function targetFor(endpoint: SnapshotEndpoint, protocol: Protocol): UpstreamTarget | null {
    if (protocol === 'demo') return DEMO_TARGET;
    let target = targets.get(endpoint.provider_slug);
    if (target === undefined) {
      const baseUrl =
        baseUrls.get(endpoint.provider_slug) ?? baseUrls.get(providerBase(endpoint.provider_slug));
      target = baseUrl ? upstreamTargetFor({ providerSlug: endpoint.provider_slug, baseUrl, config }) : null;
      targets.set(endpoint.provider_slug, target);
    }
    return target;
  }

  /** The BYOK credentials usable for an endpoint: its provider's (or base provider's), for this model. */
  function byokFor(
    byok: ReadonlyMap<string, ByokCredential[]> | null,
    endpoint: SnapshotEndpoint,
    model: CatalogModel,
  ): ByokCredential[] {
    if (!byok || byok.size === 0) return [];
    const listed = byok.get(endpoint.provider_slug) ?? byok.get(providerBase(endpoint.provider_slug)) ?? [];
    return listed.filter(
      (credential) => !credential.allowedModels || namesModel(credential.allowedModels, model),
    );
  }

  function byokTarget(endpoint: SnapshotEndpoint, credential: ByokCredential): UpstreamTarget {
    const base = providerBase(endpoint.provider_slug);
    const baseUrl =
      config.providers[base]?.base_url ?? baseUrls.get(endpoint.provider_slug) ?? baseUrls.get(base) ?? '';
    return { baseUrl, apiKey: credential.secret };
  }

  /**
   * One candidate per credential of an endpoint: the workspace's BYOK credentials first (by
   * `sort_order`), then the gateway's own, then BYOK credentials marked `is_fallback`.
   */
  function withByok(candidate: Candidate, byok: ReadonlyMap<string, ByokCredential[]> | null): Candidate[] {
    if (candidate.protocol === 'demo') return [candidate];
    const credentials = byokFor(byok, candidate.endpoint, candidate.model);
    if (credentials.length === 0) return [candidate];
    const platform = candidate.byok === null ? candidate : null;
    const variant = (credential: ByokCredential): Candidate => ({
      ...candidate,
      target: byokTarget(candidate.endpoint, credential),
      byok: credential,
    });
    return [
      ...credentials.filter((credential) => !credential.isFallback).map(variant),
      ...(platform ? [platform] : []),
      ...credentials.filter((credential) => credential.isFallback).map(variant),
    ];
  }

  /**
   * A model's endpoints, each id once. The snapshot lists 79 endpoints twice under one id (two
   * captures of their live stats); the catalogue shows them as given, but one endpoint is one
   * candidate, or a failing one is tried twice and the price weighting counts it double. The later
   * capture is kept, in the first one's place. Worked out once per model.
   */
  const distinct = new WeakMap<CatalogModel, readonly SnapshotEndpoint[]>();
  function distinctEndpoints(model: CatalogModel): readonly SnapshotEndpoint[] {
    let endpoints = distinct.get(model);
    if (!endpoints) {
      const byId = new Map<string, SnapshotEndpoint>();
      for (const endpoint of model.endpoints) byId.set(endpoint.id, endpoint);
      endpoints = byId.size === model.endpoints.length ? model.endpoints : [...byId.values()];
      distinct.set(model, endpoints);
    }
    return endpoints;
  }

  function resolveModel(slug: string, field: string): CatalogModel {
    const found = catalog.lookup(slug);
    const model = found.find((candidate) => candidate.id === slug) ?? found[0];
    if (!model) throw invalidRequest(`Invalid request parameters: ${field} names an unknown model "${slug}"`);
    return model;
  }

  /**
   * The 400 for a model that cannot produce what the request needs, or null when it can: embeddings,
   * the output `modalities` named (each of them: images only from a model whose catalogue record
   * lists `image` among its output modalities), else text.
   */
  function outputRefusal(
    model: CatalogModel,
    kind: OutputKind,
    modalities: readonly OutputModality[] | undefined,
  ): AppError | null {
    const outputs = model.record.architecture.output_modalities as string[];
    if (kind === 'embeddings' || !modalities) {
      const needed = kind === 'embeddings' ? 'embeddings' : 'text';
      return outputs.includes(needed)
        ? null
        : invalidRequest(`Invalid request parameters: model "${model.id}" does not produce ${needed}`);
    }
    const missing = modalities.find((modality) => !outputs.includes(modality));
    return missing === undefined
      ? null
      : invalidRequest(
          `Invalid request parameters: body.modalities asks for ${missing} output, which model "${model.id}" does not produce`,
        );
  }

  /** Default order: a weighted shuffle where an endpoint's weight is the inverse square of its price. */
  function priceWeighted(candidates: Candidate[]): Candidate[] {
    const keyed = candidates.map((candidate) => {
      const price = Math.max(unitPrice(candidate.endpoint), 1e-12);
      const weight = 1 / (price * price);
      // Efraimidis–Spirakis: sorting by U^(1/w) descending samples without replacement by weight.
      return { candidate, key: Math.log(Math.max(random(), Number.MIN_VALUE)) / weight };
    });
    return keyed.sort((a, b) => b.key - a.key).map((entry) => entry.candidate);
  }

  function liveFigure(endpoint: SnapshotEndpoint, kind: 'latency' | 'throughput'): Percentiles | null {
    const live = health.stats(endpoint.id);
    const fromLive = kind === 'latency' ? live?.latency5m : live?.throughput5m;
    // Latency is kept in milliseconds (the catalogue's unit); preferences speak seconds.
    if (fromLive && kind === 'latency')
      return {
        p50: fromLive.p50 / 1000,
        p75: fromLive.p75 / 1000,
        p90: fromLive.p90 / 1000,
        p99: fromLive.p99 / 1000,
      };
    if (fromLive) return fromLive;
    const stats = endpoint.stats;
    if (!stats) return null;
    return kind === 'latency'
      ? {
          p50: stats.p50_latency / 1000,
          p75: stats.p75_latency / 1000,
          p90: stats.p90_latency / 1000,
          p99: stats.p99_latency / 1000,
        }
      : {
          p50: stats.p50_throughput,
          p75: stats.p75_throughput,
          p90: stats.p90_throughput,
          p99: stats.p99_throughput,
        };
  }

  function sortBy(candidates: Candidate[], by: 'price' | 'throughput' | 'latency'): Candidate[] {
    const key = (candidate: Candidate): number => {
      if (by === 'price') return unitPrice(candidate.endpoint);
      const figure = liveFigure(candidate.endpoint, by)?.p50;
      if (figure === undefined) return Number.POSITIVE_INFINITY;
      return by === 'throughput' ? -figure : figure;
    };
    return candidates
      .map((candidate, index) => ({ candidate, index, key: key(candidate) }))
      .sort((a, b) => a.key - b.key || a.index - b.index)
      .map((entry) => entry.candidate);
  }

  /** Moves candidates failing `keep` behind the others, keeping both groups' order. */
  const moveBack = (candidates: Candidate[], keep: (candidate: Candidate) => boolean): Candidate[] => [
    ...candidates.filter(keep),
    ...candidates.filter((candidate) => !keep(candidate)),
  ];

  function meetsPerformance(candidate: Candidate, provider: ProviderPreferences): boolean {
    if (provider.preferred_max_latency !== undefined) {
      const live = liveFigure(candidate.endpoint, 'latency');
      if (live && percentileOf(provider.preferred_max_latency).some(([p, limit]) => (live[p] ?? 0) > limit))
        return false;
    }
    if (provider.preferred_min_throughput !== undefined) {
      const live = liveFigure(candidate.endpoint, 'throughput');
      if (
        live &&
        percentileOf(provider.preferred_min_throughput).some(([p, floor]) => (live[p] ?? 0) < floor)
      )
        return false;
    }
    return true;
  }

  return {
    plan(input: PlanInput): AttemptPlan {
      const provider = input.provider ?? {};
      const models = input.models.map((slug, index) =>
        resolveModel(slug, index === 0 ? 'body.model' : `body.models[${index - 1}]`),
      );
      const used = input.request ? usedParameters(input.request) : [];
      const refusedModels: string[] = [];
      const maxOutput = input.request?.maxOutputTokens;
      // Made on the first exclusion: most requests exclude nothing.
      let excluded: Map<string, number> | null = null;
      const exclude = (reason: string) => {
        excluded ??= new Map();
        excluded.set(reason, (excluded.get(reason) ?? 0) + 1);
      };
      let totalEndpoints = 0;

      const modalities = input.request?.outputModalities;
      const groups = models.map((model) => {
        const refusal = outputRefusal(model, input.outputKind, modalities);
        if (refusal) throw refusal;
        const kept: Candidate[] = [];
        const restrictions = input.restrictions ?? null;
        if (restrictions && !modelAllowed(restrictions, model)) {
          refusedModels.push(model.id);
          const endpoints = distinctEndpoints(model);
          totalEndpoints += endpoints.length;
          for (const _ of endpoints) exclude(GUARDRAIL_REASON);
          return kept;
        }
        for (const endpoint of distinctEndpoints(model)) {
          totalEndpoints += 1;
          const protocol = protocolForAdapter(endpoint.adapter);
          if (!protocol) {
            exclude('its protocol is not supported by this gateway');
            continue;
          }
          if (restrictions && !guardrailsAllow(restrictions, model, endpoint)) {
            exclude(GUARDRAIL_REASON);
            continue;
          }
          const platform = targetFor(endpoint, protocol);
          const credentials = protocol === 'demo' ? [] : byokFor(input.byok ?? null, endpoint, model);
          if (!platform && credentials.length === 0) {
            exclude('no credentials are configured for its provider');
            continue;
          }
          const target = platform ?? byokTarget(endpoint, credentials[0]!);
          if (provider.only && !provider.only.some((entry) => namesProvider(entry, endpoint))) {
            exclude('provider.only');
            continue;
          }
          if (provider.ignore?.some((entry) => namesProvider(entry, endpoint))) {
            exclude('provider.ignore');
            continue;
          }
          if (
            provider.allow_fallbacks === false &&
            provider.order &&
            !provider.order.some((entry) => namesProvider(entry, endpoint))
          ) {
            exclude('provider.order with allow_fallbacks false');
            continue;
          }
          if (provider.data_collection === 'deny' && !isZeroDataRetention(endpoint)) {
            exclude('provider.data_collection deny');
            continue;
          }
          if (provider.zdr === true && !isZeroDataRetention(endpoint)) {
            exclude('provider.zdr');
            continue;
          }
          if (provider.enforce_distillable_text === true && !model.facts.distillable) {
            exclude('provider.enforce_distillable_text');
            continue;
          }
          if (
            provider.quantizations &&
            !provider.quantizations.includes(endpoint.quantization ?? 'unknown')
          ) {
            exclude('provider.quantizations');
            continue;
          }
          if (provider.max_price && !withinMaxPrice(endpoint, provider.max_price)) {
            exclude('provider.max_price');
            continue;
          }
          if (
            provider.require_parameters === true &&
            !used.every((parameter) => endpoint.supported_parameters.includes(parameter))
          ) {
            exclude('provider.require_parameters');
            continue;
          }
          if (
            maxOutput !== undefined &&
            endpoint.max_completion_tokens !== null &&
            maxOutput > endpoint.max_completion_tokens
          ) {
            exclude('its maximum output is below the requested max tokens');
            continue;
          }
          kept.push({ model, endpoint, protocol, target, byok: platform ? null : credentials[0]! });
        }
        return kept;
      });

      const sort = typeof provider.sort === 'string' ? { by: provider.sort } : provider.sort;
      const partition = sort?.partition ?? 'model';
      const orderGroup = (group: Candidate[]): Candidate[] => {
        // One candidate, or none, is its own order: each step below would keep it as it is.
        if (group.length <= 1) return group;
        let ordered: Candidate[];
        if (provider.order?.length) {
          const rank = (candidate: Candidate) => {
            const index = provider.order!.findIndex((entry) => namesProvider(entry, candidate.endpoint));
            return index === -1 ? Number.POSITIVE_INFINITY : index;
          };
          const listed = group.filter((candidate) => rank(candidate) !== Number.POSITIVE_INFINITY);
          const rest = group.filter((candidate) => rank(candidate) === Number.POSITIVE_INFINITY);
          ordered = [
            ...listed.sort((a, b) => rank(a) - rank(b)),
            ...(sort ? sortBy(rest, sort.by) : priceWeighted(rest)),
          ];
        } else if (sort) {
          ordered = sortBy(group, sort.by);
        } else {
          // Default: healthy endpoints first, each group shuffled by inverse square of price.
          const healthy = group.filter((candidate) => !health.isCoolingDown(candidate.endpoint.id));
          const cooling = group.filter((candidate) => health.isCoolingDown(candidate.endpoint.id));
          ordered = [...priceWeighted(healthy), ...sortBy(cooling, 'price')];
        }
        if (provider.preferred_max_latency !== undefined || provider.preferred_min_throughput !== undefined) {
          ordered = moveBack(ordered, (candidate) => meetsPerformance(candidate, provider));
        }
        if (
          used.includes('tools') ||
          used.includes('response_format') ||
          used.includes('structured_outputs')
        ) {
          const soft = used.filter((parameter) =>
            ['tools', 'response_format', 'structured_outputs'].includes(parameter),
          );
          ordered = moveBack(ordered, (candidate) =>
            soft.every((parameter) => candidate.endpoint.supported_parameters.includes(parameter)),
          );
        }
        if (sort || provider.order?.length) {
          ordered = moveBack(ordered, (candidate) => !health.isCoolingDown(candidate.endpoint.id));
        }
        // Without `order`, allow_fallbacks false keeps only the first choice of each model.
        if (provider.allow_fallbacks === false && !provider.order?.length) ordered = ordered.slice(0, 1);
        return ordered;
      };

      const ordered =
        partition === 'none' && sort
          ? orderGroup(groups.flat())
          : groups.length === 1
            ? orderGroup(groups[0] as Candidate[])
            : groups.flatMap((group) => orderGroup(group));
      // Without BYOK credentials each candidate stands for itself.
      const byok = input.byok ?? null;
      let candidates =
        byok && byok.size > 0 ? ordered.flatMap((candidate) => withByok(candidate, byok)) : ordered;
      if (input.stickyEndpointId) {
        const sticky = candidates.find(
          (candidate) =>
            candidate.endpoint.id === input.stickyEndpointId && !health.isCoolingDown(candidate.endpoint.id),
        );
        if (sticky) candidates = [sticky, ...candidates.filter((candidate) => candidate !== sticky)];
      }

      // Set in `exclude`, a closure, which narrowing does not follow.
      const exclusions = excluded as Map<string, number> | null;
      if (
        candidates.length === 0 &&
        input.restrictions &&
        exclusions !== null &&
        [...exclusions.keys()].every((reason) => reason === GUARDRAIL_REASON)
      ) {
        const names = models.map((model) => `"${model.id}"`).join(', ');
        const why =
          refusedModels.length === models.length
            ? `${refusedModels.length === 1 ? 'the model is' : 'the models are'} not allowed`
            : 'no endpoint of an allowed provider (or a zero-data-retention endpoint, where required) serves it';
        throw new AppError(
          'permission_denied',
          `Request refused by guardrail ${input.restrictions.names}: ${names}: ${why}`,
          { metadata: { error_type: 'permission_denied' } },
        );
      }
      if (candidates.length === 0) {
        const names = models.map((model) => model.id).join(', ');
        const reasons = [...(exclusions ?? new Map<string, number>()).entries()].map(
          ([reason, count]) => `${count} excluded by ${reason}`,
        );
        const why = totalEndpoints === 0 ? 'the model has no endpoints' : reasons.join('; ');
        throw new AppError('not_found', `No endpoints available for ${names}: ${why}`, {
          metadata: { error_type: 'not_found' },
        });
      }
      return { candidates, strategy: models.length > 1 ? 'fallback' : 'direct', totalEndpoints };
    },
  };
}

function withinMaxPrice(
  endpoint: SnapshotEndpoint,
  maxPrice: NonNullable<ProviderPreferences['max_price']>,
): boolean {
  const perUnit = (value: unknown): number | null => {
    if (typeof value !== 'string') return null;
    const number = Number(value);
    return Number.isFinite(number) && number >= 0 ? number : null;
  };
  const checks: Array<[number | undefined, number | null]> = [
    [maxPrice.prompt, perMillionOrNull(endpoint.pricing.prompt)],
    [maxPrice.completion, perMillionOrNull(endpoint.pricing.completion)],
    [maxPrice.request, perUnit(endpoint.pricing.request)],
    [maxPrice.image, perUnit(endpoint.pricing.image)],
    [maxPrice.audio, perUnit(endpoint.pricing.audio)],
  ];
  return checks.every(([limit, price]) => limit === undefined || price === null || price <= limit);
}

function perMillionOrNull(price: unknown): number | null {
  if (typeof price !== 'string') return null;
  const value = perMillion(price);
  return Number.isFinite(value) && value >= 0 ? value : null;
}

export type AttemptPlanner = ReturnType<typeof createAttemptPlanner>;

/** Model lists of guardrails and BYOK credentials hold canonical slugs; ids are accepted too. */
const namesModel = (list: ReadonlySet<string>, model: CatalogModel): boolean =>
  list.has(model.canonicalSlug) || list.has(model.id);

function modelAllowed(restrictions: RoutingRestrictions, model: CatalogModel): boolean {
  if (restrictions.allowedModels && !namesModel(restrictions.allowedModels, model)) return false;
  return !namesModel(restrictions.ignoredModels, model);
}

/** Whether the applicable guardrails let this endpoint serve this model (providers and ZDR). */
function guardrailsAllow(
  restrictions: RoutingRestrictions,
  model: CatalogModel,
  endpoint: SnapshotEndpoint,
): boolean {
  const slug = endpoint.provider_slug;
  // An allowlist names tier variants (`openai/priority`) only exactly, as `provider.only` does; an
  // ignore list covers every variant of the providers it names.
  const allowed = restrictions.allowedProviders;
  if (allowed && !(allowed.has(slug) || (allowed.has(providerBase(slug)) && !isTierVariant(slug))))
    return false;
  if (restrictions.ignoredProviders.has(slug) || restrictions.ignoredProviders.has(providerBase(slug)))
    return false;
  if (restrictions.zdrVendors.has(vendorOf(model.id)) && !isZeroDataRetention(endpoint)) return false;
  return true;
}
