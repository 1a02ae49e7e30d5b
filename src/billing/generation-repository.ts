import { CompiledQuery, type Kysely, sql } from 'kysely';
import { addDailyUsage } from '../admin/keys/key-repository.js';
import { buildOutboxBatch, leasedRows, type OutboxSources } from '../broadcast/outbox-build.js';
import { newId } from '../platform/ids.js';
import type { Storage } from '../storage/database.js';
import type { BroadcastOutboxTable, Database, GenerationTable } from '../storage/database-schema.js';
import type { GenerationCommit } from '../storage/sqlite-thread.js';
import {
  createSqliteGenerationWriter,
  ledgerNote,
  type SpendTotal,
  spendTotals,
} from './sqlite-generation-writer.js';

export type GenerationRecordRow = GenerationTable;

/** Rows per INSERT statement: 200 × 38 columns stays far below SQLite's and PostgreSQL's parameter limits. */
const ROWS_PER_STATEMENT = 200;
/** Outbox rows carry whole events (up to a few hundred KB each): fewer per statement. */
const OUTBOX_ROWS_PER_STATEMENT = 50;

/**
 * Data access for generation records. `writeBatch` is the group commit: the records, their spend
 * per key and per workspace and UTC day, and one credit-ledger usage row, all in one transaction.
 */
export function createGenerationRepository(storage: Storage) {
  const { db } = storage;
  const direct = storage.sqlite ? createSqliteGenerationWriter(storage.sqlite) : null;
  return {
    /**
     * Whether the next `writeBatch` runs away from this thread's event loop: PostgreSQL, SQLite in
     * its thread, or its commits in theirs (unless that thread could not start lately).
     */
    commitsOffEventLoop(): boolean {
      return storage.sqlite === null || (storage.commitThread?.available() ?? false);
    },

    /**
     * Whether the next `writeBatch` runs in a SQLite thread, which then builds the broadcast rows of
     * the `sources` it is given (elsewhere they are built on this thread).
     */
    buildsAtCommit(): boolean {
      return storage.sqliteThread !== null || (storage.commitThread?.available() ?? false);
    },

    /**
     * Writes the rows and bills them, with the broadcast rows given in `outbox` and those built from
     * `sources` (in the SQLite thread that runs the commit, or here). A row whose id is already
     * stored is skipped and not billed again, so retrying a batch whose commit was in doubt (the
     * connection died after COMMIT) is safe. Answers which records were skipped so and which rows
     * built from `sources` are leased to a worker (those of skipped records left out). Rejects with code OUTBOX_BUILDER_UNAVAILABLE, writing nothing, when a
     * SQLite thread cannot load the builder: the caller builds the rows itself and tries again.
     */
    async writeBatch(
      rows: readonly GenerationRecordRow[],
      at: Date,
      outbox: readonly BroadcastOutboxTable[] = [],
      sources: readonly OutboxSources[] = [],
    ): Promise<GenerationCommit> {
      // SQLite in its thread: the same statements, run there (after any open transaction).
      if (storage.sqliteThread)
        return storage.sqliteThread.writeGenerations(rows, at.toISOString(), outbox, sources);
      // SQLite on this thread, its commits in a thread of their own: the same statements, run there.
      const committed = storage.commitThread?.writeGenerations(rows, at.toISOString(), outbox, sources);
      if (committed) return committed;
      const { rows: built, unbuilt } = buildOutboxBatch(sources, at.getTime());
      const skipped = await writeHere(rows, at, built.length === 0 ? outbox : outbox.concat(built));
      return { skipped, stored: leasedRows(built, skipped), unbuilt };
    },

    async findById(id: string): Promise<GenerationRecordRow | null> {
      const row = await db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirst();
      return row ?? null;
    },
  };

  /** The group commit on this thread's connection; answers the ids of the records already stored. */
  async function writeHere(
    rows: readonly GenerationRecordRow[],
    at: Date,
    outbox: readonly BroadcastOutboxTable[],
  ): Promise<string[]> {
    // SQLite on this thread: one synchronous transaction of prepared statements, unless the query
    // builder has a transaction open on the same connection (then its path waits for it).
    if (direct && !storage.sqlite?.inTransaction) return direct(rows, at.toISOString(), outbox);
    return db.transaction().execute(async (trx) => {
      const inserted = await insertNew(trx, storage.kind, rows);
      const billed = rows.filter((row) => inserted.has(row.id));
      // Broadcast events travel with their generation: only a record written now adds its events.
      const events = outbox.filter((event) => inserted.has(event.generation_id));
      for (let start = 0; start < events.length; start += OUTBOX_ROWS_PER_STATEMENT) {
        await trx
          .insertInto('broadcast_outbox')
          .values(events.slice(start, start + OUTBOX_ROWS_PER_STATEMENT))
          .onConflict((conflict) => conflict.columns(['generation_id', 'destination_id']).doNothing())
          .execute();
      }
      const totals = spendTotals(billed);
      await addDailySpend(trx, totals.keys);
      for (const entry of totals.members) {
        await trx
          .insertInto('member_usage_daily')
          .values({
            workspace_id: entry.owner.workspaceId,
            user_id: entry.owner.userId,
            day: entry.day,
            usage_nanos: entry.usageNanos,
            byok_usage_nanos: entry.byokNanos,
          })
          .onConflict((conflict) =>
            conflict.columns(['workspace_id', 'user_id', 'day']).doUpdateSet((update) => ({
              usage_nanos: sql<number>`${update.ref('member_usage_daily.usage_nanos')} + ${update.ref('excluded.usage_nanos')}`,
              byok_usage_nanos: sql<number>`${update.ref('member_usage_daily.byok_usage_nanos')} + ${update.ref('excluded.byok_usage_nanos')}`,
            })),
          )
          .execute();
      }
      for (const entry of totals.workspaces) {
        await trx
          .insertInto('workspace_usage_daily')
          .values({
            workspace_id: entry.owner.workspaceId,
            day: entry.day,
            usage_nanos: entry.usageNanos,
            byok_usage_nanos: entry.byokNanos,
          })
          .onConflict((conflict) =>
            conflict.columns(['workspace_id', 'day']).doUpdateSet((update) => ({
              usage_nanos: sql<number>`${update.ref('workspace_usage_daily.usage_nanos')} + ${update.ref('excluded.usage_nanos')}`,
              byok_usage_nanos: sql<number>`${update.ref('workspace_usage_daily.byok_usage_nanos')} + ${update.ref('excluded.byok_usage_nanos')}`,
            })),
          )
          .execute();
      }
      const creditNanos = billed.reduce((sum, row) => (row.is_byok === 1 ? sum : sum + row.cost_nanos), 0);
      if (creditNanos > 0) {
        await trx
          .insertInto('credit_ledger')
          .values({
            id: newId(),
            kind: 'usage',
            amount_nanos: creditNanos,
            note: ledgerNote(billed.length),
            created_at: at.toISOString(),
          })
          .execute();
      }
      return rows.filter((row) => !inserted.has(row.id)).map((row) => row.id);
    });
  }
}

