import { setFlagsFromString } from 'node:v8';
import { givenNodeFlags } from './node-flags.js';

/**
 * V8's allocation-site pretenuring: when most objects from one allocation site (an object or array
 * literal in optimized code) outlive two scavenges, V8 makes that site allocate straight in the old
 * generation. Under a saturating load of short requests it turns on itself: a burst of slow
 * requests (warm-up, a full collection) makes request-scoped sites look long-lived, their objects
 * then go straight to old space and die there, full collections come twice as often, requests wait
 * longer, and more sites qualify. `bench/inference.ts` chat landed in one of two states at random,
 * ~100 or ~150 µs of CPU per request with 17 or 40 full collections in 9 s; with pretenuring off,
 * always the first (docs/decisions.md).
 *
 * `false` turns it off; `true` leaves V8's default. V8 reads the flag each time it weighs a site,
 * so setting it after start works. An `--[no-]allocation-site-pretenuring` given to node itself
 * wins. Returns the flag it set, or null.
 */
export function applyAllocationSitePretenuring(
  enabled: boolean,
  setFlags: (flags: string) => void = setFlagsFromString,
  nodeFlags: readonly string[] = givenNodeFlags(),
): string | null {
  if (typeof enabled !== 'boolean')
    throw new RangeError(`allocation-site pretenuring is true or false, got ${String(enabled)}`);
  if (nodeFlags.some((flag) => /^--(no[-_])?allocation[-_]site[-_]pretenuring$/.test(flag))) return null;
  // V8's default is on: only turning it off needs a flag.
  if (enabled) return null;
  const flag = '--no-allocation-site-pretenuring';
  setFlags(flag);
  return flag;
}
