import type { Worker } from 'node:worker_threads';
import { type LoweredPriority, reportLoweredPriority } from '../platform/idle-scheduling.js';
import { startModuleThread } from '../platform/module-thread.js';
import type { Deliverer, DeliveryRequest } from './deliver-batch.js';
import {
  DeliveryError,
  type DeliveryErrorData,
  deliveryErrorFrom,
  type SendOutcome,
} from './destination-type.js';

/** What the thread is started with. */
export interface ThreadSettings {
  allowPrivateNetworks: boolean;
  /** The thread's nice value (0 leaves it as the process's). */
  niceness: number;
  /** Also moves the thread to Linux's SCHED_IDLE policy (src/platform/idle-scheduling.ts). */
  idle: boolean;
}

/**
 * What the thread could lower itself to: its nice value and whether it runs SCHED_IDLE (false: not
 * asked); a string says why one could not be set.
 */
export type ThreadPriority = LoweredPriority;

/** Parent → thread. */
export type ThreadMessage =
  | {
      kind: 'deliver';
      id: number;
      request: Omit<DeliveryRequest, 'signal' | 'now'> & { now: number };
    }
  | { kind: 'abort'; id: number };

/** Thread → parent. */
export type ThreadReply =
  /** The thread has loaded its modules. */
  | { kind: 'ready' }
  /** What the thread lowered itself to, after its first batch (at once when there is nothing to lower). */
  | { kind: 'priority'; priority: ThreadPriority }
  | {
      kind: 'outcome';
      id: number;
      rejected: SendOutcome['rejected'];
      stopped: { error: DeliveryErrorData; failed: number[]; unsent: number[] } | undefined;
    }
  | { kind: 'failure'; id: number; error: DeliveryErrorData };

export interface DeliveryThreadLogger {
  info(details: Record<string, unknown>, message: string): void;
  warn(details: Record<string, unknown>, message: string): void;
}

/** How long an aborted batch waits for the thread's answer before the thread is restarted. */
const ABORT_GRACE_MS = 5_000;

interface Pending {
  thread: Worker;
  resolve: (outcome: SendOutcome | undefined) => void;
  reject: (error: unknown) => void;
  signal: AbortSignal;
  onAbort: () => void;
}

/** The delivery thread, running delivery-thread-entry. */
const spawn = (settings: ThreadSettings): Worker =>
  startModuleThread(import.meta.url, 'delivery-thread-entry', settings);

/**
 * Sends batches from a worker thread at a lowered priority (nice 19 and, on Linux, the SCHED_IDLE
 * policy, as the gateway starts it; the thread lowers itself once its first batch has settled, so
 * what that batch loads and compiles is not left to wait for an idle core): encoding the events
 * (OTLP, vendor JSON), compressing, signing and the HTTP exchanges with receivers then never hold
 * up the request thread's event loop, and on a shared core the scheduler runs requests first. Only
 * plain data crosses over: each event's stored payload (text, or the UTF-8 bytes of a payload the
 * worker stowed: decoded and parsed in the thread) and the destination's opened config. Started at
 * the first batch; a thread that dies fails its batches as retryable and the next batch starts a
 * new one.
 */
