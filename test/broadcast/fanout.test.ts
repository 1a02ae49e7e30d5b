import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { sql } from 'kysely';
import { idempotencyKeyOf } from '../../src/broadcast/outbox-events.js';
import { createOutboxRepository } from '../../src/broadcast/outbox-repository.js';
import type { BroadcastOutboxTable } from '../../src/storage/database-schema.js';
import type { ReceivedRequest } from '../helpers/broadcast-fixtures.js';
import type { TestApp } from '../helpers/test-app.js';
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
    assert.match(fanOut?.destination_id ?? '', /^\*\d+$/);
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
});

describe('outbox repository: settling a fan-out row', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startBroadcastGateway({ broadcast: { worker_enabled: false } });
  });
  after(async () => {
    await gateway.close();
  });

  const fanOutRow = (leasedBy: string | null): BroadcastOutboxTable => ({
    id: `fan-${Math.random().toString(16).slice(2)}`,
    destination_id: '*0',
    workspace_id: 'w',
    generation_id: `gen-${Math.random().toString(16).slice(2)}`,
    idempotency_key: '',
    payload: '{}',
    status: 'fanout',
    attempts: 1,
    next_attempt_at: '2030-01-01T00:00:00.000Z',
    lease_until: leasedBy ? '2030-01-01T00:01:00.000Z' : null,
    leased_by: leasedBy,
    last_error: null,
    last_status: null,
    created_at: '2030-01-01T00:00:00.000Z',
    dead_at: null,
    fanout: 'd1,d2',
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
    // The outbox gauge counts a fan-out row once per destination it lists.
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
});
