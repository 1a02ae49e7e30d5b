import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { KeyCache } from '../admin/keys/key-cache.js';
import { createCreditBalance } from '../billing/credit-balance.js';
import type { CreditLedger } from '../billing/credit-ledger.js';
import type { GenerationLog, GenerationRecordInput, OutboxRowsBuilder } from '../billing/generation-log.js';
import { createMemorySpendCounters, type SpendCounters } from '../billing/spend-counters.js';
import { createRedisSpendCounters } from '../billing/spend-counters-redis.js';
import type { Catalog } from '../catalog/catalog.js';
import { createEndpointHealth } from '../catalog/endpoint-health.js';
import type { Config } from '../config/config-schema.js';
import type { Clock } from '../platform/clock.js';
import { createInFlight } from '../platform/in-flight.js';
import { usableCpus } from '../platform/usable-cpus.js';
import type { Dialect } from './dialects/dialect.js';
import {
  dialectSurface,
  embeddingsSurface,
  type InferenceSurface,
  registerSurfaceRoute,
} from './dialects/dialect-routes.js';
import { createContentFilterThreads } from './pipeline/content-filters/content-filter-threads.js';
import { createGenerationService } from './pipeline/generation-service.js';
import type { ContentFilterStage } from './pipeline/guardrail-stage.js';
import { createAttemptPlanner } from './pipeline/plan-attempts.js';
import { createSessionRoutes } from './pipeline/session-routes.js';
import type { PolicyCache } from './policy/policy-cache.js';
import { createAdapters } from './providers/provider-protocols.js';
import { createUpstreamHttp } from './providers/shared/upstream-http.js';

/** `content_filter_threads`: `auto` is one fewer than the usable CPUs, from 1 to 4. */
export function contentFilterThreadCount(setting: 'auto' | number, cpus: number = usableCpus()): number {
  return setting === 'auto' ? Math.min(4, Math.max(1, cpus - 1)) : setting;
}

/**
 * Assembles the data plane: upstream HTTP client and adapters, endpoint health, the attempt
 * planner, spend counters (shared through Redis when configured), and the generation service;
 * `register` mounts the inference surfaces under the API prefix, and the direct lane serves them too.
 */
export async function createInference(options: {
  config: Config;
  clock: Clock;
  catalog: Catalog;
  keyCache: KeyCache;
  credits: CreditLedger;
  log: GenerationLog;
  redis: Redis | null;
  onRedisError: (error: unknown) => void;
  /** Reports a failed background refresh of the account's credit totals. */
  onCreditRefreshError: (error: unknown) => void;
  dialects: Array<{ path: string; dialect: Dialect; tag: string; summary: string }>;
  /** Sees every generation record as it is queued (metrics). */
  onGeneration?: (record: GenerationRecordInput) => void;
  /** Workspace policies (budgets, guardrails, BYOK credentials), served from memory. */
  policies: PolicyCache;
  /** Reports a workspace policy that could not be loaded. */
  onPolicyError?: (error: unknown) => void;
  /** Sees each content-filter stage that changed, flagged or blocked a request. */
  onContentFilter?: (stage: ContentFilterStage, generationId: string) => void;
  /** The owner id of this instance's broadcast delivery worker; null when it runs none. */
  broadcastWorker?: string | null;
  /** Reports a content-filter thread that failed. */
  onContentFilterError?: (error: unknown) => void;
}) {
  const { config, clock, catalog } = options;
  const now = () => clock.now().getTime();
  const http = createUpstreamHttp();
  const health = createEndpointHealth({ now });
  const counters: SpendCounters = options.redis
    ? createRedisSpendCounters({
        redis: options.redis,
        prefix: config.redis_prefix,
        now,
        onError: options.onRedisError,
      })
    : createMemorySpendCounters({ now });
  const credits = await createCreditBalance(options.credits, options.onCreditRefreshError);
  const filterThreads = contentFilterThreadCount(config.content_filter_threads);
  const contentFilterThreads = filterThreads > 0 ? createContentFilterThreads({ size: filterThreads }) : null;
  const service = createGenerationService({
    config,
    clock,
    planner: createAttemptPlanner({ catalog, config, health }),
    adapters: createAdapters(http),
    health,
    sessions: createSessionRoutes({ now }),
    counters,
    credits,
    policies: options.policies,
    ...(options.onPolicyError ? { onPolicyError: options.onPolicyError } : {}),
    ...(options.onContentFilter ? { onContentFilter: options.onContentFilter } : {}),
    broadcastWorker: options.broadcastWorker ?? null,
    contentFilterThreads,
    ...(options.onContentFilterError ? { onContentFilterError: options.onContentFilterError } : {}),
    log: options.onGeneration
      ? {
          ...options.log,
          record: (record: GenerationRecordInput, outbox?: OutboxRowsBuilder) => {
            options.log.record(record, outbox);
            options.onGeneration?.(record);
          },
        }
      : options.log,
    addKeyUsage: (hash, amount) => options.keyCache.addUsage(hash, amount),
  });
  const inFlight = createInFlight();
  const surfaces: InferenceSurface[] = [
    ...options.dialects.map((surface) =>
      dialectSurface({ ...surface, service, clientStallMs: config.limits.client_stall_ms, inFlight }),
    ),
    embeddingsSurface(service, inFlight),
  ];
  return {
    service,
    health,
    counters,
    credits,
    /** The inference surfaces, for the direct lane (src/gateway/direct-lane.ts). */
    surfaces,
    /** Mounts every surface as a Fastify route under `api`'s prefix. */
    register(api: FastifyInstance) {
      for (const surface of surfaces) registerSurfaceRoute(api, surface);
    },
    /** Requests being served; see `close`. */
    inFlight,
    /**
     * After the server closed its connections: waits (at most `drainMs`) for the requests still
     * unwinding (an upstream call aborted, a reservation to settle, a record to queue), then closes.
     */
    async close(drainMs = 5_000): Promise<{ stillInFlight: number }> {
      const drained = await inFlight.drained(drainMs);
      const stillInFlight = inFlight.count;
      credits.close();
      // Requests that did not unwind in time would hold undici's graceful close: they are ended.
      await (drained ? http.close() : http.destroy());
      await contentFilterThreads?.close();
      return { stillInFlight };
    },
  };
}
