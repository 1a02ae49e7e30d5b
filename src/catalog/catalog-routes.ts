import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { notFound } from '../errors/app-error.js';
import { ErrorSchema } from '../errors/error-schema.js';
import type { Clock } from '../platform/clock.js';
import type { Catalog, CatalogModel } from './catalog.js';
import {
  EndpointSchema,
  EndpointsParams,
  ModelSchema,
  ProviderSchema,
  ZdrEndpointSchema,
} from './catalog-schemas.js';
import { BodyCache, chooseEncoding, EncodedBody } from './encoded-body.js';
import type { EndpointHealth } from './endpoint-health.js';
import {
  CountQuery,
  ModelsQuery,
  type ModelsQueryInput,
  normalizedOutputModalities,
  outputModalityPredicate,
  selectModels,
} from './model-query.js';
import { renderRss } from './rss.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const RSS_TYPE = 'application/rss+xml; charset=utf-8';
const tags = ['Models'];

const jsonBody = (value: unknown) => new EncodedBody(Buffer.from(JSON.stringify(value)), JSON_TYPE);

/** Prepared bodies kept for distinct /models queries; the unfiltered list is held apart from it. */
const CACHE_BYTES = 32 * 1024 * 1024;

async function send(request: FastifyRequest, reply: FastifyReply, body: EncodedBody) {
  const encoding = chooseEncoding(request.headers['accept-encoding'], body.identity.length);
  reply.header('content-type', body.contentType).header('vary', 'accept-encoding');
  if (encoding !== 'identity') reply.header('content-encoding', encoding);
  return reply.send(await body.get(encoding));
}

const enumeratedParameters = [
  'category',
  'sort',
  'zdr',
  'region',
  'distillable',
  'use_rss',
  'use_rss_chat_links',
];

/** `use_rss` is "supplied" in any of its true spellings: `true`, `1`, or empty (`?use_rss`). */
const isTrue = (value: string | undefined): boolean => value === 'true' || value === '1' || value === '';

/** The query's known parameters in a fixed order: equal queries share one prepared body. */
function cacheKey(query: Record<string, unknown>, names: readonly string[]): string {
  return JSON.stringify(names.filter((name) => query[name] !== undefined).map((name) => [name, query[name]]));
}

/**
 * The catalogue: `/models`, `/models/count`, `/models/{author}/{slug}/endpoints`, `/endpoints/zdr`
 * and `/providers`. Responses are joined from pre-serialized records and kept, with their gzip and
 * brotli forms, per distinct query.
 */
