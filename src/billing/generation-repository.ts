import type { Database as SqliteConnection, Statement as SqliteStatement } from 'better-sqlite3';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { addDailyUsage } from '../admin/keys/key-repository.js';
import { newId } from '../platform/ids.js';
import type { Storage } from '../storage/database.js';
import type { BroadcastOutboxTable, Database, GenerationTable } from '../storage/database-schema.js';
import { utcDay } from './usage-windows.js';

export type GenerationRecordRow = GenerationTable;

/** Rows per INSERT statement: 200 × 38 columns stays far below SQLite's and PostgreSQL's parameter limits. */
const ROWS_PER_STATEMENT = 200;
/** Outbox rows carry whole events (up to a few hundred KB each): fewer per statement. */
const OUTBOX_ROWS_PER_STATEMENT = 50;

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
    async writeBatch(
      rows: readonly GenerationRecordRow[],
      at: Date,
      outbox: readonly BroadcastOutboxTable[] = [],
    ): Promise<number> {
      // SQLite: one synchronous transaction of prepared statements, unless the query builder has a
      // transaction open on the same connection (then its path waits for it).
      if (direct && !storage.sqlite?.inTransaction) return direct(rows, at, outbox);
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
        await addDailySpend(trx, dailySpend(billed));
        for (const entry of memberSpend(billed)) {
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
        for (const entry of workspaceSpend(billed)) {
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

interface SpendTotal<Owner> {
  owner: Owner;
  day: string;
  usageNanos: number;
  byokNanos: number;
}

/**
 * Spend per owner (a key, a workspace, a member) and UTC day, BYOK apart, sorted by owner and day so
 * concurrent writers lock usage rows in the same order. Rows without an owner are left out.
 */
function spendBy<Owner>(
  rows: readonly GenerationRecordRow[],
  ownerOf: (row: GenerationRecordRow) => { id: string; owner: Owner } | null,
): SpendTotal<Owner>[] {
  const totals = new Map<string, SpendTotal<Owner>>();
  for (const row of rows) {
    if (row.cost_nanos === 0) continue;
    const owner = ownerOf(row);
    if (!owner) continue;
    const day = utcDay(new Date(row.created_at));
    const key = `${owner.id} ${day}`;
    let entry = totals.get(key);
    if (!entry) {
      entry = { owner: owner.owner, day, usageNanos: 0, byokNanos: 0 };
      totals.set(key, entry);
    }
    if (row.is_byok === 1) entry.byokNanos += row.cost_nanos;
    else entry.usageNanos += row.cost_nanos;
  }
  return [...totals.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, entry]) => entry);
}

/** Spend per key and UTC day. */
const dailySpend = (rows: readonly GenerationRecordRow[]): DailySpend[] =>
  spendBy(rows, (row) => ({ id: row.key_hash, owner: row.key_hash })).map((entry) => ({
    keyHash: entry.owner,
    day: entry.day,
    usageNanos: entry.usageNanos,
    byokNanos: entry.byokNanos,
  }));

/** Spend per workspace and UTC day (budgets read their windows from it). */
const workspaceSpend = (rows: readonly GenerationRecordRow[]) =>
  spendBy(rows, (row) => ({ id: row.workspace_id, owner: { workspaceId: row.workspace_id } }));

/** Spend per member (the key's creator), workspace and UTC day (member guardrail limits). */
const memberSpend = (rows: readonly GenerationRecordRow[]) =>
  spendBy(rows, (row) =>
    row.member_user_id === null
      ? null
      : {
          id: `${row.workspace_id} ${row.member_user_id}`,
          owner: { workspaceId: row.workspace_id, userId: row.member_user_id },
        },
  );

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
  const addOutbox = raw.prepare(
    `insert into broadcast_outbox (id, destination_id, workspace_id, generation_id, idempotency_key, payload,
       status, attempts, next_attempt_at, lease_until, leased_by, last_error, last_status, created_at, dead_at)
     values (@id, @destination_id, @workspace_id, @generation_id, @idempotency_key, @payload,
       @status, @attempts, @next_attempt_at, @lease_until, @leased_by, @last_error, @last_status, @created_at, @dead_at)
     on conflict (generation_id, destination_id) do nothing`,
  );
  const write = raw.transaction(
    (rows: readonly GenerationRecordRow[], at: Date, outbox: readonly BroadcastOutboxTable[]): number => {
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
      if (outbox.length > 0) {
        const written = new Set(billed.map((row) => row.id));
        for (const event of outbox) if (written.has(event.generation_id)) addOutbox.run(event);
      }
      for (const entry of dailySpend(billed)) {
        addDaily.run(entry.keyHash, entry.day, entry.usageNanos, entry.byokNanos);
      }
      for (const entry of workspaceSpend(billed)) {
        addWorkspaceDaily.run(entry.owner.workspaceId, entry.day, entry.usageNanos, entry.byokNanos);
      }
      for (const entry of memberSpend(billed)) {
        addMemberDaily.run(
          entry.owner.workspaceId,
          entry.owner.userId,
          entry.day,
          entry.usageNanos,
          entry.byokNanos,
        );
      }
      const creditNanos = billed.reduce((sum, row) => (row.is_byok === 1 ? sum : sum + row.cost_nanos), 0);
      if (creditNanos > 0) addLedger.run(newId(), creditNanos, ledgerNote(billed.length), at.toISOString());
      return billed.length;
    },
  );
  return async (
    rows: readonly GenerationRecordRow[],
    at: Date,
    outbox: readonly BroadcastOutboxTable[] = [],
  ): Promise<number> => {
    if (rows.length === 0) return 0;
    const written = write(rows, at, outbox);
    return written;
  };
}
