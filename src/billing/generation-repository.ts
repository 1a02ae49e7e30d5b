import type { Database as SqliteConnection, Statement as SqliteStatement } from 'better-sqlite3';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { addDailyUsage } from '../admin/keys/key-repository.js';
import { newId } from '../platform/ids.js';
import type { Storage } from '../storage/database.js';
import type { Database, GenerationTable } from '../storage/database-schema.js';
import { utcDay } from './usage-windows.js';

export type GenerationRecordRow = GenerationTable;

/** Rows per INSERT statement: 200 × 38 columns stays far below SQLite's and PostgreSQL's parameter limits. */
const ROWS_PER_STATEMENT = 200;

interface DailySpend {
  keyHash: string;
  day: string;
  usageNanos: number;
  byokNanos: number;
}

/**
 * Data access for generation records. `writeBatch` is the group commit: the records, their spend
 * per key and per workspace and UTC day, and one credit-ledger usage row, all in one transaction.
 */
export function createGenerationRepository(storage: Storage) {
  const { db } = storage;
  const direct = storage.sqlite ? createSqliteBatchWriter(storage.sqlite) : null;
  return {
    /**
     * Writes the rows and bills them. A row whose id is already stored is skipped and not billed
     * again, so retrying a batch whose commit was in doubt (the connection died after COMMIT) is safe.
     * Returns how many rows were new.
     */
    async writeBatch(rows: readonly GenerationRecordRow[], at: Date): Promise<number> {
      // SQLite: one synchronous transaction of prepared statements, unless the query builder has a
      // transaction open on the same connection (then its path waits for it).
      if (direct && !storage.sqlite?.inTransaction) return direct(rows, at);
      return db.transaction().execute(async (trx) => {
        const inserted = await insertNew(trx, storage.kind, rows);
        const billed = rows.filter((row) => inserted.has(row.id));
        await addDailySpend(trx, dailySpend(billed));
        for (const entry of memberSpend(billed)) {
          await trx
            .insertInto('member_usage_daily')
            .values({
              workspace_id: entry.workspaceId,
              user_id: entry.userId,
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
        for (const entry of workspaceSpend(billed)) {
          await trx
            .insertInto('workspace_usage_daily')
            .values({
              workspace_id: entry.workspaceId,
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
        return inserted.size;
      });
    },

    async findById(id: string): Promise<GenerationRecordRow | null> {
      const row = await db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirst();
      return row ?? null;
    },
  };
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

/** Spend per key and UTC day, in key order so concurrent writers lock usage rows in the same order. */
function dailySpend(rows: readonly GenerationRecordRow[]): DailySpend[] {
  const totals = new Map<string, DailySpend>();
  for (const row of rows) {
    if (row.cost_nanos === 0) continue;
    const day = utcDay(new Date(row.created_at));
    const key = `${row.key_hash} ${day}`;
    let entry = totals.get(key);
    if (!entry) {
      entry = { keyHash: row.key_hash, day, usageNanos: 0, byokNanos: 0 };
      totals.set(key, entry);
    }
    if (row.is_byok === 1) entry.byokNanos += row.cost_nanos;
    else entry.usageNanos += row.cost_nanos;
  }
  return [...totals.values()].sort((a, b) =>
    a.keyHash === b.keyHash ? a.day.localeCompare(b.day) : a.keyHash.localeCompare(b.keyHash),
  );
}

/** Spend per member (the key's creator), workspace and UTC day, in that order. */
function memberSpend(
  rows: readonly GenerationRecordRow[],
): Array<{ workspaceId: string; userId: string; day: string; usageNanos: number; byokNanos: number }> {
  const totals = new Map<
    string,
    { workspaceId: string; userId: string; day: string; usageNanos: number; byokNanos: number }
  >();
  for (const row of rows) {
    if (row.cost_nanos === 0 || row.member_user_id === null) continue;
    const day = utcDay(new Date(row.created_at));
    const key = `${row.workspace_id} ${row.member_user_id} ${day}`;
    let entry = totals.get(key);
    if (!entry) {
      entry = { workspaceId: row.workspace_id, userId: row.member_user_id, day, usageNanos: 0, byokNanos: 0 };
      totals.set(key, entry);
    }
    if (row.is_byok === 1) entry.byokNanos += row.cost_nanos;
    else entry.usageNanos += row.cost_nanos;
  }
  return [...totals.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, entry]) => entry);
}

/** Spend per workspace and UTC day, in workspace order (budgets read their windows from it). */
function workspaceSpend(
  rows: readonly GenerationRecordRow[],
): Array<{ workspaceId: string; day: string; usageNanos: number; byokNanos: number }> {
  const totals = new Map<
    string,
    { workspaceId: string; day: string; usageNanos: number; byokNanos: number }
  >();
  for (const row of rows) {
    if (row.cost_nanos === 0) continue;
    const day = utcDay(new Date(row.created_at));
    const key = `${row.workspace_id} ${day}`;
    let entry = totals.get(key);
    if (!entry) {
      entry = { workspaceId: row.workspace_id, day, usageNanos: 0, byokNanos: 0 };
      totals.set(key, entry);
    }
    if (row.is_byok === 1) entry.byokNanos += row.cost_nanos;
    else entry.usageNanos += row.cost_nanos;
  }
  return [...totals.values()].sort((a, b) =>
    a.workspaceId === b.workspaceId ? a.day.localeCompare(b.day) : a.workspaceId.localeCompare(b.workspaceId),
  );
}

/** Each key's spend per UTC day, in key order (see `dailySpend`). */
async function addDailySpend(trx: Kysely<Database>, entries: readonly DailySpend[]): Promise<void> {
  for (const entry of entries) {
    await addDailyUsage(trx, {
      hash: entry.keyHash,
      day: entry.day,
      usageNanos: entry.usageNanos,
      byokNanos: entry.byokNanos,
    });
  }
}

const ledgerNote = (count: number): string => `${count} generation${count === 1 ? '' : 's'}`;

/**
 * The SQLite write path: prepared once, run per row inside one synchronous transaction. It does
 * what the portable path does (insert new records, bill only those, one ledger row) at about half
 * the CPU per record, which matters because better-sqlite3 runs on the event loop.
 */
function createSqliteBatchWriter(raw: SqliteConnection) {
  const insertStatements = new Map<string, SqliteStatement>();
  const addDaily = raw.prepare(
    `insert into key_usage_daily (key_hash, day, usage_nanos, byok_usage_nanos) values (?, ?, ?, ?)
     on conflict (key_hash, day) do update set
       usage_nanos = key_usage_daily.usage_nanos + excluded.usage_nanos,
       byok_usage_nanos = key_usage_daily.byok_usage_nanos + excluded.byok_usage_nanos`,
  );
  const addWorkspaceDaily = raw.prepare(
    `insert into workspace_usage_daily (workspace_id, day, usage_nanos, byok_usage_nanos) values (?, ?, ?, ?)
     on conflict (workspace_id, day) do update set
       usage_nanos = workspace_usage_daily.usage_nanos + excluded.usage_nanos,
       byok_usage_nanos = workspace_usage_daily.byok_usage_nanos + excluded.byok_usage_nanos`,
  );
  const addMemberDaily = raw.prepare(
    `insert into member_usage_daily (workspace_id, user_id, day, usage_nanos, byok_usage_nanos) values (?, ?, ?, ?, ?)
     on conflict (workspace_id, user_id, day) do update set
       usage_nanos = member_usage_daily.usage_nanos + excluded.usage_nanos,
       byok_usage_nanos = member_usage_daily.byok_usage_nanos + excluded.byok_usage_nanos`,
  );
  const addLedger = raw.prepare(
    `insert into credit_ledger (id, kind, amount_nanos, note, created_at) values (?, 'usage', ?, ?, ?)`,
  );
  const write = raw.transaction((rows: readonly GenerationRecordRow[], at: Date): number => {
    const columns = Object.keys(rows[0] ?? {}) as Array<keyof GenerationRecordRow>;
    const signature = columns.join(',');
    let insert = insertStatements.get(signature);
    if (!insert) {
      insert = raw.prepare(
        `insert into generations (${columns.map((column) => `"${column}"`).join(',')}) values (${columns.map(() => '?').join(',')}) on conflict (id) do nothing`,
      );
      insertStatements.set(signature, insert);
    }
    const billed: GenerationRecordRow[] = [];
    for (const row of rows) {
      if (insert.run(columns.map((column) => row[column])).changes === 1) billed.push(row);
    }
    for (const entry of dailySpend(billed)) {
      addDaily.run(entry.keyHash, entry.day, entry.usageNanos, entry.byokNanos);
    }
    for (const entry of workspaceSpend(billed)) {
      addWorkspaceDaily.run(entry.workspaceId, entry.day, entry.usageNanos, entry.byokNanos);
    }
    for (const entry of memberSpend(billed)) {
      addMemberDaily.run(entry.workspaceId, entry.userId, entry.day, entry.usageNanos, entry.byokNanos);
    }
    const creditNanos = billed.reduce((sum, row) => (row.is_byok === 1 ? sum : sum + row.cost_nanos), 0);
    if (creditNanos > 0) addLedger.run(newId(), creditNanos, ledgerNote(billed.length), at.toISOString());
    return billed.length;
  });
  return async (rows: readonly GenerationRecordRow[], at: Date): Promise<number> => {
    if (rows.length === 0) return 0;
    const written = write(rows, at);
    return written;
  };
}
