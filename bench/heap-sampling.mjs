// Where the gateway's allocations go, per request: a preload for the gateway under a bench's load.
// It counts requests (Node's `http.server.request.start` channel), samples the request thread's
// allocations with V8's sampling heap profiler from request `start` to request `start + count`, then
// writes the profile to /tmp/heap-sampling-<pid>.heapprofile (Chrome DevTools opens it) and the
// allocation sites that allocated most, in bytes per request, to /tmp/heap-sampling-<pid>.txt.
// The bench starts the gateway with a clean environment, so the settings travel in the URL's query:
//   start      requests before sampling begins (default 20000; warm-up requests count)
//   count      requests sampled (default 20000)
//   survivors  1: only objects that outlive the young generation (collected by a full collection, or
//              still alive at the end) — what promotion and pretenuring cost; 0 (default): all
//   interval   mean bytes between samples (default 2048; smaller is finer and slower)
//
// Usage: BENCH_GATEWAY_NODE_ARGS="--import file://$PWD/bench/heap-sampling.mjs?start=4000&count=3000&survivors=1" \
//          npm run bench:inference -- --only steady --warmup 20 --duration 20
// Sampling slows the gateway (at 2048 bytes, chat at saturation runs ~20% slower): read its figures
// as where allocations go, not as the bench's throughput.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { isMainThread } from 'node:worker_threads';
import { onRequestWindow, settingsOf } from './request-window.mjs';

const settings = settingsOf(import.meta.url, 'heap-sampling');
const start = settings.count('start', 20_000);
const count = settings.count('count', 20_000);
const survivorsOnly = settings.flag('survivors');
const interval = settings.count('interval', 2048);

/** Self bytes per allocation site (function and its file:line), largest first. */
function topSites(profile, requests, limit) {
  const sites = new Map();
  const visit = (node) => {
    const frame = node.callFrame;
    const where = (frame.url || '').replace(/^file:\/\//, '').replace(/.*\/(dist|node_modules)\//, '$1/');
    const site = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
    sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    for (const child of node.children) visit(child);
  };
  visit(profile.head);
  const total = [...sites.values()].reduce((sum, bytes) => sum + bytes, 0);
  const lines = [...sites]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([site, bytes]) => `${(bytes / requests).toFixed(0).padStart(8)}  ${site}`);
  const what = survivorsOnly ? 'outliving the young generation' : 'allocated';
  return [`${(total / requests).toFixed(0)} bytes per request ${what} (${requests} requests)`, ...lines].join(
    '\n',
  );
}

// Worker threads run preloads too; the request thread is the one measured.
if (isMainThread) {
  const session = new Session();
  session.connect();
  onRequestWindow(
    start,
    count,
    () =>
      session.post('HeapProfiler.startSampling', {
        samplingInterval: interval,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: !survivorsOnly,
      }),
    () =>
      session.post('HeapProfiler.stopSampling', (error, result) => {
        if (error) {
          process.stderr.write(`heap-sampling: ${error.message}\n`);
          return;
        }
        const base = `/tmp/heap-sampling-${process.pid}`;
        writeFileSync(`${base}.heapprofile`, JSON.stringify(result.profile));
        writeFileSync(`${base}.txt`, `${topSites(result.profile, count, 60)}\n`);
      }),
  );
}
