import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  Kysely,
  PostgresDialect,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
  sql,
} from 'kysely';
import type { ThreadModule } from '../platform/module-thread.js';
import type { Database } from './database-schema.js';
import { type SqliteCheckpointer, startSqliteCheckpointer } from './sqlite-checkpointer.js';
import { createSqliteCommitThread, type SqliteCommitThread } from './sqlite-commit-thread.js';
import { cachingStatements, configureSqliteConnection, STATEMENT_CACHE_SIZE } from './sqlite-statements.js';
import { type SqliteThread, startSqliteThread } from './sqlite-thread.js';
import { SqliteThreadDialect } from './sqlite-thread-dialect.js';

export type StorageKind = 'sqlite' | 'postgres';

export interface Storage {
  readonly db: Kysely<Database>;
  readonly kind: StorageKind;
  /** PostgreSQL schema holding the tables ('main' for SQLite). */
  readonly schema: string;
  /**
   * The embedded database's own connection, for the one write path too hot for the query builder
   * (generation records); null on PostgreSQL and when SQLite runs in its thread. Kysely shares it,
   * so a user must not start a transaction while `inTransaction` is true.
   */
  readonly sqlite: SqliteDatabase.Database | null;
  /** The SQLite thread holding the connection (`thread` option); null otherwise. */
  readonly sqliteThread: SqliteThread | null;
  /** The WAL checkpoint thread of a SQLite file opened with `backgroundCheckpoint`; else null. */
  readonly checkpointer: SqliteCheckpointer | null;
  /**
   * The generation group commit's thread of a SQLite file whose connection is on this thread,
   * opened with `commitThread` (sqlite-commit-thread.ts); else null.
   */
  readonly commitThread: SqliteCommitThread | null;
  /**
   * A read-only connection of a SQLite file opened with `thread` and `reader`, on the calling
   * thread (statements run there, at its priority, without waiting for the SQLite thread's queue);
   * else null. It reads what is committed when each statement starts.
   */
  readonly reader: Kysely<Database> | null;
  /** Queries executed so far; tests use it to prove a path touches no database. */
  queryCount(): number;
  ping(): Promise<void>;
  close(): Promise<void>;
}

const BIGINT_OID = 20;
const NUMERIC_OID = 1700;

/** Whether `url` names an in-memory SQLite database (one per connection: it cannot be opened twice). */
export function isInMemorySqlite(url: string): boolean {
  return url === 'sqlite:' || url === 'sqlite::memory:';
}

function sqlitePath(url: string): string {
  const path = url.slice('sqlite:'.length) || ':memory:';
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  return path;
}

/**
 * Kysely's SQLite driver, its transactions begun immediate. Begun deferred, a transaction that reads
 * before it writes fails at once (SQLITE_BUSY, or SQLITE_BUSY_SNAPSHOT) when another connection
 * writes meanwhile: the busy handler is not called for that upgrade. Immediate, it takes the write
 * lock at `begin`, waiting in the busy handler. Another connection writes whenever the broadcast
 * worker runs in its thread, and whenever a second process (the CLI) uses the file. The SQLite
 * thread's dialect begins immediate too (sqlite-thread-dialect.ts).
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): SqliteDriver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

/**
 * A read-only connection to a SQLite file for `Storage.reader`. It takes no write lock; in WAL mode
 * a reader waits for no writer, and a writer for no reader.
 */
function openSqliteReader(path: string): { db: Kysely<Database>; database: SqliteDatabase.Database } {
  const database = new SqliteDatabase(path, { readonly: true, fileMustExist: true });
  // Busy only while another connection recovers the WAL (after a crash); wait as writers do.
  database.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: cachingStatements(database, STATEMENT_CACHE_SIZE) }),
  });
  return { db, database };
}

function openSqlite(path: string): { dialect: SqliteDialect; database: SqliteDatabase.Database } {
  const database = new SqliteDatabase(path);
  configureSqliteConnection(database);
  return {
    dialect: new ImmediateSqliteDialect({ database: cachingStatements(database, STATEMENT_CACHE_SIZE) }),
    database,
  };
}

async function openPostgres(url: string, schema: string, poolSize: number): Promise<PostgresDialect> {
  // Loaded only for PostgreSQL: the embedded default never pays the driver's memory.
  const { default: pg } = await import('pg');
  // Money columns are bigint nano-dollars; sums come back as numeric. Both fit a JS number for
  // amounts below $9M per row or sum, which the API caps enforce (see docs/decisions.md).
  const types = {
    getTypeParser: (oid: number, format?: string) => {
      if (oid === BIGINT_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
      return pg.types.getTypeParser(oid, format as 'text');
    },
  };
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  try {
    await setup.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  } finally {
    await setup.end();
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    options: `-c search_path="${schema}"`,
    types,
  });
  // An idle client losing its connection (a PostgreSQL restart) emits 'error' on the pool; unheard,
  // that would crash the process. The pool replaces the client; the next query reports any outage.
  pool.on('error', () => {});
  return new PostgresDialect({ pool });
}

