/**
 * The broadcast worker's thread (see broadcast-worker-thread.ts): opens a database connection of
 * its own and runs the outbox worker here, sending from this thread (no delivery thread beside it),
 * and lowers its priority once its first batch has settled, as the delivery thread does.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { pino } from 'pino';
import { POLICY_TOPIC } from '../admin/workspaces/workspace-access.js';
import { createInProcessDeliverer, type Deliverer } from '../broadcast/deliver-batch.js';
import { createExporterHttp } from '../broadcast/exporter-http.js';
import { resolveMasterKey } from '../config/master-key.js';
import type { ChangeBus, ChangeHandler } from '../platform/change-bus.js';
import { systemClock } from '../platform/clock.js';
import { currentThreadId, lowerThreadPriority } from '../platform/idle-scheduling.js';
import { createSecretBox } from '../platform/secret-box.js';
import { openStorage } from '../storage/database.js';
import type { SqliteThread } from '../storage/sqlite-thread.js';
import { createBroadcastWorker } from './broadcast-worker.js';
import type { WorkerThreadData, WorkerThreadMessage, WorkerThreadReply } from './broadcast-worker-thread.js';

const data = workerData as WorkerThreadData;
const logger = pino({ level: data.logLevel });
const port = parentPort;
if (!port) throw new Error('broadcast-worker-thread-entry runs as a worker thread');

function reply(message: WorkerThreadReply): void {
  port?.postMessage(message);
}

/** The parent's bus as the worker sees it: what the parent forwards. */
const policyHandlers: ChangeHandler[] = [];
const resyncHandlers: Array<() => void> = [];
const bus: ChangeBus = {
  publish: async () => undefined,
  subscribe(topic, handler) {
    if (topic === POLICY_TOPIC) policyHandlers.push(handler);
  },
  onResync(handler) {
    resyncHandlers.push(handler);
  },
  close: async () => undefined,
};

/**
 * Sends in this thread; lowers its priority after the first batch (see delivery-thread-entry): to
 * SCHED_IDLE (`delivery_thread_idle`) and nice `delivery_thread_niceness`. On SQLite this thread
 * never holds the write lock of the file the group commits go to: its connection lives in a SQLite
 * thread of its own (`sqliteThread`), which runs each statement, and the one transaction (a fan-out
 * row's settling) sent whole, and which is lowered to the same nice value but keeps the normal
 * policy. A SCHED_IDLE thread holding that lock — preempted, it runs again only when no normal
 * thread wants the core — would keep the commits waiting in SQLite's busy handler, whose sleeps
 * grow to 100 ms; a nice-19 thread still gets a slice. Without its own SQLite thread (none
 * started), this thread keeps nice 19 alone.
 */
function lowering(deliverer: Deliverer, sqliteThread: SqliteThread | null): Deliverer {
  const niceness = data.settings.delivery_thread_niceness;
  const idle =
    data.settings.delivery_thread_idle && (!data.databaseUrl.startsWith('sqlite:') || sqliteThread !== null);
  let lowered = niceness === 0 && !idle;
  const lowerOnce = () => {
    if (lowered) return;
    lowered = true;
    const connectionTid = sqliteThread?.threadId() ?? null;
    void lowerThreadPriority(niceness, idle).then((priority) => {
      if (connectionTid !== null && typeof priority.niceness === 'number' && priority.niceness !== 0) {
        try {
          setPriority(connectionTid, priority.niceness);
        } catch (error) {
          priority.niceness = `its SQLite thread kept its priority: ${(error as Error).message}`;
        }
      }
      reply({ kind: 'priority', priority });
    });
  };
  return {
    deliver: (request) => deliverer.deliver(request).finally(lowerOnce),
    close: () => deliverer.close(),
  };
}

async function setUp() {
  // A few connections: the worker runs one claim or settling statement at a time per delivery. On
  // SQLite, one connection in a thread of its own (see `lowering`), started now, while this thread
  // still has the normal policy, which a new thread inherits. A SQLite thread that stops is not
  // replaced from here: a replacement would inherit SCHED_IDLE, and an unprivileged thread cannot
  // leave it. This thread ends instead, and the request thread starts the next worker thread,
  // which gets a SQLite thread of the normal policy again.
  const storage = await openStorage({
    url: data.databaseUrl,
    schema: data.databaseSchema,
    poolSize: 3,
    thread: data.databaseUrl.startsWith('sqlite:'),
    reader: true,
    onThreadFailure: (message) => {
      logger.error(
        { reason: message },
        'the broadcast worker thread lost its SQLite thread; the thread ends and is started again',
      );
      process.exit(1);
    },
  });
  try {
    const secretBox = createSecretBox(
      resolveMasterKey({ configured: data.masterKey, databaseUrl: data.databaseUrl }),
    );
    const http = createExporterHttp({ allowPrivateNetworks: data.settings.allow_private_networks });
    const worker = createBroadcastWorker({
      storage,
      secretBox,
      http,
      deliverer: lowering(createInProcessDeliverer(http), storage.sqliteThread),
      settings: data.settings,
      clock: systemClock,
      logger,
      owner: data.owner,
      bus,
      metrics: {
        count: (type, outcome, events) => {
          if (events > 0) reply({ kind: 'count', type, outcome, events });
        },
        latency: (type, ms) => reply({ kind: 'latency', type, ms }),
      },
      onClaimed: (rows) => reply({ kind: 'claimed', rows }),
    });
    return { worker, storage, http };
  } catch (error) {
    await storage.close();
    throw error;
  }
}

const running = setUp();
running.then(
  () => reply({ kind: 'ready' }),
  (error: unknown) => {
    reply({ kind: 'failed', message: (error as Error).message });
    port.close();
  },
);

const threadId = currentThreadId();

// Handled in order, each once the worker exists; the watchdog's pings at once.
port.on('message', (message: WorkerThreadMessage) => {
  if (message.kind === 'ping') {
    reply({ kind: 'pong', id: message.id, tid: threadId });
    return;
  }
  void running.then(
    async ({ worker, storage, http }) => {
      switch (message.kind) {
        case 'start':
          worker.start();
          return;
        case 'accept':
          worker.accept(message.rows);
          return;
        case 'acceptStored':
          worker.acceptStored(message.rows);
          return;
        case 'policy':
          for (const handler of policyHandlers) handler(message.message);
          return;
        case 'resync':
          for (const handler of resyncHandlers) handler();
          return;
        case 'drain':
          await worker.drain();
          reply({ kind: 'drained', id: message.id });
          return;
        case 'stop':
          await worker.stop();
          await http.close();
          await storage.close();
          reply({ kind: 'stopped' });
          return;
      }
    },
    () => undefined,
  );
});
