/**
 * Reserve-then-settle spend counters (DESIGN.md "Limits are reserve-then-settle"). Before an upstream
 * call the gateway reserves the request's worst-case cost against every limit that applies (the key's
 * window, the account's credits, later budgets and guardrails) in one all-or-nothing step; after the
 * call it settles the reservation with the real cost. A counter holds settled spend plus outstanding
 * reservations, so concurrent requests see each other's reservations and cannot overspend.
 *
 * Storage stays the truth: a missing counter starts from the spend storage already knows
 * (`baseNanos`), and counters expire (window end, or idleness) so they re-initialise from it.
 * This module holds the contract and the in-process store; `spend-counters-redis.ts` shares the
 * counters across instances.
 */

/** One limit a reservation is checked against. Amounts are integer nano-dollars. */
export interface SpendScope {
  /** Stable id of one counter, e.g. `key:<hash>:2026-11-22` or `credits`; include the window in it. */
  id: string;
  /** Nothing may be reserved past this; `Number.POSITIVE_INFINITY` counts without limiting. */
  limitNanos: number;
  /** What storage already knows was spent in this window; used only to initialise a missing counter. */
  baseNanos: number;
  /** When the window ends (ms since epoch), or null for lifetime scopes; counters expire after it. */
  windowEndsAt: number | null;
  /**
   * Refuse even a zero amount once the counter is at or over its limit. Set it for account credits
   * (the reference answers 402 when the balance is ≤ 0, even for free models); leave it off for key
   * limits, where a free model still passes an exhausted key.
   */
  refuseWhenExhausted?: boolean;
}

/** A successful reservation; hand it back to `settle` exactly once (later calls do nothing). */
export interface Reservation {
  /** The store that holds it: a reservation made in the local fallback settles there. */
  readonly store: 'memory' | 'redis';
  readonly amountNanos: number;
  readonly scopeIds: readonly string[];
}

export type ReserveOutcome =
  | { ok: true; reservation: Reservation }
  | { ok: false; scopeId: string; availableNanos: number };

export interface SpendCounters {
  /** All-or-nothing across the scopes: either every counter grows by the amount, or none does. */
  reserve(scopes: SpendScope[], amountNanos: number): Promise<ReserveOutcome>;
  /**
   * Replaces the reserved amount by the actual cost on every scope of the reservation (the counter
   * never drops below 0). Idempotent: a second settle of the same reservation does nothing.
   */
  settle(reservation: Reservation, actualNanos: number): Promise<void>;
  /** What a scope's counter holds now (settled + reserved), or null when it has none. */
  peek(scopeId: string): Promise<number | null>;
}

/** Windowed counters live this long past their window, so late settles still land in them. */
export const WINDOW_GRACE_MS = 60 * 60 * 1000;
/** Counters untouched this long are dropped and re-initialised from storage on next use. */
export const IDLE_TTL_MS = 24 * 60 * 60 * 1000;
const SWEEP_INTERVAL_MS = 60 * 1000;

const isNanos = (value: number) => Number.isSafeInteger(value) && value >= 0;

/** Arguments are computed by the gateway, never taken from clients: a bad one is a programming error. */
export function checkReserveArguments(scopes: SpendScope[], amountNanos: number): void {
  if (!isNanos(amountNanos)) throw new RangeError(`amountNanos must be a safe integer >= 0: ${amountNanos}`);
  const seen = new Set<string>();
  for (const scope of scopes) {
    if (scope.id === '' || seen.has(scope.id))
      throw new RangeError(`scope ids must be unique: "${scope.id}"`);
    seen.add(scope.id);
    if (!isNanos(scope.limitNanos) && scope.limitNanos !== Number.POSITIVE_INFINITY)
      throw new RangeError(`scope ${scope.id}: limitNanos must be a safe integer >= 0 or Infinity`);
    if (!isNanos(scope.baseNanos))
      throw new RangeError(`scope ${scope.id}: baseNanos must be a safe integer >= 0`);
    if (scope.windowEndsAt !== null && !Number.isSafeInteger(scope.windowEndsAt))
      throw new RangeError(`scope ${scope.id}: windowEndsAt must be integer milliseconds or null`);
  }
}

export function checkSettleArguments(actualNanos: number): void {
  if (!isNanos(actualNanos)) throw new RangeError(`actualNanos must be a safe integer >= 0: ${actualNanos}`);
}

