import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import {
  createMemorySpendCounters,
  IDLE_TTL_MS,
  type Reservation,
  type SpendCounters,
  type SpendScope,
  WINDOW_GRACE_MS,
} from '../../src/billing/spend-counters.js';
import { createRedisSpendCounters } from '../../src/billing/spend-counters-redis.js';
import { whenReady } from '../../src/platform/redis.js';

const redisUrl = process.env.REDIS_URL ?? null;
const connections: Redis[] = [];
after(async () => {
  for (const connection of connections) connection.disconnect();
});

function connect(url: string, extra: Record<string, unknown> = {}): Redis {
  const connection = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, ...extra });
  connection.on('error', () => {});
  connections.push(connection);
  return connection;
}

/** Test connections refuse commands until ready, like the app's: wait so nothing falls back. */
async function connectReady(url: string): Promise<Redis> {
  const connection = connect(url);
  assert.ok(await whenReady(connection, 2_000), `Redis at ${url} is not ready`);
  return connection;
}

const scope = (id: string, limitNanos: number, extra: Partial<SpendScope> = {}): SpendScope => ({
  id,
  limitNanos,
  baseNanos: 0,
  windowEndsAt: null,
  ...extra,
});

function reservationOf(outcome: Awaited<ReturnType<SpendCounters['reserve']>>): Reservation {
  assert.ok(outcome.ok, `expected a reservation, got ${JSON.stringify(outcome)}`);
  return outcome.reservation;
}

interface Harness {
  counters: SpendCounters;
  errors: unknown[];
}

interface Backend {
  name: string;
  skip: string | false;
  start(t: { after(fn: () => Promise<void> | void): void }): Promise<Harness>;
}

async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

const backends: Backend[] = [
  {
    name: 'memory',
    skip: false,
    async start() {
      return { counters: createMemorySpendCounters({ now: Date.now }), errors: [] };
    },
  },
  {
    name: 'Redis',
    skip: redisUrl ? false : 'REDIS_URL is not set',
    async start(t) {
      const prefix = `switchyard-test-${randomBytes(6).toString('hex')}:`;
      const errors: unknown[] = [];
      const counters = createRedisSpendCounters({
        redis: await connectReady(redisUrl as string),
        prefix,
        now: Date.now,
        onError: (error) => errors.push(error),
      });
      t.after(async () => {
        await deleteKeys(await connectReady(redisUrl as string), prefix);
        assert.deepEqual(errors, [], 'no Redis call failed');
      });
      return { counters, errors };
    },
  },
];

