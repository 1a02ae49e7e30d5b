import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { sql } from 'kysely';
import { idempotencyKeyOf } from '../../src/broadcast/idempotency-key.js';
import { createOutboxRepository } from '../../src/broadcast/outbox-repository.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import type { BroadcastOutboxTable } from '../../src/storage/database-schema.js';
import { initializeStorage } from '../../src/storage/initialize.js';
import type { ReceivedRequest } from '../helpers/broadcast-fixtures.js';
import { isolatedDatabase, type TestApp } from '../helpers/test-app.js';
import {
  chat,
  createWebhook,
  inferenceKey,
  outboxRows,
  setBroadcast,
  startBroadcastGateway,
  startHookReceiver,
  waitUntil,
} from './delivery-harness.js';

const keyOf = (request: ReceivedRequest) => String(request.headers['idempotency-key']);

/**
 * Fan-out rows: destinations that receive the same payload share one outbox row per generation;
 * a destination not delivered at the first try gets a row of its own, in the state its failure
 * left it.
 */
describe('broadcast fan-out rows', () => {
  const gateways: TestApp[] = [];
  const receivers: Array<{ close(): Promise<void> }> = [];

  const gatewayWith = async (broadcast: Record<string, unknown> = {}) => {
    const gateway = await startBroadcastGateway({ broadcast });
    gateways.push(gateway);
    await setBroadcast(gateway, true);
    return { gateway, key: (await inferenceKey(gateway)).key };
  };
  const receiver = async (...args: Parameters<typeof startHookReceiver>) => {
    const started = await startHookReceiver(...args);
    receivers.push(started);
    return started;
  };
  afterEach(async () => {
    for (const started of receivers.splice(0)) await started.close();
    for (const gateway of gateways.splice(0)) await gateway.close();
  });

  it('stores one row for destinations that receive the same payload, and one per other payload', async () => {
    const { gateway, key } = await gatewayWith({ worker_enabled: false });
    const hooks = [await receiver(), await receiver(), await receiver(), await receiver()];
    const shared = [
      await createWebhook(gateway, hooks[0] as never, { name: 'a' }),
      await createWebhook(gateway, hooks[1] as never, { name: 'b' }),
      await createWebhook(gateway, hooks[2] as never, { name: 'c' }),
    ];
    const private_ = await createWebhook(gateway, hooks[3] as never, { name: 'd', privacy_mode: true });
    const response = await chat(gateway, key);
    const generationId = response.headers.get('x-generation-id');
    const rows = await outboxRows(gateway);
    assert.equal(rows.length, 2);
    const fanOut = rows.find((row) => row.fanout !== null);
    const single = rows.find((row) => row.fanout === null);
    assert.deepEqual(fanOut?.fanout?.split(',').sort(), [...shared].sort());
    // `*<destinations>:<n>`: how many destinations it stands for, readable from the claim index.
    assert.match(fanOut?.destination_id ?? '', new RegExp(`^\\*${shared.length}:\\d+$`));
    assert.equal(fanOut?.idempotency_key, '');
    // Its own status: an instance of an earlier version never claims it.
    assert.equal(fanOut?.status, 'fanout');
    assert.equal(single?.status, 'pending');
    assert.equal(fanOut?.generation_id, generationId);
    assert.match(fanOut?.payload ?? '', /hello there/);
    assert.equal(single?.destination_id, private_);
    assert.doesNotMatch(single?.payload ?? '', /hello there/);
    // Each destination lists the row among its pending deliveries.
    for (const id of [...shared, private_]) {
      const pending = await gateway.request(
        'GET',
        `/api/v1/observability/destinations/${id}/deliveries?status=pending`,
      );
      assert.equal(pending.status, 200, pending.text);
      assert.deepEqual(
        pending.body.data.map((row: { id: string }) => row.id),
        [id === private_ ? single?.id : fanOut?.id],
      );
      assert.equal(pending.body.total_count, 1);
    }
  });

  it('delivers a fan-out row to each destination with its own idempotency key, then deletes it', async () => {
    const { gateway, key } = await gatewayWith();
    const hooks = [await receiver(), await receiver(), await receiver()];
    const ids = [];
    for (const [n, hook] of hooks.entries())
      ids.push(await createWebhook(gateway, hook, { name: `hook ${n}` }));
    const response = await chat(gateway, key);
    const generationId = String(response.headers.get('x-generation-id'));
    await waitUntil('every destination', () => hooks.every((hook) => hook.deliveries().length === 1));
    await waitUntil('an empty outbox', async () => (await outboxRows(gateway)).length === 0);
    for (const [n, hook] of hooks.entries()) {
      assert.equal(
        keyOf(hook.deliveries()[0] as ReceivedRequest),
        idempotencyKeyOf(generationId, ids[n] as string),
      );
    }
  });

  it('gives a destination that failed a row of its own, retried under the same key; the others are not sent again', async () => {
    const { gateway, key } = await gatewayWith({ base_backoff_ms: 400, max_backoff_ms: 400 });
    let failing = true;
    const flaky = await receiver(() =>
      failing ? { status: 500, body: { error: 'boom' } } : { status: 200, body: {} },
    );
    const steady = [await receiver(), await receiver()];
    const flakyId = await createWebhook(gateway, flaky, { name: 'flaky' });
    for (const [n, hook] of steady.entries()) await createWebhook(gateway, hook, { name: `steady ${n}` });
    const response = await chat(gateway, key);
    const generationId = String(response.headers.get('x-generation-id'));
    await waitUntil('the failure settled', async () => {
      const rows = await outboxRows(gateway);
      return rows.length === 1 && rows[0]?.fanout === null && rows[0]?.leased_by === null;
    });
    const [row] = (await outboxRows(gateway)) as [BroadcastOutboxTable];
    assert.equal(row.destination_id, flakyId);
    assert.equal(row.idempotency_key, idempotencyKeyOf(generationId, flakyId));
    assert.equal(row.attempts, 1);
    assert.equal(row.last_status, 500);
    assert.match(row.last_error ?? '', /boom/);
    assert.equal(row.status, 'pending');
    assert.match(row.payload, /hello there/);
    failing = false;
    await waitUntil('the retry', () => flaky.deliveries().length === 2);
    await waitUntil('an empty outbox', async () => (await outboxRows(gateway)).length === 0);
    assert.deepEqual(flaky.deliveries().map(keyOf), [row.idempotency_key, row.idempotency_key]);
    for (const hook of steady) assert.equal(hook.deliveries().length, 1);
  });

  it('buries the part a destination refuses as a dead letter of that destination alone', async () => {
    const { gateway, key } = await gatewayWith();
    const refusing = await receiver(() => ({ status: 400, body: { error: 'bad payload' } }));
    const steady = await receiver();
    const refusingId = await createWebhook(gateway, refusing, { name: 'refusing' });
    await createWebhook(gateway, steady, { name: 'steady' });
    await chat(gateway, key);
    await waitUntil('the dead letter', async () => {
      const rows = await outboxRows(gateway);
      return rows.length === 1 && rows[0]?.status === 'dead';
    });
    const [row] = (await outboxRows(gateway)) as [BroadcastOutboxTable];
    assert.equal(row.destination_id, refusingId);
    assert.equal(row.last_status, 400);
    assert.equal(steady.deliveries().length, 1);
    const dead = await gateway.request(
      'GET',
      `/api/v1/observability/destinations/${refusingId}/deliveries?status=dead`,
    );
    assert.deepEqual(
      dead.body.data.map((entry: { id: string }) => entry.id),
      [row.id],
    );
  });

  it('keeps the parts it took when a statement fails before they are sent, and sends them once it works again', async () => {
    const { gateway, key } = await gatewayWith();
    const hooks = [await receiver(), await receiver()];
    for (const [n, hook] of hooks.entries()) await createWebhook(gateway, hook, { name: `hook ${n}` });
    // A first generation loads the workspace policy (kept for a minute) and the destination rows
    // the worker caches for a second.
    assert.equal((await chat(gateway, key)).status, 200);
    await waitUntil('the first deliveries', () => hooks.every((hook) => hook.deliveries().length === 1));
    await setTimeout(1_100);
    const db = gateway.services.storage.db;
    // The worker reads the destinations it sends to after it has expanded the fan-out row: with
    // their table away, that statement fails with the parts in hand.
    await sql`alter table observability_destinations rename to observability_destinations_away`.execute(db);
    try {
      assert.equal((await chat(gateway, key)).status, 200);
      await gateway.services.generations.flush();
      // Lingers of 20 ms and polls of 20 ms: a dozen passes fail meanwhile.
      await setTimeout(300);
      assert.equal(hooks[0]?.deliveries().length, 1);
    } finally {
      await sql`alter table observability_destinations_away rename to observability_destinations`.execute(db);
    }
    await waitUntil('the second deliveries', () => hooks.every((hook) => hook.deliveries().length === 2));
    await waitUntil('an empty outbox', async () => (await outboxRows(gateway)).length === 0);
    // Each event once: none was both kept in memory and delivered again from the database.
    for (const hook of hooks) assert.equal(hook.deliveries().length, 2);
  });
  it('pauses one destination of a fan-out row: its queued and later parts wait as rows of its own, the others are delivered once', async () => {
    const { gateway, key } = await gatewayWith();
    const steady = await receiver();
    let first = true;
    // The first request is answered late, so more events queue for the destination meanwhile.
    const limited = await receiver(async () => {
      if (!first) return { status: 200, body: {} };
      first = false;
      await setTimeout(500);
      return { status: 429, headers: { 'retry-after': '30' }, body: {} };
    });
    await createWebhook(gateway, steady, { name: 'steady' });
    const limitedId = await createWebhook(gateway, limited, { name: 'limited' });
    const generations = [String((await chat(gateway, key)).headers.get('x-generation-id'))];
    await waitUntil('the first request in flight', () => limited.deliveries().length === 1);
    for (let n = 0; n < 3; n += 1)
      generations.push(String((await chat(gateway, key)).headers.get('x-generation-id')));
    await gateway.services.generations.flush();
    const limitedRows = async (count: number) => {
      const rows = await outboxRows(gateway);
      return rows.length === count && rows.every((row) => row.fanout === null && row.leased_by === null);
    };
    await waitUntil('the destination paused, its events postponed', () => limitedRows(4));
    // An event that arrives during the pause waits too (its part for the paused destination).
    generations.push(String((await chat(gateway, key)).headers.get('x-generation-id')));
    await waitUntil('the steady destination has every event', () => steady.deliveries().length === 5);
    await waitUntil('the later event postponed', () => limitedRows(5));
    const rows = await outboxRows(gateway);
    assert.deepEqual(
      rows.map((row) => [row.destination_id, row.idempotency_key, row.status]).sort(),
      generations.map((id) => [limitedId, idempotencyKeyOf(id, limitedId), 'pending']).sort(),
    );
    assert.deepEqual(
      rows.map((row) => row.attempts).sort(),
      [0, 0, 0, 0, 1],
      'only the event that was tried spent an attempt',
    );
    for (const row of rows) {
      assert.ok(Date.parse(row.next_attempt_at) - Date.now() > 25_000, 'waits out the Retry-After');
      assert.match(row.payload, /hello there/);
    }
    assert.equal(limited.deliveries().length, 1, 'nothing more was sent while paused');
    assert.equal(new Set(steady.deliveries().map(keyOf)).size, 5, 'each event sent once');
  });

  it('hands back on shutdown only the parts not delivered, as rows of their own for their destination', async () => {
    const database = isolatedDatabase();
    try {
      const gateway = await startBroadcastGateway({ database });
      let slowId: string;
      const steady = await startHookReceiver();
      // Busy with the first event until shutdown: the second waits in its queue.
      const slow = await startHookReceiver(() => 'hang');
      try {
        await setBroadcast(gateway, true);
        const { key } = await inferenceKey(gateway);
        await createWebhook(gateway, steady, { name: 'steady' });
        slowId = await createWebhook(gateway, slow, { name: 'slow' });
        const generations = [String((await chat(gateway, key)).headers.get('x-generation-id'))];
        await waitUntil('the slow destination busy', () => slow.deliveries().length === 1);
        generations.push(String((await chat(gateway, key)).headers.get('x-generation-id')));
        await waitUntil('the steady destination has both', () => steady.deliveries().length === 2);
        // Its answer settles the part in memory (no statement until the row's last part).
        await setTimeout(200);
        await gateway.close();
        const reader = await startBroadcastGateway({ database, broadcast: { worker_enabled: false } });
        try {
          const rows = await outboxRows(reader);
          assert.deepEqual(
            rows
              .map((row) => [
                row.destination_id,
                row.idempotency_key,
                row.fanout,
                row.leased_by,
                row.attempts,
              ])
              .sort(),
            generations.map((id) => [slowId, idempotencyKeyOf(id, slowId), null, null, 0]).sort(),
          );
        } finally {
          await reader.close();
        }
        assert.equal(new Set(steady.deliveries().map(keyOf)).size, 2);
      } finally {
        await steady.close();
        await slow.close();
      }
    } finally {
      await database.drop();
    }
  });
});

