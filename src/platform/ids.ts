import { hash, randomBytes, randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();

/**
 * Random bytes are drawn from a pool refilled 256 ids at a time (`randomUUID` batches too): one
 * `randomBytes(16)` call per id cost more than the rest of the id (a broadcast generation makes
 * one id per destination on the request thread).
 */
const POOL_IDS = 256;
let pool = Buffer.alloc(0);
let poolOffset = 0;

/** ASCII codes of the hex digits, by value. */
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
/** Where a UUID's text is written before it becomes a string (one per process; ids are made synchronously). */
const uuidText = Buffer.alloc(36, '-');

/** Writes `byte` as two hex digits at `at` of `uuidText`. */
function writeHex(at: number, byte: number): void {
  uuidText[at] = HEX_DIGITS[byte >> 4] as number;
  uuidText[at + 1] = HEX_DIGITS[byte & 0x0f] as number;
}

/**
 * A UUID version 7 (RFC 9562): the Unix time in milliseconds in its first 48 bits, then random
 * bits. Rows keyed by it are inserted (and, in a queue, deleted) next to each other in their
 * index instead of at random places, which touches fewer pages per write.
 *
 * The text is written into a buffer and read back as one flat string: a template literal of its
 * nine pieces made a tree of eight concatenation nodes and the pieces (~360 bytes of heap instead
 * of ~56), which every outbox row the broadcast worker holds for a second or more kept alive.
 */
export function newTimeOrderedId(nowMs: number = Date.now()): string {
  if (poolOffset + 16 > pool.length) {
    pool = randomBytes(16 * POOL_IDS);
    poolOffset = 0;
  }
  const random = poolOffset;
  poolOffset += 16;
  // Bytes 0–5: the time, big-endian (48 bits; Math.floor keeps it exact beyond 32 bits).
  let time = Math.max(0, Math.floor(nowMs));
  for (let index = 5; index >= 0; index -= 1) {
    writeHex(index * 2 + (index >= 4 ? 1 : 0), time % 256);
    time = Math.floor(time / 256);
  }
  for (let index = 6; index < 16; index += 1) {
    let byte = pool[random + index] as number;
    if (index === 6) byte = (byte & 0x0f) | 0x70;
    else if (index === 8) byte = (byte & 0x3f) | 0x80;
    // Text offset: two digits per byte, plus the dashes before bytes 4, 6, 8 and 10.
    writeHex(index * 2 + (index >= 10 ? 4 : index >= 8 ? 3 : 2), byte);
  }
  return uuidText.toString('latin1', 0, 36);
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => uuidPattern.test(value);

/** A new API key secret: `sk-sy-v1-` and 64 hex characters (256 random bits). */
export const newApiKeySecret = (): string => `sk-sy-v1-${randomBytes(32).toString('hex')}`;

/** The only form of an API key that is stored: its SHA-256, hex. */
export const hashApiKey = (secret: string): string => hash('sha256', secret, 'hex');

/** The display label of a key: its prefix, three characters at each end of the random part. */
export function maskApiKey(secret: string): string {
  const body = secret.slice('sk-sy-v1-'.length);
  return `sk-sy-v1-${body.slice(0, 3)}...${body.slice(-3)}`;
}