for (const backend of backends) {
  describe(`spend counters in ${backend.name}`, { skip: backend.skip }, () => {
    it('lets exactly 10 of 50 concurrent reservations of 1,000 through a limit of 10,000', async (t) => {
      const { counters } = await backend.start(t);
      const limit = scope('key:a:2026-11-22', 10_000);
      const outcomes = await Promise.all(Array.from({ length: 50 }, () => counters.reserve([limit], 1_000)));
      assert.equal(outcomes.filter((outcome) => outcome.ok).length, 10);
      for (const outcome of outcomes.filter((outcome) => !outcome.ok))
        assert.deepEqual(outcome, { ok: false, scopeId: 'key:a:2026-11-22', availableNanos: 0 });
      assert.equal(await counters.peek('key:a:2026-11-22'), 10_000);
    });

    it('charges every scope or none, and names the first scope that refuses', async (t) => {
      const { counters } = await backend.start(t);
      const key = scope('key:b', 10_000);
      const credits = scope('credits', 5_000, { baseNanos: 4_500 });
      reservationOf(await counters.reserve([key], 2_000));
      assert.deepEqual(await counters.reserve([key, credits], 1_000), {
        ok: false,
        scopeId: 'credits',
        availableNanos: 500,
      });
      assert.equal(await counters.peek('key:b'), 2_000, 'the key was not charged');
      const full = scope('key:full', 1_000, { baseNanos: 1_000 });
      assert.deepEqual(await counters.reserve([full, credits], 1_000), {
        ok: false,
        scopeId: 'key:full',
        availableNanos: 0,
      });
      reservationOf(await counters.reserve([key, credits], 500));
      assert.equal(await counters.peek('key:b'), 2_500);
      assert.equal(await counters.peek('credits'), 5_000);
    });

    it('initialises a missing counter from its base, and only then', async (t) => {
      const { counters } = await backend.start(t);
      const limit = scope('key:c', 10_000, { baseNanos: 7_000 });
      assert.equal(await counters.peek('key:c'), null);
      assert.deepEqual(await counters.reserve([limit], 4_000), {
        ok: false,
        scopeId: 'key:c',
        availableNanos: 3_000,
      });
      reservationOf(await counters.reserve([limit], 3_000));
      assert.equal(await counters.peek('key:c'), 10_000);
      // A later, lower base from storage does not overwrite the live counter.
      const outcome = await counters.reserve([{ ...limit, baseNanos: 0 }], 1);
      assert.deepEqual(outcome, { ok: false, scopeId: 'key:c', availableNanos: 0 });
    });

    it('raises a live counter that is below what storage knows was spent', async (t) => {
      const { counters } = await backend.start(t);
      // The counter saw 2,000; storage since learned of 9,000 spent (a budget deleted, spent past
      // and set again under the same window): the counter must not let the difference be spent twice.
      reservationOf(await counters.reserve([scope('budget:d', 10_000, { baseNanos: 2_000 })], 0));
      assert.equal(await counters.peek('budget:d'), 2_000);
      const raised = scope('budget:d', 10_000, { baseNanos: 9_000 });
      assert.deepEqual(await counters.reserve([raised], 2_000), {
        ok: false,
        scopeId: 'budget:d',
        availableNanos: 1_000,
      });
      reservationOf(await counters.reserve([raised], 1_000));
      assert.equal(await counters.peek('budget:d'), 10_000);
    });

    it('settles lower and higher than reserved, and a second settle does nothing', async (t) => {
      const { counters } = await backend.start(t);
      const limit = scope('key:d', 10_000, { baseNanos: 1_000 });
      const lower = reservationOf(await counters.reserve([limit], 4_000));
      const higher = reservationOf(await counters.reserve([limit], 2_000));
      assert.equal(await counters.peek('key:d'), 7_000);
      await counters.settle(lower, 300);
      assert.equal(await counters.peek('key:d'), 3_300);
      await counters.settle(higher, 2_500);
      assert.equal(await counters.peek('key:d'), 3_800);
      await counters.settle(lower, 300);
      await Promise.all([counters.settle(higher, 0), counters.settle(higher, 9_000)]);
      assert.equal(await counters.peek('key:d'), 3_800);
      // The freed room is available again.
      assert.deepEqual(await counters.reserve([limit], 6_201), {
        ok: false,
        scopeId: 'key:d',
        availableNanos: 6_200,
      });
      reservationOf(await counters.reserve([limit], 6_200));
    });

    it('lets a zero amount through an exhausted key but not exhausted credits', async (t) => {
      const { counters } = await backend.start(t);
      const key = scope('key:e', 1_000, { baseNanos: 1_000 });
      const credits = scope('credits', 1_000, { baseNanos: 1_000, refuseWhenExhausted: true });
      const free = reservationOf(await counters.reserve([key], 0));
      await counters.settle(free, 0);
      assert.equal(await counters.peek('key:e'), 1_000);
      assert.deepEqual(await counters.reserve([key, credits], 0), {
        ok: false,
        scopeId: 'credits',
        availableNanos: 0,
      });
      reservationOf(
        await counters.reserve([scope('credits:other', 1_000, { refuseWhenExhausted: true })], 0),
      );
    });

    it('counts without limiting when the limit is infinite', async (t) => {
      const { counters } = await backend.start(t);
      const unlimited = scope('key:f', Number.POSITIVE_INFINITY, { baseNanos: 5 });
      reservationOf(await counters.reserve([unlimited], 2 ** 50));
      assert.equal(await counters.peek('key:f'), 2 ** 50 + 5);
    });

    it('refuses amounts that are not whole non-negative nano-dollars, and repeated scopes', async (t) => {
      const { counters } = await backend.start(t);
      await assert.rejects(counters.reserve([scope('key:g', 10)], -1), RangeError);
      await assert.rejects(counters.reserve([scope('key:g', 10)], 1.5), RangeError);
      await assert.rejects(counters.reserve([scope('key:g', 10), scope('key:g', 10)], 1), RangeError);
      const reservation = reservationOf(await counters.reserve([scope('key:g', 10)], 1));
      await assert.rejects(counters.settle(reservation, Number.NaN), RangeError);
    });
  });
}

