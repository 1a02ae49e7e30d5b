import { setFlagsFromString } from 'node:v8';
import { givenNodeFlags, givesV8Flag } from './node-flags.js';

/**
 * V8 collects the old generation when it reaches a limit set after each full collection: what
 * survived, times a growing factor that V8 picks between 1.1 and 4 from its GC and allocation speeds
 * (4 on a machine with several GB of memory). The gateway keeps ~40 MB alive, and under load it
 * allocates fast, so V8 picks the top of that range and lets ~120 MB of garbage pile up before
 * collecting: a peak RSS near 300 MB in `bench/inference.ts`. A fixed factor of 1 + percent/100
 * collects sooner instead. Unlike `--max-old-space-size` it caps nothing: a gateway that really holds
 * more keeps growing. V8 reads the flag at every full collection, so setting it after start works.
 *
 * `0` leaves V8's own factor, and a `--heap-growing-percent` given to node itself wins. Returns the
 * flag it set, or null.
 */
export function applyHeapGrowth(
  percent: number,
  setFlags: (flags: string) => void = setFlagsFromString,
  nodeFlags: readonly string[] = givenNodeFlags(),
): string | null {
  if (!Number.isSafeInteger(percent) || percent < 0)
    throw new RangeError(`heap growth must be a non-negative integer percent, got ${percent}`);
  if (percent === 0) return null;
  // An operator who started node with the flag keeps their value.
  if (givesV8Flag(nodeFlags, 'heap-growing-percent')) return null;
  const flag = `--heap-growing-percent=${percent}`;
  setFlags(flag);
  return flag;
}
