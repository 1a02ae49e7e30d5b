import type { Redis } from 'ioredis';
import {
  checkReserveArguments,
  checkSettleArguments,
  createMemorySpendCounters,
  IDLE_TTL_MS,
  type Reservation,
  type SpendCounters,
  WINDOW_GRACE_MS,
} from './spend-counters.js';

// Both scripts run atomically on the server, so reservations from every instance are serialised.
// Amounts travel as decimal strings and are added with INCRBY: Lua numbers are doubles (exact below
// 2^53, enough to compare) but Redis may format them with an exponent if a script wrote them back.
//
// Reserve. KEYS: the counters. ARGV[1]: amount; ARGV[2]: idle TTL (ms) of lifetime counters; then
// four per key: limit (-1 = none), base, expiry (epoch ms, 0 = lifetime), refuse-when-exhausted (1/0).
// Replies {0, ''} on success, or {index of the refusing key (1-based), its counter}.
const reserveScript = `
local amount = tonumber(ARGV[1])
local stored = {}
for i, key in ipairs(KEYS) do
  local at = 3 + (i - 1) * 4
  stored[i] = redis.call('GET', key)
  local shown = stored[i] or ARGV[at + 1]
  local counter = tonumber(shown)
  -- Never below what storage knows was spent (a counter that missed spend is raised to it).
  if counter < tonumber(ARGV[at + 1]) then
    shown = ARGV[at + 1]
    counter = tonumber(shown)
    stored[i] = nil
  end
  local limit = tonumber(ARGV[at])
  if limit >= 0 and (counter + amount > limit or (ARGV[at + 3] == '1' and counter >= limit)) then
    return {i, shown}
  end
end
for i, key in ipairs(KEYS) do
  local at = 3 + (i - 1) * 4
  if not stored[i] then redis.call('SET', key, ARGV[at + 1]) end
  redis.call('INCRBY', key, ARGV[1])
  if ARGV[at + 2] == '0' then
    redis.call('PEXPIRE', key, ARGV[2])
  else
    redis.call('PEXPIREAT', key, ARGV[at + 2])
  end
end
return {0, ''}`;

// Settle. KEYS: the counters. ARGV[1]: actual − reserved; ARGV[2]: idle TTL of lifetime counters;
// ARGV[2 + i]: 1 when key i is a lifetime counter. A counter that expired meanwhile is not re-created:
// it re-initialises from storage, which will include this cost.
const settleScript = `
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    if ARGV[1] ~= '0' and redis.call('INCRBY', key, ARGV[1]) < 0 then
      redis.call('SET', key, '0', 'KEEPTTL')
    end
    if ARGV[2 + i] == '1' then redis.call('PEXPIRE', key, ARGV[2]) end
  end
end
return 0`;

/** How long the local fallback keeps an idle counter: it goes stale while Redis serves the others. */
const FALLBACK_IDLE_TTL_MS = 5 * 60 * 1000;

type ScriptCommand = (...args: string[]) => Promise<unknown>;

interface RedisReservation {
  keys: string[];
  lifetime: boolean[];
  amountNanos: number;
}

/**
 * Counters in Redis under `${prefix}spend:<scope id>`, shared by every instance, so limits are
 * global. Windowed counters expire an hour after their window; lifetime counters after a day without
 * a reserve or settle, then re-initialise from storage.
 *
 * When a Redis call fails, the call is reported to `onError` (throttle it) and served by counters
 * in this process instead, so each instance still enforces the limits by itself rather than refusing
 * everything or spending without limit. A reservation settles in the store that made it; a settle
 * whose Redis call fails is reported and dropped, leaving the Redis counter conservative (too high)
 * until it expires.
 */
export function createRedisSpendCounters(options: {
  redis: Redis;
  prefix: string;
  now: () => number;
  onError: (error: unknown) => void;
}): SpendCounters {
  const fallback = createMemorySpendCounters({ now: options.now, idleTtlMs: FALLBACK_IDLE_TTL_MS });
  // Defined once per connection: ioredis then sends EVALSHA with the script's hash, not the script.
  const redis = options.redis as Redis & {
    switchyardSpendReserve?: ScriptCommand;
    switchyardSpendSettle?: ScriptCommand;
  };
  if (!redis.switchyardSpendReserve) redis.defineCommand('switchyardSpendReserve', { lua: reserveScript });
  if (!redis.switchyardSpendSettle) redis.defineCommand('switchyardSpendSettle', { lua: settleScript });
  const run = (name: 'switchyardSpendReserve' | 'switchyardSpendSettle', args: string[]) =>
    (redis[name] as ScriptCommand).call(redis, ...args);
  const keyOf = (scopeId: string) => `${options.prefix}spend:${scopeId}`;
  const pending = new WeakMap<Reservation, RedisReservation>();

  return {
    async reserve(scopes, amountNanos) {
      checkReserveArguments(scopes, amountNanos);
      const keys = scopes.map((scope) => keyOf(scope.id));
      const perKey = scopes.flatMap((scope) => [
        scope.limitNanos === Number.POSITIVE_INFINITY ? '-1' : String(scope.limitNanos),
        String(scope.baseNanos),
        scope.windowEndsAt === null ? '0' : String(scope.windowEndsAt + WINDOW_GRACE_MS),
        scope.refuseWhenExhausted ? '1' : '0',
      ]);
      let refusedIndex: number;
      let counter: number;
      try {
        const reply = await run('switchyardSpendReserve', [
          String(keys.length),
          ...keys,
          String(amountNanos),
          String(IDLE_TTL_MS),
          ...perKey,
        ]);
        if (!Array.isArray(reply) || typeof reply[0] !== 'number')
          throw new Error(`unexpected reply from the spend reserve script: ${JSON.stringify(reply)}`);
        refusedIndex = reply[0];
        counter = Number(reply[1]);
      } catch (error) {
        options.onError(error);
        return fallback.reserve(scopes, amountNanos);
      }
      const refused = scopes[refusedIndex - 1];
      if (refused) {
        return {
          ok: false,
          scopeId: refused.id,
          availableNanos: Math.max(0, refused.limitNanos - counter),
        };
      }
      const reservation: Reservation = {
        store: 'redis',
        amountNanos,
        scopeIds: scopes.map((scope) => scope.id),
      };
      pending.set(reservation, {
        keys,
        lifetime: scopes.map((scope) => scope.windowEndsAt === null),
        amountNanos,
      });
      return { ok: true, reservation };
    },

    async settle(reservation, actualNanos) {
      checkSettleArguments(actualNanos);
      const entry = pending.get(reservation);
      if (!entry) return fallback.settle(reservation, actualNanos);
      // Removed before the call: a concurrent second settle must not apply the difference twice.
      pending.delete(reservation);
      try {
        await run('switchyardSpendSettle', [
          String(entry.keys.length),
          ...entry.keys,
          String(actualNanos - entry.amountNanos),
          String(IDLE_TTL_MS),
          ...entry.lifetime.map((lifetime) => (lifetime ? '1' : '0')),
        ]);
      } catch (error) {
        options.onError(error);
      }
    },

    async peek(scopeId) {
      try {
        const value = await redis.get(keyOf(scopeId));
        return value === null ? null : Number(value);
      } catch (error) {
        options.onError(error);
        return fallback.peek(scopeId);
      }
    },
  };
}
