import { earliestWindowDay, utcDay } from '../../billing/usage-windows.js';
import type { ChangeBus } from '../../platform/change-bus.js';
import type { Clock } from '../../platform/clock.js';
import { emptyUsage, type KeyRepository, type KeyRow, type KeyUsageRows } from './key-repository.js';

export interface CachedKey {
  row: KeyRow;
  usage: KeyUsageRows;
}

const TOPIC = 'api-key';
/** How long "no such key" is remembered, so a flood of made-up keys cannot reach the database. */
const NEGATIVE_TTL_MS = 30_000;
const MAX_NEGATIVE_ENTRIES = 10_000;
/**
 * How long a found key is trusted without looking again. Invalidations normally arrive at once; the
 * time limit bounds the damage when one is lost (Redis away while another instance disabled a key).
 */
export const KEY_CACHE_MAX_AGE_MS = 60_000;

/**
 * Keys and their recent usage, served from memory after the first lookup. Loads are coalesced
 * (one query per key however many requests arrive at once); any change invalidates the entry on
 * every instance through the change bus.
 */
export function createKeyCache(options: { repository: KeyRepository; bus: ChangeBus; clock: Clock }) {
  const { repository, bus, clock } = options;
  const entries = new Map<string, Promise<CachedKey | null>>();
  /** The entries whose load has finished with a key: read without awaiting (`peek`). */
  const ready = new Map<string, CachedKey>();
  const loadedAt = new Map<string, number>();
  const misses = new Map<string, number>();

  const forget = (hash: string) => {
    entries.delete(hash);
    ready.delete(hash);
    loadedAt.delete(hash);
  };
  bus.subscribe(TOPIC, (hash) => {
    forget(hash);
    misses.delete(hash);
  });
  bus.onResync(() => {
    entries.clear();
    ready.clear();
    loadedAt.clear();
    misses.clear();
  });

  const isFresh = (hash: string, now: number) => now - (loadedAt.get(hash) ?? now) < KEY_CACHE_MAX_AGE_MS;

  async function load(hash: string): Promise<CachedKey | null> {
    const row = await repository.findByHash(hash);
    if (!row) return null;
    const usage = (await repository.usageFor([hash], earliestWindowDay(clock.now()))).get(hash);
    return { row, usage: usage ?? emptyUsage() };
  }

  return {
    /**
     * The key when its entry is loaded and fresh, without awaiting (the request path's common case);
     * undefined when `get` must be asked.
     */
    peek(hash: string): CachedKey | undefined {
      const found = ready.get(hash);
      return found && isFresh(hash, clock.now().getTime()) ? found : undefined;
    },

    async get(hash: string): Promise<CachedKey | null> {
      const missedAt = misses.get(hash);
      if (missedAt !== undefined && clock.now().getTime() - missedAt < NEGATIVE_TTL_MS) return null;
      const now = clock.now().getTime();
      let entry = entries.get(hash);
      if (entry && !isFresh(hash, now)) entry = undefined;
      if (!entry) {
        const loading = load(hash);
        entry = loading;
        ready.delete(hash);
        entries.set(hash, loading);
        loadedAt.set(hash, now);
        loading.then(
          (found) => {
            // A newer load (or an invalidation) replaced this one meanwhile: it has the last word.
            if (entries.get(hash) !== loading) return;
            if (found) {
              ready.set(hash, found);
              return;
            }
            forget(hash);
            if (misses.size >= MAX_NEGATIVE_ENTRIES) misses.delete(misses.keys().next().value as string);
            misses.set(hash, clock.now().getTime());
          },
          () => {
            if (entries.get(hash) === loading) forget(hash);
          },
        );
      }
      return entry;
    },

    /** Drops the key here and on every other instance; the next lookup reads the database. */
    async invalidate(hash: string): Promise<void> {
      await bus.publish(TOPIC, hash);
    },

    /**
     * Adds spend to a cached entry so limits read from memory stay current on this instance: at once
     * when the entry is loaded, else when its load ends. The cached usage only keeps limits current
     * between loads; a load that fails is followed by one that reads the recorded spend anyway, so
     * its failure is ignored here.
     */
    addUsage(hash: string, amount: { usageNanos: number; byokNanos: number; at: Date }): void {
      const found = ready.get(hash);
      if (found) {
        addToEntry(found, amount);
        return;
      }
      entries.get(hash)?.then(
        (entry) => {
          if (entry) addToEntry(entry, amount);
        },
        () => {},
      );
    },
  };
}

/** Adds one generation's spend to a cached key's lifetime and daily usage. */
function addToEntry(entry: CachedKey, amount: { usageNanos: number; byokNanos: number; at: Date }): void {
  const day = utcDay(amount.at);
  entry.usage.lifetime.usage += amount.usageNanos;
  entry.usage.lifetime.byok += amount.byokNanos;
  const existing = entry.usage.days.find((item) => item.day === day);
  if (existing) {
    existing.usage += amount.usageNanos;
    existing.byok += amount.byokNanos;
  } else {
    entry.usage.days.push({ day, usage: amount.usageNanos, byok: amount.byokNanos });
  }
}

export type KeyCache = ReturnType<typeof createKeyCache>;
