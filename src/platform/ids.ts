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

/** 16 fresh random bytes, in a buffer of their own (the caller writes into it). */
function nextRandom16(): Buffer {
  if (poolOffset + 16 > pool.length) {
    pool = randomBytes(16 * POOL_IDS);
    poolOffset = 0;
  }
  const bytes = Buffer.from(pool.subarray(poolOffset, poolOffset + 16));
  poolOffset += 16;
  return bytes;
}

/**
 * A UUID version 7 (RFC 9562): the Unix time in milliseconds in its first 48 bits, then random
 * bits. Rows keyed by it are inserted (and, in a queue, deleted) next to each other in their
 * index instead of at random places, which touches fewer pages per write.
 */
export function newTimeOrderedId(nowMs: number = Date.now()): string {
  const bytes = nextRandom16();
  let time = Math.max(0, Math.floor(nowMs));
  for (let index = 5; index >= 0; index -= 1) {
    bytes[index] = time % 256;
    time = Math.floor(time / 256);
  }
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
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
