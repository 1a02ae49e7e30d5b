import { createRequire } from 'node:module';
import { type MessagePort, Worker } from 'node:worker_threads';
import type SqliteDatabase from 'better-sqlite3';
import {
  createSqliteGenerationWriter,
  ledgerNote,
  spendTotals,
} from '../billing/sqlite-generation-writer.js';
import type { buildOutboxBatch, leasedRows, OutboxSources } from '../broadcast/outbox-build.js';
import { type ThreadModule, threadModule } from '../platform/module-thread.js';
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
  | { id: number; kind: 'atomic'; steps: readonly AtomicStep[] }
  | {
      id: number;
      kind: 'writeGenerations';
      rows: readonly GenerationTable[];
      at: string;
      outbox: readonly BroadcastOutboxTable[];
      sources: readonly OutboxSources[];
    }
  | { id: number; kind: 'close' };

/**
 * One statement of an `atomically` batch. `requireChanges`: when it changes no row, the batch stops
 * there (what ran before it is kept): the condition a transaction would otherwise test between two
 * of its statements, tested in the thread, so the batch never waits on its sender midway.
 */
export interface AtomicStep {
  sql: string;
  parameters: readonly unknown[];
  requireChanges?: boolean;
}

/** A broadcast row a SQLite thread built and stored, leased to a delivery worker. */
export interface StoredOutboxRow {
  id: string;
  leased_by: string;
  /** The lease it was stored with: a read back takes the row only while it still holds this one. */
  lease_until: string;
}

/** What a group commit answers. */
export interface GenerationCommit {
  /**
   * The records already stored (a batch retried after a commit in doubt): skipped, not billed,
   * and their events neither stored nor to be handed to a worker.
   */
  skipped: string[];
  /** The rows built here from `sources` and leased to a worker (those of new records only may exist). */
  stored: StoredOutboxRow[];
  /** Generations whose events could not be built (their records are stored without them). */
  unbuilt: Array<{ id: string; message: string }>;
}

/** The code of the error a commit with `sources` fails with when the thread cannot load the builder. */
export const OUTBOX_BUILDER_UNAVAILABLE = 'SWITCHYARD_OUTBOX_BUILDER_UNAVAILABLE';

/** An error as it crosses the boundary: the driver's `code` (SQLITE_CONSTRAINT_UNIQUE…) kept. */
interface ErrorData {
  name: string;
  message: string;
  code?: string;
}

/** Thread → parent. */
type Reply =
  /** `tid`: the thread's Linux thread id (null elsewhere), so its owner can lower its priority. */
  | { kind: 'ready'; tid: number | null }
  | { kind: 'failed'; error: ErrorData }
  | { kind: 'lost'; error: ErrorData }
  | { id: number; ok: true; result: ThreadQueryResult | GenerationCommit | null }
  | { id: number; ok: false; error: ErrorData };

interface ThreadData {
  driver: string;
  path: string;
  statementCacheSize: number;
  /** The module that builds broadcast rows (src/broadcast/outbox-build.ts), loaded at the first commit that has some to build. */
  outboxBuilder: ThreadModule;
}