describe('memory spend counters over time', () => {
  it('drops a windowed counter an hour after its window; the next window starts from its base', async () => {
    let now = Date.parse('2026-11-22T23:00:00Z');
    const counters = createMemorySpendCounters({ now: () => now });
    const windowEndsAt = Date.parse('2026-11-23T00:00:00Z');
    const day = scope('key:h:2026-11-22', 10_000, { baseNanos: 2_000, windowEndsAt });
    const outstanding = reservationOf(await counters.reserve([day], 8_000));
    assert.equal((await counters.reserve([day], 1)).ok, false);
    now = windowEndsAt + WINDOW_GRACE_MS - 1;
    assert.equal(await counters.peek(day.id), 10_000, 'kept through the grace hour');
    now = windowEndsAt + WINDOW_GRACE_MS;
    assert.equal(await counters.peek(day.id), null);
    // A late settle does not bring the dropped counter back.
    await counters.settle(outstanding, 9_000);
    assert.equal(await counters.peek(day.id), null);
    const next = scope('key:h:2026-11-23', 10_000, {
      baseNanos: 500,
      windowEndsAt: windowEndsAt + 86_400_000,
    });
    reservationOf(await counters.reserve([next], 9_500));
    assert.equal(await counters.peek(next.id), 10_000);
  });

  it("settles only its own reservations: another store's is left alone", async () => {
    const first = createMemorySpendCounters({ now: () => 0 });
    const second = createMemorySpendCounters({ now: () => 0 });
    const credits = scope('credits', 10_000);
    const reservation = reservationOf(await first.reserve([credits], 5_000));
    reservationOf(await second.reserve([credits], 3_000));
    await second.settle(reservation, 0);
    assert.equal(await second.peek('credits'), 3_000);
    assert.equal(await first.peek('credits'), 5_000);
    await first.settle(reservation, 1_000);
    assert.equal(await first.peek('credits'), 1_000);
  });

  it('drops a lifetime counter idle for a day, but never one with an outstanding reservation', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z');
    const counters = createMemorySpendCounters({ now: () => now });
    const credits = scope('credits', 10_000, { baseNanos: 1_000 });
    const idle = scope('credits:idle', 10_000, { baseNanos: 1_000 });
    const open = reservationOf(await counters.reserve([credits], 5_000));
    await counters.settle(reservationOf(await counters.reserve([idle], 5_000)), 5_000);
    now += IDLE_TTL_MS;
    assert.equal(await counters.peek('credits'), 6_000, 'held by its reservation');
    assert.equal(await counters.peek('credits:idle'), null);
    // Storage has caught up with the settled cost by now: the base says so.
    reservationOf(await counters.reserve([{ ...idle, baseNanos: 6_000 }], 100));
    assert.equal(await counters.peek('credits:idle'), 6_100);
    await counters.settle(open, 1_000);
    assert.equal(await counters.peek('credits'), 2_000);
    now += IDLE_TTL_MS - 1;
    assert.equal(await counters.peek('credits'), 2_000, 'a settle counts as a touch');
    now += 1;
    assert.equal(await counters.peek('credits'), null);
  });
});

