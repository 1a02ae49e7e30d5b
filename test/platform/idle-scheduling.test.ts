import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import {
  currentThreadId,
  SCHED_IDLE,
  scheduleIdle,
  threadPolicy,
} from '../../src/platform/idle-scheduling.js';

const linux = process.platform === 'linux';
const chrtInstalled = spawnSync('chrt', ['--help']).status === 0;

describe('SCHED_IDLE for one thread', () => {
  it('names the calling thread: the main thread is the process', { skip: !linux }, () => {
    assert.equal(currentThreadId(), process.pid);
    assert.equal(threadPolicy(process.pid), 0);
  });

  it('moves a worker thread to SCHED_IDLE and leaves the others as they are', {
    skip: !linux || !chrtInstalled,
  }, async () => {
    // A thread that reports its id and then waits to be told to end, so it is still there to read.
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       const { readlinkSync } = require('node:fs');
       parentPort.postMessage(Number(readlinkSync('/proc/thread-self').split('/').pop()));
       parentPort.once('message', () => process.exit(0));`,
      { eval: true },
    );
    try {
      const tid = await new Promise<number>((resolve) => worker.once('message', resolve));
      assert.notEqual(tid, process.pid);
      assert.equal(threadPolicy(tid), 0);
      assert.equal(await scheduleIdle(tid), true);
      assert.equal(threadPolicy(tid), SCHED_IDLE);
      assert.equal(threadPolicy(process.pid), 0, 'the main thread keeps the normal policy');
    } finally {
      worker.postMessage('end');
      await new Promise((resolve) => worker.once('exit', resolve));
    }
  });

  it('says why when chrt cannot run, instead of failing', { skip: !linux }, async () => {
    const missing = async () => {
      throw new Error('spawn chrt ENOENT');
    };
    assert.equal(await scheduleIdle(process.pid, missing), 'spawn chrt ENOENT');
    assert.equal(threadPolicy(process.pid), 0);
  });

  it('asks chrt for the idle policy of exactly that thread', { skip: !linux }, async () => {
    const calls: Array<[string, string[]]> = [];
    const record = async (file: string, args: string[]) => {
      calls.push([file, args]);
    };
    assert.equal(await scheduleIdle(4242, record), true);
    assert.deepEqual(calls, [['chrt', ['--idle', '--pid', '0', '4242']]]);
  });
});
