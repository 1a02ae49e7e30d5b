import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createKeyCache, KEY_CACHE_MAX_AGE_MS } from '../../src/admin/keys/key-cache.js';
import { emptyUsage, type KeyRepository, type KeyRow } from '../../src/admin/keys/key-repository.js';
import { createLocalChangeBus } from '../../src/platform/change-bus.js';
import { fixedClock } from '../../src/platform/clock.js';

const row = (hash: string): KeyRow => ({
  hash,
  name: 'k',
  label: 'sk-sy-v1-abc...xyz',
  is_management: 0,
  disabled: 0,
  limit_nanos: null,
  limit_reset: null,
  include_byok_in_limit: 0,
  expires_at: null,
  creator_user_id: null,
  workspace_id: 'w',
  created_at: '2026-11-22T00:00:00.000Z',
  updated_at: null,
});

/** A repository whose lookups wait until the test releases them, counting each one. */
function gatedRepository() {
  const waiting: Array<() => void> = [];
  let lookups = 0;
  const repository = {
    async findByHash(hash: string) {
      lookups += 1;
      await new Promise<void>((release) => waiting.push(release));
      return hash.startsWith('missing') ? undefined : row(hash);
    },
    async usageFor(hashes: string[]) {
      return new Map(hashes.map((hash) => [hash, emptyUsage()]));
    },
  } as unknown as KeyRepository;
  return {
    repository,
    lookups: () => lookups,
    release: () => {
      for (const release of waiting.splice(0)) release();
    },
  };
}

const setup = () => {
  const gate = gatedRepository();
  const bus = createLocalChangeBus();
  const clock = fixedClock(new Date('2026-11-22T12:00:00Z'));
  const cache = createKeyCache({ repository: gate.repository, bus, clock });
  return { gate, bus, clock, cache };
};

describe('key cache: peek, invalidation and usage', () => {
  it('peeks only at a loaded, fresh key; one load serves concurrent lookups', async () => {
    const { gate, clock, cache } = setup();
    assert.equal(cache.peek('a'), undefined, 'nothing before the first lookup');
    const first = cache.get('a');
    const second = cache.get('a');
    assert.equal(cache.peek('a'), undefined, 'nothing while the load is in flight');
    gate.release();
    assert.equal((await first)?.row.hash, 'a');
    assert.equal(await second, await first);
    assert.equal(gate.lookups(), 1);
    assert.equal(cache.peek('a'), await first);
    clock.advance(KEY_CACHE_MAX_AGE_MS);
    assert.equal(cache.peek('a'), undefined, 'a key past its age is looked up again');
  });

  it('never serves a load that an invalidation overtook', async () => {
    const { gate, bus, cache } = setup();
    const stale = cache.get('a');
    await bus.publish('api-key', 'a'); // the key changed while it was being read
    gate.release();
    await stale;
    assert.equal(cache.peek('a'), undefined, 'the overtaken load is not kept');
    const fresh = cache.get('a');
    gate.release();
    await fresh;
    assert.equal(gate.lookups(), 2, 'the next lookup reads the database again');
    assert.ok(cache.peek('a'));
  });

  it('remembers a missing key without keeping it as loaded', async () => {
    const { gate, cache } = setup();
    const missing = cache.get('missing-1');
    gate.release();
    assert.equal(await missing, null);
    assert.equal(cache.peek('missing-1'), undefined);
    assert.equal(await cache.get('missing-1'), null);
    assert.equal(gate.lookups(), 1, 'the miss is remembered');
  });

  it('adds usage at once to a loaded key, and after its load to a key being loaded', async () => {
    const { gate, cache } = setup();
    const at = new Date('2026-11-22T12:00:00Z');
    const loading = cache.get('a');
    cache.addUsage('a', { usageNanos: 5, byokNanos: 0, at });
    gate.release();
    const entry = await loading;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(entry?.usage.lifetime.usage, 5, 'applied once the load ended');
    cache.addUsage('a', { usageNanos: 7, byokNanos: 2, at });
    assert.equal(entry?.usage.lifetime.usage, 12, 'applied synchronously to a loaded key');
    assert.equal(entry?.usage.lifetime.byok, 2);
    assert.deepEqual(entry?.usage.days, [{ day: '2026-11-22', usage: 12, byok: 2 }]);
    cache.addUsage('unknown', { usageNanos: 1, byokNanos: 0, at }); // nothing cached: ignored
  });
});
