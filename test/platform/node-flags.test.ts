import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { givesV8Flag } from '../../src/platform/node-flags.js';

describe('givesV8Flag', () => {
  it('finds a flag in every spelling node accepts', () => {
    for (const flag of [
      '--parallel-scavenge',
      '--no-parallel-scavenge',
      '--noparallel-scavenge',
      '--no_parallel_scavenge',
      '-parallel-scavenge',
      '-no-parallel-scavenge',
      '--parallel_scavenge',
    ])
      assert.equal(givesV8Flag(['--enable-source-maps', flag], 'parallel-scavenge'), true, flag);
    for (const flag of ['--heap-growing-percent=50', '-heap_growing_percent=50', '--heap-growing-percent'])
      assert.equal(givesV8Flag([flag], 'heap-growing-percent'), true, flag);
    assert.equal(
      givesV8Flag(['--min-semi-space-size=16'], 'max-semi-space-size', 'min-semi-space-size'),
      true,
    );
  });

  it('does not take another flag that merely starts or ends alike, or a value', () => {
    for (const flag of [
      '--parallel-scavenge-task-trace',
      '--concurrent-parallel-scavenge',
      'parallel-scavenge',
      '',
      '--',
      '--no',
      '50',
    ])
      assert.equal(givesV8Flag([flag], 'parallel-scavenge'), false, JSON.stringify(flag));
  });

  it('matches what node itself accepts: each spelling it finds starts node', () => {
    // A spelling node refused would make the gateway's check moot; these all start it.
    for (const flag of ['-no-parallel-scavenge', '--noparallel-scavenge', '-heap_growing_percent=50']) {
      const result = spawnSync(process.execPath, [flag, '-e', ''], { encoding: 'utf8' });
      assert.equal(result.status, 0, `${flag}: ${result.stderr}`);
    }
  });
});
