import { createRequire } from 'node:module';
import type { MessagePort } from 'node:worker_threads';
import { Worker } from 'node:worker_threads';
import type SqliteDatabase from 'better-sqlite3';
import {
  createSqliteGenerationWriter,
  ledgerNote,
  spendTotals,
} from '../billing/sqlite-generation-writer.js';
import type { BroadcastOutboxTable, GenerationTable } from './database-schema.js';
import { cachingStatements, configureSqliteConnection, STATEMENT_CACHE_SIZE } from './sqlite-statements.js';

/** What a statement run in the thread answers (Kysely's QueryResult, before the bigint fields). */
export interface ThreadQueryResult {
  rows: unknown[];
  changes?: number;
  lastInsertRowid?: number | bigint;
}

/** Parent → thread. */
type Request =
  | { id: number; kind: 'query'; sql: string; parameters: readonly unknown[] }
  | {
      id: number;
      kind: 'writeGenerations';
      rows: readonly GenerationTable[];
      at: string;
      outbox: readonly BroadcastOutboxTable[];
    }
  | { id: number; kind: 'close' };

/** An error as it crosses the boundary: the driver's `code` (SQLITE_CONSTRAINT_UNIQUE…) kept. */
interface ErrorData {
  name: string;
  message: string;
  code?: string;
}

/** Thread → parent. */
type Reply =
  | { kind: 'ready' }
  | { kind: 'failed'; error: ErrorData }
  | { id: number; ok: true; result: ThreadQueryResult | number | null }
  | { id: number; ok: false; error: ErrorData };

interface ThreadData {
  driver: string;
  path: string;
  statementCacheSize: number;
}

/**
 * The thread's program. It runs from its source text (see `threadSource`), so it may use only its
 * parameters, globals, and the functions listed there — no imports, no module constants. It opens
 * the connection, answers `ready` or `failed`, then runs each request in
 * arrival order: the parent's lock (`SqliteThread.lock`) keeps a transaction's statements together.
 */
function sqliteThreadMain(require: NodeJS.Require, data: ThreadData, port: MessagePort): void {
  const errorData = (error: unknown): ErrorData => {
    const { name, message, code } = (error ?? {}) as { name?: unknown; message?: unknown; code?: unknown };
    return {
      name: typeof name === 'string' ? name : 'Error',
      message: typeof message === 'string' ? message : String(error),
      ...(typeof code === 'string' ? { code } : {}),
    };
  };
  const Database = require(data.driver) as typeof SqliteDatabase;
  let connection: SqliteDatabase.Database;
  try {
    connection = new Database(data.path);
    configureSqliteConnection(connection);
  } catch (error) {
    port.postMessage({ kind: 'failed', error: errorData(error) } satisfies Reply);
    return;
  }
  const statements = cachingStatements(connection, data.statementCacheSize);
  let writeGenerations: ReturnType<typeof createSqliteGenerationWriter> | null = null;
  port.on('message', (request: Request) => {
    let reply: Reply;
    try {
      if (request.kind === 'query') {
        const statement = statements.prepare(request.sql);
        if (statement.reader) {
          reply = { id: request.id, ok: true, result: { rows: statement.all(request.parameters) } };
        } else {
          const { changes, lastInsertRowid } = statement.run(request.parameters);
          reply = { id: request.id, ok: true, result: { rows: [], changes, lastInsertRowid } };
        }
      } else if (request.kind === 'writeGenerations') {
        // Prepared at the first batch: the tables exist only once the migrations have run.
        writeGenerations ??= createSqliteGenerationWriter(connection);
        reply = {
          id: request.id,
          ok: true,
          result: writeGenerations(request.rows, request.at, request.outbox),
        };
      } else {
        statements.close();
        reply = { id: request.id, ok: true, result: null };
        port.postMessage(reply);
        port.close();
        return;
      }
    } catch (error) {
      reply = { id: request.id, ok: false, error: errorData(error) };
    }
    port.postMessage(reply);
  });
  port.postMessage({ kind: 'ready' } satisfies Reply);
}

/**
 * The thread's source: the functions it uses, then a call of its program. `__name` is the helper
 * tsx's transform adds to named functions when the gateway runs from its TypeScript sources.
 */
const threadSource = (): string =>
  [
    'const __name = (target) => target;',
    configureSqliteConnection.toString(),
    cachingStatements.toString(),
    spendTotals.toString(),
    ledgerNote.toString(),
    createSqliteGenerationWriter.toString(),
    `const { parentPort, workerData } = require('node:worker_threads');`,
    `(${sqliteThreadMain.toString()})(require, workerData, parentPort);`,
  ].join('\n');

/** Raised for a request the thread will never answer (it stopped, or the storage closed). */
export class SqliteThreadStoppedError extends Error {
  override name = 'SqliteThreadStoppedError';
}

export interface SqliteThread {
  /**
   * Runs one statement. Statements run in the order they are sent; a caller that needs several to
   * run together (a transaction) holds `lock` around them.
   */
  query(sql: string, parameters: readonly unknown[]): Promise<ThreadQueryResult>;
  /** The generation group commit (sqlite-generation-writer.ts), run under the lock. */
  writeGenerations(
    rows: readonly GenerationTable[],
    at: string,
    outbox: readonly BroadcastOutboxTable[],
  ): Promise<number>;
  /** Waits until no one else holds the connection, then holds it until `unlock`. */
  lock(): Promise<void>;
  unlock(): void;
  /** Closes the connection (checkpointing and removing the WAL) and ends the thread. */
  close(): Promise<void>;
}