/** An outbox row as stored, for the repository's tests. */
const row = (fields: Partial<BroadcastOutboxTable>): BroadcastOutboxTable => ({
  id: `row-${Math.random().toString(16).slice(2)}`,
  destination_id: 'd1',
  workspace_id: 'w',
  generation_id: `gen-${Math.random().toString(16).slice(2)}`,
  idempotency_key: 'k',
  payload: '{}',
  status: 'pending',
  attempts: 0,
  next_attempt_at: '2030-01-01T00:00:00.000Z',
  lease_until: null,
  leased_by: null,
  last_error: null,
  last_status: null,
  created_at: '2030-01-01T00:00:00.000Z',
  dead_at: null,
  fanout: null,
  ...fields,
});

describe('outbox repository: settling a fan-out row, claiming', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startBroadcastGateway({ broadcast: { worker_enabled: false } });
  });
  after(async () => {
    await gateway.close();
  });

  const fanOutRow = (leasedBy: string | null): BroadcastOutboxTable =>
    row({
      destination_id: '*0',
      idempotency_key: '',
      status: 'fanout',
      attempts: 1,
      lease_until: leasedBy ? '2030-01-01T00:01:00.000Z' : null,
      leased_by: leasedBy,
      fanout: 'd1,d2',
    });

  it('counts events for the outbox gauge from the claim index: a fan-out row once per destination, whatever its mark', async () => {
    const { db } = gateway.services.storage;
    const repository = createOutboxRepository(gateway.services.storage);
    const rows = [
      // Marked with its count: read from the index alone.
      {
        ...fanOutRow(null),
        id: 'gauge-marked-3',
        generation_id: 'gauge-a',
        destination_id: '*3:0',
        fanout: 'd1,d2,d3',
      },
      {
        ...fanOutRow(null),
        id: 'gauge-marked-2',
        generation_id: 'gauge-a',
        destination_id: '*2:1',
        fanout: 'd4,d5',
      },
      {
        ...fanOutRow(null),
        id: 'gauge-marked-12',
        generation_id: 'gauge-b',
        destination_id: '*12:0',
        fanout: Array.from({ length: 12 }, (_, i) => `e${i}`).join(','),
      },
      // Stored before the mark carried the count: from its list.
      {
        ...fanOutRow(null),
        id: 'gauge-unmarked',
        generation_id: 'gauge-c',
        destination_id: '*0',
        fanout: 'd1,d2,d3,d4,d5',
      },
      row({ id: 'gauge-own', generation_id: 'gauge-d', destination_id: 'd1', status: 'pending' }),
      row({
        id: 'gauge-dead-1',
        generation_id: 'gauge-e',
        destination_id: 'd1',
        status: 'dead',
        dead_at: '2030-01-01T00:00:00.000Z',
      }),
      row({
        id: 'gauge-dead-2',
        generation_id: 'gauge-f',
        destination_id: 'd2',
        status: 'dead',
        dead_at: '2030-01-01T00:00:00.000Z',
      }),
    ];
    await db.insertInto('broadcast_outbox').values(rows).execute();
    try {
      const counts = await repository.countByStatus();
      assert.deepEqual(
        [...counts].sort((a, b) => a.status.localeCompare(b.status)),
        [
          { status: 'dead', count: 2 },
          { status: 'pending', count: 3 + 2 + 12 + 5 + 1 },
        ],
      );
      await db.deleteFrom('broadcast_outbox').where('id', '=', 'gauge-unmarked').execute();
      assert.deepEqual(
        (await repository.countByStatus()).find((count) => count.status === 'pending'),
        { status: 'pending', count: 3 + 2 + 12 + 1 },
      );
    } finally {
      await db
        .deleteFrom('broadcast_outbox')
        .where(
          'id',
          'in',
          rows.map((entry) => entry.id),
        )
        .execute();
    }
  });

  it('gives back the attempt of a row claimed again by the worker that holds it, and only then', async () => {
    const { db } = gateway.services.storage;
    const repository = createOutboxRepository(gateway.services.storage);
    const mine = fanOutRow('me');
    const theirs = fanOutRow('other');
    await db.insertInto('broadcast_outbox').values([mine, theirs]).execute();
    await repository.uncount([mine.id, theirs.id], 'me');
    const attempts = await db
      .selectFrom('broadcast_outbox')
      .select(['id', 'attempts'])
      .where('id', 'in', [mine.id, theirs.id])
      .execute();
    assert.deepEqual(Object.fromEntries(attempts.map((row) => [row.id, row.attempts])), {
      [mine.id]: 0,
      [theirs.id]: 1,
    });
    await db.deleteFrom('broadcast_outbox').where('id', 'in', [mine.id, theirs.id]).execute();
  });

  it('replaces the row with the kept parts only while this worker holds its lease', async () => {
    const { db } = gateway.services.storage;
    const repository = createOutboxRepository(gateway.services.storage);
    const mine = fanOutRow('me');
    const theirs = fanOutRow('other');
    await db.insertInto('broadcast_outbox').values([mine, theirs]).execute();
    // The outbox gauge counts a fan-out row once per destination it lists (rows marked `*<n>`, as
    // stored before the mark carried the count, from their list).
    assert.deepEqual(await repository.countByStatus(), [{ status: 'pending', count: 4 }]);
    const keptOf = (row: BroadcastOutboxTable): BroadcastOutboxTable => ({
      ...row,
      id: `${row.id}-kept`,
      destination_id: 'd2',
      idempotency_key: 'k2',
      lease_until: null,
      leased_by: null,
      last_error: 'receiver answered 500',
      last_status: 500,
      fanout: null,
    });
    await repository.settleFanout(mine.id, 'me', [keptOf(mine)]);
    await repository.settleFanout(theirs.id, 'me', [keptOf(theirs)]);
    const rows = await db
      .selectFrom('broadcast_outbox')
      .select(['id', 'destination_id', 'leased_by', 'last_status', 'fanout'])
      .where('generation_id', 'in', [mine.generation_id, theirs.generation_id])
      .orderBy('id')
      .execute();
    assert.deepEqual(
      rows,
      [
        { id: `${mine.id}-kept`, destination_id: 'd2', leased_by: null, last_status: 500, fanout: null },
        { id: theirs.id, destination_id: '*0', leased_by: 'other', last_status: null, fanout: 'd1,d2' },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
  });

  /** Records whether each statement run on the embedded connection writes (null: not SQLite on this thread). */
  function recordStatements(): { writes: () => string[]; restore: () => void } | null {
    const connection = gateway.services.storage.sqlite;
    if (!connection) return null;
    const prototype = Object.getPrototypeOf(connection.prepare('select 1')) as Record<
      string,
      (...args: unknown[]) => unknown
    >;
    const writes: string[] = [];
    const originals = new Map<string, (...args: unknown[]) => unknown>();
    for (const method of ['all', 'get', 'run', 'iterate']) {
      const original = prototype[method] as (...args: unknown[]) => unknown;
      originals.set(method, original);
      prototype[method] = function (this: { readonly: boolean; source: string }, ...args: unknown[]) {
        if (!this.readonly) writes.push(this.source);
        return original.apply(this, args);
      };
    }
    return {
      writes: () => writes,
      restore: () => {
        for (const [method, original] of originals) prototype[method] = original;
      },
    };
  }

  it('claims due rows, and opens no write transaction on SQLite when nothing is due', async () => {
    const { db } = gateway.services.storage;
    const repository = createOutboxRepository(gateway.services.storage);
    const now = new Date('2030-01-01T00:00:10.000Z');
    const claim = () =>
      repository.claim({
        limit: 10,
        fanOutLimit: 5,
        now,
        leaseUntil: new Date('2030-01-01T00:01:10.000Z'),
        owner: 'me',
        busy: ['d2'],
      });
    // From an empty outbox: the tests above leave rows of their own.
    await db.deleteFrom('broadcast_outbox').execute();
    const notDue = [
      row({ lease_until: '2030-01-01T00:01:00.000Z', leased_by: 'other' }),
      row({ next_attempt_at: '2030-01-02T00:00:00.000Z' }),
      row({ destination_id: 'd2' }),
      row({ status: 'dead', dead_at: '2030-01-01T00:00:00.000Z' }),
      row({
        status: 'fanout',
        destination_id: '*0',
        fanout: 'd1,d2',
        next_attempt_at: '2030-01-02T00:00:00.000Z',
      }),
    ];
    await db.insertInto('broadcast_outbox').values(notDue).execute();
    const recorder = recordStatements();
    try {
      assert.deepEqual(await claim(), { fanOuts: [], rows: [] });
      assert.deepEqual(recorder?.writes() ?? [], [], 'nothing due: no statement that writes');
      const due = row({});
      const dueFanOut = row({ status: 'fanout', destination_id: '*0', fanout: 'd1,d2' });
      await db.insertInto('broadcast_outbox').values([due, dueFanOut]).execute();
      const claimed = await claim();
      assert.deepEqual(
        claimed.rows.map((found) => [found.id, found.leased_by, found.attempts]),
        [[due.id, 'me', 1]],
      );
      assert.deepEqual(
        claimed.fanOuts.map((found) => [found.id, found.leased_by, found.attempts]),
        [[dueFanOut.id, 'me', 1]],
      );
      if (recorder) assert.ok(recorder.writes().some((source) => /update broadcast_outbox/.test(source)));
      assert.deepEqual(await claim(), { fanOuts: [], rows: [] });
    } finally {
      recorder?.restore();
      await db.deleteFrom('broadcast_outbox').execute();
    }
  });
});

