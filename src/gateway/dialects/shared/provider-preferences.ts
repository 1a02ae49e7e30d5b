import { type Static, Type } from 'typebox';
import { stringEnum } from '../../../platform/schema-types.js';
import type { Percentiles, ProviderPreferences } from '../dialect.js';
import { nullable } from './schema-unions.js';

/**
 * The body's `provider` object (reference §7, OpenAPI `ProviderPreferences`) and the deprecated
 * top-level `route`, as every ingress dialect accepts them, and their reading as the router's
 * `ProviderPreferences`.
 *
 * Every field, and every member of `sort`, the cutoffs and `max_price`, may be null, meaning "not
 * set": the `@openrouter/sdk` sends explicit nulls. Prices may be numbers or decimal strings (the
 * OpenAPI types them as strings, most clients send numbers). Unknown fields are refused, as in the
 * OpenAPI document: a misspelt filter (`onyl`) would otherwise route past the caller's intent.
 * The `exacto` sort of the reference is refused: nothing here measures tool-calling quality.
 */

const SORT_STRATEGIES = ['price', 'throughput', 'latency'] as const;
const QUANTIZATIONS = [
  'int4',
  'int8',
  'fp4',
  'mxfp4',
  'nvfp4',
  'fp6',
  'fp8',
  'mxfp8',
  'fp16',
  'bf16',
  'fp32',
  'unknown',
] as const;
const PERCENTILES = ['p50', 'p75', 'p90', 'p99'] as const;
const PRICE_UNITS = ['prompt', 'completion', 'request', 'image', 'audio'] as const;

type SortStrategy = (typeof SORT_STRATEGIES)[number];
type Partition = 'model' | 'none';
type PercentilesBody = { [K in keyof Percentiles]?: number | null };

const ProviderSlugs = nullable(Type.Array(Type.String({ minLength: 1, maxLength: 200 })));

/**
 * A strategy name, or `{ by, partition }`. The names apply to strings only (`if`/`then`, which
 * `Type.Dependent` writes), so each form keeps its own error: a wrong name lists the strategies,
 * a wrong member names the member, another type lists the three forms.
 */
const Sort = Type.Unsafe<SortStrategy | { by?: SortStrategy | null; partition?: Partition | null } | null>({
  type: ['string', 'object', 'null'],
  ...Type.Dependent(Type.String(), stringEnum(SORT_STRATEGIES), Type.Unknown()),
  properties: {
    by: { type: ['string', 'null'], enum: [...SORT_STRATEGIES, null] },
    partition: { type: ['string', 'null'], enum: ['model', 'none', null] },
  },
  additionalProperties: false,
});

/** A number (the p50 cutoff) or cutoffs per percentile; `minimum` constrains the number form only. */
const Cutoff = (description: string) =>
  Type.Unsafe<number | PercentilesBody | null>({
    type: ['number', 'object', 'null'],
    minimum: 0,
    description,
    properties: Object.fromEntries(PERCENTILES.map((key) => [key, { type: ['number', 'null'], minimum: 0 }])),
    additionalProperties: false,
  });

/** USD as a non-negative number or decimal text ("0.5"); `pattern` constrains the text form only. */
const Price = Type.Unsafe<number | string | null>({
  type: ['number', 'string', 'null'],
  minimum: 0,
  pattern: '^\\d+(\\.\\d+)?$',
});

