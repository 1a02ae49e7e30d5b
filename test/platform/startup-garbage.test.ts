import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

const moduleUrl = new URL('../../src/platform/startup-garbage.ts', import.meta.url).href;

/** Runs `body` as an ES module in a fresh node (tsx loads the TypeScript source), with a deadline. */
function runFresh(body: string) {
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', body], {
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('collectStartupGarbage', () => {
  it('gives back the heap of what starting left behind, and the process goes on', () => {
    // ~40 MB of objects that live long enough to reach the old generation, then dropped: what
    // loading the catalogue and compiling schemas leave behind. The child must finish: a session
    // disconnected from inside its own callback leaves the thread waiting for ever, which the
    // deadline turns into a failure.
    const result = runFresh(`
      import { collectStartupGarbage } from ${JSON.stringify(moduleUrl)};
      let junk = Array.from({ length: 400000 }, (_, index) => ({ text: 'item ' + index, list: [index] }));
      await new Promise((resolve) => setTimeout(resolve, 10));
      junk = null;
      const before = process.memoryUsage().heapTotal;
      const collected = await collectStartupGarbage();
      await new Promise((resolve) => setTimeout(resolve, 20));
      console.log(JSON.stringify({ before, after: process.memoryUsage().heapTotal, collected }));
    `);
    assert.equal(result.status, 0, `exit ${result.status} (${result.signal}): ${result.stderr}`);
    // The heap as the process itself sees it, before the call and after it returned.
    const { before, after, collected } = JSON.parse(result.stdout);
    const megabytes = (bytes: number) => bytes / 1_048_576;
    assert.ok(megabytes(before) - megabytes(after) > 20, `the heap did not shrink: ${result.stdout}`);
    // What it reports (serve logs it) is what happened.
    assert.ok(collected.heapTotalBefore - collected.heapTotalAfter > 20 * 1_048_576, result.stdout);
  });
});
