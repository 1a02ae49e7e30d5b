import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { defaultConfig } from '../../src/config/config-schema.js';
import { applyHeapGrowth } from '../../src/platform/heap-growth.js';

describe('applyHeapGrowth', () => {
  it('sets V8 --heap-growing-percent to the configured percent', () => {
    const flags: string[] = [];
    assert.equal(
      applyHeapGrowth(30, (flag) => flags.push(flag), []),
      '--heap-growing-percent=30',
    );
    assert.deepEqual(flags, ['--heap-growing-percent=30']);
  });

  it('leaves V8 alone for 0', () => {
    const flags: string[] = [];
    assert.equal(
      applyHeapGrowth(0, (flag) => flags.push(flag), []),
      null,
    );
    assert.deepEqual(flags, []);
  });

  it("leaves a value given on node's command line in place", () => {
    const flags: string[] = [];
    for (const given of [
      ['--heap-growing-percent=50'],
      ['--max-old-space-size=512', '--heap_growing_percent=50'],
    ])
      assert.equal(
        applyHeapGrowth(30, (flag) => flags.push(flag), given),
        null,
      );
    assert.deepEqual(flags, []);
    const set: string[] = [];
    assert.equal(
      applyHeapGrowth(30, (flag) => set.push(flag), ['--heap-growing-percentage-of-nothing']),
      '--heap-growing-percent=30',
    );
    assert.deepEqual(set, ['--heap-growing-percent=30']);
  });

  it('refuses a negative or fractional percent before touching V8', () => {
    const flags: string[] = [];
    for (const bad of [-1, 1.5, Number.NaN])
      assert.throws(() => applyHeapGrowth(bad, (flag) => flags.push(flag)), RangeError);
    assert.deepEqual(flags, []);
  });

  it('is on by default at 20%', () => {
    assert.equal(defaultConfig.heap_growth_percent, 20);
  });

  it('names a flag the running Node knows (V8 ignores an unknown one without a word)', () => {
    const listed = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
    assert.match(listed.stdout, /--heap-growing-percent\b/);
  });
});
