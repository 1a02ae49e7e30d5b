import {
  CompiledQuery,
  createQueryId,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  IdentifierNode,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  RawNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import type { SqliteThread } from './sqlite-thread.js';

/** A savepoint statement, its name quoted by the compiler (Kysely's own drivers do the same). */
const savepointCommand = (command: string, name: string) =>
  RawNode.createWithChildren([RawNode.createWithSql(`${command} `), IdentifierNode.create(name)]);

/**
 * Kysely's SQLite dialect with the connection in the SQLite thread (sqlite-thread.ts): the same
 * compiler, adapter and introspector, and a driver that posts each statement to the thread. Like
 * Kysely's own SQLite driver it has one connection, held by one user at a time (a transaction holds
 * it from `begin` to `commit`); the generation writer takes the same lock.
 */
export class SqliteThreadDialect implements Dialect {
  readonly #thread: SqliteThread;

  constructor(thread: SqliteThread) {
    this.#thread = thread;
  }

  createDriver(): Driver {
    return new SqliteThreadDriver(this.#thread);
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return new SqliteAdapter();
  }

  // biome-ignore lint/suspicious/noExplicitAny: Kysely's own dialects take an untyped Kysely here.
  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}

class SqliteThreadDriver implements Driver {
  readonly #thread: SqliteThread;
  readonly #connection: SqliteThreadConnection;

  constructor(thread: SqliteThread) {
    this.#thread = thread;
    this.#connection = new SqliteThreadConnection(thread);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.#thread.lock();
    return this.#connection;
  }

  async beginTransaction(): Promise<void> {
    // Immediate: the write lock at once, waiting in the busy handler (see database.ts,
    // ImmediateSqliteDriver).
    await this.#connection.executeQuery(CompiledQuery.raw('begin immediate'));
    this.#connection.transactionEpoch = this.#thread.epoch();
  }

  async commitTransaction(): Promise<void> {
    await this.#connection.executeQuery(CompiledQuery.raw('commit'));
    this.#connection.transactionEpoch = null;
  }

  async rollbackTransaction(): Promise<void> {
    const lost = this.#connection.transactionEpoch !== this.#thread.epoch();
    this.#connection.transactionEpoch = null;
    // The thread that held the transaction is gone, and SQLite rolled it back with it.
    if (lost) return;
    await this.#connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    await connection.executeQuery(compile(savepointCommand('savepoint', name), createQueryId()));
  }

  async rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ) {
    await connection.executeQuery(compile(savepointCommand('rollback to', name), createQueryId()));
  }

  async releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ) {
    await connection.executeQuery(compile(savepointCommand('release', name), createQueryId()));
  }

  async releaseConnection(): Promise<void> {
    this.#thread.unlock();
  }

  async destroy(): Promise<void> {
    await this.#thread.close();
  }
}

class SqliteThreadConnection implements DatabaseConnection {
  readonly #thread: SqliteThread;
  /** The thread epoch the open transaction began in; null outside a transaction. */
  transactionEpoch: number | null = null;

  constructor(thread: SqliteThread) {
    this.#thread = thread;
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    if (this.transactionEpoch !== null && this.transactionEpoch !== this.#thread.epoch()) {
      // Its first statements died with the old thread: the rest must not commit alone on a new one.
      throw new Error('the SQLite thread stopped inside this transaction; it was rolled back');
    }
    const result = await this.#thread.query(compiledQuery.sql, compiledQuery.parameters);
    if (result.changes === undefined) return { rows: result.rows as R[] };
    return {
      rows: [],
      numAffectedRows: BigInt(result.changes),
      ...(result.lastInsertRowid === undefined ? {} : { insertId: BigInt(result.lastInsertRowid) }),
    };
  }

  // biome-ignore lint/correctness/useYield: it refuses before producing anything.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming results is not supported by the SQLite thread; select in pages instead');
  }
}
