import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createInFlight } from '../../src/platform/in-flight.js';

describe('createInFlight', () => {
  it('is drained at once when nothing entered', async () => {
    assert.equal(await createInFlight().drained(1000), true);
  });

  it('is drained when the last request leaves, not before', async () => {
    const inFlight = createInFlight();
    inFlight.enter();
    inFlight.enter();
    let settled: boolean | null = null;
    const waiting = inFlight.drained(5000).then((drained) => {
      settled = drained;
    });
    inFlight.leave();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, null, 'drained with one request still in flight');
    assert.equal(inFlight.count, 1);
    inFlight.leave();
    await waiting;
    assert.equal(settled, true);
    assert.equal(inFlight.count, 0);
  });

  it('gives up after its timeout with requests still in flight, and forgets the waiter', async () => {
    const inFlight = createInFlight();
    inFlight.enter();
    assert.equal(await inFlight.drained(20), false);
    // A later leave wakes no stale waiter (and throws nothing).
    inFlight.leave();
    assert.equal(await inFlight.drained(20), true);
  });
});
