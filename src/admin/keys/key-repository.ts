import { type Kysely, sql } from 'kysely';
import type { Storage } from '../../storage/database.js';
import type { ApiKeyTable, Database } from '../../storage/database-schema.js';

export type KeyRow = ApiKeyTable;

export interface KeyUsageRows {
  lifetime: { usage: number; byok: number };
  days: Array<{ day: string; usage: number; byok: number }>;
}

export const emptyUsage = (): KeyUsageRows => ({ lifetime: { usage: 0, byok: 0 }, days: [] });

/** Data access for API keys and their per-day usage; nothing here knows HTTP. */
export function createKeyRepository(storage: Storage) {
  const { db } = storage;
  return {
    async insert(row: KeyRow): Promise<void> {
      await db.insertInto('api_keys').values(row).execute();
    },

    /** Inserts unless a key with this hash exists; true when this call inserted it. */
    async insertIfAbsent(row: KeyRow): Promise<boolean> {
      const result = await db
        .insertInto('api_keys')
        .values(row)
        .onConflict((conflict) => conflict.column('hash').doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
    },

    async findByHash(hash: string): Promise<KeyRow | undefined> {
      return db.selectFrom('api_keys').selectAll().where('hash', '=', hash).executeTakeFirst();
    },

    async list(options: {
      workspaceId: string;
      includeDisabled: boolean;
      offset: number;
      limit: number;
    }): Promise<KeyRow[]> {
      let query = db.selectFrom('api_keys').selectAll().where('workspace_id', '=', options.workspaceId);
      if (!options.includeDisabled) query = query.where('disabled', '=', 0);
      return query
        .orderBy('created_at', 'desc')
        .orderBy('hash', 'asc')
        .offset(options.offset)
        .limit(options.limit)
        .execute();
    },

    async listAll(): Promise<KeyRow[]> {
      return db.selectFrom('api_keys').selectAll().orderBy('created_at', 'asc').execute();
    },

    async update(hash: string, changes: Partial<Omit<KeyRow, 'hash'>>): Promise<KeyRow | undefined> {
      const result = await db
        .updateTable('api_keys')
        .set(changes)
        .where('hash', '=', hash)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return undefined;
      return this.findByHash(hash);
    },

    async delete(hash: string): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        await trx.deleteFrom('key_usage_daily').where('key_hash', '=', hash).execute();
        // A deleted key holds no guardrail; its assignment would otherwise linger in the lists.
        await trx.deleteFrom('guardrail_key_assignments').where('key_hash', '=', hash).execute();
        const result = await trx.deleteFrom('api_keys').where('hash', '=', hash).executeTakeFirst();
        return Number(result.numDeletedRows) > 0;
      });
    },

    /** Lifetime sums and the per-day rows from `sinceDay` on, for each of the given keys. */
    async usageFor(hashes: string[], sinceDay: string): Promise<Map<string, KeyUsageRows>> {
      const usage = new Map<string, KeyUsageRows>(hashes.map((hash) => [hash, emptyUsage()]));
      if (hashes.length === 0) return usage;
      const lifetimes = await db
        .selectFrom('key_usage_daily')
        .select([
          'key_hash',
          sql<number>`sum(usage_nanos)`.as('usage'),
          sql<number>`sum(byok_usage_nanos)`.as('byok'),
        ])
        .where('key_hash', 'in', hashes)
        .groupBy('key_hash')
        .execute();
      for (const row of lifetimes) {
        const entry = usage.get(row.key_hash);
        if (entry) entry.lifetime = { usage: Number(row.usage), byok: Number(row.byok) };
      }
      const days = await db
        .selectFrom('key_usage_daily')
        .select(['key_hash', 'day', 'usage_nanos', 'byok_usage_nanos'])
        .where('key_hash', 'in', hashes)
        .where('day', '>=', sinceDay)
        .execute();
      for (const row of days) {
        usage
          .get(row.key_hash)
          ?.days.push({ day: row.day, usage: Number(row.usage_nanos), byok: Number(row.byok_usage_nanos) });
      }
      return usage;
    },

    /** Adds spend to a key's row for the day (upsert), atomically on both backends. */
    addUsage: (entry: DailyUsage): Promise<void> => addDailyUsage(db, entry),
  };
}

export interface DailyUsage {
  hash: string;
  day: string;
  usageNanos: number;
  byokNanos: number;
}

/**
 * Adds spend to a key's row for one UTC day, creating it if needed; portable to both backends and
 * usable inside a transaction (the generation log bills whole batches this way).
 */
export async function addDailyUsage(db: Kysely<Database>, entry: DailyUsage): Promise<void> {
  await db
    .insertInto('key_usage_daily')
    .values({
      key_hash: entry.hash,
      day: entry.day,
      usage_nanos: entry.usageNanos,
      byok_usage_nanos: entry.byokNanos,
    })
    .onConflict((conflict) =>
      conflict.columns(['key_hash', 'day']).doUpdateSet({
        usage_nanos: sql`key_usage_daily.usage_nanos + ${entry.usageNanos}`,
        byok_usage_nanos: sql`key_usage_daily.byok_usage_nanos + ${entry.byokNanos}`,
      }),
    )
    .execute();
}

export type KeyRepository = ReturnType<typeof createKeyRepository>;