export type GenerationRepository = ReturnType<typeof createGenerationRepository>;

/**
 * The INSERT text for `count` rows, built once per backend and row count. Writing records is the
 * gateway's busiest query (one row per request); Kysely's builder would parse and compile ~40 values
 * per row on the event loop, so this path hands the driver ready text and a flat parameter list.
 */
const insertTexts = new Map<string, string>();

function insertText(kind: Storage['kind'], columns: readonly string[], count: number): string {
  const cacheKey = `${kind}:${count}`;
  let text = insertTexts.get(cacheKey);
  if (text) return text;
  let next = 0;
  const placeholder = () => (kind === 'postgres' ? `$${++next}` : '?');
  const tuples = Array.from({ length: count }, () => `(${columns.map(placeholder).join(',')})`);
  text = `insert into "generations" (${columns.map((column) => `"${column}"`).join(',')}) values ${tuples.join(',')} on conflict ("id") do nothing returning "id"`;
  insertTexts.set(cacheKey, text);
  return text;
}

async function insertNew(
  trx: Kysely<Database>,
  kind: Storage['kind'],
  rows: readonly GenerationRecordRow[],
): Promise<Set<string>> {
  const inserted = new Set<string>();
  const columns = Object.keys(rows[0] ?? {}) as Array<keyof GenerationRecordRow>;
  for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
    const chunk = rows.slice(start, start + ROWS_PER_STATEMENT);
    const parameters: unknown[] = [];
    for (const row of chunk) for (const column of columns) parameters.push(row[column]);
    const result = await trx.executeQuery<{ id: string }>(
      CompiledQuery.raw(insertText(kind, columns, chunk.length), parameters),
    );
    for (const row of result.rows) inserted.add(row.id);
  }
  return inserted;
}

/** Each key's spend per UTC day, in key order (see `spendTotals`). */
async function addDailySpend(trx: Kysely<Database>, entries: readonly SpendTotal<string>[]): Promise<void> {
  for (const entry of entries) {
    await addDailyUsage(trx, {
      hash: entry.owner,
      day: entry.day,
      usageNanos: entry.usageNanos,
      byokNanos: entry.byokNanos,
    });
  }
}
