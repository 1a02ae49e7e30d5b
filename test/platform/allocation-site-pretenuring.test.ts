import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { defaultConfig } from '../../src/config/config-schema.js';
import { applyAllocationSitePretenuring } from '../../src/platform/allocation-site-pretenuring.js';

const moduleUrl = new URL('../../src/platform/allocation-site-pretenuring.ts', import.meta.url).href;

const apply = (enabled: boolean, nodeFlags: string[] = []) => {
  const flags: string[] = [];
  const result = applyAllocationSitePretenuring(enabled, (flag) => flags.push(flag), nodeFlags);
  return { result, flags };
};

/**
 * Runs a fresh node (tsx loads the TypeScript source) that calls the function with `enabled`, then
 * keeps every object a hot literal makes, so that each of its allocation sites survives whole, with
 * V8 printing its pretenuring decisions. Returns how many decisions were "tenure".
 */
function tenureDecisions(enabled: boolean): number {
  // Up to 200,000 objects kept at once (~30 MB): V8 weighs the sites at many scavenges.
  const body = `
    import { applyAllocationSitePretenuring } from ${JSON.stringify(moduleUrl)};
    applyAllocationSitePretenuring(${enabled}, undefined, []);
    console.log('applied');
    const kept = [];
    const make = (index) => ({ index, list: [index, index + 1], inner: { index } });
    for (let round = 0; round < 40; round++) {
      for (let index = 0; index < 100000; index++) kept.push(make(index));
      if (kept.length >= 200000) kept.length = 0;
    }
    console.log('kept', kept.length);
  `;
  const result = spawnSync(
    process.execPath,
    [
      // A 1 MB young generation that is always at its full size, where V8 weighs sites, and no
      // background threads to move collections around: the control tenures the same sites each run.
      '--single-threaded',
      '--max-semi-space-size=1',
      '--trace-pretenuring-statistics',
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      body,
    ],
    { encoding: 'utf8', timeout: 30_000, maxBuffer: 64 * 1024 * 1024 },
  );
  assert.equal(result.status, 0, `exit ${result.status} (${result.signal}): ${result.stderr}`);
  assert.match(result.stdout, /^kept \d+$/m);
  // Only what V8 decided after the call counts.
  const applied = result.stdout.indexOf('applied\n');
  assert.ok(applied >= 0, result.stdout.slice(0, 2000));
  const after = result.stdout.slice(applied);
  return after.split('\n').filter((line) => /=> tenure$/.test(line)).length;
}

describe('applyAllocationSitePretenuring', () => {
  it('false turns V8 pretenuring off; true leaves V8 its default (on)', () => {
    assert.deepEqual(apply(false), {
      result: '--no-allocation-site-pretenuring',
      flags: ['--no-allocation-site-pretenuring'],
    });
    assert.deepEqual(apply(true), { result: null, flags: [] });
  });

  it("leaves a choice given on node's command line in place", () => {
    for (const given of [
      ['--allocation-site-pretenuring'],
      ['--no-allocation-site-pretenuring'],
      ['--max-old-space-size=512', '--no_allocation_site_pretenuring'],
      ['--noallocation-site-pretenuring'],
      ['-allocation-site-pretenuring'],
    ])
      assert.deepEqual(apply(false, given), { result: null, flags: [] });
    // A flag that merely starts alike is not that choice.
    assert.deepEqual(apply(false, ['--allocation-site-pretenuring-of-nothing']).flags, [
      '--no-allocation-site-pretenuring',
    ]);
  });

  it('refuses anything but a boolean before touching V8', () => {
    const flags: string[] = [];
    for (const bad of ['false', 0, null, undefined])
      assert.throws(
        () => applyAllocationSitePretenuring(bad as unknown as boolean, (flag) => flags.push(flag), []),
        RangeError,
      );
    assert.deepEqual(flags, []);
  });

  it('is off by default', () => {
    assert.equal(defaultConfig.allocation_site_pretenuring, false);
  });

  it('set after start, V8 stops tenuring sites whose objects all survive', () => {
    // The control shows that this workload makes V8 tenure sites while pretenuring is on, so that
    // none with it off is the flag's doing.
    assert.ok(tenureDecisions(true) > 0, 'V8 tenured no site with pretenuring on');
    assert.equal(tenureDecisions(false), 0);
  });
});
