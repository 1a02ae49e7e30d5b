import { randomUUID } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import type { Registry } from 'prom-client';
import { POLICY_TOPIC } from '../admin/workspaces/workspace-access.js';
import { leasedRows } from '../broadcast/outbox-build.js';
import { createOutboxRepository } from '../broadcast/outbox-repository.js';
import type { Config } from '../config/config-schema.js';
import type { ChangeBus } from '../platform/change-bus.js';
import { type LoweredPriority, reportLoweredPriority } from '../platform/idle-scheduling.js';
import { startModuleThread } from '../platform/module-thread.js';
import { watchThread } from '../platform/thread-watchdog.js';
import type { Storage } from '../storage/database.js';
import type { BroadcastOutboxTable } from '../storage/database-schema.js';
import type { StoredOutboxRow } from '../storage/sqlite-thread.js';
import { type BroadcastWorkerLogger, type Outcome, registerWorkerMetrics } from './broadcast-worker.js';

/** What the thread is started with (plain data: it opens its own connection and secret box). */
export interface WorkerThreadData {
  settings: Config['broadcast'];
  databaseUrl: string;
  databaseSchema: string;
  /** The configured master key (null: the key file beside the SQLite database, as the parent read it). */
  masterKey: string | null;
  owner: string;
  logLevel: string;
}

/** Parent → thread. */
export type WorkerThreadMessage =
  | { kind: 'start' }
  | { kind: 'accept'; rows: BroadcastOutboxTable[] }
  | { kind: 'acceptStored'; rows: StoredOutboxRow[] }
  | { kind: 'policy'; message: string }
  | { kind: 'resync' }
  | { kind: 'drain'; id: number }
  /** The watchdog's: answered at once from the thread's event loop. */
  | { kind: 'ping'; id: number }
  | { kind: 'stop' };

/** Thread → parent. */
export type WorkerThreadReply =
  /** The thread opened its connection and runs the worker. */
  | { kind: 'ready' }
  /** It could not start (its connection or the master key): it ends after this. */
  | { kind: 'failed'; message: string }
  | { kind: 'count'; type: string; outcome: Outcome; events: number }
  | { kind: 'latency'; type: string; ms: number }
  /** Rows a claim took from the database, under this lease: remembered as handed-over rows are. */
  | { kind: 'claimed'; rows: StoredOutboxRow[] }
  /** What it lowered itself to, after its first batch. */
  | { kind: 'priority'; priority: LoweredPriority }
  | { kind: 'drained'; id: number }
  /** The answer to a ping, with the thread's id (for its scheduler statistics; null off Linux). */
  | { kind: 'pong'; id: number; tid: number | null }
  /** The worker stopped (its sends aborted and handed back) and its connection is closed. */
  | { kind: 'stopped' };

/**
 * How often a worker whose thread has not started yet looks for events in the outbox (left by an
 * earlier run, another instance's expired leases, dead letters to purge): one indexed read.
 */
const LOOK_FOR_WORK_MS = 5_000;
/**
 * A thread that stopped unasked is started again after this long, doubling (up to the maximum) for
 * each one that stops within MAX_RESTART_DELAY_MS of its start: one that cannot start (its database
 * refuses connections) is not respawned every second.
 */
const RESTART_DELAY_MS = 1_000;
const MAX_RESTART_DELAY_MS = 60_000;
/** How long `stop` waits for the thread to hand its events back before it is terminated. */
const STOP_GRACE_MS = 10_000;
/**
 * The most handed-over event ids remembered for the next thread (see `remember`): a lease's worth
 * at a few hundred generations a second, a few megabytes at most.
 */
const MAX_REMEMBERED = 50_000;
/**
 * The watchdog (platform/thread-watchdog.ts): a ping this often, and one unanswered this long is
 * judged from the thread's statistics — busy in code that never yields, or blocked outside its
 * event loop, ends the thread and the next one starts; starved of the CPU (SCHED_IDLE under load)
 * is waited out.
 */
const WATCHDOG_INTERVAL_MS = 10_000;
const WATCHDOG_HANG_AFTER_MS = 60_000;
/** Below this many remembered events none is dropped (pruning runs when the list has doubled since). */
const PRUNE_FROM = 1_000;

/**
 * The broadcast worker (broadcast-worker.ts) run in a worker thread of its own, with its own
 * database connection, exporter HTTP client and secret box, at the delivery thread's lowered
 * priority once its first batch has settled. The request thread keeps only what must happen there:
 * its group commit stores each generation's events, then the rows leased to this worker are posted
 * across — by id when a SQLite thread built them (`acceptStored`: the thread reads them back), whole
 * when they were built on the request thread (`accept`). Holding them through the batch linger, claiming, sending and settling
 * all happen in the thread, so none of it pauses requests or grows their heap (docs/decisions.md,
 * "The broadcast worker runs in its own thread"). Its counts and delivery times come back as
 * messages to the request thread's metrics; destination changes on the bus are forwarded to it.
 * Presents the interface of `createBroadcastWorker`.
 */
