import { Cancellation } from '../../../platform/cancellation.js';
import type { CancelSignal } from '../../../spec/cancel-signal.js';
import type { AdapterCall } from '../../../spec/provider-adapter.js';
import { UpstreamError } from '../../../spec/upstream-error.js';

/** How many first-token timeouts signs of life (`alive`) may stretch the wait for output to. */
const MAX_ALIVE_FACTOR = 10;

/**
 * What every streaming adapter needs around its upstream call: an abort signal that fires on the
 * caller's abort or on the first-token timeout, the moment of first output, and the failure to
 * report. Before any output a failure is thrown so the caller may fail over; after it, the failure
 * belongs to the stream the client is already reading and arrives as an `error` part.
 */
export function guardStream(call: AdapterCall) {
  const controller = new Cancellation();
  const onAbort = () => controller.abort(call.signal.reason);
  if (call.signal.aborted) controller.abort(call.signal.reason);
  else call.signal.addEventListener('abort', onAbort, { once: true });
  const expire = () =>
    controller.abort(
      new UpstreamError({
        message: 'Upstream sent no output before the first-token timeout',
        kind: 'timeout',
      }),
    );
  const openedAt = performance.now();
  let timer = setTimeout(expire, call.timeouts.firstTokenMs);
  let started = false;
  let begun = false;
  /** What is left of the ten first-token timeouts that signs of life may stretch the wait to. */
  const capLeft = () => openedAt + call.timeouts.firstTokenMs * MAX_ALIVE_FACTOR - performance.now();
  return {
    signal: controller as CancelSignal,
    /** Whether output (text, reasoning, a tool call) has been emitted. */
    get started() {
      return started;
    },
    /** Marks the first output; the first-token timer stops. */
    output() {
      if (started) return;
      started = true;
      clearTimeout(timer);
    },
    /**
     * The upstream has begun its answer with something held back until it is whole (a tool call
     * whose name may come in pieces): the first-token timer gives way to the cap of ten timeouts,
     * but nothing is committed, so a failure before the first output still fails over. The idle
     * timeout still ends an upstream that then goes quiet.
     */
    begun() {
      if (started || begun || controller.aborted) return;
      // Still within the cap of ten first-token timeouts that `alive` keeps: an upstream that
      // named a call and then sends nothing of it is failed over from in the end. Once is enough:
      // the cap's deadline does not move.
      begun = true;
      clearTimeout(timer);
      timer = setTimeout(expire, Math.max(0, capLeft()));
    },
    /**
     * The upstream shows it is working on an answer it has not begun to send (a reasoning model's
     * keepalive): the first-token timer starts over, so that long reasoning is not taken for a dead
     * upstream. Nothing is committed: the stream may still fail over until its first output.
     */
    alive() {
      if (started || begun || controller.aborted) return;
      // Never past ten first-token timeouts in all (ten minutes by default): an upstream that only
      // says it is working is failed over from in the end.
      const left = capLeft();
      if (left <= 0) return;
      clearTimeout(timer);
      timer = setTimeout(expire, Math.min(call.timeouts.firstTokenMs, left));
    },
    /**
     * The failure to report for `error`: our own abort reason (the timeout) wins over the error it
     * caused. Anything that is not an upstream failure is a bug and is rethrown as it is, never
     * disguised as a retryable connection error.
     */
    failure(error: unknown): UpstreamError {
      const reason = controller.reason;
      if (controller.aborted && reason instanceof UpstreamError) return reason;
      if (error instanceof UpstreamError) return error;
      if (controller.aborted)
        return new UpstreamError({ message: 'The request was aborted', kind: 'aborted' });
      throw error;
    },
    release() {
      clearTimeout(timer);
      call.signal.removeEventListener('abort', onAbort);
    },
  };
}
