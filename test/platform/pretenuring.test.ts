import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { defaultConfig } from '../../src/config/config-schema.js';
import { applyPretenuring } from '../../src/platform/pretenuring.js';

describe('applyPretenuring', () => {
  it('turns V8 allocation-site pretenuring off for false', () => {
    const flags: string[] = [];
    assert.equal(
      applyPretenuring(false, (flag) => flags.push(flag), []),
      '--no-allocation-site-pretenuring',
    );
    assert.deepEqual(flags, ['--no-allocation-site-pretenuring']);
  });

  it('leaves V8 alone for true', () => {
    const flags: string[] = [];
    assert.equal(
      applyPretenuring(true, (flag) => flags.push(flag), []),
      null,
    );
    assert.deepEqual(flags, []);
  });

  it('leaves a value given to node itself (command line or NODE_OPTIONS) in place', () => {
    const flags: string[] = [];
    for (const given of [
      ['--allocation-site-pretenuring'],
      ['--no-allocation-site-pretenuring'],
      ['--max-old-space-size=512', '--no_allocation_site_pretenuring'],
    ])
      assert.equal(
        applyPretenuring(false, (flag) => flags.push(flag), given),
        null,
      );
    assert.deepEqual(flags, []);
  });

  it('refuses anything but a boolean before touching V8', () => {
    const flags: string[] = [];
    for (const bad of ['false', 0, null])
      assert.throws(
        () => applyPretenuring(bad as unknown as boolean, (flag) => flags.push(flag), []),
        RangeError,
      );
    assert.deepEqual(flags, []);
  });

  it('is off by default', () => {
    assert.equal(defaultConfig.allocation_site_pretenuring, false);
  });

  it('names a flag the running Node knows (V8 ignores an unknown one without a word)', () => {
    const listed = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
    assert.match(listed.stdout, /--allocation-site-pretenuring\b/);
  });

  it('takes effect when set at run time: objects that survive scavenges stay young', () => {
    // A site whose objects all survive a few scavenges is pretenured by default: later objects of it
    // are born old. Off, they are born young. `%InYoungGeneration` tells which.
    const program = `
      const v8 = require('node:v8');
      if (process.argv[1] === 'off') v8.setFlagsFromString('--no-allocation-site-pretenuring');
      function make(i) { return { i, pad: [i, i + 1, i + 2] }; }
      const kept = [];
      for (let round = 0; round < 40; round += 1) {
        for (let i = 0; i < 20000; i += 1) kept.push(make(i));
        globalThis.gc({ type: 'minor' });
      }
      let young = 0;
      for (let i = 0; i < 1000; i += 1) if (%InYoungGeneration(make(i))) young += 1;
      console.log(young);
    `;
    const run = (mode: string) => {
      const result = spawnSync(
        process.execPath,
        ['--allow-natives-syntax', '--expose-gc', '-e', program, mode],
        { encoding: 'utf8' },
      );
      assert.equal(result.status, 0, result.stderr);
      return Number(result.stdout.trim());
    };
    assert.equal(run('off'), 1000);
    assert.ok(run('on') < 1000, 'V8 pretenured the site by default (the test would prove nothing otherwise)');
  });
});