export function createThreadedBroadcastWorker(options: {
  storage: Storage;
  settings: Config['broadcast'];
  databaseUrl: string;
  databaseSchema: string;
  masterKey: string | null;
  logLevel: string;
  logger: BroadcastWorkerLogger;
  registry?: Registry;
  bus?: ChangeBus;
  /** Tests name the instance; otherwise a random id. */
  owner?: string;
  /** Told of each thread started (tests stop one to see its events handed to the next). */
  onThreadStart?: (thread: Worker) => void;
  /** Tests shorten the watchdog's times (milliseconds). */
  watchdog?: { intervalMs: number; hangAfterMs: number };
}) {
  const { logger } = options;
  const owner = options.owner ?? `worker-${randomUUID()}`;
  const data: WorkerThreadData = {
    settings: options.settings,
    databaseUrl: options.databaseUrl,
    databaseSchema: options.databaseSchema,
    masterKey: options.masterKey,
    owner,
    logLevel: options.logLevel,
  };
  // The outbox gauge counts in the request thread's own connection at each scrape.
  const metrics = options.registry ? registerWorkerMetrics(options.registry, options.storage) : null;
  const repository = createOutboxRepository(options.storage);
  let thread: Worker | null = null;
  let started = false;
  let lookTimer: NodeJS.Timeout | null = null;
  let restartDelay = RESTART_DELAY_MS;
  let stopping = false;
  let restartTimer: NodeJS.Timeout | null = null;
  let nextDrain = 1;
  const drains = new Map<number, () => void>();
  let onStopped: (() => void) | null = null;
  /**
   * The events handed to the running thread (or while none ran), and those it claimed from the
   * database (it tells of each claim), by id and lease: if the thread stops unasked, those it had not
   * settled are still leased to this worker, and the next thread is handed them at its start (it
   * reads back those still under the lease they were handed or claimed with, skipping the rest)
   * instead of waiting for their leases to end; events handed before the first start go to the
   * first thread so. Kept in the order handed, which is about the order their leases end.
   */
  let remembered: StoredOutboxRow[] = [];
  /** The length at which the next `remember` drops the entries whose lease has ended. */
  let pruneAt = PRUNE_FROM;

  /** Drops the entries whose lease has ended: any worker may claim those already. */
  function forgetExpired(): void {
    const now = Date.now();
    let first = 0;
    while (first < remembered.length && Date.parse(remembered[first]?.lease_until ?? '') <= now) first += 1;
    if (first > 0) remembered = remembered.slice(first);
  }

  function remember(rows: readonly StoredOutboxRow[]): void {
    for (const row of rows) remembered.push(row);
    if (remembered.length < pruneAt) return;
    forgetExpired();
    if (remembered.length > MAX_REMEMBERED) remembered = remembered.slice(-MAX_REMEMBERED / 2);
    pruneAt = Math.max(PRUNE_FROM, remembered.length * 2);
  }

  function post(message: WorkerThreadMessage): void {
    try {
      thread?.postMessage(message);
    } catch (error) {
      // Rows not handed over wait for their lease, then the thread claims them from the database.
      logger.warn({ err: error, kind: message.kind }, 'message to the broadcast worker thread not sent');
    }
  }

  function startThread(): void {
    const current = startModuleThread(import.meta.url, 'broadcast-worker-thread-entry', data);
    thread = current;
    options.onThreadStart?.(current);
    const startedAt = Date.now();
    const watchdog = watchThread({
      intervalMs: options.watchdog?.intervalMs ?? WATCHDOG_INTERVAL_MS,
      hangAfterMs: options.watchdog?.hangAfterMs ?? WATCHDOG_HANG_AFTER_MS,
      ping: (id) => {
        if (thread === current) post({ kind: 'ping', id });
      },
      onHang: (reason, detail) => {
        logger.error(
          {
            reason,
            unanswered_ms: detail.unansweredMs,
            cpu_share: Number(detail.cpuShare.toFixed(2)),
            thread_state: detail.state,
          },
          'broadcast worker thread hung; ending it (the next one takes over its events)',
        );
        // Its exit starts the next thread, which is handed what this one held.
        void current.terminate();
      },
    });
    current.on('message', (reply: WorkerThreadReply) => {
      switch (reply.kind) {
        case 'pong':
          watchdog.answered(reply.id, reply.tid);
          return;
        case 'count':
          metrics?.count(reply.type, reply.outcome, reply.events);
          return;
        case 'latency':
          metrics?.latency(reply.type, reply.ms);
          return;
        case 'claimed':
          remember(reply.rows);
          return;
        case 'priority':
          reportLoweredPriority(logger, 'broadcast worker thread', reply.priority);
          return;
        case 'failed':
          logger.error({ reason: reply.message }, 'broadcast worker thread could not start');
          return;
        case 'drained':
          drains.get(reply.id)?.();
          drains.delete(reply.id);
          return;
        case 'stopped':
          onStopped?.();
          return;
        case 'ready':
          return;
      }
    });
    current.on('error', (error) => {
      logger.error({ err: error }, 'broadcast worker thread failed');
    });
    current.on('exit', (code) => {
      watchdog.stop();
      if (thread === current) thread = null;
      // What it held and had not settled is still leased here: kept for the next thread.
      forgetExpired();
      for (const resolve of drains.values()) resolve();
      drains.clear();
      onStopped?.();
      if (stopping) return;
      // The next thread is handed what this one held (`remembered`) at its start.
      if (Date.now() - startedAt >= MAX_RESTART_DELAY_MS) restartDelay = RESTART_DELAY_MS;
      const delay = restartDelay;
      restartDelay = Math.min(restartDelay * 2, MAX_RESTART_DELAY_MS);
      logger.error(
        { exit_code: code, restart_in_ms: delay },
        'broadcast worker thread stopped; starting it again',
      );
      restartTimer = setTimeout(() => {
        restartTimer = null;
        ensureThread();
      }, delay);
      restartTimer.unref();
    });
    // After the listeners (which ref it again): shutdown ends it; it must not keep a process alive.
    current.unref();
  }

  /**
   * Starts the thread at the first work: a gateway without broadcast never pays its memory. A
   * thread started after one stopped unasked is handed what that one held (see `remembered`).
   */
  function ensureThread(): void {
    if (thread || stopping || restartTimer) return;
    if (lookTimer) clearTimeout(lookTimer);
    lookTimer = null;
    startThread();
    post({ kind: 'start' });
    forgetExpired();
    if (remembered.length > 0) post({ kind: 'acceptStored', rows: remembered });
  }

  /** Until the thread runs: starts it if the outbox holds events, else looks again later. */
  function lookForWork(): void {
    lookTimer = null;
    if (thread || stopping) return;
    repository.holdsAny().then(
      (any) => {
        if (any) ensureThread();
        else if (!thread && !stopping) {
          lookTimer = setTimeout(lookForWork, LOOK_FOR_WORK_MS);
          lookTimer.unref();
        }
      },
      (error: unknown) => {
        logger.warn({ err: error }, 'broadcast outbox not read; looking again later');
        if (thread || stopping) return;
        lookTimer = setTimeout(lookForWork, LOOK_FOR_WORK_MS);
        lookTimer.unref();
      },
    );
  }

  options.bus?.subscribe(POLICY_TOPIC, (message) => post({ kind: 'policy', message }));
  options.bus?.onResync(() => post({ kind: 'resync' }));

  return {
    owner,
    start() {
      if (started || stopping) return;
      started = true;
      lookForWork();
    },
    /**
     * Hands the rows a group commit just stored to the thread; those leased to another worker are
     * not this one's. A row's payload text is copied across (its serialization stays here).
     */
    accept(rows: readonly BroadcastOutboxTable[]) {
      const mine = rows.filter((row) => row.leased_by === owner);
      if (mine.length === 0) return;
      // Not started (a CLI, or before listen): the leases end and the started thread claims them.
      if (started) ensureThread();
      remember(leasedRows(mine));
      post({ kind: 'accept', rows: mine });
    },
    /**
     * Hands the thread the rows a SQLite thread built and stored at a group commit, by id (the
     * thread reads them on its connection): no event text passes through this thread.
     */
    acceptStored(rows: readonly StoredOutboxRow[]) {
      const mine = rows.filter((row) => row.leased_by === owner);
      if (mine.length === 0) return;
      if (started) ensureThread();
      remember(mine);
      post({ kind: 'acceptStored', rows: mine });
    },
    /** Runs the thread's worker until nothing is in flight (see the worker's `drain`). */
    drain(): Promise<void> {
      if (!thread) return Promise.resolve();
      const id = nextDrain++;
      return new Promise<void>((resolve) => {
        drains.set(id, resolve);
        post({ kind: 'drain', id });
      });
    },
    /** Stops the thread's worker (sends aborted, events handed back), then ends the thread. */
    async stop(): Promise<void> {
      if (stopping) return;
      stopping = true;
      if (restartTimer) clearTimeout(restartTimer);
      if (lookTimer) clearTimeout(lookTimer);
      const current = thread;
      if (!current) {
        // A thread that stopped unasked and was not started again yet: what it held goes back now
        // (as its own stop would have handed it), rather than waiting out the lease.
        forgetExpired();
        const held = remembered.map((row) => row.id);
        remembered = [];
        try {
          // In slices: one statement's parameters are bounded (SQLite's 32,766).
          for (let start = 0; start < held.length; start += 1_000)
            await repository.release(held.slice(start, start + 1_000), owner);
        } catch (error) {
          logger.warn({ err: error }, 'broadcast events not handed back; they wait for their lease');
        }
        return;
      }
      await new Promise<void>((resolve) => {
        const grace = setTimeout(resolve, STOP_GRACE_MS);
        onStopped = () => {
          clearTimeout(grace);
          resolve();
        };
        post({ kind: 'stop' });
      });
      onStopped = null;
      await current.terminate();
      thread = null;
    },
  };
}
