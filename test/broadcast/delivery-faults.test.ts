import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import type { ReceivedRequest, ReceiverReply } from '../helpers/broadcast-fixtures.js';
import { freePort } from '../helpers/serve-process.js';
import { backend, isolatedDatabase, type TestApp } from '../helpers/test-app.js';
import {
  chat,
  createWebhook,
  FAST_BROADCAST,
  inferenceKey,
  outboxRows,
  setBroadcast,
  spanAttributes,
  startBroadcastGateway,
  startBroadcastGateway as startGateway,
  startHookReceiver,
  waitUntil,
} from './delivery-harness.js';

const keyOf = (request: ReceivedRequest) => String(request.headers['idempotency-key']);

/**
 * Receivers that fail: down, slow, 500, 429 with Retry-After, connections closed after the request,
 * refusals; events are retried with backoff and none is lost, and duplicates carry one idempotency
 * key. A process killed mid-delivery resumes after a restart; two instances never send one event twice.
 * The faults run twice: sent from the delivery thread (the default) and from the request thread
 * (`broadcast.delivery_thread: false`); both settle alike.
 */
for (const deliveryThread of [true, false]) {
  describe(`broadcast delivery faults (${deliveryThread ? 'delivery thread' : 'sent from the request thread'})`, () => {
    const startBroadcastGateway = (options: Parameters<typeof startGateway>[0] = {}) =>
      startGateway({ ...options, broadcast: { delivery_thread: deliveryThread, ...options.broadcast } });
    let gateway: TestApp;
    let app: { key: string; hash: string };
    const receivers: Array<{ close(): Promise<void> }> = [];

    before(async () => {
      gateway = await startBroadcastGateway();
      await setBroadcast(gateway, true);
      app = await inferenceKey(gateway);
    });
    after(async () => {
      await gateway.close();
    });
    afterEach(async () => {
      const listed = await gateway.request('GET', '/api/v1/observability/destinations');
      for (const destination of listed.body.data) {
        await gateway.request('DELETE', `/api/v1/observability/destinations/${destination.id}`);
      }
      await gateway.services.storage.db.deleteFrom('broadcast_outbox').execute();
      for (const receiver of receivers.splice(0)) await receiver.close();
    });

    /** A receiver answering from a script, one answer per delivery, then 200. */
    const scripted = async (
      ...answers: Array<Parameters<typeof startHookReceiver>[0] extends infer R ? R : never>
    ) => {
      let call = 0;
      const receiver = await startHookReceiver((request) => {
        const answer = answers[call++];
        return answer ? answer(request) : { status: 200, body: {} };
      });
      receivers.push(receiver);
      return receiver;
    };

    it('retries a 500, a closed connection and a slow answer, then delivers once more with the same key', async () => {
      const hook = await scripted(
        () => ({ status: 500, body: { error: 'boom' } }),
        () => 'close',
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 150));
          return { status: 503, body: 'busy' };
        },
      );
      await createWebhook(gateway, hook);
      await chat(gateway, app.key);
      await waitUntil('four deliveries', () => hook.deliveries().length === 4);
      await waitUntil('an empty outbox', async () => (await outboxRows(gateway)).length === 0);
      const keys = new Set(hook.deliveries().map(keyOf));
      assert.equal(keys.size, 1, 'every retry carries the same idempotency key');
    });

    it('honours Retry-After from a 429', async () => {
      const hook = await scripted(() => ({ status: 429, headers: { 'retry-after': '1' }, body: {} }));
      await createWebhook(gateway, hook);
      const times: number[] = [];
      const original = hook.reply;
      hook.reply = (request) => {
        if (request.headers['x-test-connection'] !== 'true') times.push(Date.now());
        return original(request);
      };
      await chat(gateway, app.key);
      await waitUntil('two deliveries', () => times.length === 2, 6000);
      const [first, second] = times as [number, number];
      assert.ok(second - first >= 950, `retried after ${second - first} ms, before Retry-After's second`);
      await waitUntil('an empty outbox', async () => (await outboxRows(gateway)).length === 0);
    });

    it('keeps events while the receiver is down and delivers them when it is back', async () => {
      const hook = await scripted();
      const id = await createWebhook(gateway, hook);
      await hook.close();
      await chat(gateway, app.key);
      await chat(gateway, app.key);
      await waitUntil('a failed attempt', async () =>
        (await outboxRows(gateway)).some((row) => row.attempts >= 1 && row.last_error !== null),
      );
      const rows = await outboxRows(gateway);
      assert.equal(rows.length, 2);
      // The first failure pauses the destination: the other event waits without an attempt spent.
      assert.ok(
        rows.some((row) => /unreachable/.test(row.last_error ?? '')),
        JSON.stringify(rows.map((row) => row.last_error)),
      );
      // The receiver comes back (at another address, which the destination is pointed to).
      const back = await startHookReceiver();
      receivers.push(back);
      await gateway.request('PATCH', `/api/v1/observability/destinations/${id}`, {
        body: { config: { url: `${back.url}/hook` } },
      });
      await waitUntil('both delivered', () => back.deliveries().length === 2, 8000);
      await waitUntil('an empty outbox', async () => (await outboxRows(gateway)).length === 0);
    });

    it('moves an event to the dead letters at once on a 400, and after max_attempts of 500s', async () => {
      const refusing = await startHookReceiver(() => ({ status: 400, body: { error: 'bad payload' } }));
      const failing = await startHookReceiver(() => ({ status: 500, body: { error: 'down' } }));
      receivers.push(refusing, failing);
      const refusedId = await createWebhook(gateway, refusing);
      const failedId = await createWebhook(gateway, failing);
      await chat(gateway, app.key);
      await waitUntil(
        'two dead letters',
        async () => (await outboxRows(gateway)).filter((row) => row.status === 'dead').length === 2,
      );
      const rows = await outboxRows(gateway);
      const refused = rows.find((row) => row.destination_id === refusedId);
      const failed = rows.find((row) => row.destination_id === failedId);
      assert.equal(refused?.attempts, 1);
      assert.equal(refused?.last_status, 400);
      assert.match(refused?.last_error ?? '', /bad payload/);
      assert.equal(failed?.attempts, FAST_BROADCAST.max_attempts);
      assert.equal(failed?.last_status, 500);
      assert.equal(refusing.deliveries().length, 1);
      assert.equal(failing.deliveries().length, FAST_BROADCAST.max_attempts);
      const metrics = await gateway.request('GET', '/metrics', { key: null });
      assert.match(metrics.text, /switchyard_broadcast_outbox_events\{status="dead"\} 2/);
      assert.match(metrics.text, /switchyard_broadcast_events_total\{type="webhook",outcome="dead"\} 2/);
      // The dead letters are listed, and a retry sends them again.
      const listed = await gateway.request(
        'GET',
        `/api/v1/observability/destinations/${refusedId}/deliveries?status=dead`,
      );
      assert.equal(listed.status, 200, listed.text);
      assert.equal(listed.body.total_count, 1);
      refusing.reply = (request) =>
        request.headers['x-test-connection'] === 'true'
          ? { status: 200, body: {} }
          : { status: 200, body: {} };
      const retried = await gateway.request(
        'POST',
        `/api/v1/observability/destinations/${refusedId}/deliveries/retry`,
      );
      assert.equal(retried.status, 200, retried.text);
      await waitUntil('the retried letter delivered', () => refusing.deliveries().length === 2);
    });

    it('sends a queued or dead event as the destination wants it now: privacy mode switched on withholds its bodies', async () => {
      // The first event is refused outright (a dead letter); the second answered 500 with a
      // Retry-After that keeps it queued while the destination changes.
      const seen = new Set<string>();
      const hook = await startHookReceiver((request) => {
        const which = request.text.includes('SECRET-PROMPT-ONE') ? 'one' : 'two';
        if (seen.has(which)) return { status: 200, body: {} };
        seen.add(which);
        return which === 'one'
          ? { status: 400, body: 'refused' }
          : { status: 500, headers: { 'retry-after': '2' }, body: 'down' };
      });
      receivers.push(hook);
      const id = await createWebhook(gateway, hook, { broadcast_generation_cost: true });
      await chat(gateway, app.key, { messages: [{ role: 'user', content: 'SECRET-PROMPT-ONE' }] });
      await waitUntil('a dead letter', async () =>
        (await outboxRows(gateway)).some((row) => row.status === 'dead'),
      );
      await chat(gateway, app.key, { messages: [{ role: 'user', content: 'SECRET-PROMPT-TWO' }] });
      await waitUntil('the second event tried once', () => hook.deliveries().length === 2);
      const patched = await gateway.request('PATCH', `/api/v1/observability/destinations/${id}`, {
        body: { privacy_mode: true, broadcast_generation_cost: false },
      });
      assert.equal(patched.status, 200, patched.text);
      const retried = await gateway.request(
        'POST',
        `/api/v1/observability/destinations/${id}/deliveries/retry`,
      );
      assert.equal(retried.status, 200, retried.text);
      await waitUntil('both delivered', async () => (await outboxRows(gateway)).length === 0, 10_000);
      const later = hook.deliveries().slice(2);
      assert.equal(later.length, 2);
      for (const delivery of later) {
        assert.ok(!/SECRET-PROMPT/.test(delivery.text), 'no prompt after privacy mode was switched on');
        const attributes = spanAttributes(delivery);
        assert.equal(attributes['gen_ai.prompt'], undefined);
        assert.equal(attributes['gen_ai.completion'], undefined);
        assert.ok(!Object.keys(attributes).some((key) => key.startsWith('switchyard.cost.')), 'nor the cost');
      }
    });

    it('keeps the secrets a receiver echoes out of the stored error and the deliveries listing', async () => {
      const token = 'TOKENVALUE1234567890';
      const signature = 'sig-abcdefghijklmnop';
      // A receiver that quotes the request back: its URL (with the token) and its headers.
      const echoing = await startHookReceiver((request) => ({
        status: 400,
        body: `refused ${request.url} signed ${String(request.headers['x-signature'])}`,
      }));
      receivers.push(echoing);
      const id = await createWebhook(gateway, echoing, {
        config: { url: `${echoing.url}/hook?token=${token}`, headers: { 'X-Signature': signature } },
      });
      await chat(gateway, app.key);
      await waitUntil(
        'the dead letter',
        async () => (await outboxRows(gateway)).filter((row) => row.status === 'dead').length === 1,
      );
      const [row] = await outboxRows(gateway);
      assert.match(row?.last_error ?? '', /refused \/hook\?token=\[secret\] signed \[secret\]/);
      const listed = await gateway.request(
        'GET',
        `/api/v1/observability/destinations/${id}/deliveries?status=dead`,
      );
      assert.equal(listed.status, 200, listed.text);
      assert.ok(!listed.text.includes(token) && !listed.text.includes(signature), listed.text);
    });

    /** A webhook destination whose receiver answers every request with 429 and `Retry-After: 30`. */
    async function rateLimitedWebhook() {
      const limited = await startHookReceiver(() => ({
        status: 429,
        headers: { 'retry-after': '30' },
        body: {},
      }));
      receivers.push(limited);
      return { limited, id: await createWebhook(gateway, limited) };
    }

    it('pauses a destination that answers 429: the events not yet tried wait without losing an attempt', async () => {
      const { limited, id } = await rateLimitedWebhook();
      for (let index = 0; index < 5; index += 1) await chat(gateway, app.key);
      await waitUntil('five events rescheduled', async () => {
        const rows = await outboxRows(gateway);
        return (
          rows.length === 5 &&
          rows.every((row) => row.lease_until === null && row.next_attempt_at > new Date().toISOString())
        );
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const rows = (await outboxRows(gateway)).filter((row) => row.destination_id === id);
      const attempted = rows.filter((row) => row.attempts === 1);
      assert.ok(
        limited.deliveries().length <= attempted.length,
        `${limited.deliveries().length} requests for ${attempted.length} attempts`,
      );
      assert.ok(
        limited.deliveries().length < 5,
        'the rest waited for Retry-After instead of hitting the limit',
      );
      const soonest = Math.min(...rows.map((row) => Date.parse(row.next_attempt_at)));
      assert.ok(soonest - Date.now() > 25_000, 'every event waits out the 30 s Retry-After');
    });

    it('does not hold events that arrive while their destination is paused: they wait unleased in storage', async () => {
      const { limited, id } = await rateLimitedWebhook();
      const mine = async () => (await outboxRows(gateway)).filter((row) => row.destination_id === id);
      await chat(gateway, app.key);
      await waitUntil('the first event refused and the destination paused', async () => {
        const rows = await mine();
        return rows.length === 1 && rows[0]!.lease_until === null && limited.deliveries().length === 1;
      });
      const pausedUntil = (await mine())[0]!.next_attempt_at;
      for (let index = 0; index < 3; index += 1) await chat(gateway, app.key);
      await waitUntil('the later events postponed to the end of the pause', async () => {
        const rows = await mine();
        return rows.length === 4 && rows.every((row) => row.lease_until === null && row.leased_by === null);
      });
      const rows = await mine();
      assert.equal(limited.deliveries().length, 1, 'nothing more was sent while paused');
      for (const row of rows) {
        assert.ok(row.next_attempt_at >= pausedUntil, `${row.next_attempt_at} waits for ${pausedUntil}`);
        assert.equal(row.status, 'pending');
      }
      assert.deepEqual(
        rows.map((row) => row.attempts).sort(),
        [0, 0, 0, 1],
        'only the event that was tried spent an attempt',
      );
    });

    it('buries an unreadable stored event and delivers the rest of its batch', async () => {
      const hook = await startHookReceiver();
      receivers.push(hook);
      const id = await createWebhook(gateway, hook);
      const workspace = (await gateway.request('GET', '/api/v1/workspaces/default')).body.data.id;
      await gateway.services.storage.db
        .insertInto('broadcast_outbox')
        .values({
          id: '00000000-0000-4000-8000-000000000001',
          destination_id: id,
          workspace_id: workspace,
          generation_id: 'gen-poison',
          idempotency_key: 'f'.repeat(32),
          payload: '{not json',
          status: 'pending',
          attempts: 0,
          next_attempt_at: new Date(0).toISOString(),
          lease_until: null,
          leased_by: null,
          last_error: null,
          last_status: null,
          created_at: new Date().toISOString(),
          dead_at: null,
        })
        .execute();
      await chat(gateway, app.key);
      await waitUntil('the good event delivered', () => hook.deliveries().length === 1);
      await waitUntil('the bad one buried', async () => {
        const rows = await outboxRows(gateway);
        return rows.length === 1 && rows[0]?.status === 'dead';
      });
      const [dead] = await outboxRows(gateway);
      assert.match(dead?.last_error ?? '', /not valid JSON/);
    });

    it('keeps delivering after every delivery slot was busy at once', async () => {
      const busy = await startBroadcastGateway({ broadcast: { concurrency: 1 } });
      const slow = await startHookReceiver(async () => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return { status: 200, body: {} };
      });
      const fast = await startHookReceiver();
      receivers.push(slow, fast);
      try {
        await setBroadcast(busy, true);
        const key = await inferenceKey(busy);
        await createWebhook(busy, slow);
        await createWebhook(busy, fast, { name: 'fast' });
        for (let round = 0; round < 3; round += 1) {
          await chat(busy, key.key);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        await waitUntil(
          'every event at both',
          () => slow.deliveries().length === 3 && fast.deliveries().length === 3,
          10_000,
        );
      } finally {
        await busy.close();
      }
    });

    /**
     * Stores `perHook` events for each receiver's webhook through a gateway without a delivery worker
     * (they wait unleased in the database), then starts a gateway with a worker on the same database.
     */
    /**
     * Events stored by an instance without a worker, for a gateway that then starts with one. With
     * `shared`, the destinations receive the same payload: one fan-out row per generation; otherwise
     * each after the first is in privacy mode, so each has rows of its own.
     */
    async function storedBacklog(
      hooks: Array<Awaited<ReturnType<typeof startHookReceiver>>>,
      perHook: number,
      broadcast: Record<string, unknown>,
      shared = false,
    ): Promise<{ consumer: TestApp; close(): Promise<void> }> {
      const database = isolatedDatabase();
      try {
        const producer = await startBroadcastGateway({ database, broadcast: { worker_enabled: false } });
        await setBroadcast(producer, true);
        const key = await inferenceKey(producer);
        for (const [n, hook] of hooks.entries())
          await createWebhook(producer, hook, { name: `hook ${n}`, privacy_mode: !shared && n > 0 });
        for (let n = 0; n < perHook; n += 1) await chat(producer, key.key);
        const rows = shared && hooks.length > 1 ? perHook : perHook * hooks.length;
        await waitUntil('the stored events', async () => (await outboxRows(producer)).length === rows);
        await producer.close();
        const consumer = await startBroadcastGateway({ database, broadcast });
        return {
          consumer,
          close: async () => {
            await consumer.close();
            await database.drop();
          },
        };
      } catch (error) {
        await database.drop();
        throw error;
      }
    }

    for (const shared of [false, true]) {
      it(`drains a stored backlog${shared ? ' of fan-out rows' : ''} claim after claim, without waiting a poll while its other destinations are busy`, async () => {
        // A worker polling once a minute must still take a stored backlog batch after batch. A claim
        // made while every destination with events was busy comes back empty, and used to be read as
        // "nothing left" until the next poll. Fan-out rows are claimed whoever is busy: the parts of
        // a busy destination go back as rows of their own, claimed when it is free.
        const hooks = [await startHookReceiver(), await startHookReceiver()];
        receivers.push(...hooks);
        const backlog = await storedBacklog(hooks, 12, { poll_interval_ms: 60_000, claim_batch: 4 }, shared);
        try {
          await waitUntil(
            'every stored event delivered',
            () => hooks.every((hook) => new Set(hook.deliveries().map(keyOf)).size === 12),
            10_000,
          );
          await waitUntil('an empty outbox', async () => (await outboxRows(backlog.consumer)).length === 0);
          // Each event once per destination: a part handed back is not sent as well.
          for (const hook of hooks) assert.equal(hook.deliveries().length, 12);
        } finally {
          await backlog.close();
        }
      });
    }

    for (const failure of [
      {
        name: 'a 429 with Retry-After',
        status: 429,
        headers: { 'retry-after': '1' } as Record<string, string>,
      },
      { name: 'a 500', status: 500, headers: {} as Record<string, string> },
    ]) {
      it(`${failure.name} in the middle of a webhook batch pauses it: the unsent events keep their attempt and wait`, async () => {
        let calls = 0;
        const hook = await startHookReceiver(() => {
          calls += 1;
          return calls === 3
            ? { status: failure.status, headers: failure.headers, body: {} }
            : { status: 200, body: {} };
        });
        receivers.push(hook);
        const backlog = await storedBacklog([hook], 6, { base_backoff_ms: 600, max_backoff_ms: 600 });
        try {
          // One batch of six, one request each: two delivered, the third refused, three never sent.
          await waitUntil('the failure', () => hook.deliveries().length === 3);
          await waitUntil('the batch settled', async () =>
            (await outboxRows(backlog.consumer)).every((row) => row.leased_by === null),
          );
          const waiting = await outboxRows(backlog.consumer);
          assert.equal(waiting.length, 4);
          const refused = waiting.filter((row) => row.last_status === failure.status);
          assert.equal(refused.length, 1);
          assert.equal(refused[0]?.attempts, 1);
          for (const row of waiting.filter((entry) => entry.last_status === null))
            assert.equal(row.attempts, 0);
          // All four wait for the destination's pause (Retry-After, or the refused event's backoff).
          const soonest = Math.min(...waiting.map((row) => Date.parse(row.next_attempt_at)));
          assert.ok(soonest - Date.now() > 100, `next attempt in ${soonest - Date.now()} ms`);
          await waitUntil(
            'every event delivered',
            () => new Set(hook.deliveries().map(keyOf)).size === 6,
            6000,
          );
          assert.equal(hook.deliveries().length, 7, 'only the refused event was sent twice');
          await waitUntil('an empty outbox', async () => (await outboxRows(backlog.consumer)).length === 0);
        } finally {
          await backlog.close();
        }
      });
    }

    it('a batch whose last request hits a 429 still pauses the destination for the next batch', async () => {
      // Two webhook batches' worth: the first batch's last event is refused with Retry-After, so the
      // second batch waits too instead of running into the same 429.
      const times: number[] = [];
      const hook = await startHookReceiver(() => {
        times.push(Date.now());
        return times.length === 20
          ? { status: 429, headers: { 'retry-after': '1' }, body: {} }
          : { status: 200, body: {} };
      });
      receivers.push(hook);
      const backlog = await storedBacklog([hook], 22, {});
      try {
        await waitUntil(
          'every event delivered',
          () => new Set(hook.deliveries().map(keyOf)).size === 22,
          8000,
        );
        const gap = (times[20] as number) - (times[19] as number);
        assert.ok(gap >= 900, `the next request came ${gap} ms after the 429`);
        await waitUntil('an empty outbox', async () => (await outboxRows(backlog.consumer)).length === 0);
      } finally {
        await backlog.close();
      }
    });

    /**
     * A Langfuse receiver whose project read (the connection test) passes and whose ingestion
     * requests are answered by `ingest`, told how many came before; and a destination sending to it.
     */
    async function langfuseReceiver(ingest: (request: ReceivedRequest, count: number) => ReceiverReply) {
      let count = 0;
      const receiver = await startHookReceiver((request) =>
        request.url.startsWith('/api/public/ingestion')
          ? ingest(request, ++count)
          : { status: 200, body: { data: [] } },
      );
      receivers.push(receiver);
      return {
        receiver,
        ingestions: () => count,
        async createOn(target: TestApp) {
          const created = await target.request('POST', '/api/v1/observability/destinations', {
            body: {
              type: 'langfuse',
              name: 'langfuse',
              config: { publicKey: 'pk-lf-0123456789', secretKey: 'sk-lf-0123456789', baseUrl: receiver.url },
            },
          });
          assert.equal(created.status, 200, created.text);
        },
      };
    }

    it('a Langfuse batch sent as several requests stops at a 429: its events keep the status and Retry-After, the rest wait unattempted', async () => {
      const langfuse = await langfuseReceiver((_, count) =>
        count === 2
          ? { status: 429, headers: { 'retry-after': '600' }, body: { message: 'rate limited' } }
          : { status: 207, body: { successes: [], errors: [] } },
      );
      const database = isolatedDatabase();
      let producer: TestApp | undefined;
      let consumer: TestApp | undefined;
      try {
        // Stored by a gateway that sends nothing, then taken by one that does: one batch of 15.
        producer = await startBroadcastGateway({ database, broadcast: { worker_enabled: false } });
        await setBroadcast(producer, true);
        const key = await inferenceKey(producer);
        await langfuse.createOn(producer);
        // ~500 kB of text per event in Langfuse's body (the input twice, the echoed output): several
        // events per 3.4 MB request, three requests for the batch.
        const messages = Array.from({ length: 8 }, (_, n) => ({
          role: 'user',
          content: `${n}`.repeat(30_000),
        }));
        for (let n = 0; n < 15; n += 1) await chat(producer, key.key, { messages });
        const stored = producer;
        await waitUntil('the stored events', async () => (await outboxRows(stored)).length === 15);
        await producer.close();
        producer = undefined;
        consumer = await startBroadcastGateway({ database, broadcast: {} });
        const gateway = consumer;
        await waitUntil('the refused request', () => langfuse.ingestions() === 2, 8000);
        await waitUntil('the batch settled', async () =>
          (await outboxRows(gateway)).every((row) => row.leased_by === null),
        );
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal(langfuse.ingestions(), 2, 'nothing more is sent while the receiver asks to wait');
        const [first, second] = langfuse.receiver
          .deliveries()
          .filter((request) => request.url.startsWith('/api/public/ingestion'));
        // Langfuse's batch holds two events per generation (trace and generation).
        const eventsIn = (request: ReceivedRequest | undefined) => {
          assert.ok(request, 'two ingestion requests');
          return (request.json as { batch: unknown[] }).batch.length / 2;
        };
        const delivered = eventsIn(first);
        const refusedCount = eventsIn(second);
        const rows = await outboxRows(gateway);
        assert.equal(rows.length, 15 - delivered);
        const refused = rows.filter((row) => row.attempts === 1);
        assert.equal(refused.length, refusedCount);
        for (const row of refused) {
          assert.equal(row.last_status, 429);
          assert.match(row.last_error ?? '', /429/);
        }
        const unsent = rows.filter((row) => row.attempts === 0);
        assert.ok(unsent.length > 0, 'a third request was left unsent');
        for (const row of unsent) assert.equal(row.last_status, null);
        // Every event left waits out the receiver's ten minutes.
        for (const row of rows)
          assert.ok(Date.parse(row.next_attempt_at) - Date.now() > 590_000, row.next_attempt_at);
      } finally {
        await producer?.close();
        await consumer?.close();
        await database.drop();
      }
    });

    it('an event Langfuse refuses in its 207 answer keeps the status it was given, through its retries', async () => {
      const langfuse = await langfuseReceiver((request) => {
        const batch = (request.json as { batch: Array<{ id: string }> }).batch;
        const errors = batch.map(({ id }) => ({ id, status: 429, message: 'rate limit exceeded' }));
        return { status: 207, body: { successes: [], errors } };
      });
      await langfuse.createOn(gateway);
      await chat(gateway, app.key);
      await waitUntil('a dead letter', async () =>
        (await outboxRows(gateway)).some((row) => row.status === 'dead'),
      );
      const [row] = await outboxRows(gateway);
      assert.equal(row?.attempts, FAST_BROADCAST.max_attempts);
      assert.equal(row?.last_status, 429);
      assert.match(row?.last_error ?? '', /Langfuse refused the event \(429\)/);
      assert.equal(langfuse.ingestions(), FAST_BROADCAST.max_attempts);
    });

    it('a webhook batch cut by its time limit sends the rest in the next batch, losing nothing', async () => {
      // lease_ms 2000 gives each batch one second; four events at 400 ms each do not fit in one.
      const hook = await startHookReceiver(async () => {
        await new Promise((resolve) => setTimeout(resolve, 400));
        return { status: 200, body: {} };
      });
      receivers.push(hook);
      const backlog = await storedBacklog([hook], 4, { lease_ms: 2_000 });
      try {
        await waitUntil(
          'every event delivered',
          () => new Set(hook.deliveries().map(keyOf)).size === 4,
          15_000,
        );
        await waitUntil(
          'an empty outbox',
          async () => (await outboxRows(backlog.consumer)).length === 0,
          15_000,
        );
      } finally {
        await backlog.close();
      }
    });

    it('a webhook event refused with a 400 is a dead letter alone: the rest of its batch is delivered', async () => {
      let calls = 0;
      const hook = await startHookReceiver(() => {
        calls += 1;
        return calls === 1 ? { status: 400, body: { error: 'bad event' } } : { status: 200, body: {} };
      });
      receivers.push(hook);
      const backlog = await storedBacklog([hook], 5, {});
      try {
        await waitUntil('the rest delivered', () => hook.deliveries().length === 5);
        await waitUntil('only the dead letter left', async () => {
          const rows = await outboxRows(backlog.consumer);
          return rows.length === 1 && rows[0]?.status === 'dead';
        });
        const [dead] = await outboxRows(backlog.consumer);
        assert.equal(dead?.last_status, 400);
        assert.equal(dead?.attempts, 1);
        assert.equal(new Set(hook.deliveries().map(keyOf)).size, 5, 'each event sent once');
      } finally {
        await backlog.close();
      }
    });

    it('drops the pending events of a deleted destination', async () => {
      // Retry-After keeps the retry a minute away: with the harness's 40 ms backoff the retry could
      // otherwise be delivered before the DELETE lands (seen once on PostgreSQL).
      const hook = await scripted(() => ({ status: 500, body: {}, headers: { 'retry-after': '60' } }));
      const id = await createWebhook(gateway, hook, {});
      await chat(gateway, app.key);
      // Stored rows count their first attempt already: wait for the receiver's 500 to be recorded.
      await waitUntil('a failed attempt', async () =>
        (await outboxRows(gateway)).some((row) => row.last_status === 500),
      );
      const deleted = await gateway.request('DELETE', `/api/v1/observability/destinations/${id}`);
      assert.equal(deleted.status, 200);
      await waitUntil('the outbox emptied', async () => (await outboxRows(gateway)).length === 0);
      assert.equal(hook.deliveries().length, 1);
    });
  });
}

