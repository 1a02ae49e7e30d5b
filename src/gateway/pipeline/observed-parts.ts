import { ITERATOR_ENDED } from '../../platform/iterator-ended.js';
import type { StreamPart } from '../../spec/stream-part.js';
import { UpstreamError } from '../../spec/upstream-error.js';

/** What `next()` caught, when it caught nothing. */
const NOTHING = Symbol('nothing');

/**
 * A started stream's parts as its reader gets them: first those read before the stream committed
 * (`head`), then the adapter's. Each is shown to `observe`, which keeps usage, finish and errors and
 * answers whether the reader gets the part. An `error` part ends the stream, and so does an
 * UpstreamError the adapter throws, which goes to `onFailure`; any other error is the reader's. When
 * the stream ends (read to its end, failed, or stopped by the reader) `onEnd` runs once and the
 * adapter's iterator is closed, which lets its upstream connection go.
 *
 * A class rather than an async generator: a generator's `yield` awaits what it yields, one more
 * promise and microtask for every streamed part (docs/decisions.md).
 */
export class ObservedParts implements AsyncIterableIterator<StreamPart> {
  private headIndex = 0;
  private closed = false;

  constructor(
    private readonly head: readonly StreamPart[],
    private readonly source: AsyncIterator<StreamPart>,
    private readonly observe: (part: StreamPart) => boolean,
    private readonly onFailure: (error: UpstreamError) => void,
    private readonly onEnd: () => void,
  ) {}

  async next(): Promise<IteratorResult<StreamPart, undefined>> {
    if (this.closed) return ITERATOR_ENDED;
    let caught: unknown = NOTHING;
    try {
      while (this.headIndex < this.head.length) {
        const part = this.head[this.headIndex] as StreamPart;
        this.headIndex += 1;
        if (this.observe(part)) return { done: false, value: part };
      }
      for (;;) {
        const next = await this.source.next();
        // The reader stopped while this read waited: what arrived is not observed, nor given.
        if (this.closed) return ITERATOR_ENDED;
        if (next.done) break;
        const pass = this.observe(next.value);
        if (next.value.type === 'error') break;
        if (pass) return { done: false, value: next.value };
      }
    } catch (error) {
      if (error instanceof UpstreamError && !this.closed) {
        try {
          this.onFailure(error);
        } catch (failed) {
          caught = failed;
        }
      } else caught = error;
    }
    await this.close();
    if (caught !== NOTHING) throw caught;
    return ITERATOR_ENDED;
  }

  /** The reader stops early (its client went away): the adapter's stream is closed. */
  async return(): Promise<IteratorResult<StreamPart, undefined>> {
    await this.close();
    return ITERATOR_ENDED;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onEnd();
    await this.source.return?.();
  }
}
