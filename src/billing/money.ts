/** Money is integer nano-dollars (1e-9 USD) everywhere but the API edge. */
export const NANOS_PER_USD = 1_000_000_000;

export const usdToNanos = (usd: number): number => Math.round(usd * NANOS_PER_USD);

/**
 * Back to dollars for the API. An integer count of nanos divided by 1e9 is already the double
 * nearest its 9-place decimal (IEEE division rounds correctly), so only a fractional amount needs
 * rounding to 9 places to drop float noise such as 0.30000000000000004; this runs several times a
 * request, and the string round trip is the slow path.
 */
export const nanosToUsd = (nanos: number): number =>
  Number.isSafeInteger(nanos)
    ? nanos === 0
      ? 0 // never -0
      : nanos / NANOS_PER_USD
    : Number((nanos / NANOS_PER_USD).toFixed(9));

/**
 * The largest single amount accepted at the edge (a key limit, a grant): nano-dollar sums must stay
 * below 2^53 to be exact in a JS number (docs/decisions.md).
 */
export const MAX_USD_AMOUNT = 1_000_000;
