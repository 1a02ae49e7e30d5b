/**
 * Live health of every upstream endpoint this instance has called: uptime over 5 minutes, 30
 * minutes and a day, time-to-first-token latency and output throughput percentiles over 30
 * minutes, and a cool-down after failures that routing uses to deprioritise an endpoint. Figures
 * live in per-minute buckets, allocated only for endpoints that see traffic; nothing here waits.
 */

const MINUTE_MS = 60_000;
const DAY_MINUTES = 24 * 60;
/** Samples kept per minute bucket for percentiles; the rest are counted but not kept. */
const SAMPLES_PER_BUCKET = 64;
const BASE_COOL_DOWN_MS = 30_000;
const MAX_COOL_DOWN_MS = 5 * MINUTE_MS;

interface Bucket {
  minute: number;
  requests: number;
  failures: number;
  /** Milliseconds to the first token (the catalogue's unit). */
  latencies: number[];
  /** Output tokens per second. */
  throughputs: number[];
}

interface EndpointState {
  /** Ring of minute buckets, indexed by minute modulo a day. */
  buckets: Array<Bucket | undefined>;
  consecutiveFailures: number;
  coolDownUntil: number;
}

export interface PercentileFigures {
  p50: number;
  p75: number;
  p90: number;
  p99: number;
}

export interface EndpointLiveStats {
  /** Percent of successful calls, or null without calls in the window. */
  uptime5m: number | null;
  uptime30m: number | null;
  uptime1d: number | null;
  /** Milliseconds to first token over 30 minutes. */
  latency30m: PercentileFigures | null;
  /** Output tokens per second over 30 minutes. */
  throughput30m: PercentileFigures | null;
  /** Over the last 5 minutes, what `preferred_max_latency` and `preferred_min_throughput` compare with. */
  latency5m: PercentileFigures | null;
  throughput5m: PercentileFigures | null;
}

export interface AttemptOutcome {
  ok: boolean;
  /** A failure that says the endpoint is unwell (5xx, 429, timeout, connection); invalid requests do not count. */
  endpointFault?: boolean;
  retryAfterSeconds?: number | null;
  firstTokenMs?: number | null;
  outputTokens?: number;
  /** From first token to the end of the output. */
  generationMs?: number;
}

function percentilesOf(values: number[]): PercentileFigures | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (fraction: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] as number;
  const round = (value: number) => Math.round(value * 1000) / 1000;
  return { p50: round(at(0.5)), p75: round(at(0.75)), p90: round(at(0.9)), p99: round(at(0.99)) };
}

export function createEndpointHealth(options: { now: () => number }) {
  const states = new Map<string, EndpointState>();

  function bucketFor(state: EndpointState, now: number): Bucket {
    const minute = Math.floor(now / MINUTE_MS);
    const slot = minute % DAY_MINUTES;
    let bucket = state.buckets[slot];
    if (!bucket || bucket.minute !== minute) {
      bucket = { minute, requests: 0, failures: 0, latencies: [], throughputs: [] };
      state.buckets[slot] = bucket;
    }
    return bucket;
  }

  function recent(state: EndpointState, minutes: number, now: number): Bucket[] {
    const current = Math.floor(now / MINUTE_MS);
    return state.buckets.filter(
      (bucket): bucket is Bucket => bucket !== undefined && current - bucket.minute < minutes,
    );
  }

  function uptime(buckets: Bucket[]): number | null {
    let requests = 0;
    let failures = 0;
    for (const bucket of buckets) {
      requests += bucket.requests;
      failures += bucket.failures;
    }
    return requests === 0 ? null : Math.round(((requests - failures) / requests) * 10_000) / 100;
  }

  return {
    /** Feeds one attempt's outcome into the endpoint's windows and cool-down. */
    record(endpointId: string, outcome: AttemptOutcome): void {
      const now = options.now();
      let state = states.get(endpointId);
      if (!state) {
        state = { buckets: new Array(DAY_MINUTES), consecutiveFailures: 0, coolDownUntil: 0 };
        states.set(endpointId, state);
      }
      const bucket = bucketFor(state, now);
      if (outcome.ok) {
        bucket.requests += 1;
        state.consecutiveFailures = 0;
        state.coolDownUntil = 0;
        if (outcome.firstTokenMs != null && bucket.latencies.length < SAMPLES_PER_BUCKET) {
          bucket.latencies.push(outcome.firstTokenMs);
        }
        const tokens = outcome.outputTokens ?? 0;
        const seconds = (outcome.generationMs ?? 0) / 1000;
        if (tokens > 1 && seconds > 0 && bucket.throughputs.length < SAMPLES_PER_BUCKET) {
          bucket.throughputs.push(tokens / seconds);
        }
        return;
      }
      if (!outcome.endpointFault) return;
      bucket.requests += 1;
      bucket.failures += 1;
      state.consecutiveFailures += 1;
      const backoff = Math.min(MAX_COOL_DOWN_MS, BASE_COOL_DOWN_MS * 2 ** (state.consecutiveFailures - 1));
      const hinted = Math.min(MAX_COOL_DOWN_MS, (outcome.retryAfterSeconds ?? 0) * 1000);
      state.coolDownUntil = now + Math.max(backoff, hinted);
    },

    /** Whether this instance has called the endpoint (and so has figures of its own). */
    has: (endpointId: string): boolean => states.has(endpointId),

    /** How many endpoints have figures; 0 means the catalogue can serve its prepared answers. */
    size: (): number => states.size,

    /** Whether routing should move this endpoint behind the healthy ones. */
    isCoolingDown(endpointId: string): boolean {
      const state = states.get(endpointId);
      return state !== undefined && state.coolDownUntil > options.now();
    },

    /** The live figures of an endpoint, or null when this instance has never called it. */
    stats(endpointId: string): EndpointLiveStats | null {
      const state = states.get(endpointId);
      if (!state) return null;
      const now = options.now();
      const last30 = recent(state, 30, now);
      const last5 = last30.filter((bucket) => Math.floor(now / MINUTE_MS) - bucket.minute < 5);
      return {
        uptime5m: uptime(last5),
        uptime30m: uptime(last30),
        uptime1d: uptime(recent(state, DAY_MINUTES, now)),
        latency30m: percentilesOf(last30.flatMap((bucket) => bucket.latencies)),
        throughput30m: percentilesOf(last30.flatMap((bucket) => bucket.throughputs)),
        latency5m: percentilesOf(last5.flatMap((bucket) => bucket.latencies)),
        throughput5m: percentilesOf(last5.flatMap((bucket) => bucket.throughputs)),
      };
    },
  };
}

export type EndpointHealth = ReturnType<typeof createEndpointHealth>;
