/**
 * The delivery thread (see delivery-thread.ts): encodes and sends the batches the outbox worker
 * posts, with its own HTTP client, at a lowered scheduling priority so that on a busy core the
 * request thread runs first. It touches no database: the worker settles what it reports.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { type DeliveryRequest, deliverBatch, deliveryErrorData } from './deliver-batch.js';
import type { ThreadMessage, ThreadReply, ThreadSettings } from './delivery-thread.js';
import { createExporterHttp } from './exporter-http.js';

const settings = workerData as ThreadSettings;
const port = parentPort;
if (!port) throw new Error('delivery-thread-entry runs as a worker thread');

/**
 * Lowers this thread's priority (its nice value; Linux schedules threads one by one, so the
 * request thread keeps its own). Returns the priority set, or why it could not be.
 */
function lowerPriority(niceness: number): number | string {
  if (niceness === 0) return 0;
  try {
    // `/proc/thread-self` links to `<pid>/task/<tid>`: setpriority() on a tid concerns that thread.
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return 'no thread id';
    setPriority(tid, niceness);
    return niceness;
  } catch (error) {
    return (error as Error).message;
  }
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

reply({ kind: 'ready', priority: lowerPriority(settings.niceness) });
