/**
 * The delivery thread (see delivery-thread.ts): encodes and sends the batches the outbox worker
 * posts, with its own HTTP client, at a lowered scheduling priority so that on a busy core the
 * request thread runs first. It touches no database: the worker settles what it reports.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThreadPriority } from '../platform/idle-scheduling.js';
import { type DeliveryRequest, deliverBatch } from './deliver-batch.js';
import type { ThreadMessage, ThreadReply, ThreadSettings } from './delivery-thread.js';
import { deliveryErrorData } from './destination-type.js';
import { createExporterHttp } from './exporter-http.js';

const settings = workerData as ThreadSettings;
const port = parentPort;
if (!port) throw new Error('delivery-thread-entry runs as a worker thread');

/**
 * Lowers the priority once, after the first batch: that batch loads what its exporter loads on
 * first use (the OpenTelemetry packages behind OTLP, ~20 MB) and compiles the encoding, work that
 * at nice 19 and SCHED_IDLE waited 34 s for a core on a host kept busy by other processes
 * (docs/decisions.md, "The delivery thread lowers its priority after its first batch").
 */
const nothingToLower = settings.niceness === 0 && !settings.idle;
let lowered = nothingToLower;
function lowerOnce(): void {
  if (lowered) return;
  lowered = true;
  void lowerThreadPriority(settings.niceness, settings.idle).then((priority) =>
    reply({ kind: 'priority', priority }),
  );
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
    .finally(() => {
      inFlight.delete(message.id);
      lowerOnce();
    });
});

reply({ kind: 'ready' });
// Nothing to lower: the priority is known at once.
if (nothingToLower) reply({ kind: 'priority', priority: { niceness: 0, idle: false } });