/** How long `close` waits for the thread to close its connection before terminating it. */
const CLOSE_TIMEOUT_MS = 10_000;

/**
 * SQLite on a thread of its own (config `sqlite_thread`). better-sqlite3 is synchronous: on the
 * request thread every statement, commit and WAL checkpoint (two fsyncs) holds up the event loop for
 * as long as it runs. Here the connection lives in a worker thread and the event loop only posts
 * statements and receives rows; the query builder reaches it through sqlite-thread-dialect.ts. One
 * connection still serves everything, so SQLite's single writer never waits on a lock held
 * elsewhere in the process. Resolves once the database is open; rejects with the driver's error when
 * it cannot be opened.
 */
export async function startSqliteThread(options: {
  path: string;
  /** The thread stopped unasked (pending and later statements fail). */
  onFailure?: (message: string) => void;
}): Promise<SqliteThread> {
  const thread = new Worker(threadSource(), {
    eval: true,
    // Not the process's flags: `--input-type=module` would make the source a module without
    // `require`, and a loader (`--import tsx`) has nothing to do here.
    execArgv: [],
    workerData: {
      driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      path: options.path,
      statementCacheSize: STATEMENT_CACHE_SIZE,
    } satisfies ThreadData,
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  let stopped: Error | null = null;
  let closing: Promise<void> | null = null;

  const fail = (error: Error) => {
    if (stopped) return;
    stopped = error;
    for (const entry of pending.values()) entry.reject(error);
    pending.clear();
    if (!closing) options.onFailure?.(error.message);
  };

  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number) =>
      reject(new Error(`the SQLite thread exited with code ${code} before it was ready`));
    thread.once('exit', onExit);
    thread.once('message', (reply: Reply) => {
      thread.off('exit', onExit);
      if ('kind' in reply && reply.kind === 'ready') {
        resolve();
        return;
      }
      const error =
        'kind' in reply && reply.kind === 'failed'
          ? toError(reply.error)
          : new Error('unexpected first message');
      void thread.terminate();
      reject(error);
    });
    thread.once('error', reject);
  });

  thread.on('message', (reply: Reply) => {
    if (!('id' in reply)) return;
    const entry = pending.get(reply.id);
    if (!entry) return;
    pending.delete(reply.id);
    // Idle, the thread must not keep a finished process alive; while a statement runs, it must.
    if (pending.size === 0) thread.unref();
    if (reply.ok) entry.resolve(reply.result);
    else entry.reject(toError(reply.error));
  });
  thread.on('error', (error) => fail(error));
  thread.on('exit', (code) =>
    fail(new SqliteThreadStoppedError(`the SQLite thread stopped (exit code ${code})`)),
  );
  thread.unref();

  type Unnumbered<R> = R extends { id: number } ? Omit<R, 'id'> : never;
  function send<T>(request: Unnumbered<Request>): Promise<T> {
    if (stopped) return Promise.reject(stopped);
    const id = nextId;
    nextId += 1;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      if (pending.size === 1) thread.ref();
      try {
        thread.postMessage({ ...request, id });
      } catch (error) {
        // Values the structured clone cannot copy (a function, a symbol): the statement is not sent.
        pending.delete(id);
        if (pending.size === 0) thread.unref();
        reject(error as Error);
      }
    });
  }

  let held: Promise<void> | null = null;
  let release: (() => void) | null = null;
  async function lock(): Promise<void> {
    while (held) await held;
    if (stopped) throw stopped;
    held = new Promise<void>((resolve) => {
      release = resolve;
    });
  }
  function unlock(): void {
    const done = release;
    held = null;
    release = null;
    done?.();
  }

  return {
    query: (sql, parameters) => send<ThreadQueryResult>({ kind: 'query', sql, parameters }),
    async writeGenerations(rows, at, outbox) {
      await lock();
      try {
        return await send<number>({ kind: 'writeGenerations', rows, at, outbox });
      } finally {
        unlock();
      }
    },
    lock,
    unlock,
    close() {
      closing ??= (async () => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), CLOSE_TIMEOUT_MS);
        });
        // Statements already waiting for the connection run first; a transaction that never ends
        // is cut off at the deadline.
        const locked = await Promise.race([
          lock().then(
            () => true,
            () => false,
          ),
          late,
        ]);
        if (!stopped) {
          const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
          const closed = send<null>({ kind: 'close' }).then(
            () => exited,
            () => exited,
          );
          if (locked === 'late' || (await Promise.race([closed, late])) === 'late') await thread.terminate();
        }
        clearTimeout(timer);
        stopped = new SqliteThreadStoppedError('the storage is closed');
        // Whoever still waits for the connection learns that it is closed.
        if (locked === true) unlock();
      })();
      return closing;
    },
  };
}

function toError(data: ErrorData): Error {
  const error = new Error(data.message) as Error & { code?: string };
  error.name = data.name;
  if (data.code !== undefined) error.code = data.code;
  return error;
}