export const ProviderPreferencesSchema = nullable(
  Type.Object(
    {
      order: Type.Optional(ProviderSlugs),
      allow_fallbacks: Type.Optional(nullable(Type.Boolean())),
      require_parameters: Type.Optional(nullable(Type.Boolean())),
      data_collection: Type.Optional(stringEnum(['allow', 'deny'], { nullable: true })),
      zdr: Type.Optional(nullable(Type.Boolean())),
      enforce_distillable_text: Type.Optional(nullable(Type.Boolean())),
      only: Type.Optional(ProviderSlugs),
      ignore: Type.Optional(ProviderSlugs),
      quantizations: Type.Optional(nullable(Type.Array(stringEnum(QUANTIZATIONS)))),
      sort: Type.Optional(Sort),
      preferred_min_throughput: Type.Optional(Cutoff('Tokens per second; a number applies to p50')),
      preferred_max_latency: Type.Optional(Cutoff('Seconds; a number applies to p50')),
      max_price: Type.Optional(
        nullable(
          Type.Object(
            {
              prompt: Type.Optional(Price),
              completion: Type.Optional(Price),
              request: Type.Optional(Price),
              image: Type.Optional(Price),
              audio: Type.Optional(Price),
            },
            {
              additionalProperties: false,
              description: 'USD per million tokens for prompt and completion; USD per unit for the others',
            },
          ),
        ),
      ),
    },
    { additionalProperties: false, description: 'Provider routing preferences (reference §7)' },
  ),
);

/** The deprecated `route`: `fallback` is `sort.partition: model`, `sort` is `partition: none`. */
export const RouteSchema = stringEnum(['fallback', 'sort'], { nullable: true });

export type ProviderPreferencesBody = NonNullable<Static<typeof ProviderPreferencesSchema>>;
export type Route = Static<typeof RouteSchema>;

/**
 * The validated `provider` and `route` as the router's preferences: nulls dropped (null means "the
 * default"), prices as numbers, and `route` folded into `sort.partition` (`fallback` → `model`,
 * `sort` → `none`). An explicit partition wins over `route`; a `route` without a sort is dropped,
 * because a partition only orders a sort. Null when `provider` is absent or null.
 */
export function toProviderPreferences(
  provider: ProviderPreferencesBody | null | undefined,
  route?: Route,
): ProviderPreferences | null {
  if (provider === null || provider === undefined) return null;
  const preferences: ProviderPreferences = {};
  if (provider.order != null) preferences.order = provider.order;
  if (provider.allow_fallbacks != null) preferences.allow_fallbacks = provider.allow_fallbacks;
  if (provider.require_parameters != null) preferences.require_parameters = provider.require_parameters;
  if (provider.data_collection != null) preferences.data_collection = provider.data_collection;
  if (provider.zdr != null) preferences.zdr = provider.zdr;
  if (provider.enforce_distillable_text != null) {
    preferences.enforce_distillable_text = provider.enforce_distillable_text;
  }
  if (provider.only != null) preferences.only = provider.only;
  if (provider.ignore != null) preferences.ignore = provider.ignore;
  if (provider.quantizations != null) preferences.quantizations = provider.quantizations;
  const sort = toSort(provider.sort, route);
  if (sort) preferences.sort = sort;
  const throughput = toCutoff(provider.preferred_min_throughput);
  if (throughput !== undefined) preferences.preferred_min_throughput = throughput;
  const latency = toCutoff(provider.preferred_max_latency);
  if (latency !== undefined) preferences.preferred_max_latency = latency;
  if (provider.max_price != null) {
    const maxPrice: NonNullable<ProviderPreferences['max_price']> = {};
    for (const unit of PRICE_UNITS) {
      const price = provider.max_price[unit];
      if (price != null) maxPrice[unit] = Number(price);
    }
    preferences.max_price = maxPrice;
  }
  return preferences;
}

function toSort(
  sort: ProviderPreferencesBody['sort'],
  route: Route | undefined,
): ProviderPreferences['sort'] {
  if (sort == null) return undefined;
  const routed = route === 'fallback' ? 'model' : route === 'sort' ? 'none' : undefined;
  if (typeof sort === 'string') return routed ? { by: sort, partition: routed } : sort;
  if (sort.by == null) return undefined;
  const partition = sort.partition ?? routed;
  return partition ? { by: sort.by, partition } : { by: sort.by };
}

function toCutoff(value: number | PercentilesBody | null | undefined): number | Percentiles | undefined {
  if (value == null || typeof value === 'number') return value ?? undefined;
  const percentiles: Percentiles = {};
  for (const key of PERCENTILES) {
    const cutoff = value[key];
    if (cutoff != null) percentiles[key] = cutoff;
  }
  return percentiles;
}
