import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ObservedParts } from '../../../src/gateway/pipeline/observed-parts.js';
import type { StreamPart } from '../../../src/spec/stream-part.js';
import { UpstreamError } from '../../../src/spec/upstream-error.js';

const text = (delta: string): StreamPart => ({ type: 'text-delta', delta });

/** An adapter's stream: its parts, then `ending` thrown if given; counts the parts read and its closes. */
function source(parts: StreamPart[], ending?: Error) {
  const state = { closed: 0, read: 0 };
  async function* generate(): AsyncGenerator<StreamPart> {
    for (const part of parts) {
      state.read += 1;
      yield part;
    }
    if (ending) throw ending;
  }
  const generator = generate();
  const iterator: AsyncIterator<StreamPart> = {
    next: () => generator.next(),
    return: () => {
      state.closed += 1;
      return generator.return(undefined);
    },
  };
  return { iterator, state };
}

/** ObservedParts over `head` and a source, hiding usage parts as the generation service does. */
function observed(head: StreamPart[], parts: StreamPart[], ending?: Error) {
  const upstream = source(parts, ending);
  const seen: StreamPart['type'][] = [];
  const failures: UpstreamError[] = [];
  let ends = 0;
  const stream = new ObservedParts(
    head,
    upstream.iterator,
    (part) => {
      seen.push(part.type);
      return part.type !== 'usage' && part.type !== 'error';
    },
    (error) => failures.push(error),
    () => {
      ends += 1;
    },
  );
  return { stream, upstream, seen, failures, ends: () => ends };
}

async function readAll(stream: AsyncIterable<StreamPart>): Promise<string[]> {
  const read: string[] = [];
  for await (const part of stream) read.push(part.type === 'text-delta' ? part.delta : part.type);
  return read;
}

describe('a started stream as its reader gets it (ObservedParts)', () => {
  it('gives the parts read before the commit, then the adapter’s, each observed, without the ones observe keeps', async () => {
    const run = observed(
      [{ type: 'response-metadata', id: 'up-1' }, text('a')],
      [text('b'), { type: 'usage', usage: { inputTokens: 1, outputTokens: 2 } } as StreamPart, text('c')],
    );
    assert.deepEqual(await readAll(run.stream), ['response-metadata', 'a', 'b', 'c']);
    assert.deepEqual(run.seen, ['response-metadata', 'text-delta', 'text-delta', 'usage', 'text-delta']);
    assert.equal(run.ends(), 1);
    assert.equal(run.upstream.state.closed, 1);
    assert.deepEqual(await run.stream.next(), { done: true, value: undefined }, 'the end is answered again');
    assert.equal(run.ends(), 1, 'onEnd runs once');
  });

  it('ends at an error part, and at an UpstreamError the adapter throws, which goes to onFailure', async () => {
    const failure = new UpstreamError({ message: 'cut', kind: 'connection' });
    const parted = observed([text('a')], [{ type: 'error', error: failure } as StreamPart, text('never')]);
    assert.deepEqual(await readAll(parted.stream), ['a']);
    assert.equal(parted.upstream.state.read, 1, 'nothing is read past the error part');
    assert.equal(parted.upstream.state.closed, 1);

    const thrown = observed([text('a')], [text('b')], failure);
    assert.deepEqual(await readAll(thrown.stream), ['a', 'b']);
    assert.deepEqual(thrown.failures, [failure]);
    assert.equal(thrown.ends(), 1);
    assert.equal(thrown.upstream.state.closed, 1);
  });

  it('hands any other error to the reader, after closing the adapter’s stream', async () => {
    const bug = new TypeError('adapter bug');
    const run = observed([], [text('a')], bug);
    const read: string[] = [];
    const caught = await (async () => {
      for await (const part of run.stream) read.push(part.type);
    })().catch((error: unknown) => error);
    assert.equal(caught, bug);
    assert.deepEqual(read, ['text-delta']);
    assert.deepEqual(run.failures, []);
    assert.equal(run.ends(), 1);
    assert.equal(run.upstream.state.closed, 1);
  });

  it('closes the adapter’s stream when the reader stops early, from the head or later', async () => {
    for (const head of [[text('a'), text('b')], []]) {
      const run = observed(head, [text('c'), text('d'), text('e')]);
      for await (const _part of run.stream) break;
      assert.equal(run.ends(), 1);
      assert.equal(run.upstream.state.closed, 1);
      assert.deepEqual(await run.stream.next(), { done: true, value: undefined });
    }
  });

  it('ends a read still waiting when the reader stops, without observing or giving what arrives', async () => {
    let deliver: (result: IteratorResult<StreamPart>) => void = () => undefined;
    let closes = 0;
    const adapter: AsyncIterator<StreamPart> = {
      next: () =>
        new Promise((resolve) => {
          deliver = resolve;
        }),
      return: async () => {
        closes += 1;
        return { done: true, value: undefined };
      },
    };
    const seen: string[] = [];
    let ends = 0;
    const stream = new ObservedParts(
      [],
      adapter,
      (part) => {
        seen.push(part.type);
        return true;
      },
      () => undefined,
      () => {
        ends += 1;
      },
    );
    const waiting = stream.next();
    await stream.return();
    deliver({ done: false, value: text('late') });
    assert.deepEqual(await waiting, { done: true, value: undefined });
    assert.deepEqual(seen, []);
    assert.equal(ends, 1);
    assert.equal(closes, 1);
  });
});
