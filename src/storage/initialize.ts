import type { Kysely } from 'kysely';
import { usdToNanos } from '../billing/money.js';
import { newId } from '../platform/ids.js';
import type { Storage } from './database.js';
import type { Database } from './database-schema.js';
import { migrateToLatest } from './migrations.js';

/**
 * Migrates, then seeds what a new database needs exactly once: the default workspace and the
 * initial credit grant. The meta row is claimed in the same transaction, so two instances starting
 * together on one PostgreSQL database seed it only once.
 */
export async function initializeStorage(options: {
  storage: Storage;
  initialCreditsUsd: number;
  now: Date;
}): Promise<{ migrations: string[]; seeded: boolean }> {
  const { storage, now } = options;
  const migrations = await migrateToLatest(storage.db, storage.kind);
  const at = now.toISOString();
  const seeded = await storage.db.transaction().execute(async (trx) => {
    const claim = await trx
      .insertInto('meta')
      .values({ key: 'initialized_at', value: at })
      .onConflict((conflict) => conflict.column('key').doNothing())
      .executeTakeFirst();
    if (Number(claim.numInsertedOrUpdatedRows ?? 0) === 0) return false;
    await seed(trx, { at, initialCreditsUsd: options.initialCreditsUsd });
    return true;
  });
  return { migrations, seeded };
}

async function seed(
  trx: Kysely<Database>,
  options: { at: string; initialCreditsUsd: number },
): Promise<void> {
  await trx
    .insertInto('workspaces')
    .values({
      id: newId(),
      name: 'Default',
      slug: 'default',
      description: 'The default workspace, created on first start',
      created_by: 'system',
      default_text_model: '',
      default_image_model: '',
      default_provider_sort: '',
      io_logging_api_key_ids: null,
      io_logging_sampling_rate: 1,
      is_data_discount_logging_enabled: 0,
      is_observability_broadcast_enabled: 0,
      is_observability_io_logging_enabled: 0,
      include_byok_in_budgets: 0,
      is_default: 1,
      created_at: options.at,
      updated_at: options.at,
    })
    .execute();
  if (options.initialCreditsUsd > 0) {
    await trx
      .insertInto('credit_ledger')
      .values({
        id: newId(),
        kind: 'grant',
        amount_nanos: usdToNanos(options.initialCreditsUsd),
        note: 'initial credits (config credits.initial)',
        created_at: options.at,
      })
      .execute();
  }
}
