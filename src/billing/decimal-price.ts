/**
 * Prices arrive as decimal strings of USD per token ("0.0000025"). Filters compare dollars per
 * million tokens; moving the decimal point in the text keeps the value exact, where multiplying
 * floats by 1e6 would give 2.4999999999999996.
 */
export function perMillion(price: string): number {
  const match = /^(-?)(\d*)(?:\.(\d*))?$/.exec(price.trim());
  if (!match) return Number.NaN;
  const [, sign, whole = '', fraction = ''] = match;
  const padded = fraction.padEnd(6, '0');
  return Number(`${sign}${whole || '0'}${padded.slice(0, 6)}.${padded.slice(6) || '0'}`);
}

/** A price the catalogue can compare: non-negative; `-1` marks a price that depends on the routed model. */
export function knownPrice(price: unknown): number | null {
  if (typeof price !== 'string') return null;
  const value = Number(price);
  return Number.isFinite(value) && value >= 0 ? value : null;
}

/**
 * A non-negative decimal price as an exact integer of 10^-18 USD, for comparisons where float sums
 * would break ties (1e-6 + 4e-6 is 4.999…e-6 in floats, but 0.95e-6 + 4.05e-6 is exactly 5e-6).
 */
export function scaledPrice(price: unknown): bigint | null {
  if (typeof price !== 'string') return null;
  // Every generation prices itself from the same few hundred catalogue strings: parse each once.
  const known = scaledPrices.get(price);
  if (known !== undefined) return known;
  const parsed = parseScaledPrice(price);
  if (scaledPrices.size < MAX_CACHED_PRICES) scaledPrices.set(price, parsed);
  return parsed;
}

const MAX_CACHED_PRICES = 10_000;
const scaledPrices = new Map<string, bigint | null>();

function parseScaledPrice(price: string): bigint | null {
  const match = /^(\d*)(?:\.(\d*))?$/.exec(price.trim());
  if (!match || (match[1] === '' && (match[2] ?? '') === '')) return null;
  const fraction = (match[2] ?? '').padEnd(18, '0');
  if (fraction.length > 18 && /[1-9]/.test(fraction.slice(18))) return null;
  return BigInt(match[1] || '0') * 10n ** 18n + BigInt(fraction.slice(0, 18));
}