/** Opens the database named by `DATABASE_URL`: `sqlite:<path>` (embedded) or `postgres://…`. */
export async function openStorage(options: {
  url: string;
  schema: string;
  /**
   * SQLite file: checkpoint the WAL from a worker thread instead of inside commits (see
   * sqlite-checkpointer.ts; config `sqlite_background_checkpoint`). Off unless asked.
   */
  backgroundCheckpoint?: boolean;
  /** The checkpoint thread failed; commits checkpoint for themselves again. */
  onCheckpointFailure?: (message: string) => void;
  /**
   * SQLite: keep the connection in a worker thread, so no statement runs on the event loop
   * (sqlite-thread.ts; config `sqlite_thread`). Its commits checkpoint there too, so
   * `backgroundCheckpoint` is not needed with it. Off unless asked.
   */
  thread?: boolean;
  /** The SQLite thread stopped unasked (its statements failed; the next one starts a new thread). */
  onThreadFailure?: (message: string) => void;
  /**
   * SQLite file with `thread`: also open a read-only connection on this thread (`Storage.reader`),
   * for reads that should run at this thread's priority rather than the SQLite thread's.
   */
  reader?: boolean;
  /**
   * SQLite file, without `thread`: run the generation group commits in a worker thread with a
   * connection of their own (sqlite-commit-thread.ts; config `sqlite_commit_thread`). Off unless asked.
   */
  commitThread?: boolean;
  /** The commit thread could not start or stopped unasked. */
  onCommitThreadFailure?: (message: string) => void;
  /** PostgreSQL: connections at most (default 10; the broadcast worker's thread needs fewer). */
  poolSize?: number;
  /**
   * Where the SQLite threads (`thread`, `commitThread`) load the broadcast row builder from; tests
   * name a module that cannot load, to see commits fall back to building the rows here.
   */
  outboxBuilder?: ThreadModule;
}): Promise<Storage> {
  const kind: StorageKind = options.url.startsWith('sqlite:') ? 'sqlite' : 'postgres';
  const path = kind === 'sqlite' ? sqlitePath(options.url) : null;
  const sqliteThread =
    path !== null && options.thread
      ? await startSqliteThread({
          path,
          onFailure: options.onThreadFailure,
          outboxBuilder: options.outboxBuilder,
        })
      : null;
  const sqlite = path !== null && !sqliteThread ? openSqlite(path) : null;
  // Opened after the SQLite thread, which creates the file: a read-only connection cannot.
  let reader: ReturnType<typeof openSqliteReader> | null = null;
  if (sqliteThread && path !== null && path !== ':memory:' && options.reader) {
    try {
      reader = openSqliteReader(path);
    } catch (error) {
      await sqliteThread.close();
      throw error;
    }
  }
  const checkpointer =
    sqlite && path !== null && path !== ':memory:' && options.backgroundCheckpoint
      ? startSqliteCheckpointer({
          database: sqlite.database,
          path,
          onFailure: options.onCheckpointFailure,
        })
      : null;
  const commitThread =
    sqlite && path !== null && path !== ':memory:' && options.commitThread
      ? createSqliteCommitThread({
          path,
          onFailure: options.onCommitThreadFailure,
          outboxBuilder: options.outboxBuilder,
        })
      : null;
  const dialect = sqliteThread
    ? new SqliteThreadDialect(sqliteThread)
    : sqlite
      ? sqlite.dialect
      : await openPostgres(options.url, options.schema, options.poolSize ?? 10);
  let queries = 0;
  const db = new Kysely<Database>({
    dialect,
    log: (event) => {
      if (event.level === 'query') queries += 1;
    },
  });
  let closed = false;
  return {
    db,
    kind,
    schema: kind === 'postgres' ? options.schema : 'main',
    sqlite: sqlite?.database ?? null,
    sqliteThread,
    checkpointer,
    commitThread,
    reader: reader?.db ?? null,
    queryCount: () => queries,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: async () => {
      if (closed) return;
      closed = true;
      // The checkpoint thread's connection closes first, so the main connection closes last: it
      // checkpoints what is left and removes the WAL.
      await checkpointer?.stop();
      await commitThread?.close();
      await reader?.db.destroy();
      if (reader?.database.open) reader.database.close();
      await db.destroy();
      // Kysely closes only a driver it has used: the raw connection (or the thread) may be open still.
      if (sqlite?.database.open) sqlite.database.close();
      await sqliteThread?.close();
    },
  };
}
