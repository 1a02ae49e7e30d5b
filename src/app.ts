import { createServer, type ServerOptions } from 'node:http';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { Type } from 'typebox';
import { byokRoutes } from './admin/byok/byok-routes.js';
import { createByokService } from './admin/byok/byok-service.js';
import { creditRoutes } from './admin/credits/credit-routes.js';
import { guardrailRoutes } from './admin/guardrails/guardrail-routes.js';
import { createGuardrailServices } from './admin/guardrails/guardrail-services.js';
import { createKeyCache } from './admin/keys/key-cache.js';
import { createKeyRepository } from './admin/keys/key-repository.js';
import { keyRoutes } from './admin/keys/key-routes.js';
import { createKeyService } from './admin/keys/key-service.js';
import { observabilityRoutes } from './admin/observability/destination-routes.js';
import { createDestinationService } from './admin/observability/destination-service.js';
import { createWorkspaceRepository } from './admin/workspaces/workspace-repository.js';
import { workspaceRoutes } from './admin/workspaces/workspace-routes.js';
import { createWorkspaceServices } from './admin/workspaces/workspace-services.js';
import { createCreditLedger } from './billing/credit-ledger.js';
import { createGenerationLog, type GenerationLog, type GenerationLogger } from './billing/generation-log.js';
import { createThreadDeliverer } from './broadcast/delivery-thread.js';
import { createExporterHttp } from './broadcast/exporter-http.js';
import { buildCatalog } from './catalog/catalog.js';
import { catalogRoutes } from './catalog/catalog-routes.js';
import type { Config } from './config/config-schema.js';
import { installErrorRenderer, renderClientError, renderError } from './errors/error-renderer.js';
import { chatCompletionsDialect } from './gateway/dialects/chat-completions/chat-completions-dialect.js';
import { messagesDialect } from './gateway/dialects/messages/messages-dialect.js';
import { responsesDialect } from './gateway/dialects/responses/responses-dialect.js';
import { createDirectLane, type DirectLane } from './gateway/direct-lane.js';
import { generationRoutes } from './gateway/generation-routes.js';
import { createInference } from './gateway/inference.js';
import { createAuthenticator } from './gateway/pipeline/authenticate.js';
import {
  createMemoryRateLimiter,
  createRedisRateLimiter,
  type RateLimiter,
} from './gateway/pipeline/rate-limiter.js';
import { createPolicyCache } from './gateway/policy/policy-cache.js';
import { createPolicyRepository } from './gateway/policy/policy-repository.js';
import { opsRoutes } from './ops/ops-routes.js';
import { type ChangeBus, createLocalChangeBus, createRedisChangeBus } from './platform/change-bus.js';
import { type Clock, systemClock } from './platform/clock.js';
import { installGracefulClose } from './platform/graceful-close.js';
import type { InFlight } from './platform/in-flight.js';
import { createJsonBodyParser, parseJsonBodies } from './platform/json-body.js';
import { createContentFilterMetrics, createGenerationMetrics, installMetrics } from './platform/metrics.js';
import { connectRedis, whenReady } from './platform/redis.js';
import { requestLoggerFactory } from './platform/request-logger.js';
import { createSecretBox, resolveMasterKey, type SecretBox } from './platform/secret-box.js';
import { throttled } from './platform/throttled.js';
import { onWhenCpusAllow } from './platform/usable-cpus.js';
import { installValidators } from './platform/validation.js';
import { isInMemorySqlite, openStorage, type Storage } from './storage/database.js';
import type { BroadcastOutboxTable } from './storage/database-schema.js';
import { initializeStorage } from './storage/initialize.js';
import type { StoredOutboxRow } from './storage/sqlite-thread.js';
import { createBroadcastWorker } from './workers/broadcast-worker.js';
import { createThreadedBroadcastWorker } from './workers/broadcast-worker-thread.js';

export const API_PREFIX = '/api/v1';

/** The query schema of a read that takes no parameters: any parameter is refused, named. */
const NO_QUERY_PARAMETERS = Type.Object({}, { additionalProperties: false });