describe('outbox repository with a reader (the broadcast worker thread on SQLite)', () => {
  let directory: string;
  let storage: Storage;
  before(async () => {
    directory = mkdtempSync(join(tmpdir(), 'switchyard-outbox-reader-'));
    storage = await openStorage({
      url: `sqlite:${join(directory, 'db.sqlite')}`,
      schema: 'main',
      thread: true,
      reader: true,
    });
    await initializeStorage({ storage, initialCreditsUsd: 0, now: new Date() });
  });
  after(async () => {
    await storage.close();
    rmSync(directory, { recursive: true, force: true });
  });

  /** A statement of a few hundred milliseconds on the SQLite thread; `done()` tells whether it ended. */
  const occupyThread = () => {
    let ended = false;
    const running = sql`
      with recursive counter(n) as (select 1 union all select n + 1 from counter where n < 3000000)
      select sum(n) as total from counter`
      .execute(storage.db)
      .then(() => {
        ended = true;
      });
    return { done: () => ended, running };
  };

  it('reads held rows and what is due on its own connection, without waiting for the SQLite thread', async () => {
    assert.ok(storage.reader);
    const repository = createOutboxRepository(storage);
    const held = row({ lease_until: '2030-01-01T00:01:00.000Z', leased_by: 'me' });
    const claimedSince = row({ lease_until: '2030-01-01T00:02:00.000Z', leased_by: 'me' });
    await storage.db.insertInto('broadcast_outbox').values([held, claimedSince]).execute();
    const stored = [held, { ...claimedSince, lease_until: '2030-01-01T00:01:00.000Z' }].map((found) => ({
      id: found.id,
      leased_by: 'me',
      lease_until: String(found.lease_until),
    }));

    const busy = occupyThread();
    const read = await repository.heldRows(stored, 'me');
    assert.equal(busy.done(), false, 'the read waited for the statement the SQLite thread was running');
    assert.deepEqual(
      read.map((found) => [found.id, found.payload]),
      [[held.id, '{}']],
    );
    // Nothing due (both rows are leased): the claim answers from the reader, with no write queued.
    const claimed = await repository.claim({
      limit: 10,
      fanOutLimit: 5,
      now: new Date('2030-01-01T00:00:10.000Z'),
      leaseUntil: new Date('2030-01-01T00:03:00.000Z'),
      owner: 'me',
      busy: [],
    });
    assert.deepEqual(claimed, { fanOuts: [], rows: [] });
    assert.equal(busy.done(), false, 'the claim waited for the statement the SQLite thread was running');
    await busy.running;

    // Writes still go through the SQLite thread; the reader sees each once committed.
    await repository.remove([held.id]);
    assert.deepEqual(await repository.heldRows(stored, 'me'), []);
  });

  it('cannot write through the reader', async () => {
    assert.ok(storage.reader);
    await assert.rejects(
      storage.reader.insertInto('broadcast_outbox').values(row({})).execute(),
      (error: Error & { code?: string }) => error.code === 'SQLITE_READONLY',
    );
  });

  it('is closed with the storage, used or not: no file of the database left open, no WAL left behind', async (t) => {
    if (process.platform !== 'linux') {
      t.skip('reads /proc/self/fd');
      return;
    }
    /** This process's descriptors open on the database's files. */
    const openOn = (path: string) =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).startsWith(path);
        } catch {
          return false;
        }
      }).length;
    for (const use of [false, true]) {
      const path = join(directory, `closed-${use}.sqlite`);
      const opened = await openStorage({ url: `sqlite:${path}`, schema: 'main', thread: true, reader: true });
      await sql`create table notes (id integer primary key)`.execute(opened.db);
      if (use) await sql`select count(*) from notes`.execute(opened.reader as NonNullable<Storage['reader']>);
      assert.ok(openOn(path) > 0);
      await opened.close();
      const state = use ? 'used' : 'unused';
      assert.equal(openOn(path), 0, `a descriptor left open (reader ${state})`);
      assert.equal(existsSync(`${path}-wal`), false, `the WAL left behind (reader ${state})`);
    }
  });

  it('is opened only when asked, for a SQLite file in its thread', async () => {
    const memory = await openStorage({ url: 'sqlite::memory:', schema: 'main', thread: true, reader: true });
    const onThisThread = await openStorage({
      url: `sqlite:${join(directory, 'other.sqlite')}`,
      schema: 'main',
      reader: true,
    });
    const notAsked = await openStorage({
      url: `sqlite:${join(directory, 'third.sqlite')}`,
      schema: 'main',
      thread: true,
    });
    try {
      assert.equal(memory.reader, null);
      assert.equal(onThisThread.reader, null);
      assert.equal(notAsked.reader, null);
    } finally {
      await Promise.all([memory.close(), onThisThread.close(), notAsked.close()]);
    }
  });
});
