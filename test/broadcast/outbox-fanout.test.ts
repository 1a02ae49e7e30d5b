import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { idempotencyKeyOf, rowIdempotencyKey } from '../../src/broadcast/idempotency-key.js';
import { payloadText, stowPayload } from '../../src/broadcast/outbox-events.js';
import { createFanoutOutbox } from '../../src/broadcast/outbox-fanout.js';
import type { OutboxRepository } from '../../src/broadcast/outbox-repository.js';
import type { BroadcastOutboxTable } from '../../src/storage/database-schema.js';

/** A repository that records the settling calls the fan-out bookkeeping makes. */
function recordingRepository() {
  const calls: Array<[string, ...unknown[]]> = [];
  const repository = {
    remove: async (ids: readonly string[]) => void calls.push(['remove', [...ids]]),
    removeHeld: async (ids: readonly string[], owner: string) =>
      void calls.push(['removeHeld', [...ids], owner]),
    settleFanout: async (id: string, owner: string, kept: readonly BroadcastOutboxTable[]) =>
      void calls.push(['settleFanout', id, owner, kept]),
    reschedule: async (id: string) => void calls.push(['reschedule', id]),
    postpone: async (ids: readonly string[]) => void calls.push(['postpone', [...ids]]),
    bury: async (id: string) => void calls.push(['bury', id]),
    release: async (ids: readonly string[]) => void calls.push(['release', [...ids]]),
    errorText: (message: string) => message.slice(0, 1000),
  };
  return { calls, repository: repository as unknown as OutboxRepository };
}

let serial = 0;
const fanOutRow = (destinations: string[]): BroadcastOutboxTable => {
  serial += 1;
  return {
    id: `row-${serial}`,
    destination_id: '*0',
    workspace_id: 'w',
    generation_id: `gen-${serial}`,
    idempotency_key: '',
    payload: '{"generation_id":"x"}',
    status: 'fanout',
    attempts: 2,
    next_attempt_at: '2030-01-01T00:00:00.000Z',
    lease_until: '2030-01-01T00:01:00.000Z',
    leased_by: 'me',
    last_error: null,
    last_status: null,
    created_at: '2030-01-01T00:00:00.000Z',
    dead_at: null,
    fanout: destinations.join(','),
  };
};

