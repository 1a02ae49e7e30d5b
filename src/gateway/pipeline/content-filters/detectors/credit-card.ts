import type { Detection, Detector } from '../content-filter-types.js';

/**
 * Payment card numbers: 13–19 digits, optionally grouped by single spaces or dashes, that pass the
 * Luhn checksum AND start with an issuer prefix of a known scheme at a length that scheme issues.
 * A 16-digit order number passes Luhn one time in ten; it must also look like a card of a scheme.
 */
export const CARD_CANDIDATE_PATTERN = /(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w]|-\d)/g;

interface Scheme {
  /** Inclusive prefix ranges, compared on the same number of leading digits. */
  prefixes: Array<[number, number]>;
  lengths: [number, number];
}

const SCHEMES: Scheme[] = [
  { prefixes: [[4, 4]], lengths: [13, 19] }, // Visa
  {
    prefixes: [
      [51, 55],
      [2221, 2720],
    ],
    lengths: [16, 16],
  }, // Mastercard
  {
    prefixes: [
      [34, 34],
      [37, 37],
    ],
    lengths: [15, 15],
  }, // American Express
  {
    prefixes: [
      [6011, 6011],
      [644, 649],
      [65, 65],
      [622126, 622925],
    ],
    lengths: [16, 19],
  }, // Discover
  {
    prefixes: [
      [300, 305],
      [36, 36],
      [38, 39],
    ],
    lengths: [14, 19],
  }, // Diners Club
  { prefixes: [[3528, 3589]], lengths: [16, 19] }, // JCB
  { prefixes: [[62, 62]], lengths: [16, 19] }, // UnionPay
  {
    prefixes: [
      [5018, 5018],
      [5020, 5020],
      [5038, 5038],
      [5893, 5893],
      [6304, 6304],
      [6759, 6759],
      [6761, 6763],
    ],
    lengths: [13, 19],
  }, // Maestro
  { prefixes: [[2200, 2204]], lengths: [16, 19] }, // Mir
];

export function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let index = 0; index < digits.length; index += 1) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48;
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

/** Issuer prefixes are compared on the first six digits (the IIN), scaled to each range's width. */
const RANGES = SCHEMES.flatMap((scheme) =>
  scheme.prefixes.map(([low, high]) => ({ low, high, scale: 10 ** (6 - String(low).length), scheme })),
);

export function hasKnownIssuer(digits: string): boolean {
  const first = digits.charCodeAt(0) - 48;
  // every scheme above starts with 2–6: most digit runs are rejected here
  if (first < 2 || first > 6) return false;
  const iin = Number(digits.slice(0, 6));
  return RANGES.some(({ low, high, scale, scheme }) => {
    const prefix = Math.floor(iin / scale);
    return (
      prefix >= low &&
      prefix <= high &&
      digits.length >= scheme.lengths[0] &&
      digits.length <= scheme.lengths[1]
    );
  });
}

const isCardNumber = (digits: string) =>
  digits.length >= 13 && digits.length <= 19 && hasKnownIssuer(digits) && passesLuhn(digits);

/**
 * The candidate regex takes the longest digit run; a card followed by another group of digits
 * ("4111 1111 1111 1111 2024") is found by dropping trailing groups until the rest is a card.
 * Returns the length of the card within the candidate, 0 when there is none.
 */
function cardWithin(candidate: string): number {
  let digits = '';
  const groupEnds: Array<{ digits: number; end: number }> = [];
  for (let index = 0; index < candidate.length; index += 1) {
    const character = candidate[index]!;
    if (character === ' ' || character === '-') groupEnds.push({ digits: digits.length, end: index });
    else digits += character;
  }
  groupEnds.push({ digits: digits.length, end: candidate.length });
  for (let group = groupEnds.length - 1; group >= 0; group -= 1) {
    const { digits: count, end } = groupEnds[group]!;
    if (count < 13) return 0;
    if (isCardNumber(digits.slice(0, count))) return end;
  }
  return 0;
}

export const detectCreditCards: Detector = ({ text }) => {
  const detections: Detection[] = [];
  CARD_CANDIDATE_PATTERN.lastIndex = 0;
  for (
    let match = CARD_CANDIDATE_PATTERN.exec(text);
    match !== null;
    match = CARD_CANDIDATE_PATTERN.exec(text)
  ) {
    const length = cardWithin(match[0]);
    if (length > 0) detections.push({ start: match.index, end: match.index + length });
  }
  return detections;
};
