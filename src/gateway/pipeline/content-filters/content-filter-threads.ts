import type { Worker } from 'node:worker_threads';
import type { BuiltinFilter, CustomFilter } from '../../../admin/guardrails/builtin-filter-catalog.js';
import { startModuleThread } from '../../../platform/module-thread.js';
import type { GenerationRequest } from '../../../spec/generation-request.js';
import type { ContentFilterScan } from './content-filter-types.js';

/** The filters of one resolved guardrail set, as the policy holds them. */
export interface FilterSet {
  builtins: BuiltinFilter[];
  custom: CustomFilter[];
}

/** Parent → thread: scan `request` with the set numbered `set` (compiled once per thread). */
export interface FilterJob {
  id: number;
  set: number;
  filters: FilterSet;
  request: GenerationRequest;
}

/** Thread → parent. */
export type FilterReply =
  | { id: number; ok: true; scan: ContentFilterScan }
  | { id: number; ok: false; message: string };

/** A scan that could not run: the thread failed or stopped, or the request could not be handed over. */
export class ContentFilterThreadError extends Error {
  override readonly name = 'ContentFilterThreadError';
}

interface Slot {
  worker: Worker;
  pending: Map<number, { resolve: (scan: ContentFilterScan) => void; reject: (error: Error) => void }>;
  failed: boolean;
}

export interface ContentFilterThreads {
  /** Scans the prompt side of `request` in a thread; rejects with a ContentFilterThreadError. */
  scan(filters: FilterSet, request: GenerationRequest): Promise<ContentFilterScan>;
  close(): Promise<void>;
}

/**
 * Content filters in worker threads (config `content_filter_threads`): the NLP detectors take
 * ~10 ms for a 2 KB prompt and every filter grows with the prompt (~1.3 s for 4 MB with all
 * builtins), time the event loop would otherwise hold every other request for. Up to `size`
 * threads, each started when a scan finds the others busy; a scan goes to an idle thread, else to
 * the one with the fewest waiting. Only the prompt's texts cross over (`promptOnly`), and only the
 * changed texts come back. A thread that fails fails its scans, and the next scan starts another.
 * A thread is referenced only while it has scans in hand, so an idle one never keeps the process up.
 */
export function createContentFilterThreads(options: { size: number }): ContentFilterThreads {
  if (!Number.isInteger(options.size) || options.size < 1)
    throw new RangeError(`content filter threads: a positive whole number, got ${options.size}`);
  const slots: Slot[] = [];
  const setIds = new WeakMap<FilterSet, number>();
  let nextSet = 1;
  let nextJob = 1;
  let closed = false;

  function fail(slot: Slot, error: Error): void {
    if (slot.failed) return;
    slot.failed = true;
    const index = slots.indexOf(slot);
    if (index >= 0) slots.splice(index, 1);
    for (const waiting of slot.pending.values()) waiting.reject(error);
    slot.pending.clear();
  }

  function start(): Slot {
    const worker = startModuleThread(import.meta.url, 'content-filter-thread-entry', null);
    const slot: Slot = { worker, pending: new Map(), failed: false };
    worker.on('message', (reply: FilterReply) => {
      const waiting = slot.pending.get(reply.id);
      if (!waiting) return;
      slot.pending.delete(reply.id);
      if (slot.pending.size === 0) worker.unref();
      if (reply.ok) waiting.resolve(reply.scan);
      else waiting.reject(new ContentFilterThreadError(`content filters failed: ${reply.message}`));
    });
    worker.on('error', (error) =>
      fail(slot, new ContentFilterThreadError(`the content filter thread failed: ${error.message}`)),
    );
    worker.on('exit', (code) =>
      fail(slot, new ContentFilterThreadError(`the content filter thread stopped (exit code ${code})`)),
    );
    worker.unref();
    slots.push(slot);
    return slot;
  }

  function pick(): Slot {
    const idle = slots.find((slot) => slot.pending.size === 0);
    if (idle) return idle;
    if (slots.length < options.size) return start();
    return slots.reduce((least, slot) => (slot.pending.size < least.pending.size ? slot : least));
  }

  return {
    scan(filters, request) {
      if (closed) return Promise.reject(new ContentFilterThreadError('content filter threads are closed'));
      let set = setIds.get(filters);
      if (set === undefined) {
        set = nextSet++;
        setIds.set(filters, set);
      }
      const slot = pick();
      const id = nextJob++;
      return new Promise<ContentFilterScan>((resolve, reject) => {
        const job: FilterJob = {
          id,
          set,
          filters: { builtins: filters.builtins, custom: filters.custom },
          request: promptOnly(request),
        };
        try {
          slot.worker.postMessage(job);
        } catch (error) {
          reject(
            new ContentFilterThreadError(
              `the prompt could not be handed to a content filter thread: ${(error as Error).message}`,
            ),
          );
          return;
        }
        slot.pending.set(id, { resolve, reject });
        if (slot.pending.size === 1) slot.worker.ref();
      });
    },
    async close() {
      closed = true;
      const stopping = slots.splice(0);
      for (const slot of stopping)
        fail(slot, new ContentFilterThreadError('content filter threads are closed'));
      await Promise.all(stopping.map((slot) => slot.worker.terminate()));
    },
  };
}

/**
 * What the filters read of a request (`promptText`): its instructions and input, with the payload
 * of image, file and audio parts left behind (a data URL can be megabytes) but every part kept in
 * its place, so the segments' positions are the same on both sides.
 */
function promptOnly(request: GenerationRequest): GenerationRequest {
  return {
    model: '',
    ...(request.instructions !== undefined ? { instructions: request.instructions } : {}),
    input: request.input.map((item) =>
      item.type === 'message' && item.content.some((part) => part.type !== 'text')
        ? {
            ...item,
            content: item.content.map((part) => (part.type === 'text' ? part : { type: 'image', url: '' })),
          }
        : item,
    ),
  };
}
