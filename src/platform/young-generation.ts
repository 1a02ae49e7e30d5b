import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { givenNodeFlags, givesV8Flag } from './node-flags.js';

const MB = 1024 * 1024;

/** The young generation's size as V8 reports it (`new_space` of getHeapSpaceStatistics), in bytes. */
export function newSpaceBytes(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

/** What the cap needs of the running process (tests give their own parts). */
export interface YoungGenerationHost {
  setFlags(flags: string): void;
  newSpaceBytes(): number;
  /** Calls `afterGc` after each garbage collection; returns what stops it. */
  onGc(afterGc: () => void): () => void;
  nodeFlags: readonly string[];
}

const processHost = (): YoungGenerationHost => ({
  setFlags: setFlagsFromString,
  newSpaceBytes,
  onGc(afterGc) {
    const observer = new PerformanceObserver(afterGc);
    observer.observe({ entryTypes: ['gc'] });
    return () => observer.disconnect();
  },
  nodeFlags: givenNodeFlags(),
});

/**
 * Stops the young generation (V8's new space, where every allocation starts) from growing past
 * `megabytes`. Under load V8 doubles it after scavenges, from 4 MB to 32 MB as `newSpaceBytes`
 * reports it (Node 20, 64-bit): more memory that survivors are copied within and that the process
 * keeps resident, and pauses that come seldom but long; idle, it shrinks back. V8 reads the flag
 * that bounds it (`--max-semi-space-size`) only at start, which a config file comes too late for,
 * but it reads `--semi-space-growth-factor` each time it grows the space: after every collection
 * the factor is set to 1 (no growth) once the space has reached the cap, and back to V8's 2 below
 * it. The space still shrinks when idle and grows again up to the cap. V8 grows by doubling, so a
 * cap between two doublings stops at the larger. The flag is the process's: worker threads' young
 * generations stop growing while the request thread's is at its cap.
 *
 * `0` leaves V8's own growth, and so does a semi-space flag given to node itself (command line or
 * `NODE_OPTIONS`). Returns what stops the cap (the growth factor back to V8's), or null.
 */
export function capYoungGeneration(
  megabytes: number,
  given: Partial<YoungGenerationHost> = {},
): (() => void) | null {
  if (!Number.isSafeInteger(megabytes) || megabytes < 0)
    throw new RangeError(`a young generation cap is a non-negative integer of megabytes, got ${megabytes}`);
  if (megabytes === 0) return null;
  const host = { ...processHost(), ...given };
  if (givesV8Flag(host.nodeFlags, 'max-semi-space-size', 'min-semi-space-size', 'semi-space-growth-factor'))
    return null;
  const cap = megabytes * MB;
  /** V8's own factor (its default, and the least it allows at start). */
  let factor = 2;
  const set = (wanted: number) => {
    if (wanted === factor) return;
    factor = wanted;
    host.setFlags(`--semi-space-growth-factor=${wanted}`);
  };
  const check = () => set(host.newSpaceBytes() >= cap ? 1 : 2);
  check();
  const stop = host.onGc(check);
  return () => {
    stop();
    set(2);
  };
}