/** The refusal for `scope` when `counter` cannot take `amountNanos`, or null when it can. */
export function refusal(
  scope: SpendScope,
  counter: number,
  amountNanos: number,
): { ok: false; scopeId: string; availableNanos: number } | null {
  const exceeded =
    counter + amountNanos > scope.limitNanos ||
    (scope.refuseWhenExhausted === true && counter >= scope.limitNanos);
  return exceeded
    ? { ok: false, scopeId: scope.id, availableNanos: Math.max(0, scope.limitNanos - counter) }
    : null;
}

/** A reservation of the memory store: the counters it holds until it is settled (null after). */
class MemoryReservation implements Reservation {
  readonly store = 'memory';
  constructor(
    readonly amountNanos: number,
    readonly scopeIds: readonly string[],
    /** The store that made it: another memory store (the Redis store's fallback, say) leaves it alone. */
    readonly madeBy: object,
    public counters: Counter[] | null,
  ) {}
}

interface Counter {
  value: number;
  /** Reservations not yet settled: a counter holding some is never dropped for idleness. */
  outstanding: number;
  touchedAt: number;
  expiresAt: number | null;
}

/**
 * Counters in this process: exact for a single instance (reserve runs without awaiting, so the
 * check and the increments are one step for the event loop). Stale counters are dropped lazily: on
 * access, and by a sweep at most once a minute so past windows do not accumulate.
 *
 * `idleTtlMs` (default 24 h) bounds how long an idle counter outlives what storage knows; the
 * Redis store's fallback uses a shorter one, since its counters go stale while Redis serves.
 */
export function createMemorySpendCounters(options: { now: () => number; idleTtlMs?: number }): SpendCounters {
  const idleTtlMs = options.idleTtlMs ?? IDLE_TTL_MS;
  const counters = new Map<string, Counter>();
  // Settle goes to the counter objects reserved, not to ids: a counter dropped and re-created in
  // between is left alone, like an expired Redis key. The reservation carries them (no WeakMap
  // entry per request for the collector to trace), and only this store settles its own.
  const store = {};
  let sweptAt = Number.NEGATIVE_INFINITY;

  const isStale = (counter: Counter, now: number) =>
    (counter.expiresAt !== null && now >= counter.expiresAt) ||
    (counter.outstanding === 0 && now - counter.touchedAt >= idleTtlMs);

  function live(id: string, now: number): Counter | undefined {
    const counter = counters.get(id);
    if (counter && isStale(counter, now)) {
      counters.delete(id);
      return undefined;
    }
    return counter;
  }

  function sweep(now: number): void {
    if (now - sweptAt < SWEEP_INTERVAL_MS) return;
    sweptAt = now;
    for (const [id, counter] of counters) if (isStale(counter, now)) counters.delete(id);
  }

  return {
    async reserve(scopes, amountNanos) {
      checkReserveArguments(scopes, amountNanos);
      const now = options.now();
      sweep(now);
      const current = scopes.map((scope) => live(scope.id, now));
      for (let index = 0; index < scopes.length; index++) {
        const scope = scopes[index] as SpendScope;
        // Never below what storage knows was spent: a counter that missed spend (a budget deleted
        // and set again, a guardrail re-assigned) would otherwise let it be spent twice.
        const value = Math.max(current[index]?.value ?? scope.baseNanos, scope.baseNanos);
        const refused = refusal(scope, value, amountNanos);
        if (refused) return refused;
      }
      const reserved = scopes.map((scope, index) => {
        let counter = current[index];
        if (!counter) {
          counter = {
            value: scope.baseNanos,
            outstanding: 0,
            touchedAt: now,
            expiresAt: scope.windowEndsAt === null ? null : scope.windowEndsAt + WINDOW_GRACE_MS,
          };
          counters.set(scope.id, counter);
        }
        counter.value = Math.max(counter.value, scope.baseNanos) + amountNanos;
        counter.outstanding += 1;
        counter.touchedAt = now;
        return counter;
      });
      const reservation = new MemoryReservation(
        amountNanos,
        scopes.map((scope) => scope.id),
        store,
        reserved,
      );
      return { ok: true, reservation };
    },

    async settle(reservation, actualNanos) {
      checkSettleArguments(actualNanos);
      if (!(reservation instanceof MemoryReservation) || reservation.madeBy !== store) return;
      const reserved = reservation.counters;
      if (!reserved) return;
      reservation.counters = null;
      const now = options.now();
      for (const counter of reserved) {
        counter.value = Math.max(0, counter.value + actualNanos - reservation.amountNanos);
        counter.outstanding -= 1;
        counter.touchedAt = now;
      }
    },

    async peek(scopeId) {
      return live(scopeId, options.now())?.value ?? null;
    },
  };
}