export const catalogRoutes =
  (options: {
    catalog: Catalog;
    clock: Clock;
    publicUrl: () => string;
    /** This gateway's live endpoint figures; answers that show them are built fresh, not kept. */
    health?: EndpointHealth;
  }): FastifyPluginAsync =>
  async (plugin) => {
    const { catalog, clock, publicUrl, health } = options;
    const live = health ? (id: string) => health.stats(id) : undefined;
    const hasLive = (models: readonly CatalogModel[]) =>
      health !== undefined &&
      models.some((model) => model.endpoints.some((endpoint) => health.has(endpoint.id)));
    /** The models with latency and throughput facts that include this gateway's own figures. */
    const withLiveFacts = (): CatalogModel[] =>
      catalog.models.map((model) => {
        if (!health || !hasLive([model])) return model;
        const latencies: number[] = [];
        const throughputs: number[] = [];
        for (const endpoint of model.endpoints) {
          const stats = health.stats(endpoint.id);
          const latency = stats?.latency30m?.p50 ?? endpoint.stats?.p50_latency;
          const throughput = stats?.throughput30m?.p50 ?? endpoint.stats?.p50_throughput;
          if (typeof latency === 'number') latencies.push(latency);
          if (typeof throughput === 'number') throughputs.push(throughput);
        }
        return {
          ...model,
          facts: {
            ...model.facts,
            latency: latencies.length ? Math.min(...latencies) : null,
            throughput: throughputs.length ? Math.max(...throughputs) : null,
          },
        };
      });
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const modelParameters = Object.keys(ModelsQuery.properties);
    const bodies = new BodyCache(CACHE_BYTES);
    const now = () => clock.now();

    const listBody = (
      query: ModelsQueryInput,
      onGrow?: (bytes: number) => void,
      models: readonly CatalogModel[] = catalog.models,
    ) => {
      const selected = selectModels(models, query, now);
      if (isTrue(query.use_rss)) {
        const xml = renderRss({
          models: selected,
          origin: publicUrl(),
          chatLinks: isTrue(query.use_rss_chat_links),
          now: now(),
        });
        return new EncodedBody(Buffer.from(xml), RSS_TYPE, onGrow);
      }
      return new EncodedBody(
        Buffer.from(`{"data":[${selected.map((model) => model.json).join(',')}]}`),
        JSON_TYPE,
        onGrow,
      );
    };
    // The unfiltered list (default output_modalities=text) is prepared before the first request and
    // kept outside the cache, so no flood of distinct queries can push it out.
    const unfilteredKey = cacheKey({}, modelParameters);
    const unfiltered = listBody({});

    app.get(
      '/models',
      {
        config: { auth: 'public' },
        schema: {
          tags,
          summary: 'List models, with filters and sorting (spec 4.1); RSS with use_rss=true',
          querystring: ModelsQuery,
          response: { 200: Type.Object({ data: Type.Array(ModelSchema) }), 400: ErrorSchema },
        },
        // Enumerated values are read case-insensitively, like every other string of the query.
        preValidation: async (request) => {
          const query = request.query as Record<string, unknown>;
          for (const name of enumeratedParameters) {
            if (typeof query[name] === 'string') query[name] = (query[name] as string).trim().toLowerCase();
          }
        },
      },
      async (request, reply) => {
        const query = request.query;
        const key = cacheKey(query, modelParameters);
        if (key === unfilteredKey) return send(request, reply, unfiltered);
        // Ages move with the clock (each model's at its own time of day), so such answers are not kept.
        if (query.min_age_days !== undefined || query.max_age_days !== undefined) {
          return send(request, reply, listBody(query));
        }
        // Latency and throughput sorts follow this gateway's live figures once it has some.
        if (
          (query.sort === 'latency-low-to-high' || query.sort === 'throughput-high-to-low') &&
          health?.size()
        ) {
          return send(request, reply, listBody(query, undefined, withLiveFacts()));
        }
        return send(
          request,
          reply,
          bodies.get(key, (onGrow) => listBody(query, onGrow)),
        );
      },
    );

    const counts = new Map<string, EncodedBody>();
    app.get(
      '/models/count',
      {
        config: { auth: 'public' },
        schema: {
          tags,
          summary: 'Count models for an output modality (spec 4.2)',
          querystring: CountQuery,
          response: { 200: Type.Object({ data: Type.Object({ count: Type.Integer() }) }), 400: ErrorSchema },
        },
      },
      async (request, reply) => {
        const modalities = normalizedOutputModalities(request.query.output_modalities);
        let body = counts.get(modalities);
        if (!body) {
          const predicate = outputModalityPredicate(modalities);
          const count = predicate
            ? catalog.models.filter((model) => predicate(model.facts, model)).length
            : catalog.models.length;
          body = jsonBody({ data: { count } });
          // Distinct normalized modality sets are few: subsets of four values, or all.
          counts.set(modalities, body);
        }
        return send(request, reply, body);
      },
    );

    const endpointListings = new Map<string, EncodedBody>();
    app.get(
      '/models/:author/:slug/endpoints',
      {
        config: { auth: 'any' },
        schema: {
          tags: ['Endpoints'],
          summary: "A model's provider endpoints: prices, limits, status and live stats",
          params: EndpointsParams,
          response: {
            200: Type.Object({
              data: Type.Object({
                id: Type.String(),
                name: Type.String(),
                created: Type.Integer(),
                description: Type.String(),
                architecture: ModelSchema.properties.architecture,
                endpoints: Type.Array(EndpointSchema),
              }),
            }),
            401: ErrorSchema,
            404: ErrorSchema,
          },
        },
      },
      async (request, reply) => {
        const requested = catalog.lookup(`${request.params.author}/${request.params.slug}`);
        const first = requested[0];
        if (!first) throw notFound(`Model ${request.params.author}/${request.params.slug} not found`);
        const canonical = first.canonicalSlug;
        const variants = catalog.lookup(canonical);
        const fresh = hasLive(variants);
        let body = fresh ? undefined : endpointListings.get(canonical);
        if (!body) {
          const main = variants.find((model) => model.facts.variant === 'standard') ?? variants[0] ?? first;
          body = jsonBody({
            data: {
              id: canonical,
              name: main.record.name,
              created: main.record.created,
              description: main.record.description,
              architecture: main.record.architecture,
              endpoints: catalog.endpointRecords(variants.length > 0 ? variants : [first], live),
            },
          });
          if (!fresh) endpointListings.set(canonical, body);
        }
        return send(request, reply, body);
      },
    );

    const zdr = jsonBody({ data: catalog.zdrRecords() });
    app.get(
      '/endpoints/zdr',
      {
        config: { auth: 'public' },
        schema: {
          tags: ['Endpoints'],
          summary: 'Endpoints with zero data retention (spec 4.11)',
          response: { 200: Type.Object({ data: Type.Array(ZdrEndpointSchema) }) },
        },
      },
      async (request, reply) =>
        send(request, reply, health?.size() ? jsonBody({ data: catalog.zdrRecords(live) }) : zdr),
    );

    const providers = jsonBody({ data: catalog.providerRecords() });
    app.get(
      '/providers',
      {
        config: { auth: 'any' },
        schema: {
          tags: ['Providers'],
          summary: 'The provider directory',
          response: { 200: Type.Object({ data: Type.Array(ProviderSchema) }), 401: ErrorSchema },
        },
      },
      async (request, reply) => send(request, reply, providers),
    );
  };