export interface Services {
  storage: Storage;
  /** Seals and opens stored secrets (BYOK credentials) under the master key. */
  secretBox: SecretBox;
  keys: ReturnType<typeof createKeyService>;
  credits: ReturnType<typeof createCreditLedger>;
  /** Generation records, written in group commits; closed (flushed) before storage. */
  generations: GenerationLog;
  bus: ChangeBus;
  /**
   * Where a group commit's broadcast rows go; the server points it at its delivery worker:
   * `listener` takes rows built on this thread, `stored` the ids of rows a SQLite thread built. A
   * worker without `stored` (one on this thread) takes built rows only.
   */
  outboxWritten: {
    listener: ((rows: readonly BroadcastOutboxTable[]) => void) | null;
    stored: ((rows: readonly StoredOutboxRow[]) => void) | null;
  };
}

export interface BuildOptions {
  config: Config;
  clock?: Clock;
}

/** Opens storage (migrating and seeding it) and builds every service; shared by the server and the CLI. */
export async function buildServices(
  options: BuildOptions & {
    redis?: { publisher: Redis; subscriber: Redis } | null;
    onRedisError?: (error: unknown) => void;
    /** Where the generation log reports write failures; the CLI gets a logger of its own. */
    logger?: GenerationLogger;
  },
) {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  // Resolved before any connection opens: a missing or unreadable master key fails the start cleanly.
  const secretBox = createSecretBox(
    resolveMasterKey({ configured: config.master_key, databaseUrl: config.database_url }),
  );
  const storageLogger = options.logger ?? pino({ level: config.log_level });
  const storage = await openStorage({
    url: config.database_url,
    schema: config.database_schema,
    backgroundCheckpoint: config.sqlite_background_checkpoint,
    thread: onWhenCpusAllow(config.sqlite_thread),
    onThreadFailure: (message) =>
      storageLogger.error(
        { reason: message },
        'SQLite thread stopped; its statements failed and the next one starts a new thread',
      ),
    commitThread: config.sqlite_commit_thread,
    onCommitThreadFailure: (message) =>
      storageLogger.error(
        { reason: message },
        'SQLite commit thread stopped or could not start; generation records are committed on the event loop meanwhile or retried',
      ),
    onCheckpointFailure: (message) =>
      storageLogger.error(
        { reason: message },
        'SQLite checkpoint thread stopped; commits checkpoint the WAL themselves again',
      ),
  });
  try {
    await initializeStorage({ storage, initialCreditsUsd: config.credits.initial, now: clock.now() });
  } catch (error) {
    await storage.close();
    throw error;
  }
  const bus = options.redis
    ? createRedisChangeBus({
        ...options.redis,
        prefix: config.redis_prefix,
        onError: options.onRedisError ?? (() => {}),
      })
    : createLocalChangeBus();
  const keyRepository = createKeyRepository(storage);
  const cache = createKeyCache({ repository: keyRepository, bus, clock });
  const keys = createKeyService({
    keys: keyRepository,
    workspaces: createWorkspaceRepository(storage),
    cache,
    clock,
  });
  const credits = createCreditLedger(storage);
  const outboxWritten: Services['outboxWritten'] = { listener: null, stored: null };
  const generations = createGenerationLog({
    storage,
    logger: storageLogger,
    clock,
    onOutboxWritten: (rows) => outboxWritten.listener?.(rows),
    onOutboxStored: (rows) => outboxWritten.stored?.(rows),
    buildAtCommit: () => outboxWritten.listener === null || outboxWritten.stored !== null,
  });
  const workspaces = createWorkspaceServices({ storage, cache, bus, clock });
  if (config.bootstrap_key) await keys.ensureBootstrapKey(config.bootstrap_key);
  return { workspaces, storage, keys, credits, generations, bus, cache, clock, secretBox, outboxWritten };
}

/**
 * Absolute links (RSS) use `public_url` when set; otherwise the address the server listens on, never
 * the request's Host header, which any client can set.
 */
