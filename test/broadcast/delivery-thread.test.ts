import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { getPriority } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { type DeliveryRequest, deliverBatch } from '../../src/broadcast/deliver-batch.js';
import { createThreadDeliverer } from '../../src/broadcast/delivery-thread.js';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import { SCHED_IDLE, threadPolicy } from '../../src/platform/idle-scheduling.js';
import {
  type FakeReceiver,
  type ReceiverReply,
  sampleEvent,
  startReceiver,
} from '../helpers/broadcast-fixtures.js';
import {
  chat,
  createWebhook,
  inferenceKey,
  setBroadcast,
  startBroadcastGateway,
  startHookReceiver,
  waitUntil,
} from './delivery-harness.js';

const quiet = { info: () => undefined, warn: () => undefined };

/** util-linux's chrt, which the thread moves itself to SCHED_IDLE with (CI's machines have it). */
const chrtInstalled = spawnSync('chrt', ['--help']).status === 0;

function request(
  receiver: FakeReceiver,
  payloads: Array<string | Uint8Array>,
  signal = new AbortController().signal,
): DeliveryRequest {
  return {
    type: 'webhook',
    items: payloads.map((payload, index) => ({
      payload,
      idempotencyKey: `key-${index}`,
      generationId: `gen-${index}`,
      attempt: 1,
    })),
    config: { url: `${receiver.url}/hook`, method: 'POST' },
    destination: { id: '11111111-2222-4333-8444-555555555555', name: 'hook', workspace_id: 'w' },
    now: new Date('2026-11-22T10:00:00.000Z'),
    signal,
  };
}

const payload = (generation: string) => JSON.stringify(sampleEvent({ generation_id: generation }));

/** Nice values of this process's threads (Linux: getpriority() on a thread id reads that thread's). */
function threadNiceValues(): number[] {
  return readdirSync('/proc/self/task').map((tid) => getPriority(Number(tid)));
}

/**
 * The main thread's nice value and the other threads'. The main thread is found by its id (the
 * process id), not by its place in the listing: readdir's names come sorted as text, so a worker
 * thread whose id has more digits (ids wrap at pid_max, which a long CI run reaches) comes first.
 */
function mainAndOtherNiceValues(): { main: number; others: number[] } {
  const others = readdirSync('/proc/self/task')
    .map(Number)
    .filter((tid) => tid !== process.pid)
    .map((tid) => getPriority(tid));
  return { main: getPriority(process.pid), others };
}

describe('deliverBatch', () => {
  it('refuses an unreadable payload alone and maps the outcome back to the request order', async () => {
    let calls = 0;
    const receiver = await startReceiver(() => {
      calls += 1;
      return calls === 2 ? { status: 500, body: { error: 'down' } } : { status: 200, body: {} };
    });
    const http = createExporterHttp({ allowPrivateNetworks: true });
    try {
      const outcome = await deliverBatch(
        request(receiver, [payload('gen-a'), '{not json', payload('gen-b'), payload('gen-c')]),
        http,
      );
      assert.deepEqual(outcome?.rejected, [
        { index: 1, retryable: false, message: 'the stored event is not valid JSON' },
      ]);
      // gen-a delivered; gen-b (request index 2) got the 500; gen-c (3) was never sent.
      assert.deepEqual(outcome?.stopped?.failed, [2]);
      assert.deepEqual(outcome?.stopped?.unsent, [3]);
      assert.equal(outcome?.stopped?.error.status, 500);
      assert.deepEqual(
        receiver.requests.map((received) => received.headers['idempotency-key']),
        ['key-0', 'key-2'],
      );
    } finally {
      await http.close();
      await receiver.close();
    }
  });

  it('keeps an unreadable payload refused alone when the rest of the batch fails as a whole', async () => {
    const receiver = await startReceiver(() => ({ status: 503, body: { error: 'down' } }));
    const http = createExporterHttp({ allowPrivateNetworks: true });
    try {
      const outcome = await deliverBatch(request(receiver, ['{not json', payload('gen-d')]), http);
      assert.deepEqual(
        outcome?.rejected?.map((entry) => [entry.index, entry.retryable]),
        [[0, false]],
      );
      assert.equal(outcome?.stopped?.error.status, 503);
      assert.deepEqual(outcome?.stopped?.failed, [1]);
      assert.deepEqual(outcome?.stopped?.unsent, []);
    } finally {
      await http.close();
      await receiver.close();
    }
  });

  it('a batch of unreadable payloads sends nothing', async () => {
    const receiver = await startReceiver(() => ({ status: 200, body: {} }));
    const http = createExporterHttp({ allowPrivateNetworks: true });
    try {
      const outcome = await deliverBatch(request(receiver, ['nope', '']), http);
      assert.deepEqual(
        outcome?.rejected?.map((entry) => entry.index),
        [0, 1],
      );
      assert.equal(receiver.requests.length, 0);
    } finally {
      await http.close();
      await receiver.close();
    }
  });
});

