import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Registry } from 'prom-client';
import type { GenerationRecordInput } from '../billing/generation-log.js';
import { LabelledCounter, LabelledHistogram } from './labelled-metrics.js';

/** Counts one answered request: its method, route template, status and seconds since it arrived. */
export type RequestObserver = (method: string, route: string, status: number, seconds: number) => void;

/**
 * Prometheus metrics of one app: requests by route template and status, and a latency histogram.
 * The registry belongs to the app (not prom-client's global) so several apps can share a process.
 * `observeDirectRequest` counts a request the direct lane served (src/gateway/direct-lane.ts) in
 * them the same way, and in `switchyard_direct_lane_requests_total` too: the share of inference
 * traffic that went past Fastify.
 */
export function installMetrics(app: FastifyInstance): {
  registry: Registry;
  observeDirectRequest: RequestObserver;
} {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'switchyard_' });
  // Counted on every request: the request path's own counters (src/platform/labelled-metrics.ts).
  const requests = new LabelledCounter({
    name: 'switchyard_http_requests_total',
    help: 'HTTP requests by method, route template and status',
    labelNames: ['method', 'route', 'status'],
    registry,
  });
  const duration = new LabelledHistogram({
    name: 'switchyard_http_request_duration_seconds',
    help: 'HTTP request latency by method and route template',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registry,
  });
  const direct = new LabelledCounter({
    name: 'switchyard_direct_lane_requests_total',
    help: 'Inference requests served by the direct lane, past Fastify, by route template',
    labelNames: ['route'],
    registry,
  });
  const observeRequest: RequestObserver = (method, route, status, seconds) => {
    requests.inc([method, route, statusText(status)]);
    duration.observe([method, route], seconds);
  };
  // Callback style: an async hook would cost every request a promise.
  app.addHook('onResponse', (request, reply, done) => {
    // The template, never the raw URL, keeps label cardinality bounded; unknown routes share one label.
    observeRequest(
      request.method,
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
  return {
    registry,
    observeDirectRequest: (method, route, status, seconds) => {
      observeRequest(method, route, status, seconds);
      direct.inc([route]);
    },
  };
}

const statusTexts = new Map<number, string>();
/** A status code's label, converted once per code. */
function statusText(status: number): string {
  let text = statusTexts.get(status);
  if (text === undefined) {
    text = String(status);
    if (statusTexts.size < 1_000) statusTexts.set(status, text);
  }
  return text;
}

/**
 * Generation metrics: how many generations ended per provider, model and status, what they cost,
 * and how long the first token took. Labels come from the catalogue (provider slugs, model ids), so
 * their number stays bounded whatever clients send.
 */
export function createGenerationMetrics(registry: Registry): (record: GenerationRecordInput) => void {
  const generations = new LabelledCounter({
    name: 'switchyard_generations_total',
    help: 'Generations by provider, model and final status',
    labelNames: ['provider', 'model', 'status'],
    registry,
  });
  const cost = new LabelledCounter({
    name: 'switchyard_generation_cost_usd_total',
    help: 'What generations cost, in USD, by provider and model',
    labelNames: ['provider', 'model'],
    registry,
  });
  const firstToken = new LabelledHistogram({
    name: 'switchyard_generation_first_token_seconds',
    help: 'Time from the request to the first output, by provider',
    labelNames: ['provider'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registry,
  });
  return (record) => {
    const provider = record.provider_slug ?? 'none';
    const model = record.model ?? 'none';
    generations.inc([provider, model, record.status]);
    if (record.cost_nanos > 0) cost.inc([provider, model], record.cost_nanos / 1e9);
    if (record.first_token_ms !== null) firstToken.observe([provider], record.first_token_ms / 1000);
  };
}

/**
 * Content-filter matches by action and filter label (the catalogue's labels and the guardrails'
 * own labels: bounded by what admins configure, never by what clients send).
 */
export function createContentFilterMetrics(
  registry: Registry,
): (stage: {
  blocked: unknown;
  redacted: Array<{ label: string; count: number }>;
  flagged: Array<{ label: string; count: number }>;
}) => void {
  const matches = new Counter({
    name: 'switchyard_content_filter_matches_total',
    help: 'Content-filter matches in prompts by action (block, redact, flag) and filter label',
    labelNames: ['action', 'label'] as const,
    registers: [registry],
  });
  const blocks = new Counter({
    name: 'switchyard_content_filter_blocks_total',
    help: 'Requests blocked by a content filter',
    registers: [registry],
  });
  return (stage) => {
    if (stage.blocked) blocks.inc();
    for (const match of stage.redacted) matches.inc({ action: 'redact', label: match.label }, match.count);
    for (const match of stage.flagged) matches.inc({ action: 'flag', label: match.label }, match.count);
  };
}