function publicUrl(app: FastifyInstance, config: Config): string {
  if (config.public_url) return config.public_url.replace(/\/+$/, '');
  const address = app.server.address();
  const port = address && typeof address === 'object' ? address.port : config.port;
  const host = ['0.0.0.0', '::', ''].includes(config.host) ? '127.0.0.1' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The one composition root: config in, a ready (not yet listening) Fastify app out. */
export async function buildApp(options: BuildOptions): Promise<{
  app: FastifyInstance;
  services: Services;
  /** Inference requests being served (shutdown reports the ones its timeout cuts). */
  inFlight: InFlight;
}> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  // Built before any connection opens: a bad catalogue config fails the start with nothing to close.
  const catalog = buildCatalog({ config, now: clock.now() });
  const logger = pino({ level: config.log_level });
  // Redis trouble repeats on every request while it lasts; one line per half minute says enough.
  const onRedisError = throttled(30_000, (error: unknown) =>
    logger.warn({ err: error }, 'redis unavailable: rate limits count locally, invalidations stay local'),
  );
  const redis = config.redis_url
    ? {
        publisher: await connectRedis(config.redis_url, onRedisError),
        subscriber: await connectRedis(config.redis_url, onRedisError),
      }
    : null;
  if (redis) {
    const ready = await Promise.all([whenReady(redis.publisher, 2000), whenReady(redis.subscriber, 2000)]);
    if (!ready.every(Boolean)) logger.warn('redis is not reachable at start; running degraded until it is');
  }
  let services: Awaited<ReturnType<typeof buildServices>>;
  try {
    services = await buildServices({ ...options, clock, redis, onRedisError, logger });
  } catch (error) {
    redis?.publisher.disconnect();
    redis?.subscriber.disconnect();
    throw error;
  }

  // Fastify's request ids, shared with the direct lane so that log lines of both read alike.
  let lastRequestId = 0;
  const nextRequestId = () => {
    lastRequestId = (lastRequestId + 1) % 0x7fffffff;
    return `req-${lastRequestId.toString(36)}`;
  };
  /** Set once the inference surfaces exist; until then (and with `direct_lane: false`) Fastify serves all. */
  let lane: DirectLane | null = null;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    genReqId: nextRequestId,
    // The server Fastify would make (its timeouts, which it leaves to a factory to set), with the
    // direct lane in front of Fastify's handler.
    serverFactory: (handler, options) => {
      const setting = (name: string, fallback: number) =>
        typeof options[name] === 'number' ? (options[name] as number) : fallback;
      const server = createServer((options.http ?? {}) as ServerOptions, (request, response) => {
        if (lane === null || !lane(request, response)) handler(request, response);
      });
      server.keepAliveTimeout = setting('keepAliveTimeout', 72_000);
      server.requestTimeout = setting('requestTimeout', 0);
      server.setTimeout(setting('connectionTimeout', 0));
      const maxRequestsPerSocket = setting('maxRequestsPerSocket', 0);
      if (maxRequestsPerSocket > 0) server.maxRequestsPerSocket = maxRequestsPerSocket;
      return server;
    },
    // request.log's pino child is made on the first line logged (src/platform/request-logger.ts).
    childLoggerFactory: requestLoggerFactory,
    bodyLimit: config.limits.body_bytes,
    forceCloseConnections: 'idle',
    // Errors Fastify raises before routing (a malformed URL) go through the same renderer.
    frameworkErrors: (error, _request, reply) => {
      const rendered = renderError(error);
      // The reply's types are generic over routes that do not exist yet; the envelope fits them all.
      (reply as unknown as FastifyReply).code(rendered.status).send(rendered.body);
    },
    clientErrorHandler: renderClientError,
    // The 503 of a closing server goes through our renderer (graceful-close), not Fastify's own body.
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true },
  });
  const closeState = installGracefulClose(app);
  app.decorateRequest('principal', null);
  const compileBodyValidator = installValidators(app);
  const parseJson = createJsonBodyParser(app);
  parseJsonBodies(app, parseJson);
  installErrorRenderer(app);
  const { registry: metrics, observeDirectRequest } = installMetrics(app);

  const countContentFilter = createContentFilterMetrics(metrics);
  /** The HTTP client of destination checks and deliveries (SSRF rules, timeouts). */
  const exporterHttp = createExporterHttp({ allowPrivateNetworks: config.broadcast.allow_private_networks });
  // The whole worker in its own thread, with a connection of its own (an in-memory SQLite database
  // cannot be opened twice: its worker stays here, sending from the delivery thread).
  const workerThread =
    config.broadcast.worker_enabled &&
    config.broadcast.delivery_thread &&
    config.broadcast.worker_thread &&
    !isInMemorySqlite(config.database_url);
  const deliveryThread =
    config.broadcast.worker_enabled && config.broadcast.delivery_thread && !workerThread
      ? createThreadDeliverer({
          settings: {
            allowPrivateNetworks: config.broadcast.allow_private_networks,
            niceness: config.broadcast.delivery_thread_niceness,
            idle: config.broadcast.delivery_thread_idle,
          },
          logger,
        })
      : null;
  const broadcastWorker: {
    owner: string;
    start(): void;
    accept(rows: readonly BroadcastOutboxTable[]): void;
    acceptStored(rows: readonly StoredOutboxRow[]): void;
    stop(): Promise<void>;
  } | null = workerThread
    ? createThreadedBroadcastWorker({
        storage: services.storage,
        settings: config.broadcast,
        databaseUrl: config.database_url,
        databaseSchema: config.database_schema,
        masterKey: config.master_key,
        logLevel: config.log_level,
        logger,
        registry: metrics,
        bus: services.bus,
      })
    : config.broadcast.worker_enabled
      ? createBroadcastWorker({
          storage: services.storage,
          secretBox: services.secretBox,
          http: exporterHttp,
          deliverer: deliveryThread ?? undefined,
          settings: config.broadcast,
          clock,
          logger,
          registry: metrics,
          bus: services.bus,
        })
      : null;
  if (broadcastWorker) {
    services.outboxWritten.listener = (rows) => broadcastWorker.accept(rows);
    // The worker in its thread reads rows back there; one on this thread sends the objects built here.
    if (workerThread) services.outboxWritten.stored = (rows) => broadcastWorker.acceptStored(rows);
    app.addHook('onReady', async () => broadcastWorker.start());
  }
  const policies = createPolicyCache({
    repository: createPolicyRepository(services.storage),
    bus: services.bus,
    clock,
    secretBox: services.secretBox,
    onUnreadableSecret: throttled(30_000, (credentialId: string, error: unknown) =>
      logger.error(
        { err: error, credential_id: credentialId },
        'a BYOK credential cannot be opened with the configured master key; it is skipped',
      ),
    ),
  });
  const inference = await createInference({
    policies,
    broadcastWorker: broadcastWorker?.owner ?? null,
    onPolicyError: throttled(30_000, (error: unknown) =>
      logger.error({ err: error }, 'a workspace policy could not be loaded; its requests get 503'),
    ),
    onContentFilterError: throttled(30_000, (error: unknown) =>
      logger.error({ err: error }, 'content filters could not run; their requests get 503'),
    ),
    onContentFilter: (stage, generationId) => {
      // What matched, never the matched text: the prompt stays out of the logs.
      logger.info(
        {
          generation_id: generationId,
          action: stage.blocked ? 'blocked' : stage.redacted.length > 0 ? 'redacted' : 'flagged',
          redacted: stage.redacted,
          flagged: stage.flagged,
        },
        'content filter matched',
      );
      countContentFilter(stage);
    },
    config,
    clock,
    catalog,
    keyCache: services.cache,
    credits: services.credits,
    log: services.generations,
    redis: redis?.publisher ?? null,
    onRedisError,
    onCreditRefreshError: throttled(30_000, (error: unknown) =>
      logger.warn({ err: error }, 'credit totals not refreshed; serving the last known totals'),
    ),
    onGeneration: createGenerationMetrics(metrics),
    dialects: [
      {
        path: '/responses',
        dialect: responsesDialect,
        tag: 'beta responses',
        summary: 'Create a response (spec 4.6)',
      },
      {
        path: '/chat/completions',
        dialect: chatCompletionsDialect,
        tag: 'Chat',
        summary: 'Create a chat completion',
      },
      {
        path: '/messages',
        dialect: messagesDialect,
        tag: 'Anthropic-style Messages',
        summary: 'Create a message (Anthropic Messages API)',
      },
    ],
  });

  const { requests, window_seconds: windowSeconds } = config.limits.rate_limit;
  let rateLimiter: RateLimiter | null = null;
  if (requests > 0) {
    const settings = { requests, windowSeconds, now: () => clock.now().getTime() };
    rateLimiter = redis
      ? createRedisRateLimiter({
          ...settings,
          redis: redis.publisher,
          prefix: config.redis_prefix,
          onError: onRedisError,
        })
      : createMemoryRateLimiter(settings);
  }
  const authenticator = createAuthenticator({ cache: services.cache, clock, rateLimiter });
  app.addHook('onRequest', authenticator.hook);
  if (config.direct_lane)
    lane = createDirectLane({
      prefix: API_PREFIX,
      surfaces: inference.surfaces,
      authenticator,
      parseJson,
      compileBodyValidator,
      bodyLimit: config.limits.body_bytes,
      observeRequest: observeDirectRequest,
      close: closeState,
      logger,
      nextRequestId,
    });

  app.addHook('onRoute', (route) => {
    // The docs page's own routes are public.
    if (route.url.startsWith(`${API_PREFIX}/docs`)) {
      route.config = { ...route.config, auth: 'public' };
      return;
    }
    // A read that takes no parameters refuses them, as the lists refuse parameters they do not know:
    // `GET /credits?workspace_id=…` ignored would answer about something else than was asked.
    const reads = Array.isArray(route.method) ? route.method.includes('GET') : route.method === 'GET';
    const isPublic = (route.config as { auth?: string } | undefined)?.auth === 'public';
    if (reads && !isPublic && route.url.startsWith(API_PREFIX) && route.schema?.querystring === undefined) {
      route.schema = { ...route.schema, querystring: NO_QUERY_PARAMETERS };
    }
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Switchyard', version: '1.0.0', description: 'Self-hosted model gateway' },
      servers: [{ url: API_PREFIX }],
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } } },
      security: [{ apiKey: [] }],
    },
    transform: ({ schema, url }) => ({
      schema,
      url: url.startsWith(API_PREFIX) ? url.slice(API_PREFIX.length) : url,
    }),
  });
  await app.register(swaggerUi, {
    routePrefix: `${API_PREFIX}/docs`,
    uiConfig: { url: `${API_PREFIX}/openapi.json` },
  });

  await app.register(opsRoutes({ storage: services.storage, metrics }));
  await app.register(
    async (api) => {
      api.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () =>
        app.swagger(),
      );
      await api.register(keyRoutes(services.keys));
      await api.register(creditRoutes(services.credits));
      // Built here, not in buildServices: model and provider lists are checked against the catalogue.
      await api.register(guardrailRoutes(createGuardrailServices({ ...services, catalog, clock })));
      await api.register(workspaceRoutes(services.workspaces));
      // Built here, not in buildServices: its rules read the catalogue, which only the server builds.
      await api.register(byokRoutes(createByokService({ ...services, catalog, clock })));
      const destinations = createDestinationService({
        ...services,
        clock,
        http: exporterHttp,
        originOverrides: config.broadcast.origin_overrides,
      });
      // A clean-up, never a reason not to start: a failure is logged and the next start tries again.
      try {
        const resealed = await destinations.resealStoredUrls();
        if (resealed > 0)
          logger.info(
            { destinations: resealed },
            'sealed destination URLs that carried credentials in the clear',
          );
      } catch (error) {
        logger.warn({ err: error }, 'could not seal stored destination URLs; the next start tries again');
      }
      await api.register(observabilityRoutes(destinations));
      await api.register(generationRoutes(services.generations));
      await api.register(
        catalogRoutes({ catalog, clock, publicUrl: () => publicUrl(app, config), health: inference.health }),
      );
      inference.register(api);
    },
    { prefix: API_PREFIX },
  );

  app.addHook('onClose', async () => {
    // The server has no connection left (onClose runs after it drained, or after shutdown's timeout
    // cut the rest); a request whose connection was cut still unwinds: it aborts its upstream call,
    // settles its reservation and queues its record, which this waits for.
    const { stillInFlight } = await inference.close();
    if (stillInFlight > 0)
      logger.warn(
        { requests: stillInFlight },
        'requests still unwinding at shutdown were not recorded; their upstream calls were ended',
      );
    // Every finished request's record is queued now, and this writes them while the database is
    // still open.
    await services.generations.close();
    // After the log's last write, so events of the last generations are stored; in-flight sends are
    // aborted and their events handed back for the next start (or another instance).
    await broadcastWorker?.stop();
    await deliveryThread?.close();
    await exporterHttp.close();
    await services.bus.close();
    await services.storage.close();
    if (redis) {
      redis.publisher.disconnect();
      redis.subscriber.disconnect();
    }
  });
  return { app, services, inFlight: inference.inFlight };
}
