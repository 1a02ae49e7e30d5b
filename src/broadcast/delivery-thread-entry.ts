/**
 * The delivery thread (see delivery-thread.ts): encodes and sends the batches the outbox worker
 * posts, with its own HTTP client, at a lowered scheduling priority so that on a busy core the
 * request thread runs first. It touches no database: the worker settles what it reports.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { currentThreadId, scheduleIdle } from '../platform/idle-scheduling.js';
import { type DeliveryRequest, deliverBatch, deliveryErrorData } from './deliver-batch.js';
import type { ThreadMessage, ThreadPriority, ThreadReply, ThreadSettings } from './delivery-thread.js';
import { createExporterHttp } from './exporter-http.js';

const settings = workerData as ThreadSettings;
const port = parentPort;
if (!port) throw new Error('delivery-thread-entry runs as a worker thread');

/**
 * Lowers this thread's priority: its nice value, then (when asked) the SCHED_IDLE policy. Linux
 * schedules threads one by one, so the request thread keeps its own. Reports what was set, or why
 * it could not be.
 */
async function lowerPriority(niceness: number, idle: boolean): Promise<ThreadPriority> {
  if (niceness === 0 && !idle) return { niceness: 0, idle: false };
  const tid = currentThreadId();
  if (tid === null) return { niceness: 'no thread id', idle: idle ? 'no thread id' : false };
  let set: number | string = 0;
  try {
    // setpriority() on a tid concerns that thread.
    if (niceness !== 0) setPriority(tid, niceness);
    set = niceness;
  } catch (error) {
    set = (error as Error).message;
  }
  return { niceness: set, idle: idle ? await scheduleIdle(tid) : false };
}

const http = createExporterHttp({ allowPrivateNetworks: settings.allowPrivateNetworks });
const inFlight = new Map<number, AbortController>();

function reply(message: ThreadReply): void {
  port?.postMessage(message);
}

port.on('message', (message: ThreadMessage) => {
  if (message.kind === 'abort') {
    inFlight.get(message.id)?.abort();
    return;
  }
  const controller = new AbortController();
  inFlight.set(message.id, controller);
  const request: DeliveryRequest = {
    ...message.request,
    now: new Date(message.request.now),
    signal: controller.signal,
  };
  deliverBatch(request, http)
    .then((outcome) =>
      reply({
        kind: 'outcome',
        id: message.id,
        rejected: outcome?.rejected,
        stopped: outcome?.stopped && {
          error: deliveryErrorData(outcome.stopped.error),
          failed: outcome.stopped.failed,
          unsent: outcome.stopped.unsent,
        },
      }),
    )
    .catch((error: unknown) => reply({ kind: 'failure', id: message.id, error: deliveryErrorData(error) }))
    .finally(() => inFlight.delete(message.id));
});

reply({ kind: 'ready', priority: await lowerPriority(settings.niceness, settings.idle) });
