import type { Redis } from 'ioredis';

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** When the current window ends (Unix seconds). */
  resetAt: number;
}

export interface RateLimiter {
  /** Counts one request; the in-process limiter decides without awaiting. */
  hit(subject: string): RateLimitDecision | Promise<RateLimitDecision>;
}

interface WindowSettings {
  requests: number;
  windowSeconds: number;
  now: () => number;
}

function decide(count: number, settings: WindowSettings, windowIndex: number): RateLimitDecision {
  return {
    allowed: count <= settings.requests,
    limit: settings.requests,
    remaining: Math.max(0, settings.requests - count),
    resetAt: (windowIndex + 1) * settings.windowSeconds,
  };
}

/** Fixed windows counted in this process; right for a single instance. */
export function createMemoryRateLimiter(settings: WindowSettings): {
  hit(subject: string): RateLimitDecision;
} {
  const windows = new Map<string, { index: number; count: number }>();
  return {
    hit(subject) {
      const index = Math.floor(settings.now() / 1000 / settings.windowSeconds);
      const current = windows.get(subject);
      const window = current && current.index === index ? current : { index, count: 0 };
      window.count += 1;
      windows.set(subject, window);
      return decide(window.count, settings, index);
    },
  };
}

// INCR and the expiry are one atomic step, so concurrent instances never leave a window without TTL.
const incrementScript = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`;

/** Fixed windows counted in Redis: every instance sharing the Redis enforces one global limit. */
export function createRedisRateLimiter(
  settings: WindowSettings & { redis: Redis; prefix: string; onError: (error: unknown) => void },
): RateLimiter {
  const fallback = createMemoryRateLimiter(settings);
  // Defined once: ioredis then sends EVALSHA with the script's hash, not the script, per request.
  const redis = settings.redis as Redis & {
    switchyardRateLimitIncrement?: (key: string, ttl: string) => Promise<number>;
  };
  if (!redis.switchyardRateLimitIncrement) {
    redis.defineCommand('switchyardRateLimitIncrement', { numberOfKeys: 1, lua: incrementScript });
  }
  const increment = (key: string, ttl: string) =>
    (redis.switchyardRateLimitIncrement as (key: string, ttl: string) => Promise<number>).call(
      redis,
      key,
      ttl,
    );
  return {
    async hit(subject) {
      const index = Math.floor(settings.now() / 1000 / settings.windowSeconds);
      try {
        const count = await increment(
          `${settings.prefix}rl:${subject}:${index}`,
          String(settings.windowSeconds * 1000 + 1000),
        );
        return decide(count, settings, index);
      } catch (error) {
        // Redis being away must not take the gateway down: count locally until it returns.
        settings.onError(error);
        return fallback.hit(subject);
      }
    },
  };
}
