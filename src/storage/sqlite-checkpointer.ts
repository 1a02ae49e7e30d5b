import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SqliteDatabase from 'better-sqlite3';

/** SQLite's own default: a commit that finds this many WAL pages checkpoints them itself. */
const AUTOCHECKPOINT_PAGES = 1000;
/**
 * While the thread runs, commits still checkpoint past this many pages (16 MB): a backstop. A
 * checkpoint that runs alongside commits can copy every frame of its snapshot, yet the WAL restarts
 * only when a writer finds all of it copied; at thousands of commits a second one always lands in
 * between, and the WAL would grow without end. The commit that meets the backstop copies the little
 * the thread has not, and the WAL restarts.
 */
export const BACKSTOP_PAGES = 4000;
/** How long stop() waits for the thread's last checkpoint before terminating it. */
const STOP_TIMEOUT_MS = 5_000;
/** How often the thread copies the WAL's committed pages into the database file. */
export const CHECKPOINT_INTERVAL_MS = 250;

/** What one checkpoint did (SQLite's `wal_checkpoint` result). */
export interface CheckpointResult {
  /** Pages in the WAL, and how many of them are now in the database file. */
  log: number;
  checkpointed: number;
}

/**
 * The thread's code: plain CommonJS, so it runs alike from the build and from the TypeScript
 * sources. It opens its own connection to the database file and runs a PASSIVE checkpoint every
 * interval (never waiting for a lock: it copies what no reader still needs and leaves the rest for
 * the next round), reporting the checkpoints that copied pages.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
try {
  db = new Database(workerData.path, { fileMustExist: true });
  // This connection's setting decides the checkpoint's syncs: the WAL, then the database file.
  db.pragma('synchronous = NORMAL');
} catch (error) {
  parentPort.postMessage({ kind: 'failed', message: String(error && error.message || error) });
  process.exit(1);
}
parentPort.postMessage({ kind: 'ready' });
let last = -1;
const timer = setInterval(() => {
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    if (result && result.checkpointed !== last) {
      last = result.checkpointed;
      if (result.checkpointed > 0) parentPort.postMessage({ kind: 'checkpoint', log: result.log, checkpointed: result.checkpointed });
    }
  } catch (error) {
    // The commit path takes the checkpoints over when this thread ends.
    parentPort.postMessage({ kind: 'failed', message: String(error && error.message || error) });
    process.exit(1);
  }
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  process.exit(0);
});
`;

export interface SqliteCheckpointer {
  /** Resolves once the thread holds its connection (and the commit path stopped checkpointing). */
  readonly ready: Promise<void>;
  /** Checkpoints that copied pages, newest last (the last 16). */
  recent(): readonly CheckpointResult[];
  /** Stops the thread; commits checkpoint for themselves again. */
  stop(): Promise<void>;
}

/**
 * Moves WAL checkpoints off the thread that commits. A checkpoint copies the WAL into the database
 * file and syncs both (`synchronous = NORMAL` syncs nothing else): two `fsync`s that take
 * milliseconds each, and SQLite runs them inside whichever commit finds the WAL past 1000 pages —
 * on the event loop, between requests. Here a worker thread with its own connection checkpoints
 * every CHECKPOINT_INTERVAL_MS (PASSIVE: it never blocks the writer), and the main connection's
 * automatic checkpoint waits for BACKSTOP_PAGES instead of 1000 while the thread runs; if the thread
 * cannot open the file or stops, the default is restored, so the WAL never grows unchecked.
 */
export function startSqliteCheckpointer(options: {
  database: SqliteDatabase.Database;
  path: string;
  intervalMs?: number;
  /** Tests lower the backstop (BACKSTOP_PAGES) to see it hold. */
  backstopPages?: number;
  onFailure?: (message: string) => void;
}): SqliteCheckpointer {
  const { database } = options;
  const recent: CheckpointResult[] = [];
  let stopped = false;
  const restoreAutocheckpoint = () => {
    if (database.open) database.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  };
  const thread = new Worker(THREAD_SOURCE, {
    eval: true,
    // Not the process's flags (as for the SQLite thread): `--input-type=module` would make the
    // source a module without `require`.
    execArgv: [],
    // It allocates next to nothing: a small heap keeps the thread's resident memory small too.
    resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
    workerData: {
      driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      path: options.path,
      intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS,
    },
  });
  let reported = false;
  const report = (message: string) => {
    if (reported || stopped) return;
    reported = true;
    options.onFailure?.(message);
  };
  const exited = new Promise<void>((resolve) =>
    thread.once('exit', (code) => {
      if (code !== 0) report(`the checkpoint thread exited with code ${code}`);
      resolve();
    }),
  );
  let announceReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    announceReady = resolve;
  });
  thread.on('message', (message: { kind: string; message?: string; log?: number; checkpointed?: number }) => {
    if (message.kind === 'ready') {
      // Held until it starts (so `ready` can be awaited); then a forgotten one must not keep a
      // finished process alive — unless stop() is already waiting for it to end.
      if (!stopped) {
        database.pragma(`wal_autocheckpoint = ${options.backstopPages ?? BACKSTOP_PAGES}`);
        thread.unref();
      }
      announceReady();
    } else if (message.kind === 'checkpoint') {
      recent.push({ log: message.log ?? 0, checkpointed: message.checkpointed ?? 0 });
      if (recent.length > 16) recent.shift();
    } else if (message.kind === 'failed') {
      report(message.message ?? 'unknown error');
    }
  });
  thread.on('error', (error) => report(error.message));
  void exited.then(() => {
    // Whatever ended the thread, commits checkpoint for themselves again.
    restoreAutocheckpoint();
    announceReady();
  });
  return {
    ready,
    recent: () => recent,
    async stop() {
      if (stopped) return exited;
      stopped = true;
      thread.ref();
      thread.postMessage('stop');
      // A checkpoint of a large WAL may take a while; shutdown does not wait on it for long.
      const timer = setTimeout(() => void thread.terminate(), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
