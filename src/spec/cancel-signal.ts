/**
 * What the generation path reads of a cancellation: the part of `AbortSignal` it uses. A real
 * `AbortSignal` is one; the request context uses a cheaper object of its own (Node builds an
 * `AbortSignal` as an `EventTarget`, about 8 µs per request on the benchmark host).
 */
export interface CancelSignal {
  readonly aborted: boolean;
  /** Why it was cancelled; undefined until then. */
  readonly reason: unknown;
  /** `listener` runs once, when the cancellation happens; not at all when it already happened. */
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}
