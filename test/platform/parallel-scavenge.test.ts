import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { defaultConfig } from '../../src/config/config-schema.js';
import { applyParallelScavenge, type ParallelScavenge } from '../../src/platform/parallel-scavenge.js';

const apply = (setting: ParallelScavenge, cpus: number, nodeFlags: string[] = []) => {
  const flags: string[] = [];
  const result = applyParallelScavenge(setting, { cpus, nodeFlags, setFlags: (flag) => flags.push(flag) });
  return { result, flags };
};

describe('applyParallelScavenge', () => {
  it('auto turns parallel scavenging off with one CPU and leaves it on with more', () => {
    assert.deepEqual(apply('auto', 1), {
      result: '--no-parallel-scavenge',
      flags: ['--no-parallel-scavenge'],
    });
    assert.deepEqual(apply('auto', 2), { result: null, flags: [] });
  });

  it('false turns it off whatever the CPUs; true leaves V8 on even with one', () => {
    assert.deepEqual(apply(false, 8).flags, ['--no-parallel-scavenge']);
    assert.deepEqual(apply(true, 1), { result: null, flags: [] });
  });

  it("leaves a choice given on node's command line in place", () => {
    for (const given of [['--parallel-scavenge'], ['--no-parallel-scavenge'], ['--no_parallel_scavenge']])
      assert.deepEqual(apply(false, 1, given), { result: null, flags: [] });
    // Another flag that merely starts alike is not that choice.
    assert.deepEqual(apply('auto', 1, ['--parallel-scavenge-task-trace']).flags, ['--no-parallel-scavenge']);
  });

  it('refuses anything but auto, true or false before touching V8', () => {
    for (const bad of ['on', 'off', 1, null] as unknown as ParallelScavenge[])
      assert.throws(() => apply(bad, 1), RangeError);
  });

  it('is auto by default', () => {
    assert.equal(defaultConfig.parallel_scavenge, 'auto');
  });

  it('V8 honours the flag set at run time: no background scavenge work after it', () => {
    // Allocates enough that many scavenges run, with `--trace-gc-nvp` reporting each one's
    // background (helper thread) time.
    const script = `
      import { applyParallelScavenge } from ${JSON.stringify(new URL('../../src/platform/parallel-scavenge.ts', import.meta.url).href)};
      if (process.argv[1] === 'off') applyParallelScavenge(false, { nodeFlags: [] });
      const kept = [];
      for (let i = 0; i < 2e6; i++) { const o = { i, s: 'x' + i }; if (i % 8 === 0) kept.push(o); if (kept.length > 40000) kept.length = 0; }
    `;
    const background = (mode: string) => {
      const run = spawnSync(
        process.execPath,
        ['--import', 'tsx', '--trace-gc-nvp', '--input-type=module', '-e', script, mode],
        { encoding: 'utf8' },
      );
      assert.equal(run.status, 0, run.stderr);
      const times = [...run.stdout.matchAll(/ background\.scavenge\.parallel=([\d.]+)/g)].map((match) =>
        Number(match[1]),
      );
      assert.ok(times.length >= 6, `expected scavenges, got ${times.length}`);
      // The second half: the first ones ran while modules were loading, before the flag was set.
      return times.slice(times.length / 2).reduce((sum, time) => sum + time, 0);
    };
    assert.ok(background('on') > 0);
    assert.equal(background('off'), 0);
  });
});
