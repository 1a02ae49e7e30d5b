// Where the request thread's CPU goes, per request: a preload for the gateway under a bench's load.
// `node --cpu-prof` profiles every thread, and the broadcast delivery thread's sampler inflates the
// request thread's figures (its functions read 5–10× too high in session 27); this preload starts
// V8's CPU profiler through the inspector of the request thread alone. It counts requests (Node's
// `http.server.request.start` channel), profiles from request `start` to request `start + count`,
// then writes the profile to /tmp/cpu-profile-<pid>.cpuprofile (Chrome DevTools opens it) and the
// functions with the most self time, in µs per request, to /tmp/cpu-profile-<pid>.txt, with totals
// for garbage collection, our modules (dist/), node_modules and Node's own code.
// The bench starts the gateway with a clean environment, so the settings travel in the URL's query:
//   start     requests before profiling begins (default 20000; warm-up requests count)
//   count     requests profiled (default 20000)
//   interval  sampling interval in µs (default 100)
//
// Usage: BENCH_GATEWAY_NODE_ARGS="--import file://$PWD/bench/cpu-profile.mjs?start=8000&count=15000" \
//          npm run bench:inference -- --only "1. chat" --duration 10
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { isMainThread } from 'node:worker_threads';
import { onRequestWindow, settingsOf } from './request-window.mjs';

const settings = settingsOf(import.meta.url, 'cpu-profile');
const start = settings.count('start', 20_000, 1);
const count = settings.count('count', 20_000, 1);
const interval = settings.count('interval', 100, 1);

/** Where a frame's code lives: a short path, and its group for the totals. */
function placeOf(frame) {
  const url = (frame.url || '').replace(/^file:\/\//, '');
  if (frame.functionName === '(garbage collector)') return { where: '', group: 'garbage collection' };
  if (url === '')
    return { where: '', group: frame.functionName.startsWith('(') ? frame.functionName : 'native' };
  if (url.includes('/node_modules/'))
    return { where: url.replace(/.*\/node_modules\//, 'node_modules/'), group: 'node_modules' };
  if (url.includes('/dist/'))
    return { where: url.replace(/.*\/dist\//, 'dist/'), group: 'our modules (dist/)' };
  if (url.startsWith('node:')) return { where: url, group: 'node' };
  return { where: url, group: 'other' };
}

/**
 * Self time per function and per group, in µs per request, largest first. Samples are not evenly
 * spaced (the gaps stretch around garbage collections), so each sample counts for the time until
 * the next one, as Chrome DevTools counts it, and the total is the profile's span.
 */
function summary(profile, requests, limit) {
  const deltas = profile.timeDeltas;
  const selfUs = new Map();
  for (let index = 0; index < profile.samples.length; index++) {
    const id = profile.samples[index];
    selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[index + 1] ?? 0));
  }
  const totalUs = profile.endTime - profile.startTime;
  const sites = new Map();
  const groups = new Map();
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    const frame = node.callFrame;
    const { where, group } = placeOf(frame);
    const site = `${frame.functionName || '(anonymous)'} ${where}${where ? `:${frame.lineNumber + 1}` : ''}`;
    sites.set(site, (sites.get(site) ?? 0) + us);
    groups.set(group, (groups.get(group) ?? 0) + us);
  }
  const perRequest = (us) => (us / requests).toFixed(1).padStart(8);
  const sorted = (map) => [...map].sort((a, b) => b[1] - a[1]);
  return [
    `${perRequest(totalUs)}  µs per request on the request thread, profiled (${requests} requests, idle included)`,
    ...sorted(groups).map(([group, us]) => `${perRequest(us)}  ${group}`),
    '',
    ...sorted(sites)
      .slice(0, limit)
      .map(([site, us]) => `${perRequest(us)}  ${site}`),
  ].join('\n');
}

// Worker threads run preloads too; the request thread is the one measured.
if (isMainThread) {
  const session = new Session();
  session.connect();
  onRequestWindow(
    start,
    count,
    () => {
      session.post('Profiler.enable');
      session.post('Profiler.setSamplingInterval', { interval });
      session.post('Profiler.start');
    },
    () =>
      session.post('Profiler.stop', (error, result) => {
        if (error) {
          process.stderr.write(`cpu-profile: ${error.message}\n`);
          return;
        }
        const base = `/tmp/cpu-profile-${process.pid}`;
        writeFileSync(`${base}.cpuprofile`, JSON.stringify(result.profile));
        writeFileSync(`${base}.txt`, `${summary(result.profile, count, 70)}\n`);
      }),
  );
}
