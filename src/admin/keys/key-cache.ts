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
  const loadedAt = new Map<string, number>();
  const misses = new Map<string, number>();

  bus.subscribe(TOPIC, (hash) => {
    entries.delete(hash);
    loadedAt.delete(hash);
    misses.delete(hash);
  });
  bus.onResync(() => {
    entries.clear();
    loadedAt.clear();
    misses.clear();
  });

  async function load(hash: string): Promise<CachedKey | null> {
    const row = await repository.findByHash(hash);
    if (!row) return null;
    const usage = (await repository.usageFor([hash], earliestWindowDay(clock.now()))).get(hash);
    return { row, usage: usage ?? emptyUsage() };
  }

  return {
    async get(hash: string): Promise<CachedKey | null> {
      const missedAt = misses.get(hash);
      if (missedAt !== undefined && clock.now().getTime() - missedAt < NEGATIVE_TTL_MS) return null;
      const now = clock.now().getTime();
      let entry = entries.get(hash);
      if (entry && now - (loadedAt.get(hash) ?? now) >= KEY_CACHE_MAX_AGE_MS) entry = undefined;
      if (!entry) {
        entry = load(hash);
        entries.set(hash, entry);
        loadedAt.set(hash, now);
        entry.then(
          (found) => {
            if (found) return;
            entries.delete(hash);
            loadedAt.delete(hash);
            if (misses.size >= MAX_NEGATIVE_ENTRIES) misses.delete(misses.keys().next().value as string);
            misses.set(hash, clock.now().getTime());
          },
          () => {
            entries.delete(hash);
            loadedAt.delete(hash);
          },
        );
      }
      return entry;
    },

    /** Drops the key here and on every other instance; the next lookup reads the database. */
    async invalidate(hash: string): Promise<void> {
      await bus.publish(TOPIC, hash);
    },

    /** Adds spend to a cached entry so limits read from memory stay current on this instance. */
    async addUsage(hash: string, amount: { usageNanos: number; byokNanos: number; at: Date }): Promise<void> {
      const entry = await entries.get(hash);
      if (!entry) return;
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
    },
  };
}

export type KeyCache = ReturnType<typeof createKeyCache>;