describe('broadcast delivery across processes', () => {
  const children = new Set<ChildProcess>();
  after(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  it('resumes after the process is killed mid-delivery: the event arrives, with its idempotency key', async () => {
    const database = isolatedDatabase();
    const receiverState = { hang: true };
    const hook = await startHookReceiver(() => (receiverState.hang ? 'hang' : { status: 200, body: {} }));
    try {
      // Set up through one instance, then leave the database to a child process.
      const setup = await startBroadcastGateway({ database });
      await setBroadcast(setup, true);
      const { key } = await inferenceKey(setup);
      await createWebhook(setup, hook);
      await setup.close();

      const port = await freePort();
      const configPath = join(tmpdir(), `switchyard-broadcast-${port}.json`);
      writeFileSync(configPath, JSON.stringify({ broadcast: { ...FAST_BROADCAST, lease_ms: 2_000 } }));
      const env: NodeJS.ProcessEnv = { ...process.env, ...database.env };
      for (const name of ['REDIS_URL', 'SWITCHYARD_BOOTSTRAP_KEY']) delete env[name];
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
        env: {
          ...env,
          PORT: String(port),
          HOST: '127.0.0.1',
          LOG_LEVEL: 'silent',
          SWITCHYARD_CONFIG: configPath,
          ...database.env,
        },
        stdio: 'ignore',
      });
      children.add(child);
      const base = `http://127.0.0.1:${port}`;
      await waitUntil(
        'the child listening',
        async () => {
          try {
            return (await fetch(`${base}/health`)).status === 200;
          } catch {
            return false;
          }
        },
        20_000,
      );
      const response = await fetch(`${base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'switchyard/echo',
          messages: [{ role: 'user', content: 'survive me' }],
        }),
      });
      assert.equal(response.status, 200);
      const generationId = response.headers.get('x-generation-id');
      await waitUntil('the delivery in flight', () => hook.deliveries().length === 1, 10_000);
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
      children.delete(child);

      receiverState.hang = false;
      const restarted = await startBroadcastGateway({ database, broadcast: { lease_ms: 2_000 } });
      try {
        await waitUntil(
          'the redelivery after the lease expired',
          () => hook.deliveries().length === 2,
          10_000,
        );
        const [first, second] = hook.deliveries() as [ReceivedRequest, ReceivedRequest];
        assert.equal(keyOf(first), keyOf(second));
        assert.ok(second.text.includes('survive me'));
        await waitUntil('an empty outbox', async () => (await outboxRows(restarted)).length === 0);
        const record = await restarted.services.generations.find(String(generationId));
        assert.ok(record, 'the generation record was written before the kill');
      } finally {
        await restarted.close();
      }
    } finally {
      await hook.close();
      await database.drop();
    }
  });

  it('two instances on one PostgreSQL database never send one event twice', {
    skip: !backend.isPostgres,
  }, async () => {
    const database = isolatedDatabase();
    const hook = await startHookReceiver();
    const settings = { claim_batch: 3, poll_interval_ms: 10 };
    const first = await startBroadcastGateway({ database, broadcast: settings });
    const second = await startBroadcastGateway({ database, broadcast: settings });
    try {
      await setBroadcast(first, true);
      const { key } = await inferenceKey(first);
      await createWebhook(first, hook);
      await createWebhook(first, hook, { name: 'second hook' });
      // The second instance hears of the change through Redis; without Redis it reads it fresh.
      await waitUntil('both instances broadcasting', async () => {
        await chat(second, key);
        return (await outboxRows(second)).length > 0 || hook.deliveries().length > 0;
      });
      const requests = [];
      for (let index = 0; index < 40; index += 1) requests.push(chat(index % 2 === 0 ? first : second, key));
      await Promise.all(requests);
      await first.services.generations.flush();
      await second.services.generations.flush();
      await waitUntil('the outbox drained', async () => (await outboxRows(first)).length === 0, 15_000);
      const keys = hook.deliveries().map(keyOf);
      assert.equal(new Set(keys).size, keys.length, 'an event was sent twice');
      assert.ok(keys.length >= 80, `only ${keys.length} deliveries`);
    } finally {
      await first.close();
      await second.close();
      await hook.close();
      await database.drop();
    }
  });
});
