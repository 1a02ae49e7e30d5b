import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Cancellation } from '../../src/platform/cancellation.js';

describe('Cancellation', () => {
  it('runs each listener once, in order, with the reason set; later aborts change nothing', () => {
    const cancellation = new Cancellation();
    const seen: string[] = [];
    const first = () => seen.push(`first:${String(cancellation.reason)}`);
    cancellation.addEventListener('abort', first, { once: true });
    cancellation.addEventListener('abort', first); // the same listener twice is added once
    cancellation.addEventListener('abort', () => {
      throw new Error('a failing listener');
    });
    cancellation.addEventListener('abort', () => seen.push('third'));
    assert.equal(cancellation.aborted, false);
    cancellation.abort('client gone');
    cancellation.abort('again');
    assert.deepEqual(seen, ['first:client gone', 'third']);
    assert.equal(cancellation.aborted, true);
    assert.equal(cancellation.reason, 'client gone');
  });

  it('skips removed listeners, never calls one added after the abort, and defaults the reason', () => {
    const cancellation = new Cancellation();
    let calls = 0;
    const listener = () => {
      calls += 1;
    };
    cancellation.addEventListener('abort', listener);
    cancellation.removeEventListener('abort', listener);
    cancellation.abort();
    cancellation.addEventListener('abort', listener);
    assert.equal(calls, 0);
    assert.ok(cancellation.reason instanceof DOMException && cancellation.reason.name === 'AbortError');
  });
});
