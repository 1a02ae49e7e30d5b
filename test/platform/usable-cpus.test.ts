import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { onWhenCpusAllow, quotaCpus, usableCpus } from '../../src/platform/usable-cpus.js';

describe('usableCpus', () => {
  it("reads a cgroup v2 cpu.max quota, rounded up; 'max' or nonsense is no quota", () => {
    assert.equal(quotaCpus('100000 100000\n'), 1);
    assert.equal(quotaCpus('150000 100000'), 2);
    assert.equal(quotaCpus('50000 100000'), 1);
    assert.equal(quotaCpus('max 100000\n'), null);
    assert.equal(quotaCpus('0 100000'), null);
    assert.equal(quotaCpus('lots'), null);
    assert.equal(quotaCpus(null), null);
  });

  it('reads the affinity mask a taskset pins the process to', { skip: process.platform !== 'linux' }, () => {
    const run = spawnSync(
      'taskset',
      [
        '-c',
        '0',
        process.execPath,
        '--import',
        'tsx',
        '-e',
        "import('./src/platform/usable-cpus.ts').then(({ usableCpus }) => console.log(usableCpus()))",
      ],
      { encoding: 'utf8' },
    );
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim(), '1');
  });

  it('is the fewer of the affinity mask and the quota, at least 1', () => {
    assert.equal(
      usableCpus(8, () => '200000 100000'),
      2,
    );
    assert.equal(
      usableCpus(1, () => '400000 100000'),
      1,
    );
    assert.equal(
      usableCpus(4, () => null),
      4,
    );
    assert.equal(
      usableCpus(0, () => null),
      1,
    );
  });
});

describe('onWhenCpusAllow', () => {
  it('auto is on with more than one CPU and off with one; a boolean forces it', () => {
    assert.equal(onWhenCpusAllow('auto', 1), false);
    assert.equal(onWhenCpusAllow('auto', 2), true);
    assert.equal(onWhenCpusAllow(true, 1), true);
    assert.equal(onWhenCpusAllow(false, 8), false);
  });

  it('refuses anything else', () => {
    assert.throws(() => onWhenCpusAllow('yes' as never, 2), /auto, true or false, got yes/);
  });
});
