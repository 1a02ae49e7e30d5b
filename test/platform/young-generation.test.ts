import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { capYoungGeneration, type YoungGenerationHost } from '../../src/platform/young-generation.js';

const MB = 1024 * 1024;

/** A host whose new space is `size` and whose collections the test runs by calling `gc()`. */
function fakeHost(sizeMb: number, nodeFlags: string[] = []) {
  const flags: string[] = [];
  let afterGc: (() => void) | null = null;
  const host: YoungGenerationHost = {
    setFlags: (flag) => flags.push(flag),
    newSpaceBytes: () => sizeMb * MB,
    onGc(callback) {
      afterGc = callback;
      return () => {
        afterGc = null;
      };
    },
    nodeFlags,
  };
  return {
    host,
    flags,
    collect(newSizeMb: number) {
      sizeMb = newSizeMb;
      afterGc?.();
    },
    get observing() {
      return afterGc !== null;
    },
  };
}

describe('capYoungGeneration', () => {
  it('stops the growth once the new space reaches the cap, and lets it grow again below it', () => {
    const v8 = fakeHost(4);
    const stop = capYoungGeneration(8, v8.host);
    assert.ok(stop);
    assert.deepEqual(v8.flags, [], 'below the cap V8 keeps its own factor');
    v8.collect(8);
    assert.deepEqual(v8.flags, ['--semi-space-growth-factor=1']);
    v8.collect(8);
    assert.equal(v8.flags.length, 1, 'a flag is set only when it changes');
    v8.collect(4); // V8 shrank it while idle
    assert.deepEqual(v8.flags, ['--semi-space-growth-factor=1', '--semi-space-growth-factor=2']);
    v8.collect(16); // grown past a cap that is not a doubling of the start
    assert.equal(v8.flags.at(-1), '--semi-space-growth-factor=1');
    stop();
    assert.equal(v8.observing, false);
    assert.equal(v8.flags.at(-1), '--semi-space-growth-factor=2', 'stopped: V8 grows it again');
  });

  it('stops at once a space already at its cap', () => {
    const v8 = fakeHost(16);
    capYoungGeneration(8, v8.host);
    assert.deepEqual(v8.flags, ['--semi-space-growth-factor=1']);
  });

  it('does nothing for 0, or when node was given a semi-space flag', () => {
    for (const [megabytes, nodeFlags] of [
      [0, []],
      [8, ['--max-semi-space-size=16']],
      [8, ['--min_semi_space_size=2']],
      [8, ['--semi-space-growth-factor=4']],
    ] as const) {
      const v8 = fakeHost(32, [...nodeFlags]);
      assert.equal(capYoungGeneration(megabytes, v8.host), null);
      assert.deepEqual(v8.flags, []);
      assert.equal(v8.observing, false);
    }
  });

  it('refuses a cap that is not a non-negative integer before touching V8', () => {
    for (const megabytes of [-1, 2.5, Number.NaN]) {
      const v8 = fakeHost(32);
      assert.throws(() => capYoungGeneration(megabytes, v8.host), RangeError);
      assert.deepEqual(v8.flags, []);
    }
  });

  it('V8 honours it: the new space of a process allocating survivors stays at the cap', () => {
    // Allocates with survivors, yielding so that the collections' entries reach the observer, and
    // prints the largest new space seen.
    const script = `
      import { capYoungGeneration, newSpaceBytes } from ${JSON.stringify(new URL('../../src/platform/young-generation.ts', import.meta.url).href)};
      if (process.argv[1] === 'capped') capYoungGeneration(8, { nodeFlags: [] });
      const kept = [];
      let largest = 0;
      for (let round = 0; round < 300; round++) {
        for (let i = 0; i < 20000; i++) { const o = { i, s: 'x' + i, a: [i, i] }; if (i % 50 === 0) kept.push(o); }
        if (kept.length > 20000) kept.splice(0, 10000);
        await new Promise((resolve) => setImmediate(resolve));
        largest = Math.max(largest, newSpaceBytes());
      }
      console.log(largest / 1048576);
    `;
    const largest = (mode: string) => {
      const run = spawnSync(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script, mode],
        {
          encoding: 'utf8',
        },
      );
      assert.equal(run.status, 0, run.stderr);
      return Number(run.stdout.trim());
    };
    assert.ok(largest('free') > 8, 'V8 grows it past 8 MB on its own');
    assert.ok(largest('capped') <= 8);
  });
});
