import type { CancelSignal } from '../spec/cancel-signal.js';

/**
 * A `CancelSignal` and the means to fire it, as an `AbortController` is an `AbortSignal` and its
 * `abort()`: the request context's, without the cost of an `EventTarget` per request. Listeners
 * run in the order they were added; one that throws does not keep the others from running.
 */
export class Cancellation implements CancelSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: Array<() => void> | null = null;

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    const listeners = this.listeners;
    this.listeners = null;
    if (!listeners) return;
    for (const listener of listeners) {
      try {
        listener();
      } catch {
        // A listener's failure is its own: the cancellation still reaches the others.
      }
    }
  }

  /** A listener runs at most once whatever `once` says: the cancellation happens once. */
  addEventListener(_type: 'abort', listener: () => void, _options?: { once?: boolean }): void {
    if (this.aborted) return;
    if (!this.listeners) this.listeners = [];
    if (!this.listeners.includes(listener)) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    if (!this.listeners) return;
    const index = this.listeners.indexOf(listener);
    if (index >= 0) this.listeners.splice(index, 1);
  }
}