/** What the thread uses of the builder module. */
interface OutboxBuilder {
  buildOutboxBatch: typeof buildOutboxBatch;
  leasedRows: typeof leasedRows;
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
  /**
   * The broadcast row builder, imported at the first commit with rows to build (a module, unlike
   * this program: through tsx's loader when the gateway runs from its TypeScript sources). Requests
   * arriving while it loads wait in `held`, so they still run in arrival order.
   */
  let builder: OutboxBuilder | null = null;
  let builderFailure: ErrorData | null = null;
  const held: Request[] = [];
  const loadBuilder = async (): Promise<OutboxBuilder> => {
    const { url, tsx } = data.outboxBuilder;
    if (tsx) ((await import(tsx)) as { register(): void }).register();
    return (await import(url)) as OutboxBuilder;
  };
  const commit = (request: Extract<Request, { kind: 'writeGenerations' }>): GenerationCommit | ErrorData => {
    let outbox = request.outbox;
    let built: BroadcastOutboxTable[] = [];
    let unbuilt: GenerationCommit['unbuilt'] = [];
    if (request.sources.length > 0) {
      if (!builder) {
        return {
          name: 'Error',
          message: `broadcast events cannot be built in the SQLite thread: ${builderFailure?.message ?? 'not loaded'}`,
          // OUTBOX_BUILDER_UNAVAILABLE (a literal: this program sees no module constants).
          code: 'SWITCHYARD_OUTBOX_BUILDER_UNAVAILABLE',
        };
      }
      // The rows are stored (and their leases start) now, as rows built on the request thread are.
      ({ rows: built, unbuilt } = builder.buildOutboxBatch(request.sources, Date.parse(request.at)));
      outbox = outbox.length > 0 ? outbox.concat(built) : built;
    }
    // Prepared at the first batch: the tables exist only once the migrations have run.
    writeGenerations ??= createSqliteGenerationWriter(connection);
    const skipped = writeGenerations(request.rows, request.at, outbox);
    const stored = builder && built.length > 0 ? builder.leasedRows(built, skipped) : [];
    return { skipped, stored, unbuilt };
  };
  const handle = (request: Request): void => {
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
      } else if (request.kind === 'atomic') {
        let changes = 0;
        connection
          .transaction(() => {
            for (const step of request.steps) {
              const changed = statements.prepare(step.sql).run(step.parameters).changes;
              changes += changed;
              if (step.requireChanges && changed === 0) return;
            }
          })
          .immediate();
        reply = { id: request.id, ok: true, result: { rows: [], changes } };
      } else if (request.kind === 'writeGenerations') {
        const result = commit(request);
        reply =
          'skipped' in result
            ? { id: request.id, ok: true, result }
            : { id: request.id, ok: false, error: result };
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
    try {
      port.postMessage(reply);
    } catch (error) {
      // Rows the structured clone cannot copy: the caller gets the reason instead.
      port.postMessage({ id: request.id, ok: false, error: errorData(error) } satisfies Reply);
    }
  };
  port.on('message', (request: Request) => {
    if (held.length > 0) {
      held.push(request);
      return;
    }
    if (
      request.kind === 'writeGenerations' &&
      request.sources.length > 0 &&
      builder === null &&
      builderFailure === null
    ) {
      held.push(request);
      loadBuilder()
        .then(
          (loaded) => {
            builder = loaded;
          },
          (error: unknown) => {
            builderFailure = errorData(error);
          },
        )
        .then(() => {
          for (const waiting of held.splice(0)) handle(waiting);
        });
      return;
    }
    handle(request);
  });
  // A request that could not be read is lost with its id: its caller would wait for ever. The
  // parent restarts the thread, failing what it had sent.
  port.on('messageerror', (error) =>
    port.postMessage({ kind: 'lost', error: errorData(error) } satisfies Reply),
  );
  // What currentThreadId() (src/platform/idle-scheduling.ts) reads; this program cannot import it.
  let tid: number | null = null;
  try {
    tid = Number(
      (require('node:fs') as typeof import('node:fs')).readlinkSync('/proc/thread-self').split('/').pop(),
    );
  } catch {
    // Not Linux: there is no thread id to lower.
  }
  port.postMessage({ kind: 'ready', tid: Number.isSafeInteger(tid) ? tid : null } satisfies Reply);
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

/** Raised for a statement sent after the storage closed. */
export class SqliteThreadStoppedError extends Error {
  override name = 'SqliteThreadStoppedError';
}

export interface SqliteThread {
  /**
   * Runs one statement. Statements run in the order they are sent, so only the holder of `lock`
   * (the query builder's driver) may send them: anyone else could land inside its transaction.
   */
  query(sql: string, parameters: readonly unknown[]): Promise<ThreadQueryResult>;
  /**
   * The generation group commit (sqlite-generation-writer.ts), run under the lock, with the outbox
   * rows given and those built here from `sources` (src/broadcast/outbox-build.ts). Rejects with
   * code OUTBOX_BUILDER_UNAVAILABLE, writing nothing, when there are sources and the builder module
   * could not be loaded.
   */
  writeGenerations(
    rows: readonly GenerationTable[],
    at: string,
    outbox: readonly BroadcastOutboxTable[],
    sources?: readonly OutboxSources[],
  ): Promise<GenerationCommit>;
  /**
   * Runs `steps` in one immediate transaction in the thread, under the lock, and answers the rows
   * they changed: a transaction sent whole, so the connection is never held open waiting for its
   * sender's next statement (the broadcast worker's thread, at the lowest priority, may not run
   * again for a while, and the write lock is the group commits' too). A step that fails rolls back
   * every step.
   */
  atomically(steps: readonly AtomicStep[]): Promise<ThreadQueryResult>;
  /** Waits until no one else holds the connection, then holds it until `unlock`. */
  lock(): Promise<void>;
  unlock(): void;
  /** Threads started so far (1 until one stopped unasked and was replaced). */
  starts(): number;
  /** The running thread's Linux thread id; null off Linux or while none runs. */
  threadId(): number | null;
  /** How many threads were lost so far: a transaction must end in the epoch it began in. */
  epoch(): number;
  /** Closes the connection (checkpointing and removing the WAL) and ends the thread. */
  close(): Promise<void>;
}

/**
 * How long `close` waits for the connection and the thread before terminating it (a statement
 * running inside SQLite still finishes first: a thread is stopped between JavaScript steps).
 */
const CLOSE_TIMEOUT_MS = 10_000;
/** The thread's young generation, in MB (V8 would give it as much as the main thread's). */
const YOUNG_GENERATION_MB = 1;
/** After a failed restart, statements fail at once for this long before the next attempt. */
const RESTART_BACKOFF_MS = 1_000;

interface Pending {
  worker: Worker;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  /** Where the statement was sent from: an error's stack points at its caller, not at the reply. */
  origin: Error;
}

/** Where the thread loads the broadcast row builder from. */
const OUTBOX_BUILDER = threadModule(import.meta.url, '../broadcast/outbox-build');

/** Starts a thread on the file; resolves once its connection is open, else rejects with the driver's reason. */
function spawnThread(
  path: string,
  outboxBuilder: ThreadModule,
): Promise<{ worker: Worker; tid: number | null }> {
  const worker = new Worker(threadSource(), {
    eval: true,
    // Not the process's flags: `--input-type=module` would make the source a module without
    // `require`, and a loader (`--import tsx`) has nothing to do here.
    execArgv: [],
    // Its garbage is the batches and rows passing through: a small young generation keeps the
    // thread's resident memory small (the old generation keeps V8's limit: a large result must fit).
    resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    workerData: {
      driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      path,
      statementCacheSize: STATEMENT_CACHE_SIZE,
      outboxBuilder,
    } satisfies ThreadData,
  });
  return new Promise<{ worker: Worker; tid: number | null }>((resolve, reject) => {
    const onExit = (code: number) =>
      reject(new Error(`the SQLite thread exited with code ${code} before it was ready`));
    const onError = (error: Error) => {
      worker.off('exit', onExit);
      reject(error);
    };
    worker.once('exit', onExit);
    worker.once('error', onError);
    worker.once('message', (reply: Reply) => {
      worker.off('exit', onExit);
      worker.off('error', onError);
      if ('kind' in reply && reply.kind === 'ready') {
        resolve({ worker, tid: reply.tid });
        return;
      }
      void worker.terminate();
      reject(
        'kind' in reply && reply.kind === 'failed'
          ? toError(reply.error)
          : new Error('unexpected first message'),
      );
    });
  });
}

/**
 * SQLite on a thread of its own (config `sqlite_thread`). better-sqlite3 is synchronous: on the
 * request thread every statement, commit and WAL checkpoint (two fsyncs) holds up the event loop for
 * as long as it runs. Here the connection lives in a worker thread and the event loop only posts
 * statements and receives rows; the query builder reaches it through sqlite-thread-dialect.ts. One
 * connection still serves everything, so SQLite's single writer never waits on a lock held
 * elsewhere in the process. Resolves once the database is open; rejects with the driver's error when
 * it cannot be opened. A thread that stops unasked fails what it was running and is replaced at the
 * next statement, so the gateway goes on without a restart.
 */
export async function startSqliteThread(options: {
  path: string;
  /** The thread stopped unasked; the next statement starts a new one. */
  onFailure?: (message: string) => void;
  /** Told of each thread once its connection is open (tests stop one to see it replaced). */
  onThreadStart?: (worker: Worker) => void;
  /** Where the broadcast row builder is loaded from (tests name one that cannot load). */
  outboxBuilder?: ThreadModule;
}): Promise<SqliteThread> {
  const outboxBuilder = options.outboxBuilder ?? OUTBOX_BUILDER;
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let started = 0;
  let closed: SqliteThreadStoppedError | null = null;
  let closing: Promise<void> | null = null;
  let current: Worker | null = null;
  /** The Linux thread id of `current` (null off Linux or while none runs). */
  let currentTid: number | null = null;
  let starting: Promise<Worker> | null = null;
  /** Settles once the last lost thread has ended. */
  let exiting: Promise<void> = Promise.resolve();
  let restartFailure: { error: Error; until: number } | null = null;
  /** Counts lost threads: a transaction begun in one epoch cannot go on in the next. */
  let epoch = 0;

  /** The thread `worker` is gone: what it was running fails, and the next statement starts another. */
  function lose(worker: Worker, reason: string): void {
    if (current !== worker) return;
    current = null;
    currentTid = null;
    // A transaction open on it is gone with it (SQLite rolled it back); its holder must not go on.
    epoch += 1;
    for (const [id, entry] of pending) {
      if (entry.worker !== worker) continue;
      pending.delete(id);
      entry.reject(
        closing
          ? withOrigin(new SqliteThreadStoppedError('the storage is closed'), entry.origin)
          : withOrigin(new Error(`the SQLite thread stopped: ${reason}`), entry.origin),
      );
    }
    if (!closing) report(reason);
    // The next thread opens the file once this one is gone: it may still hold SQLite's write lock.
    exiting = worker.terminate().then(
      () => undefined,
      () => undefined,
    );
  }

  function report(reason: string): void {
    try {
      options.onFailure?.(reason);
    } catch {
      // A failing logger must not take the process down from a thread's exit event.
    }
  }

  function adopt({ worker, tid }: { worker: Worker; tid: number | null }): Worker {
    started += 1;
    current = worker;
    currentTid = tid;
    worker.on('message', (reply: Reply) => {
      if ('kind' in reply) {
        if (reply.kind === 'lost') lose(worker, `a request could not be read (${reply.error.message})`);
        return;
      }
      const entry = pending.get(reply.id);
      if (!entry) return;
      pending.delete(reply.id);
      // Idle, the thread must not keep a finished process alive; while a statement runs, it must.
      if (pending.size === 0) worker.unref();
      if (reply.ok) entry.resolve(reply.result);
      else entry.reject(toError(reply.error, entry.origin));
    });
    worker.on('messageerror', (error) => lose(worker, `a reply could not be read (${error.message})`));
    worker.on('error', (error) => lose(worker, error.message));
    worker.on('exit', (code) => lose(worker, `exit code ${code}`));
    worker.unref();
    options.onThreadStart?.(worker);
    return worker;
  }

  adopt(await spawnThread(options.path, outboxBuilder));

  /** The running thread, or a new one when the last stopped; statements keep their order. */
  function thread(): Worker | Promise<Worker> {
    if (current) return current;
    if (closing) return Promise.reject(new SqliteThreadStoppedError('the storage is closed'));
    // A database in memory died with its thread: a new one would be empty.
    if (options.path === ':memory:')
      return Promise.reject(new Error('the SQLite thread stopped; an in-memory database cannot be reopened'));
    // A restart that just failed is not retried by every statement: they fail fast for a while.
    if (restartFailure && performance.now() < restartFailure.until)
      return Promise.reject(restartFailure.error);
    starting ??= exiting
      .then(() => spawnThread(options.path, outboxBuilder))
      .then(
        (spawned) => {
          starting = null;
          restartFailure = null;
          if (closing) {
            void spawned.worker.terminate();
            throw new SqliteThreadStoppedError('the storage is closed');
          }
          return adopt(spawned);
        },
        (error: unknown) => {
          starting = null;
          const failure = error instanceof Error ? error : new Error(String(error));
          restartFailure = { error: failure, until: performance.now() + RESTART_BACKOFF_MS };
          report(`could not start a new thread: ${failure.message}`);
          throw failure;
        },
      );
    return starting;
  }

  function post<T>(worker: Worker, request: Unnumbered<Request>, origin: Error): Promise<T> {
    const id = nextId;
    nextId += 1;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { worker, resolve: resolve as (value: unknown) => void, reject, origin });
      worker.ref();
      try {
        worker.postMessage({ ...request, id });
      } catch (error) {
        // Values the structured clone cannot copy (a function, a symbol): the statement is not sent.
        pending.delete(id);
        if (pending.size === 0) worker.unref();
        reject(error as Error);
      }
    });
  }

  function send<T>(request: Unnumbered<Request>): Promise<T> {
    if (closed) return Promise.reject(closed);
    const origin = new Error('sent from');
    const worker = thread();
    return worker instanceof Worker
      ? post<T>(worker, request, origin)
      : worker.then((w) => post<T>(w, request, origin));
  }

  let held: Promise<void> | null = null;
  let release: (() => void) | null = null;
  async function lock(): Promise<void> {
    while (held) {
      await held;
      if (closed) throw closed;
    }
    if (closed) throw closed;
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
    async writeGenerations(rows, at, outbox, sources = []) {
      await lock();
      try {
        return await send<GenerationCommit>({ kind: 'writeGenerations', rows, at, outbox, sources });
      } finally {
        unlock();
      }
    },
    async atomically(steps) {
      await lock();
      try {
        return await send<ThreadQueryResult>({ kind: 'atomic', steps });
      } finally {
        unlock();
      }
    },
    lock,
    unlock,
    starts: () => started,
    threadId: () => currentTid,
    epoch: () => epoch,
    close() {
      closing ??= (async () => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), CLOSE_TIMEOUT_MS);
        });
        // Statements already waiting for the connection run first; a transaction that never ends
        // is cut off at the deadline (its lock, if it comes later, is handed straight back).
        const locking = lock().then(
          () => true,
          () => false,
        );
        const locked = await Promise.race([locking, late]);
        if (locked === 'late') void locking.then((took) => took && unlock());
        const worker = current;
        if (worker) {
          const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
          const answered = post<null>(worker, { kind: 'close' }, new Error('sent from')).then(
            () => exited,
            () => exited,
          );
          if (locked === 'late' || (await Promise.race([answered, late])) === 'late')
            await worker.terminate();
        }
        clearTimeout(timer);
        closed = new SqliteThreadStoppedError('the storage is closed');
        // Whoever still waits for the connection learns that it is closed.
        if (locked === true) unlock();
        else if (release) unlock();
      })();
      return closing;
    },
  };
}

type Unnumbered<R> = R extends { id: number } ? Omit<R, 'id'> : never;

function toError(data: ErrorData, origin?: Error): Error {
  const error = new Error(data.message) as Error & { code?: string };
  error.name = data.name;
  if (data.code !== undefined) error.code = data.code;
  return origin ? withOrigin(error, origin) : error;
}

/** The error with the stack of the statement's caller (`origin`), not of the reply's handler. */
function withOrigin<E extends Error>(error: E, origin: Error): E {
  if (origin.stack)
    error.stack = `${error.name}: ${error.message}\n${origin.stack.split('\n').slice(1).join('\n')}`;
  return error;
}
