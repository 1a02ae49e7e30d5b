import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * Lowers the scheduling priority (raises the nice value) of every thread of this process but the
 * main one, as they are when called: V8's platform workers — which run the garbage collector's
 * concurrent marking and parallel scavenges for every isolate, the delivery thread's included, and
 * the optimising compiler — and libuv's pool if it has started (it has, once ES modules are loaded).
 *
 * Each of them runs at the request thread's priority otherwise: on a core the request thread has to
 * itself, four GC helpers that cannot run in parallel with it only take turns with it, and a request
 * that arrives during a collection waits a scheduler slice or more (bench/broadcast-latency.ts with
 * three broadcast destinations, in one run: 1.4% of requests over 10 ms with the helpers at nice 0,
 * 0.3% at nice 10). Lowered, they run when the request thread waits — most of the time below saturation —
 * and V8 does on the main thread what marking has not done when it needs it. On a host with idle
 * cores nothing changes. The price: a host whose core is saturated by other processes at the default
 * priority gives the helpers a smaller share, so a collection the main thread waits on can take
 * longer; `0` leaves them as they are.
 *
 * Linux schedules threads one by one, and setpriority() on a thread id concerns that thread. Threads
 * started later (worker threads) inherit the main thread's priority. A thread already lower is left
 * as it is; a lowered priority cannot be raised again without privileges. Returns how many threads
 * were lowered and how many could not be (e.g. a thread that ended meanwhile), or null off Linux,
 * without `/proc`, or when `niceness` is 0.
 */
export function lowerHelperThreads(
  niceness: number,
  tasks = '/proc/self/task',
): { lowered: number; failed: number } | null {
  if (!Number.isSafeInteger(niceness) || niceness < 0 || niceness > 19)
    throw new RangeError(`a helper thread niceness is an integer from 0 to 19, got ${niceness}`);
  if (niceness === 0 || process.platform !== 'linux') return null;
  let entries: string[];
  try {
    entries = readdirSync(tasks);
  } catch {
    // No /proc (a sandbox): an optional tuning, not a reason to refuse to start.
    return null;
  }
  let lowered = 0;
  let failed = 0;
  for (const entry of entries) {
    const tid = Number(entry);
    if (!Number.isSafeInteger(tid) || tid === process.pid) continue;
    try {
      if (getPriority(tid) >= niceness) continue;
      setPriority(tid, niceness);
      lowered += 1;
    } catch {
      failed += 1;
    }
  }
  return { lowered, failed };
}
