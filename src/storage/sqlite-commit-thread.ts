import type { OutboxSources } from '../broadcast/outbox-build.js';
import type { ThreadModule } from '../platform/module-thread.js';
import type { BroadcastOutboxTable, GenerationTable } from './database-schema.js';
import {
  type GenerationCommit,
  type SqliteThread,
  SqliteThreadStoppedError,
  startSqliteThread,
} from './sqlite-thread.js';

/** After the thread could not start, commits run on the event loop for this long before it is tried again. */
const START_RETRY_MS = 60_000;

export interface SqliteCommitThread {
  /**
   * The generation group commit (sqlite-generation-writer.ts) run in the thread, the broadcast rows
   * of `sources` built there (see SqliteThread.writeGenerations); null when the thread is not
   * available now (it could not start lately): the caller commits on its own connection instead.
   */
  writeGenerations(
    rows: readonly GenerationTable[],
    at: string,
    outbox: readonly BroadcastOutboxTable[],
    sources: readonly OutboxSources[],
  ): Promise<GenerationCommit> | null;
  /** Whether commits go to the thread now (false for a while after it could not start). */
  available(): boolean;
  /** Whether a thread has been started (tests). */
  started(): boolean;
  /** Ends the thread (after the commit it runs, if any). */
  close(): Promise<void>;
}

/**
 * The generation group commit on a thread of its own, for a SQLite file whose connection is on the
 * event loop (config `sqlite_commit_thread`, without `sqlite_thread`). The commit is the one write
 * every request leads to: every 50 ms (or 100 records) it inserts the records, their spend rows and
 * their broadcast events, and on the event loop it held requests up for as long as it ran — 0.5 to
 * 0.8 ms at 200 req/s, longer when it waited for the write lock another connection held (the
 * broadcast worker's thread). Here a SqliteThread (sqlite-thread.ts) with a connection of its own
 * runs the same prepared statements; the event loop posts the batch and goes on. Everything else
 * stays on the event-loop connection, so unlike `sqlite_thread` no read pays a thread hop. Started
 * at the first commit: a CLI command or a gateway without traffic never pays its memory. It runs at
 * the request thread's priority, not lowered like the helper threads: the log has no other brake, and
 * at nice 10 on a core the request thread kept busy the commits fell behind until the queue's bound
 * dropped records (docs/decisions.md).
 */
export function createSqliteCommitThread(options: {
  path: string;
  /** The thread could not start, or stopped unasked (the next commit starts another). */
  onFailure?: (message: string) => void;
  /** Where the thread loads the broadcast row builder from (tests name one that cannot load). */
  outboxBuilder?: ThreadModule;
  /** Starts the thread (tests give one that fails). */
  start?: typeof startSqliteThread;
}): SqliteCommitThread {
  const start = options.start ?? startSqliteThread;
  let thread: Promise<SqliteThread> | null = null;
  let unavailableUntil = 0;
  let closed = false;

  return {
    writeGenerations(rows, at, outbox, sources) {
      if (closed) return Promise.reject(new SqliteThreadStoppedError('the storage is closed'));
      if (!thread) {
        if (performance.now() < unavailableUntil) return null;
        const starting = start({
          path: options.path,
          onFailure: options.onFailure,
          outboxBuilder: options.outboxBuilder,
        });
        thread = starting;
        starting.catch((error: unknown) => {
          if (thread === starting) thread = null;
          unavailableUntil = performance.now() + START_RETRY_MS;
          options.onFailure?.(`the commit thread could not start: ${(error as Error).message}`);
        });
      }
      return thread.then((running) => running.writeGenerations(rows, at, outbox, sources));
    },

    available: () => thread !== null || performance.now() >= unavailableUntil,

    started: () => thread !== null,

    async close() {
      closed = true;
      const running = thread;
      thread = null;
      if (running)
        await running.then(
          (current) => current.close(),
          () => undefined,
        );
    },
  };
}