export function createThreadDeliverer(options: {
  settings: ThreadSettings;
  logger: DeliveryThreadLogger;
}): Deliverer & { readonly priority: Promise<ThreadPriority> } {
  const { settings, logger } = options;
  let worker: Worker | null = null;
  let nextId = 1;
  const pending = new Map<number, Pending>();
  let closed = false;
  let announcePriority: (priority: ThreadPriority) => void = () => undefined;
  const priority = new Promise<ThreadPriority>((resolve) => {
    announcePriority = resolve;
  });

  /** Threads still loading their exporters. */
  const loading = new WeakSet<Worker>();

  /**
   * Keeps the process alive while `thread` loads or has batches out, and only then: shutdown
   * (the worker's `stop`, which waits for the batches it aborted) must see their outcomes before the
   * event loop may end, while an idle thread must not keep a finished process alive.
   */
  function holdWhileBusy(thread: Worker): void {
    let busy = loading.has(thread);
    if (!busy) {
      for (const entry of pending.values()) {
        if (entry.thread !== thread) continue;
        busy = true;
        break;
      }
    }
    if (busy) thread.ref();
    else thread.unref();
  }

  function settle(id: number): Pending | undefined {
    const entry = pending.get(id);
    if (!entry) return undefined;
    pending.delete(id);
    entry.signal.removeEventListener('abort', entry.onAbort);
    holdWhileBusy(entry.thread);
    return entry;
  }

  /** Fails the batches sent to `thread` (all of them when null). */
  function failAll(error: DeliveryError, thread: Worker | null): void {
    for (const [id, entry] of [...pending]) {
      if (thread === null || entry.thread === thread) settle(id)?.reject(error);
    }
  }

  /** Settles when the current thread has loaded its exporters (or ended). */
  let threadReady: Promise<void> = Promise.resolve();

  function startThread(): Worker {
    const thread = spawn(settings);
    let loaded: () => void = () => undefined;
    threadReady = new Promise<void>((resolve) => {
      loaded = resolve;
    });
    thread.on('message', (message: ThreadReply) => {
      if (message.kind === 'ready') {
        loading.delete(thread);
        holdWhileBusy(thread);
        loaded();
        return;
      }
      if (message.kind === 'priority') {
        announcePriority(message.priority);
        reportLoweredPriority(logger, 'broadcast delivery thread', message.priority);
        return;
      }
      const entry = settle(message.id);
      if (!entry) return;
      if (message.kind === 'failure') entry.reject(deliveryErrorFrom(message.error));
      else {
        entry.resolve({
          rejected: message.rejected,
          stopped: message.stopped && {
            error: deliveryErrorFrom(message.stopped.error),
            failed: message.stopped.failed,
            unsent: message.stopped.unsent,
          },
        });
      }
    });
    thread.on('error', (error) => {
      logger.warn({ err: error }, 'broadcast delivery thread failed; its batches are retried');
    });
    thread.on('exit', (code) => {
      loading.delete(thread);
      loaded();
      if (worker === thread) worker = null;
      failAll(
        new DeliveryError(`the delivery thread stopped (exit code ${code}) during the delivery`, {
          retryable: true,
        }),
        thread,
      );
    });
    // After the listeners (adding a 'message' listener refs the thread again): held while it loads,
    // then only while it has batches (`holdWhileBusy`).
    loading.add(thread);
    holdWhileBusy(thread);
    return thread;
  }

  return {
    priority,
    /**
     * Starts the thread unless it runs, and settles once it has loaded its exporters: the worker
     * waits for it before a batch's time limit starts. Never rejects (a thread that ended settles it).
     */
    warm() {
      if (closed) return Promise.resolve();
      worker ??= startThread();
      return threadReady;
    },
    deliver(request) {
      if (closed) return Promise.reject(new DeliveryError('delivery aborted', { retryable: true }));
      if (request.signal.aborted) {
        return Promise.reject(new DeliveryError('delivery aborted', { retryable: true }));
      }
      worker ??= startThread();
      const thread = worker;
      const id = nextId++;
      return new Promise<SendOutcome | undefined>((resolve, reject) => {
        const onAbort = () => {
          thread.postMessage({ kind: 'abort', id } satisfies ThreadMessage);
          // A thread that does not answer an abort is stuck: its batches fail (retryable) and the
          // next batch starts a new thread, so no delivery slot waits on it forever.
          setTimeout(() => {
            if (!pending.has(id)) return;
            logger.warn(
              { grace_ms: ABORT_GRACE_MS },
              'broadcast delivery thread did not answer an abort; restarting it',
            );
            if (worker === thread) worker = null;
            void thread.terminate();
          }, ABORT_GRACE_MS).unref();
        };
        pending.set(id, { thread, resolve, reject, signal: request.signal, onAbort });
        thread.ref();
        request.signal.addEventListener('abort', onAbort, { once: true });
        const message: ThreadMessage = {
          kind: 'deliver',
          id,
          request: {
            type: request.type,
            // The payload only (text or bytes): the thread decodes and parses it (an event object
            // would be copied field by field, and decoding bytes here would cost the request thread).
            items: request.items.map(({ payload, idempotencyKey, generationId, attempt }) => ({
              payload,
              idempotencyKey,
              generationId,
              attempt,
            })),
            config: request.config,
            destination: request.destination,
            now: request.now.getTime(),
            originOverride: request.originOverride,
            ...(request.view ? { view: request.view } : {}),
          },
        };
        try {
          thread.postMessage(message);
        } catch (error) {
          settle(id);
          reject(
            new DeliveryError(
              `the batch could not be handed to the delivery thread: ${(error as Error).message}`,
              { retryable: true, cause: error },
            ),
          );
        }
      });
    },
    async close() {
      closed = true;
      const thread = worker;
      worker = null;
      if (thread) await thread.terminate();
      failAll(new DeliveryError('delivery aborted', { retryable: true }), null);
    },
  };
}
