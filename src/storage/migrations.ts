// biome-ignore-all lint/suspicious/noExplicitAny: migrations describe tables, not the typed schema
import { type Kysely, sql } from 'kysely';

interface Migration {
  up(db: Kysely<any>): Promise<void>;
}

/**
 * The one list of migrations, for SQLite and PostgreSQL alike. Append only: a migration that
 * has shipped is never edited.
 */
const migrations: Record<string, Migration> = {
  '0001_foundation': {
    async up(db) {
      await db.schema
        .createTable('meta')
        .addColumn('key', 'text', (column) => column.primaryKey())
        .addColumn('value', 'text', (column) => column.notNull())
        .execute();
      await db.schema
        .createTable('workspaces')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('name', 'text', (column) => column.notNull())
        .addColumn('slug', 'text', (column) => column.notNull().unique())
        .addColumn('description', 'text', (column) => column.notNull())
        .addColumn('created_by', 'text', (column) => column.notNull())
        .addColumn('default_text_model', 'text', (column) => column.notNull())
        .addColumn('default_image_model', 'text', (column) => column.notNull())
        .addColumn('default_provider_sort', 'text', (column) => column.notNull())
        .addColumn('io_logging_api_key_ids', 'text')
        .addColumn('io_logging_sampling_rate', 'double precision', (column) => column.notNull())
        .addColumn('is_data_discount_logging_enabled', 'integer', (column) => column.notNull())
        .addColumn('is_observability_broadcast_enabled', 'integer', (column) => column.notNull())
        .addColumn('is_observability_io_logging_enabled', 'integer', (column) => column.notNull())
        .addColumn('is_default', 'integer', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('updated_at', 'text', (column) => column.notNull())
        .execute();
      await db.schema
        .createTable('api_keys')
        .addColumn('hash', 'text', (column) => column.primaryKey())
        .addColumn('name', 'text', (column) => column.notNull())
        .addColumn('label', 'text', (column) => column.notNull())
        .addColumn('is_management', 'integer', (column) => column.notNull())
        .addColumn('disabled', 'integer', (column) => column.notNull())
        .addColumn('limit_nanos', 'bigint')
        .addColumn('limit_reset', 'text')
        .addColumn('include_byok_in_limit', 'integer', (column) => column.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('creator_user_id', 'text')
        .addColumn('workspace_id', 'text', (column) => column.notNull().references('workspaces.id'))
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('updated_at', 'text')
        .execute();
      await db.schema
        .createIndex('api_keys_workspace_created')
        .on('api_keys')
        .columns(['workspace_id', 'created_at'])
        .execute();
      await db.schema
        .createTable('key_usage_daily')
        .addColumn('key_hash', 'text', (column) => column.notNull())
        .addColumn('day', 'text', (column) => column.notNull())
        .addColumn('usage_nanos', 'bigint', (column) => column.notNull())
        .addColumn('byok_usage_nanos', 'bigint', (column) => column.notNull())
        .addPrimaryKeyConstraint('key_usage_daily_pk', ['key_hash', 'day'])
        .execute();
      await db.schema
        .createTable('credit_ledger')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('kind', 'text', (column) => column.notNull())
        .addColumn('amount_nanos', 'bigint', (column) => column.notNull())
        .addColumn('note', 'text')
        .addColumn('created_at', 'text', (column) => column.notNull())
        .execute();
    },
  },
  '0002_generations': {
    async up(db) {
      // No foreign key to api_keys: deleting a key must not fail on, or erase, its history.
      await db.schema
        .createTable('generations')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('key_hash', 'text', (column) => column.notNull())
        .addColumn('workspace_id', 'text', (column) => column.notNull())
        .addColumn('api_type', 'text', (column) => column.notNull())
        .addColumn('requested_model', 'text')
        .addColumn('model', 'text')
        .addColumn('provider_slug', 'text')
        .addColumn('provider_name', 'text')
        .addColumn('endpoint_id', 'text')
        .addColumn('upstream_id', 'text')
        .addColumn('streamed', 'integer', (column) => column.notNull())
        .addColumn('cancelled', 'integer', (column) => column.notNull())
        .addColumn('is_byok', 'integer', (column) => column.notNull())
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('http_status', 'integer', (column) => column.notNull())
        .addColumn('error_type', 'text')
        .addColumn('error_message', 'text')
        .addColumn('finish_reason', 'text')
        .addColumn('native_finish_reason', 'text')
        .addColumn('tokens_prompt', 'bigint', (column) => column.notNull())
        .addColumn('tokens_completion', 'bigint', (column) => column.notNull())
        .addColumn('tokens_cached', 'bigint', (column) => column.notNull())
        .addColumn('tokens_cache_write', 'bigint', (column) => column.notNull())
        .addColumn('tokens_reasoning', 'bigint', (column) => column.notNull())
        .addColumn('cost_nanos', 'bigint', (column) => column.notNull())
        .addColumn('input_cost_nanos', 'bigint', (column) => column.notNull())
        .addColumn('output_cost_nanos', 'bigint', (column) => column.notNull())
        .addColumn('latency_ms', 'bigint', (column) => column.notNull())
        .addColumn('first_token_ms', 'bigint')
        .addColumn('generation_time_ms', 'bigint')
        .addColumn('user_id', 'text')
        .addColumn('session_id', 'text')
        .addColumn('metadata', 'text')
        .addColumn('trace', 'text')
        .addColumn('app_referer', 'text')
        .addColumn('app_title', 'text')
        .addColumn('attempts', 'text', (column) => column.notNull())
        .execute();
      await db.schema
        .createIndex('generations_key_created')
        .on('generations')
        .columns(['key_hash', 'created_at'])
        .execute();
      await db.schema
        .createIndex('generations_workspace_created')
        .on('generations')
        .columns(['workspace_id', 'created_at'])
        .execute();
    },
  },
  '0003_governance': {
    async up(db) {
      await db.schema
        .alterTable('workspaces')
        .addColumn('include_byok_in_budgets', 'integer', (column) => column.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createTable('workspace_members')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('workspace_id', 'text', (column) => column.notNull().references('workspaces.id'))
        .addColumn('user_id', 'text', (column) => column.notNull())
        .addColumn('role', 'text', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addUniqueConstraint('workspace_members_workspace_user', ['workspace_id', 'user_id'])
        .execute();
      await db.schema
        .createTable('workspace_budgets')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('workspace_id', 'text', (column) => column.notNull().references('workspaces.id'))
        .addColumn('interval', 'text', (column) => column.notNull())
        .addColumn('limit_nanos', 'bigint', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('updated_at', 'text', (column) => column.notNull())
        .addUniqueConstraint('workspace_budgets_workspace_interval', ['workspace_id', 'interval'])
        .execute();
      // Workspace spend per UTC day, billed by the generation log in the same transaction as
      // key_usage_daily: budgets read their windows from it.
      await db.schema
        .createTable('workspace_usage_daily')
        .addColumn('workspace_id', 'text', (column) => column.notNull())
        .addColumn('day', 'text', (column) => column.notNull())
        .addColumn('usage_nanos', 'bigint', (column) => column.notNull())
        .addColumn('byok_usage_nanos', 'bigint', (column) => column.notNull())
        .addPrimaryKeyConstraint('workspace_usage_daily_pk', ['workspace_id', 'day'])
        .execute();
      // The organization member a generation's key belongs to (the key's creator), kept with the
      // record so member spend survives the key's deletion.
      await db.schema.alterTable('generations').addColumn('member_user_id', 'text').execute();
      // Member spend per workspace and UTC day, billed like workspace_usage_daily: member guardrail
      // limits read their windows from it.
      await db.schema
        .createTable('member_usage_daily')
        .addColumn('workspace_id', 'text', (column) => column.notNull())
        .addColumn('user_id', 'text', (column) => column.notNull())
        .addColumn('day', 'text', (column) => column.notNull())
        .addColumn('usage_nanos', 'bigint', (column) => column.notNull())
        .addColumn('byok_usage_nanos', 'bigint', (column) => column.notNull())
        .addPrimaryKeyConstraint('member_usage_daily_pk', ['workspace_id', 'user_id', 'day'])
        .execute();
      await db.schema
        .createTable('guardrails')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('workspace_id', 'text', (column) => column.notNull().references('workspaces.id'))
        .addColumn('name', 'text', (column) => column.notNull())
        .addColumn('description', 'text')
        .addColumn('limit_nanos', 'bigint')
        .addColumn('reset_interval', 'text')
        .addColumn('allowed_models', 'text')
        .addColumn('allowed_providers', 'text')
        .addColumn('ignored_models', 'text')
        .addColumn('ignored_providers', 'text')
        .addColumn('enforce_zdr_anthropic', 'integer')
        .addColumn('enforce_zdr_openai', 'integer')
        .addColumn('enforce_zdr_google', 'integer')
        .addColumn('enforce_zdr_other', 'integer')
        .addColumn('content_filter_builtins', 'text')
        .addColumn('content_filters', 'text')
        .addColumn('is_workspace_default', 'integer', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('updated_at', 'text', (column) => column.notNull())
        .execute();
      await db.schema
        .createTable('guardrail_key_assignments')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('guardrail_id', 'text', (column) => column.notNull().references('guardrails.id'))
        // A key holds at most one guardrail: assigning another replaces it.
        .addColumn('key_hash', 'text', (column) => column.notNull().unique())
        .addColumn('assigned_by', 'text', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .execute();
      await db.schema
        .createTable('guardrail_member_assignments')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('guardrail_id', 'text', (column) => column.notNull().references('guardrails.id'))
        .addColumn('workspace_id', 'text', (column) => column.notNull())
        .addColumn('user_id', 'text', (column) => column.notNull())
        .addColumn('organization_id', 'text', (column) => column.notNull())
        .addColumn('assigned_by', 'text', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        // A member holds at most one guardrail per workspace: assigning another replaces it.
        .addUniqueConstraint('guardrail_member_assignments_member', ['workspace_id', 'user_id'])
        .execute();
      await db.schema
        .createTable('byok_credentials')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('workspace_id', 'text', (column) => column.notNull().references('workspaces.id'))
        .addColumn('name', 'text', (column) => column.notNull())
        .addColumn('provider', 'text', (column) => column.notNull())
        .addColumn('label', 'text', (column) => column.notNull())
        .addColumn('secret_ciphertext', 'text', (column) => column.notNull())
        .addColumn('disabled', 'integer', (column) => column.notNull())
        .addColumn('is_fallback', 'integer', (column) => column.notNull())
        .addColumn('sort_order', 'integer', (column) => column.notNull())
        .addColumn('allowed_api_key_hashes', 'text')
        .addColumn('allowed_models', 'text')
        .addColumn('allowed_user_ids', 'text')
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('updated_at', 'text', (column) => column.notNull())
        .execute();
      await db.schema
        .createIndex('byok_credentials_workspace')
        .on('byok_credentials')
        .columns(['workspace_id', 'provider'])
        .execute();
    },
  },
  '0004_observability': {
    async up(db) {
      await db.schema
        .createTable('observability_destinations')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('workspace_id', 'text', (column) => column.notNull().references('workspaces.id'))
        .addColumn('name', 'text', (column) => column.notNull())
        .addColumn('type', 'text', (column) => column.notNull())
        .addColumn('config', 'text', (column) => column.notNull())
        .addColumn('secrets_ciphertext', 'text')
        .addColumn('enabled', 'integer', (column) => column.notNull())
        .addColumn('api_key_hashes', 'text')
        .addColumn('broadcast_generation_cost', 'integer', (column) => column.notNull())
        .addColumn('broadcast_generation_identity', 'integer', (column) => column.notNull())
        .addColumn('broadcast_generation_request_context', 'integer', (column) => column.notNull())
        .addColumn('filter_rules', 'text')
        .addColumn('privacy_mode', 'integer', (column) => column.notNull())
        .addColumn('regions', 'text', (column) => column.notNull())
        .addColumn('sampling_rate', 'double precision', (column) => column.notNull())
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('updated_at', 'text', (column) => column.notNull())
        .addColumn('deleted_at', 'text')
        .execute();
      await db.schema
        .createIndex('observability_destinations_workspace_type')
        .on('observability_destinations')
        .columns(['workspace_id', 'type'])
        .execute();
      await db.schema
        .createTable('broadcast_outbox')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('destination_id', 'text', (column) => column.notNull())
        .addColumn('workspace_id', 'text', (column) => column.notNull())
        .addColumn('generation_id', 'text', (column) => column.notNull())
        .addColumn('idempotency_key', 'text', (column) => column.notNull())
        .addColumn('payload', 'text', (column) => column.notNull())
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('attempts', 'integer', (column) => column.notNull())
        .addColumn('next_attempt_at', 'text', (column) => column.notNull())
        .addColumn('lease_until', 'text')
        .addColumn('leased_by', 'text')
        .addColumn('last_error', 'text')
        .addColumn('last_status', 'integer')
        .addColumn('created_at', 'text', (column) => column.notNull())
        .addColumn('dead_at', 'text')
        .addUniqueConstraint('broadcast_outbox_generation_destination', ['generation_id', 'destination_id'])
        .execute();
      await db.schema
        .createIndex('broadcast_outbox_due')
        .on('broadcast_outbox')
        .columns(['status', 'next_attempt_at'])
        .execute();
      await db.schema
        .createIndex('broadcast_outbox_destination')
        .on('broadcast_outbox')
        .columns(['destination_id', 'status'])
        .execute();
    },
  },
  '0005_outbox_claim_index': {
    // The worker's claim reads due rows in (next_attempt_at, id) order, skipping leased rows and the
    // destinations it is busy with. With only (status, next_attempt_at) indexed, every skipped row
    // was read from the table (a page per row: rows carry their payload), so a claim behind a
    // backlog of one busy destination cost milliseconds. This index answers the claim's row choice
    // by itself, already in claim order.
    async up(db) {
      await db.schema.dropIndex('broadcast_outbox_due').execute();
      await db.schema
        .createIndex('broadcast_outbox_claim')
        .on('broadcast_outbox')
        .columns(['status', 'next_attempt_at', 'id', 'destination_id', 'lease_until'])
        .execute();
    },
  },
  '0006_outbox_fanout': {
    // One row per generation (and distinct payload) while its deliveries are in flight: the
    // destinations it goes to are listed in `fanout`, and a destination that is not delivered at
    // the first try gets a row of its own then (src/broadcast/outbox-fanout.ts). A third of the
    // inserts, deletes and stored payload bytes with three destinations. Such a row has the status
    // `fanout`, which an instance of an earlier version (still running during a rolling upgrade, or
    // after a rollback) never claims — it would take `*<n>` for a deleted destination and drop it.
    async up(db) {
      await db.schema.alterTable('broadcast_outbox').addColumn('fanout', 'text').execute();
    },
  },
  '0007_generation_image_tokens': {
    // A generation's image output tokens (`native_tokens_completion_images`), billed at the
    // endpoint's image price. Null on records written before, which did not count them.
    async up(db) {
      await db.schema.alterTable('generations').addColumn('tokens_completion_images', 'bigint').execute();
    },
  },
};

/**
 * Applies the pending migrations in one transaction. On PostgreSQL an advisory lock serializes
 * instances that start together; the bookkeeping table is our own, because Kysely's Migrator
 * introspects every schema of the server and trips over schemas being dropped concurrently.
 */
export async function migrateToLatest(db: Kysely<any>, kind: 'sqlite' | 'postgres'): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    if (kind === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(current_schema()))`.execute(trx);
    await sql`create table if not exists switchyard_migrations (name text primary key, applied_at text not null)`.execute(
      trx,
    );
    const rows = await sql<{ name: string }>`select name from switchyard_migrations`.execute(trx);
    const applied = new Set(rows.rows.map((row) => row.name));
    const ran: string[] = [];
    for (const [name, migration] of Object.entries(migrations).sort(([a], [b]) => a.localeCompare(b))) {
      if (applied.has(name)) continue;
      await migration.up(trx);
      await sql`insert into switchyard_migrations (name, applied_at) values (${name}, ${new Date().toISOString()})`.execute(
        trx,
      );
      ran.push(name);
    }
    return ran;
  });
}