// A thread that never starts would leave `priority` pending: the suite fails instead of hanging.
describe('delivery thread', { timeout: 60_000 }, () => {
  let receiver: FakeReceiver;
  let reply: () => Promise<ReceiverReply>;
  const deliverer = createThreadDeliverer({
    settings: { allowPrivateNetworks: true, niceness: 19, idle: true },
    logger: quiet,
  });

  before(async () => {
    receiver = await startReceiver(() => reply());
  });
  after(async () => {
    await deliverer.close();
    await receiver.close();
  });

  it('sends a batch from a thread at the lowest priority, SCHED_IDLE, lowered after its first batch', async () => {
    reply = async () => ({ status: 200, body: {} });
    await deliverer.warm?.();
    if (process.platform === 'linux') {
      // Loaded, nothing sent yet: what the first batch loads and compiles runs at normal priority.
      // (A thread that lowered itself at start would have run chrt by now.)
      await new Promise((resolve) => setTimeout(resolve, 500));
      const { main, others } = mainAndOtherNiceValues();
      if (main !== 19) assert.ok(!others.includes(19), 'no thread is at nice 19 before the first batch');
      const idle = readdirSync('/proc/self/task').filter((tid) => threadPolicy(Number(tid)) === SCHED_IDLE);
      assert.equal(idle.length, 0, 'no thread runs SCHED_IDLE before the first batch');
    }
    const outcome = await deliverer.deliver(request(receiver, [payload('gen-1'), payload('gen-2')]));
    assert.equal(outcome?.rejected, undefined);
    assert.equal(outcome?.stopped, undefined);
    const bodies = receiver.requests.map((received) => received.json as { resourceSpans: unknown[] });
    assert.equal(bodies.length, 2);
    assert.ok(bodies.every((body) => body.resourceSpans.length === 1));
    if (process.platform === 'linux') {
      const priority = await deliverer.priority;
      assert.equal(priority.niceness, 19);
      const { main, others } = mainAndOtherNiceValues();
      assert.equal(main, getPriority(), 'the main thread keeps its priority');
      if (main !== 19) assert.ok(others.includes(19), 'a thread of this process runs at nice 19');
      assert.equal(threadPolicy(process.pid), 0, 'the main thread keeps the normal policy');
      if (chrtInstalled) {
        assert.equal(priority.idle, true);
        const idle = readdirSync('/proc/self/task').filter((tid) => threadPolicy(Number(tid)) === SCHED_IDLE);
        assert.equal(idle.length, 1, 'one thread of this process, the delivery thread, runs SCHED_IDLE');
      } else {
        assert.equal(typeof priority.idle, 'string', 'without chrt the thread says why it is not idle');
      }
    }
  });

  it('decodes payloads given as UTF-8 bytes (a stowed row) in the thread', async () => {
    reply = async () => ({ status: 200, body: {} });
    const before = receiver.requests.length;
    const text = JSON.stringify(
      sampleEvent({
        generation_id: 'gen-bytes',
        output: [{ role: 'assistant', content: 'Grüße — ✓ 日本' }],
      }),
    );
    const outcome = await deliverer.deliver(
      request(receiver, [Buffer.from(text, 'utf8'), new TextEncoder().encode('{not json')]),
    );
    assert.deepEqual(
      outcome?.rejected?.map((entry) => [entry.index, entry.retryable, entry.message]),
      [[1, false, 'the stored event is not valid JSON']],
    );
    const sent = receiver.requests.slice(before);
    assert.equal(sent.length, 1);
    assert.ok(sent[0]?.text.includes('Grüße — ✓ 日本'), sent[0]?.text.slice(0, 300));
    assert.ok(sent[0]?.text.includes('gen-bytes'));
  });

  it('hands back a failure as a DeliveryError with its status and Retry-After', async () => {
    reply = async () => ({ status: 429, body: { error: 'slow down' }, headers: { 'retry-after': '7' } });
    await assert.rejects(deliverer.deliver(request(receiver, [payload('gen-3')])), (error: unknown) => {
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.status, 429);
      assert.equal(error.retryable, true);
      assert.equal(error.retryAfterMs, 7_000);
      return true;
    });
  });

  it('hands back a batch stopped part-way with the failure and the unsent items', async () => {
    let calls = 0;
    reply = async () => {
      calls += 1;
      return calls === 1 ? { status: 200, body: {} } : { status: 503, body: {} };
    };
    const outcome = await deliverer.deliver(
      request(receiver, [payload('gen-4'), payload('gen-5'), payload('gen-6')]),
    );
    assert.ok(outcome?.stopped?.error instanceof DeliveryError);
    assert.equal(outcome?.stopped?.error.status, 503);
    assert.deepEqual(outcome?.stopped?.failed, [1]);
    assert.deepEqual(outcome?.stopped?.unsent, [2]);
  });

  it('aborts a send in the thread when the signal fires', async () => {
    reply = () => new Promise((resolve) => setTimeout(() => resolve({ status: 200, body: {} }), 5_000));
    await deliverer.priority;
    const controller = new AbortController();
    const started = performance.now();
    const sending = deliverer.deliver(request(receiver, [payload('gen-7')], controller.signal));
    setTimeout(() => controller.abort(), 100);
    await assert.rejects(
      sending,
      (error: unknown) => error instanceof DeliveryError && error.retryable && /aborted/.test(error.message),
    );
    assert.ok(performance.now() - started < 3_000, 'the abort did not wait for the receiver');
  });

  it('starts no thread until there is something to send, then warms up outside any batch', async () => {
    const lazy = createThreadDeliverer({
      settings: { allowPrivateNetworks: true, niceness: 0, idle: false },
      logger: quiet,
    });
    try {
      const before = readdirSync('/proc/self/task').length;
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(
        readdirSync('/proc/self/task').length,
        before,
        'no thread for a gateway that sends nothing',
      );
      await lazy.warm?.();
      assert.deepEqual(
        await lazy.priority,
        { niceness: 0, idle: false },
        'warm() settles once the thread has loaded',
      );
      assert.ok(readdirSync('/proc/self/task').length > before);
    } finally {
      await lazy.close();
    }
  });

  it('keeps the process alive while the thread loads or has a batch out, and not once it is idle', async () => {
    // A process of its own, with nothing else to keep its event loop going (as a gateway shutting
    // down, its server closed, waits for the batches its worker aborted): the thread's answers
    // still arrive, then the idle thread lets the process end by itself.
    const script = `
      import { createThreadDeliverer } from ${JSON.stringify(new URL('../../src/broadcast/delivery-thread.ts', import.meta.url).href)};
      const deliverer = createThreadDeliverer({
        settings: { allowPrivateNetworks: true, niceness: 0, idle: false },
        logger: { info() {}, warn() {} },
      });
      await deliverer.warm();
      console.log('loaded');
      await deliverer.deliver({
        type: 'webhook',
        items: [{ payload: ${JSON.stringify(payload('gen-alive'))}, idempotencyKey: 'k', generationId: 'gen-alive', attempt: 1 }],
        config: { url: 'http://127.0.0.1:9/hook', method: 'POST' },
        destination: { id: '11111111-2222-4333-8444-555555555555', name: 'hook', workspace_id: 'w' },
        now: new Date(),
        signal: new AbortController().signal,
      }).catch((error) => console.log('answered', error.retryable));
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(child.status, 0, child.stderr);
    assert.deepEqual(child.stdout.trim().split('\n'), ['loaded', 'answered true']);
  });

  it('fails the batches in flight as retryable when closed, and refuses new ones', async () => {
    const closing = createThreadDeliverer({
      settings: { allowPrivateNetworks: true, niceness: 0, idle: false },
      logger: quiet,
    });
    reply = () => new Promise((resolve) => setTimeout(() => resolve({ status: 200, body: {} }), 5_000));
    const sending = closing.deliver(request(receiver, [payload('gen-8')]));
    assert.deepEqual(await closing.priority, { niceness: 0, idle: false });
    await closing.close();
    await assert.rejects(sending, (error: unknown) => error instanceof DeliveryError && error.retryable);
    await assert.rejects(
      closing.deliver(request(receiver, [payload('gen-9')])),
      (error: unknown) => error instanceof DeliveryError && error.retryable,
    );
  });
});

describe("a gateway's delivery thread", { timeout: 60_000 }, () => {
  it('runs at broadcast.delivery_thread_niceness', { skip: process.platform !== 'linux' }, async () => {
    const niceness = 7;
    assert.ok(!threadNiceValues().includes(niceness), `no thread of this process at nice ${niceness} yet`);
    const gateway = await startBroadcastGateway({
      broadcast: { delivery_thread_niceness: niceness, delivery_thread_idle: false },
    });
    const hook = await startHookReceiver();
    try {
      await setBroadcast(gateway, true);
      const { key } = await inferenceKey(gateway);
      await createWebhook(gateway, hook);
      await chat(gateway, key);
      await waitUntil('the delivery', () => hook.deliveries().length > 0);
      // Lowered once that first batch has settled.
      await waitUntil(`a thread of this process at nice ${niceness}`, () =>
        threadNiceValues().includes(niceness),
      );
    } finally {
      await gateway.close();
      await hook.close();
    }
    assert.ok(!threadNiceValues().includes(niceness), 'the thread ends with the gateway');
  });
});
