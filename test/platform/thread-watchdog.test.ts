import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { currentThreadId } from '../../src/platform/idle-scheduling.js';
import {
  type HangReason,
  readThreadSample,
  type ThreadSample,
  watchThread,
} from '../../src/platform/thread-watchdog.js';

const linux = process.platform === 'linux';

/**
 * A thread that answers `{ ping }` with `{ pong, tid }` from its event loop, and on `spin` runs a
 * loop that never ends, on `block` waits on a futex no one wakes.
 */
function pingableThread(): Worker {
  return new Worker(
    `const { parentPort } = require('node:worker_threads');
     const { readlinkSync } = require('node:fs');
     const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
     parentPort.on('message', (message) => {
       if (message === 'spin') for (;;) {}
       if (message === 'block') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
       if (typeof message.ping === 'number') parentPort.postMessage({ pong: message.ping, tid });
     });`,
    { eval: true },
  );
}

interface Hang {
  reason: HangReason;
  cpuShare: number;
  state: string;
  unansweredMs: number;
}

/** Watches `thread` with short times; resolves the first judgement (or never). */
function watched(
  thread: Worker,
  times: { intervalMs: number; hangAfterMs: number },
  sample?: (tid: number) => ThreadSample | null,
) {
  let pings = 0;
  let onHang: (hang: Hang) => void = () => undefined;
  const hung = new Promise<Hang>((resolve) => {
    onHang = resolve;
  });
  const watchdog = watchThread({
    ...times,
    ...(sample ? { sample } : {}),
    ping: (id) => {
      pings += 1;
      thread.postMessage({ ping: id });
    },
    onHang: (reason, detail) => onHang({ reason, ...detail }),
  });
  thread.on('message', (message: { pong: number; tid: number }) =>
    watchdog.answered(message.pong, message.tid),
  );
  return { watchdog, hung, pings: () => pings };
}

const within = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)),
  ]);

describe('the thread watchdog', () => {
  it('reads a thread’s state and CPU time; null for a thread that is not there', { skip: !linux }, () => {
    const self = readThreadSample(currentThreadId() as number);
    assert.equal(self?.state, 'R', 'the calling thread is running');
    const start = Date.now();
    while (Date.now() - start < 60) {
      // Spend CPU time.
    }
    const later = readThreadSample(currentThreadId() as number);
    assert.ok((later?.cpuMs ?? 0) - (self?.cpuMs ?? 0) >= 30, `${later?.cpuMs} after ${self?.cpuMs}`);
    assert.equal(readThreadSample(2 ** 30), null);
  });

  it('leaves a thread that answers alone', { skip: !linux }, async () => {
    const thread = pingableThread();
    const { watchdog, hung, pings } = watched(thread, { intervalMs: 20, hangAfterMs: 100 });
    try {
      const judged = await Promise.race([
        hung,
        new Promise((resolve) => setTimeout(() => resolve(null), 800)),
      ]);
      assert.equal(judged, null);
      assert.ok(pings() >= 10, `${pings()} pings answered`);
    } finally {
      watchdog.stop();
      await thread.terminate();
    }
  });

  it('judges a thread busy in a loop that never yields hung, from its CPU time', {
    skip: !linux,
  }, async () => {
    const thread = pingableThread();
    const { watchdog, hung } = watched(thread, { intervalMs: 20, hangAfterMs: 300 });
    try {
      // Answered once: its thread id is known.
      await new Promise((resolve) => setTimeout(resolve, 100));
      thread.postMessage('spin');
      const judged = await within(hung, 3_000, 'judged');
      assert.equal(judged.reason, 'busy');
      assert.ok(judged.cpuShare > 0.5, `CPU share ${judged.cpuShare}`);
      assert.ok(judged.unansweredMs >= 300);
    } finally {
      watchdog.stop();
      await thread.terminate();
    }
  });

  it('judges a thread blocked outside its event loop hung, at the second look', {
    skip: !linux,
  }, async () => {
    const thread = pingableThread();
    const { watchdog, hung } = watched(thread, { intervalMs: 50, hangAfterMs: 300 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 150));
      thread.postMessage('block');
      const blockedAt = Date.now();
      const judged = await within(hung, 3_000, 'judged');
      assert.equal(judged.reason, 'blocked');
      assert.equal(judged.state, 'S');
      assert.ok(judged.cpuShare < 0.5);
      assert.ok(Date.now() - blockedAt >= 300);
      // terminate() ends a thread waiting on a futex as well.
      assert.equal(await within(thread.terminate(), 3_000, 'terminated'), 1);
    } finally {
      watchdog.stop();
      await thread.terminate();
    }
  });

  it('waits out a thread that is runnable but gets no CPU (starved), and judges it once it sleeps', async () => {
    // A thread that answers nothing (it blocks at once), seen through statistics the test sets.
    const thread = pingableThread();
    thread.postMessage('block');
    let sample: ThreadSample = { state: 'R', cpuMs: 1_000 };
    const { watchdog, hung } = watched(thread, { intervalMs: 20, hangAfterMs: 100 }, () => sample);
    try {
      // The thread id comes from a first answer the test gives in the thread's place.
      watchdog.answered(1, 12345);
      // Starved: runnable, its CPU time crawling (5% of the time).
      const starved = setInterval(() => {
        sample = { state: 'R', cpuMs: sample.cpuMs + 1 };
      }, 20);
      const judged = await Promise.race([
        hung,
        new Promise((resolve) => setTimeout(() => resolve(null), 1_000)),
      ]);
      clearInterval(starved);
      assert.equal(judged, null, 'not judged while it waits for a CPU');
      sample = { state: 'S', cpuMs: sample.cpuMs };
      const asleep = await within(hung, 2_000, 'judged once asleep');
      assert.equal(asleep.reason, 'blocked');
    } finally {
      watchdog.stop();
      await thread.terminate();
    }
  });

  it('judges nothing while the thread’s id is unknown (no answer yet, or not Linux)', async () => {
    const thread = pingableThread();
    thread.postMessage('block');
    const { watchdog, hung } = watched(thread, { intervalMs: 20, hangAfterMs: 60 }, () => ({
      state: 'S',
      cpuMs: 0,
    }));
    try {
      const judged = await Promise.race([
        hung,
        new Promise((resolve) => setTimeout(() => resolve(null), 500)),
      ]);
      assert.equal(judged, null);
    } finally {
      watchdog.stop();
      await thread.terminate();
    }
  });
});