describe('fan-out outbox bookkeeping', () => {
  it('expands a fan-out row into one pending part per destination, its idempotency key made from generation and destination', () => {
    const { repository } = recordingRepository();
    const outbox = createFanoutOutbox(repository);
    const row = fanOutRow(['d1', 'd2']);
    const single = {
      ...fanOutRow([]),
      destination_id: 'd9',
      idempotency_key: 'own-key',
      status: 'pending' as const,
      fanout: null,
    };
    const expanded = outbox.expand([row, single]);
    assert.deepEqual(
      expanded.map((part) => [
        part.id,
        part.destination_id,
        rowIdempotencyKey(part),
        part.status,
        part.fanout,
      ]),
      [
        [`${row.id}/d1`, 'd1', idempotencyKeyOf(row.generation_id, 'd1'), 'pending', null],
        [`${row.id}/d2`, 'd2', idempotencyKeyOf(row.generation_id, 'd2'), 'pending', null],
        [single.id, 'd9', single.idempotency_key, 'pending', null],
      ],
    );
    // A part carries no key of its own (made where it is sent); a row of its own keeps its stored one.
    assert.deepEqual(
      expanded.map((part) => part.idempotency_key),
      ['', '', single.idempotency_key],
    );
  });

  it('deletes rows delivered to every destination in one statement, once their last part is settled', async () => {
    const { calls, repository } = recordingRepository();
    const outbox = createFanoutOutbox(repository);
    const [a, b] = [fanOutRow(['d1', 'd2']), fanOutRow(['d1', 'd2'])] as [
      BroadcastOutboxTable,
      BroadcastOutboxTable,
    ];
    outbox.expand([a, b]);
    await outbox.remove([`${a.id}/d1`, `${b.id}/d1`], 'me');
    assert.deepEqual(calls, []);
    await outbox.remove([`${a.id}/d2`, `${b.id}/d2`, 'own-row'], 'me');
    assert.deepEqual(calls, [
      ['remove', ['own-row']],
      ['removeHeld', [a.id, b.id], 'me'],
    ]);
  });

  for (const stowed of [false, true]) {
    it(`keeps each part not delivered as a row of its own, in the state it was left in${stowed ? ' (its payload stowed off the heap)' : ''}`, async () => {
      const { calls, repository } = recordingRepository();
      const outbox = createFanoutOutbox(repository);
      const row = { ...fanOutRow(['d1', 'd2', 'd3', 'd4', 'd5']), payload: '{"output":"héllo 🌍 ✓"}' };
      const text = row.payload;
      if (stowed) stowPayload(row);
      outbox.expand([row]);
      await outbox.remove([`${row.id}/d1`], 'me');
      await outbox.reschedule(`${row.id}/d2`, {
        nextAttemptAt: new Date('2030-01-01T00:02:00.000Z'),
        error: 'receiver answered 500: boom',
        status: 500,
        owner: 'me',
      });
      await outbox.postpone([`${row.id}/d3`], new Date('2030-01-01T00:03:00.000Z'), 'me');
      await outbox.release([`${row.id}/d4`], 'me');
      assert.deepEqual(calls, []);
      await outbox.bury(`${row.id}/d5`, {
        now: new Date('2030-01-01T00:04:00.000Z'),
        error: 'receiver answered 400: bad',
        status: 400,
        owner: 'me',
      });
      assert.equal(calls.length, 1);
      const [name, id, owner, kept] = calls[0] as unknown as [string, string, string, BroadcastOutboxTable[]];
      assert.deepEqual([name, id, owner], ['settleFanout', row.id, 'me']);
      const summary = kept.map((entry) => ({
        destination: entry.destination_id,
        key: entry.idempotency_key,
        status: entry.status,
        attempts: entry.attempts,
        next: entry.next_attempt_at,
        lease: [entry.lease_until, entry.leased_by],
        error: [entry.last_status, entry.last_error],
        dead_at: entry.dead_at,
        fanout: entry.fanout,
        payload: entry.payload,
      }));
      const base = { lease: [null, null], fanout: null, payload: text, dead_at: null };
      assert.deepEqual(summary, [
        {
          ...base,
          destination: 'd2',
          key: idempotencyKeyOf(row.generation_id, 'd2'),
          status: 'pending',
          attempts: 2,
          next: '2030-01-01T00:02:00.000Z',
          error: [500, 'receiver answered 500: boom'],
        },
        {
          ...base,
          destination: 'd3',
          key: idempotencyKeyOf(row.generation_id, 'd3'),
          status: 'pending',
          attempts: 1,
          next: '2030-01-01T00:03:00.000Z',
          error: [null, null],
        },
        {
          ...base,
          destination: 'd4',
          key: idempotencyKeyOf(row.generation_id, 'd4'),
          status: 'pending',
          attempts: 1,
          next: row.next_attempt_at,
          error: [null, null],
        },
        {
          ...base,
          destination: 'd5',
          key: idempotencyKeyOf(row.generation_id, 'd5'),
          status: 'dead',
          attempts: 2,
          next: row.next_attempt_at,
          error: [400, 'receiver answered 400: bad'],
          dead_at: '2030-01-01T00:04:00.000Z',
        },
      ]);
      assert.equal(new Set(kept.map((entry) => entry.id)).size, 4);
      assert.ok(kept.every((entry) => entry.id !== row.id));
    });
  }

  it("stows a held row's payload off the heap: its parts give the text back, the field is empty", () => {
    const outbox = createFanoutOutbox(recordingRepository().repository);
    const row = { ...fanOutRow(['d1', 'd2']), payload: '{"input":"naïve","output":"🌍"}' };
    const single = { ...fanOutRow([]), destination_id: 'd9', status: 'pending' as const, fanout: null };
    const singleText = single.payload;
    stowPayload(row);
    stowPayload(single);
    // Stowing twice keeps the bytes (the field is already empty).
    stowPayload(row);
    const parts = outbox.expand([row, single]);
    assert.deepEqual(
      parts.map((part) => [part.payload, payloadText(part)]),
      [
        ['', '{"input":"naïve","output":"🌍"}'],
        ['', '{"input":"naïve","output":"🌍"}'],
        ['', singleText],
      ],
    );
    // A row never stowed is its own text.
    const plain = fanOutRow([]);
    assert.equal(payloadText(plain), plain.payload);
  });

  it('does not expand again a row whose parts it still holds (claimed back after its lease ran out)', async () => {
    const { calls, repository } = recordingRepository();
    const outbox = createFanoutOutbox(repository);
    const row = fanOutRow(['d1', 'd2']);
    const [, waiting] = outbox.expand([row]) as [BroadcastOutboxTable, BroadcastOutboxTable];
    await outbox.remove([`${row.id}/d1`], 'me');
    assert.deepEqual(outbox.takeReclaimed(), []);
    const renewed = '2030-01-01T00:09:00.000Z';
    assert.deepEqual(outbox.expand([{ ...row, attempts: 3, lease_until: renewed }]), []);
    // The part still waiting carries the renewed lease; the worker is told to give the attempt back.
    assert.equal(waiting.lease_until, renewed);
    assert.deepEqual(outbox.takeReclaimed(), [row.id]);
    assert.deepEqual(outbox.takeReclaimed(), []);
    await outbox.remove([`${row.id}/d2`], 'me');
    assert.deepEqual(calls, [['removeHeld', [row.id], 'me']]);
    // Settled: a later claim of the same row (another worker's, handed back) is its own again.
    assert.equal(outbox.expand([row]).length, 2);
  });

  it('queues a fan-out row once per destination and makes a part only when asked, carrying a lease renewed meanwhile', async () => {
    const { calls, repository } = recordingRepository();
    const outbox = createFanoutOutbox(repository);
    const row = fanOutRow(['d1', 'd2', 'd3']);
    stowPayload(row);
    const single = { ...fanOutRow([]), destination_id: 'd9', status: 'pending' as const, fanout: null };
    const queued = outbox.open([row, single]);
    // The row itself stands in every queue: nothing per destination is made yet.
    assert.deepEqual(
      queued.map(([destinationId, entry]) => [destinationId, entry]),
      [
        ['d1', row],
        ['d2', row],
        ['d3', row],
        ['d9', single],
      ],
    );
    assert.equal(outbox.isPart(`${row.id}/d1`), false);
    assert.equal(outbox.partFor(single, 'd9'), single);
    const first = outbox.partFor(row, 'd1');
    assert.deepEqual(
      [first.id, first.destination_id, rowIdempotencyKey(first), first.status, first.fanout],
      [`${row.id}/d1`, 'd1', idempotencyKeyOf(row.generation_id, 'd1'), 'pending', null],
    );
    assert.equal(payloadText(first), '{"generation_id":"x"}');
    assert.equal(outbox.isPart(first.id), true);
    // Its lease ran out and the worker claimed the row back: parts made later carry the new lease.
    const renewed = '2030-01-01T00:09:00.000Z';
    assert.deepEqual(outbox.open([{ ...row, attempts: 3, lease_until: renewed }]), []);
    assert.deepEqual(outbox.takeReclaimed(), [row.id]);
    assert.equal(first.lease_until, renewed);
    const second = outbox.partFor(row, 'd2');
    const third = outbox.partFor(row, 'd3');
    assert.equal(second.lease_until, renewed);
    assert.equal(payloadText(third), '{"generation_id":"x"}');
    // Settled like parts made at once: one statement once the last of them is.
    await outbox.remove([first.id, second.id], 'me');
    assert.deepEqual(calls, []);
    await outbox.remove([third.id], 'me');
    assert.deepEqual(calls, [['removeHeld', [row.id], 'me']]);
  });
});