describe('Redis spend counters', { skip: redisUrl ? false : 'REDIS_URL is not set' }, () => {
  const url = redisUrl as string;
  const start = async (t: { after(fn: () => Promise<void>): void }) => {
    const prefix = `switchyard-test-${randomBytes(6).toString('hex')}:`;
    const raw = await connectReady(url);
    const errors: unknown[] = [];
    t.after(() => deleteKeys(raw, prefix));
    const make = (redis: Redis) =>
      createRedisSpendCounters({ redis, prefix, now: Date.now, onError: (error) => errors.push(error) });
    return { prefix, raw, errors, make };
  };

  it('shares one limit between two instances with their own connections', async (t) => {
    const { make, errors } = await start(t);
    const first = make(await connectReady(url));
    const second = make(await connectReady(url));
    const limit = scope('key:shared', 10_000);
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, index) => (index % 2 ? first : second).reserve([limit], 1_000)),
    );
    const granted = outcomes.filter((outcome) => outcome.ok);
    assert.equal(granted.length, 10);
    assert.equal(await first.peek('key:shared'), 10_000);
    assert.equal(await second.peek('key:shared'), 10_000);
    // Each reservation settles through the instance that made it; the other sees the result.
    for (const [index, outcome] of outcomes.entries()) {
      if (outcome.ok) await (index % 2 ? first : second).settle(outcome.reservation, 100);
    }
    assert.equal(await second.peek('key:shared'), 1_000);
    assert.deepEqual(errors, []);
  });

  it('sets window and sliding lifetime expiries, and never lets a counter go below 0', async (t) => {
    const { make, raw, prefix } = await start(t);
    const counters = make(await connectReady(url));
    const windowEndsAt = Date.now() + 60_000;
    reservationOf(await counters.reserve([scope('key:w', 10_000, { windowEndsAt })], 1_000));
    const windowTtl = await raw.pttl(`${prefix}spend:key:w`);
    assert.ok(Math.abs(windowTtl - (60_000 + WINDOW_GRACE_MS)) < 5_000, `window TTL ${windowTtl}`);

    const credits = scope('credits', 10_000);
    const reservation = reservationOf(await counters.reserve([credits], 1_000));
    const lifetimeTtl = await raw.pttl(`${prefix}spend:credits`);
    assert.ok(Math.abs(lifetimeTtl - IDLE_TTL_MS) < 5_000, `lifetime TTL ${lifetimeTtl}`);
    // As if the counter had expired and re-initialised from a lower base while the call ran.
    await raw.set(`${prefix}spend:credits`, '200', 'PX', 1_000);
    await counters.settle(reservation, 0);
    assert.equal(await counters.peek('credits'), 0);
    const refreshed = await raw.pttl(`${prefix}spend:credits`);
    assert.ok(refreshed > IDLE_TTL_MS - 5_000, `settle refreshes the lifetime TTL: ${refreshed}`);

    // A settle after the counter expired does not re-create it (it would lack a TTL and a base).
    const late = reservationOf(await counters.reserve([scope('key:late', 10_000)], 1_000));
    await raw.del(`${prefix}spend:key:late`);
    await counters.settle(late, 5_000);
    assert.equal(await raw.exists(`${prefix}spend:key:late`), 0);
  });

  it('reports a settle whose Redis call fails and drops it', async (t) => {
    const { make, errors } = await start(t);
    const connection = await connectReady(url);
    const counters = make(connection);
    const reservation = reservationOf(await counters.reserve([scope('key:drop', 10_000)], 1_000));
    connection.disconnect();
    await counters.settle(reservation, 0);
    assert.equal(errors.length, 1);
    await counters.settle(reservation, 0);
    assert.equal(errors.length, 1, 'the dropped settle is not retried');
    const other = make(await connectReady(url));
    assert.equal(await other.peek('key:drop'), 1_000, 'the counter stays conservative');
  });
});

describe('Redis spend counters with Redis unreachable', () => {
  it('fall back to counters in this process that still enforce the limit', async () => {
    const errors: unknown[] = [];
    const counters = createRedisSpendCounters({
      redis: connect('redis://127.0.0.1:1', {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        lazyConnect: true,
      }),
      prefix: 'switchyard-test-unreachable:',
      now: Date.now,
      onError: (error) => errors.push(error),
    });
    const limit = scope('key:offline', 10_000, { baseNanos: 3_000 });
    const startedAt = Date.now();
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => counters.reserve([limit], 1_000)));
    assert.ok(Date.now() - startedAt < 1_000, 'refused at once, not queued');
    const granted = outcomes.flatMap((outcome) => (outcome.ok ? [outcome.reservation] : []));
    assert.equal(granted.length, 7);
    assert.ok(granted.every((reservation) => reservation.store === 'memory'));
    assert.equal(errors.length, 50);
    assert.equal(await counters.peek('key:offline'), 10_000);
    await counters.settle(granted[0] as Reservation, 0);
    assert.equal(await counters.peek('key:offline'), 9_000);
  });
});
