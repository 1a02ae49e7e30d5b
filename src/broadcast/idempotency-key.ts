import { hash } from 'node:crypto';
import type { BroadcastOutboxTable } from '../storage/database-schema.js';

/**
 * `<generation id>:<destination id>` hashed: the key receivers deduplicate a retried event by. The
 * first 16 bytes in hex, made as a string of their own (a slice of the 64-digit text keeps it all).
 */
export const idempotencyKeyOf = (generationId: string, destinationId: string) =>
  hash('sha256', `${generationId}:${destinationId}`, 'buffer').toString('hex', 0, 16);

/**
 * A row's idempotency key: stored in a row of its own; a fan-out row's part leaves it empty (the
 * worker makes hundreds of parts at once on the request thread, and the hash was half of that), so
 * it is made from the generation and the destination where it is needed — where the part is sent,
 * in the delivery thread, or when the part becomes a row of its own.
 */
export const rowIdempotencyKey = (
  row: Pick<BroadcastOutboxTable, 'idempotency_key' | 'generation_id' | 'destination_id'>,
) => row.idempotency_key || idempotencyKeyOf(row.generation_id, row.destination_id);
