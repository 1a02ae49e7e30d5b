import { setFlagsFromString } from 'node:v8';
import { givenNodeFlags, givesV8Flag } from './node-flags.js';

/**
 * V8's allocation-site pretenuring: when most objects from one allocation site (an object or array
 * literal in optimized code) survive their first scavenge, V8 makes that site allocate straight in
 * the old generation, where only a full collection reclaims them. Under a saturating load of short
 * requests it tenured request-path sites, and `bench/inference.ts` chat landed at random in one of
 * two states, ~100 or ~150 µs of CPU per request with 16–19 or 35–50 full collections in 9 s; with
 * pretenuring off, always the first (docs/decisions.md, which also weighs what it costs requests that
 * wait long on their upstream).
 *
 * `false` turns it off; `true` leaves V8's default. V8 checks the flag each time it weighs a site,
 * so setting it after start stops decisions from then on (a site tenured before stays so; `serve`
 * sets it before building the app). An `--[no-]allocation-site-pretenuring` given to node itself
 * wins. Returns the flag it set, or null.
 */
export function applyAllocationSitePretenuring(
  enabled: boolean,
  setFlags: (flags: string) => void = setFlagsFromString,
  nodeFlags: readonly string[] = givenNodeFlags(),
): string | null {
  if (typeof enabled !== 'boolean')
    throw new RangeError(`allocation-site pretenuring is true or false, got ${String(enabled)}`);
  if (givesV8Flag(nodeFlags, 'allocation-site-pretenuring')) return null;
  // V8's default is on: only turning it off needs a flag.
  if (enabled) return null;
  const flag = '--no-allocation-site-pretenuring';
  setFlags(flag);
  return flag;
}
