import { setFlagsFromString } from 'node:v8';
import { givenNodeFlags } from './node-flags.js';

/**
 * V8 watches, at every scavenge, how many of the objects each allocation site made are still alive,
 * and when most are it "pretenures" the site: its objects are then allocated straight in the old
 * generation, which only a full (mark-compact) collection reclaims. That suits objects that live
 * long; a gateway's are request-scoped. A scavenge that lands while many requests are in flight (at
 * saturation, or after the event loop was held a few milliseconds) finds their objects alive, and the
 * request path's sites — the response's headers and writes, Fastify's request and reply, the
 * upstream call — are pretenured for good: every later request's objects die in the old generation,
 * and full collections come more often. A sampling heap profile of a gateway broadcasting to three
 * destinations at 200 req/s counted 18.6 KB per request that outlived the young generation, against
 * 6.5–7.3 KB with pretenuring off (docs/performance.md). V8 reads the flag when it digests the
 * feedback, so setting it at start, before the request path is compiled, works. The flag is the
 * process's: the SQLite and delivery threads do not pretenure either.
 *
 * `true` keeps V8's pretenuring, and a `--[no-]allocation-site-pretenuring` given to node itself
 * wins. Returns the flag it set, or null.
 */
export function applyPretenuring(
  pretenure: boolean,
  setFlags: (flags: string) => void = setFlagsFromString,
  nodeFlags: readonly string[] = givenNodeFlags(),
): string | null {
  if (typeof pretenure !== 'boolean')
    throw new RangeError(`allocation-site pretenuring is true or false, got ${String(pretenure)}`);
  if (pretenure) return null;
  if (nodeFlags.some((flag) => /^--(no[-_])?allocation[-_]site[-_]pretenuring$/.test(flag))) return null;
  const flag = '--no-allocation-site-pretenuring';
  setFlags(flag);
  return flag;
}
