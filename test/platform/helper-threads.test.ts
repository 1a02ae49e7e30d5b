import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { lowerHelperThreads } from '../../src/platform/helper-threads.js';

/** Runs in a process of its own: a lowered thread cannot be raised again, and the runner's are ours. */
const CHILD = `
import { readdirSync, readFileSync } from 'node:fs';
import { lowerHelperThreads } from ${JSON.stringify(new URL('../../src/platform/helper-threads.ts', import.meta.url).href)};
const nices = () => Object.fromEntries(readdirSync('/proc/self/task').map((tid) => {
  const stat = readFileSync('/proc/self/task/' + tid + '/stat', 'utf8');
  // Field 19, the nice value: the 17th after the parenthesised command name.
  return [tid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])];
}));
const before = nices();
// Relative to the priority this process started with (a runner may itself run under nice).
const base = before[process.pid];
const first = base <= 17 ? lowerHelperThreads(base + 2) : null;
const afterFirst = nices();
const second = base <= 17 ? lowerHelperThreads(base + 1) : null;
const afterSecond = nices();
console.log(JSON.stringify({ pid: process.pid, base, before, first, afterFirst, second, afterSecond, zero: lowerHelperThreads(0) }));
`;

describe('lowerHelperThreads', { skip: process.platform !== 'linux' && 'Linux only' }, () => {
  it('lowers every thread but the main one, and leaves one already lower as it is', (t) => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], {
      encoding: 'utf8',
    });
    assert.equal(child.status, 0, child.stderr);
    const seen = JSON.parse(child.stdout);
    const main = String(seen.pid);
    const base: number = seen.base;
    if (base > 17) return t.skip(`the runner already runs at nice ${base}`);
    const helpers = Object.keys(seen.before).filter((tid) => tid !== main);
    // V8's platform workers at least.
    assert.ok(helpers.length >= 2, `threads: ${Object.keys(seen.before)}`);
    for (const tid of helpers) assert.equal(seen.before[tid], base);
    assert.deepEqual(seen.first, { lowered: helpers.length, failed: 0 });
    assert.equal(seen.afterFirst[main], base);
    for (const tid of helpers) assert.equal(seen.afterFirst[tid], base + 2, `thread ${tid}`);
    // Asked for less than they have: nothing changes (raising would need privileges anyway).
    assert.deepEqual(seen.second, { lowered: 0, failed: 0 });
    for (const tid of helpers) assert.equal(seen.afterSecond[tid], base + 2);
    assert.equal(seen.afterSecond[main], base);
    assert.equal(seen.zero, null);
  });

  it('refuses a niceness outside 0–19 before touching a thread', () => {
    for (const bad of [-1, 20, 1.5, Number.NaN])
      assert.throws(() => lowerHelperThreads(bad, '/nonexistent'), RangeError);
  });

  it('does nothing without /proc rather than stop the gateway from starting', () => {
    assert.equal(lowerHelperThreads(10, '/nonexistent/task'), null);
  });
});
