import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { sql } from 'kysely';
import {
  createGenerationLog,
  type GenerationLog,
  type GenerationRecordInput,
  MAX_QUEUED_GENERATIONS,
  type OutboxRowsBuilder,
} from '../../src/billing/generation-log.js';
import { buildOutboxRows, type OutboxSources } from '../../src/broadcast/outbox-build.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { initializeStorage } from '../../src/storage/initialize.js';
import { createSqliteCommitThread } from '../../src/storage/sqlite-commit-thread.js';
import { SAMPLE_KEY_HASH, SAMPLE_WORKSPACE, sampleGenerationRecord } from '../helpers/generation-record.js';
import { backend, type IsolatedDatabase, isolatedDatabase } from '../helpers/test-app.js';

const KEY_A = SAMPLE_KEY_HASH;
const KEY_B = 'b'.repeat(64);
const WORKSPACE = SAMPLE_WORKSPACE;

const generation = sampleGenerationRecord;

interface Captured {
  warn: Array<Record<string, unknown> & { at: number; message: string }>;
  error: Array<Record<string, unknown> & { at: number; message: string }>;
}

function captureLogger() {
  const lines: Captured = { warn: [], error: [] };
  return {
    lines,
    logger: {
      warn: (details: Record<string, unknown>, message: string) =>
        lines.warn.push({ ...details, at: performance.now(), message }),
      error: (details: Record<string, unknown>, message: string) =>
        lines.error.push({ ...details, at: performance.now(), message }),
    },
  };
}

/**
 * The storage with its transactions counted (and optionally refused), to see how the log batches.
 * Kysely keeps private fields, so every other member is bound to the real instance.
 */
function instrumented(storage: Storage) {
  const counts = { transactions: 0, active: 0, maxActive: 0 };
  let refusal: Error | null = null;
  const db = new Proxy(storage.db, {
    get(target, property) {
      if (property === 'transaction') {
        return () => {
          const builder = target.transaction();
          return {
            async execute(work: any) {
              if (refusal) throw refusal;
              counts.transactions += 1;
              counts.active += 1;
              counts.maxActive = Math.max(counts.maxActive, counts.active);
              try {
                return await builder.execute(work);
              } finally {
                counts.active -= 1;
              }
            },
          };
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    // Counting and refusing work on the query builder's path; the SQLite direct and thread paths
    // are covered by the tests that use the plain storage.
    storage: { ...storage, db, sqlite: null, sqliteThread: null, commitThread: null } as Storage,
    counts,
    refuse(error: Error | null) {
      refusal = error;
    },
  };
}

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A broadcast builder of one fan-out row for `input`, counted as `destinations` rows until built. */
function fanOutBuilder(
  input: GenerationRecordInput,
  options: { destinations: number; weight: number },
): OutboxRowsBuilder {
  return {
    rows: options.destinations,
    weight: options.weight,
    build: () => [
      {
        id: `out-${input.id}`,
        destination_id: '*0',
        workspace_id: WORKSPACE,
        generation_id: input.id,
        idempotency_key: '',
        payload: '{}',
        status: 'fanout',
        attempts: 0,
        next_attempt_at: input.created_at,
        lease_until: null,
        leased_by: null,
        last_error: null,
        last_status: null,
        created_at: input.created_at,
        dead_at: null,
        fanout: 'a,b,c',
      },
    ],
  };
}

/**
 * A broadcast builder with its sources: one destination (no rules) leased to `owner`. `build` counts
 * its calls, to see where the rows were built; `filterRules` stored unreadable makes building throw.
 */
function sourcedBuilder(
  input: GenerationRecordInput,
  options: { owner: string; filterRules?: string },
): OutboxRowsBuilder & { calls: number } {
  const sources: OutboxSources = {
    targets: [
      {
        id: '11111111-1111-4111-8111-111111111111',
        type: 'webhook',
        keyHashes: null,
        regions: ['global'],
        samplingRate: 1,
        filterRules: options.filterRules ?? null,
        privacyMode: false,
        cost: true,
        identity: false,
        requestContext: false,
      },
    ],
    event: {
      record: input,
      request: {
        instructions: 'Be brief.',
        input: [
          { type: 'message', role: 'user', content: [{ type: 'text', text: `question of ${input.id}` }] },
        ],
        parameters: { temperature: 0.5 },
        toolsOffered: 0,
      },
      output: { text: 'an answer', toolCalls: [] },
      keyName: 'test key',
      region: 'global',
      startedAtMs: Date.parse(input.created_at),
      endedAtMs: Date.parse(input.created_at) + input.latency_ms,
    },
    lease: { owner: options.owner, ms: 60_000 },
    keepEvent: false,
  };
  const builder = {
    calls: 0,
    rows: 1,
    weight: 100,
    sources,
    build: () => {
      builder.calls += 1;
      return buildOutboxRows(sources, Date.now());
    },
  };
  return builder;
}

async function storedCount(storage: Storage): Promise<number> {
  const row = await storage.db
    .selectFrom('generations')
    .select(sql<number>`count(*)`.as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

async function usageRows(storage: Storage) {
  const rows = await storage.db
    .selectFrom('key_usage_daily')
    .selectAll()
    .orderBy('key_hash')
    .orderBy('day')
    .execute();
  return rows.map((row) => ({
    key_hash: row.key_hash,
    day: row.day,
    usage: Number(row.usage_nanos),
    byok: Number(row.byok_usage_nanos),
  }));
}

async function ledgerUsage(storage: Storage) {
  const rows = await storage.db
    .selectFrom('credit_ledger')
    .select(['amount_nanos', 'note'])
    .where('kind', '=', 'usage')
    .execute();
  return rows.map((row) => ({ nanos: Number(row.amount_nanos), note: row.note }));
}

// SQLite runs every test three times: the connection on this thread (commits there too), its
// commits in the commit thread, and the connection in the SQLite thread.
const MODES = [
  { name: '', thread: false, commitThread: false },
  { name: ' (SQLite commit thread)', thread: false, commitThread: true },
  { name: ' (SQLite thread)', thread: true, commitThread: false },
];
for (const { name, thread, commitThread } of backend.isPostgres ? MODES.slice(0, 1) : MODES)
  describe(`generation log${name}`, () => {
    let database: IsolatedDatabase;
    let storage: Storage;
    let log: GenerationLog | null = null;

    beforeEach(async () => {
      database = isolatedDatabase();
      storage = await openStorage({
        url: database.settings.database_url,
        schema: database.settings.database_schema,
        thread,
        commitThread,
      });
      await initializeStorage({ storage, initialCreditsUsd: 0, now: new Date() });
    });
    afterEach(async () => {
      await log?.close();
      log = null;
      await storage.close();
      await database.drop();
    });

    it('takes at most 32 broadcast rows per commit on the event loop, and up to 400 off it', async () => {
      const batches: number[] = [];
      log = createGenerationLog({
        storage,
        logger: captureLogger().logger,
        onOutboxWritten: (rows) => batches.push(rows.length),
      });
      // Three destinations each: counted as three rows until built, then stored as one.
      for (let index = 0; index < 120; index += 1) {
        const input = generation();
        log.record(input, fanOutBuilder(input, { destinations: 3, weight: 0 }));
      }
      await log.flush();
      assert.equal(await storedCount(storage), 120);
      assert.equal(
        batches.reduce((sum, rows) => sum + rows, 0),
        120,
      );
      const onEventLoop = storage.sqlite !== null && storage.commitThread === null;
      // 32 rows: ten records of three destinations a commit; 400: all 120 in one.
      assert.deepEqual(batches, onEventLoop ? Array.from({ length: 12 }, () => 10) : [120]);
    });

    it('takes at most about 8 MiB of broadcast events per commit', async () => {
      const batches: number[] = [];
      log = createGenerationLog({
        storage,
        logger: captureLogger().logger,
        onOutboxWritten: (rows) => batches.push(rows.length),
      });
      for (let index = 0; index < 6; index += 1) {
        const input = generation();
        log.record(input, fanOutBuilder(input, { destinations: 1, weight: 3 * 1024 * 1024 }));
      }
      await log.flush();
      assert.equal(await storedCount(storage), 6);
      assert.deepEqual(batches, [2, 2, 2]);
    });

    it('builds broadcast rows from their sources in the SQLite thread that commits, never on this thread', async () => {
      const written: string[] = [];
      const stored: string[] = [];
      log = createGenerationLog({
        storage,
        logger: captureLogger().logger,
        onOutboxWritten: (rows) => written.push(...rows.map((row) => row.id)),
        onOutboxStored: (rows) => stored.push(...rows.map((row) => `${row.id} ${row.leased_by}`)),
      });
      const inputs = [generation(), generation()];
      const builders = inputs.map((input) => sourcedBuilder(input, { owner: 'worker-1' }));
      for (const [index, input] of inputs.entries()) log.record(input, builders[index]);
      await log.flush();
      const rows = await storage.db
        .selectFrom('broadcast_outbox')
        .selectAll()
        .orderBy('generation_id')
        .execute();
      assert.deepEqual(
        rows.map((row) => row.generation_id),
        inputs.map((input) => input.id).sort(),
      );
      for (const row of rows) {
        const event = JSON.parse(row.payload);
        assert.equal(event.generation_id, row.generation_id);
        assert.deepEqual(event.input, [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: `question of ${row.generation_id}` },
        ]);
        assert.equal(row.leased_by, 'worker-1');
        assert.equal(row.destination_id, '11111111-1111-4111-8111-111111111111');
      }
      const inThread = storage.sqliteThread !== null || storage.commitThread !== null;
      // The commit went to the thread (a commit thread that could not start leaves it here).
      if (storage.commitThread) assert.equal(storage.commitThread.started(), true);
      assert.deepEqual(
        builders.map((builder) => builder.calls),
        inThread ? [0, 0] : [1, 1],
      );
      const ids = rows.map((row) => row.id).sort();
      // Built in the thread, the rows reach the worker by id; built here, as the objects.
      assert.deepEqual(stored.sort(), inThread ? ids.map((id) => `${id} worker-1`) : []);
      assert.deepEqual(written.sort(), inThread ? [] : ids);
    });

    it('hands over no event of a record stored before (a batch retried after a commit in doubt)', async () => {
      const written: string[] = [];
      const stored: string[] = [];
      log = createGenerationLog({
        storage,
        logger: captureLogger().logger,
        onOutboxWritten: (rows) => written.push(...rows.map((row) => row.generation_id)),
        onOutboxStored: (rows) => stored.push(...rows.map((row) => row.id)),
      });
      const input = generation();
      log.record(input);
      await log.flush();
      // The same record again, now with its events: they were stored with it or not at all.
      log.record(input, sourcedBuilder(input, { owner: 'worker-1' }));
      const fresh = generation();
      log.record(fresh, sourcedBuilder(fresh, { owner: 'worker-1' }));
      await log.flush();
      const rows = await storage.db.selectFrom('broadcast_outbox').select(['id', 'generation_id']).execute();
      assert.deepEqual(
        rows.map((row) => row.generation_id),
        [fresh.id],
      );
      // Only the new record's row reaches the worker, however it was built.
      assert.deepEqual([...written, ...stored.map(() => fresh.id)], [fresh.id]);
      if (stored.length > 0) assert.deepEqual(stored, [rows[0]?.id]);
      assert.equal(await storedCount(storage), 2);
    });

    it('stores the record without its events when they cannot be built, saying so', async () => {
      const { logger, lines } = captureLogger();
      log = createGenerationLog({ storage, logger });
      const input = generation();
      log.record(input, sourcedBuilder(input, { owner: 'worker-1', filterRules: 'not json' }));
      await log.flush();
      assert.equal(await storedCount(storage), 1);
      const rows = await storage.db.selectFrom('broadcast_outbox').selectAll().execute();
      assert.deepEqual(rows, []);
      assert.deepEqual(
        lines.error.map((line) => [line.message, line.id]),
        [['broadcast events could not be built; not sent', input.id]],
      );
    });

    it('enqueues without touching the database, then writes 250 records in at most 3 transactions, one at a time', async () => {
      const probe = instrumented(storage);
      const { logger, lines } = captureLogger();
      log = createGenerationLog({ storage: probe.storage, logger });
      const queriesBefore = storage.queryCount();
      for (let index = 0; index < 250; index += 1) log.record(generation());
      assert.equal(storage.queryCount(), queriesBefore, 'record() ran a query');
      assert.equal(log.pending(), 250);

      await waitFor(() => log?.pending() === 0);
      assert.equal(await storedCount(storage), 250);
      assert.ok(probe.counts.transactions <= 3, `${probe.counts.transactions} transactions`);
      assert.equal(probe.counts.maxActive, 1);
      assert.deepEqual(lines.warn, []);
    });

    it('writes a lone record about 50 ms after it arrived', async () => {
      const { logger } = captureLogger();
      log = createGenerationLog({ storage, logger });
      const start = performance.now();
      log.record(generation());
      await new Promise((resolve) => setTimeout(resolve, 15));
      assert.equal(await storedCount(storage), 0);
      await waitFor(() => log?.pending() === 0, 2000);
      const elapsed = performance.now() - start;
      assert.ok(elapsed >= 45, `written after ${elapsed} ms`);
      assert.equal(await storedCount(storage), 1);
    });

    it('finds a record while it is queued and after it is written, with the same fields', async () => {
      const { logger } = captureLogger();
      log = createGenerationLog({ storage, logger });
      const input = generation({ finish_reason: 'tool-calls', native_finish_reason: 'tool_calls' });
      log.record(input);
      const queued = await log.find(input.id);
      assert.equal(await storedCount(storage), 0);
      assert.ok(queued);
      assert.equal(queued.id, input.id);
      assert.equal(queued.streamed, 1);
      assert.equal(queued.is_byok, 0);
      assert.equal(queued.cost_nanos, 1_234_567);
      assert.equal(queued.metadata, JSON.stringify({ team: 'search' }));
      assert.equal(queued.attempts, JSON.stringify(input.attempts));

      await log.flush();
      assert.equal(log.pending(), 0);
      assert.equal(await storedCount(storage), 1);
      const stored = await log.find(input.id);
      assert.deepEqual(stored, queued);
      assert.equal(await log.find('gen-unknown'), null);
    });

    it('bills each batch exactly: usage per key and UTC day, BYOK apart, one ledger row of the credit spend', async () => {
      const { logger } = captureLogger();
      log = createGenerationLog({ storage, logger });
      const records = [
        generation({ key_hash: KEY_A, cost_nanos: 1_000_000_001, created_at: '2025-03-10T23:59:59.999Z' }),
        generation({ key_hash: KEY_A, cost_nanos: 7, created_at: '2025-03-10T00:00:00.000Z' }),
        // An offset that is another UTC day: billed to the 11th.
        generation({ key_hash: KEY_A, cost_nanos: 11, created_at: '2025-03-10T23:30:00.000-01:00' }),
        generation({
          key_hash: KEY_A,
          cost_nanos: 500,
          is_byok: true,
          created_at: '2025-03-10T08:00:00.000Z',
        }),
        generation({ key_hash: KEY_B, cost_nanos: 40, created_at: '2025-03-10T08:00:00.000Z' }),
        generation({ key_hash: KEY_B, cost_nanos: 0, created_at: '2025-03-12T08:00:00.000Z' }),
      ];
      for (const record of records) log.record(record);
      await log.flush();

      assert.deepEqual(await usageRows(storage), [
        { key_hash: KEY_A, day: '2025-03-10', usage: 1_000_000_008, byok: 500 },
        { key_hash: KEY_A, day: '2025-03-11', usage: 11, byok: 0 },
        { key_hash: KEY_B, day: '2025-03-10', usage: 40, byok: 0 },
      ]);
      assert.deepEqual(await ledgerUsage(storage), [{ nanos: 1_000_000_059, note: '6 generations' }]);

      // A second batch adds to the same day's row; a batch of BYOK spend alone writes no ledger row.
      log.record(generation({ key_hash: KEY_B, cost_nanos: 2, created_at: '2025-03-10T09:00:00.000Z' }));
      await log.flush();
      log.record(
        generation({ key_hash: KEY_B, cost_nanos: 3, is_byok: true, created_at: '2025-03-10T09:00:00.000Z' }),
      );
      await log.flush();
      const usage = await usageRows(storage);
      assert.deepEqual(usage[2], { key_hash: KEY_B, day: '2025-03-10', usage: 42, byok: 3 });
      assert.deepEqual(
        (await ledgerUsage(storage)).map((row) => row.nanos).sort((a, b) => a - b),
        [2, 1_000_000_059],
      );
    });

    it('never bills a record twice: a batch retried after an in-doubt commit adds nothing', async () => {
      const { logger } = captureLogger();
      log = createGenerationLog({ storage, logger });
      const input = generation({ cost_nanos: 100 });
      log.record(input);
      await log.flush();
      log.record(input);
      await log.flush();
      assert.equal(await storedCount(storage), 1);
      assert.deepEqual(await usageRows(storage), [
        { key_hash: KEY_A, day: '2025-03-10', usage: 100, byok: 0 },
      ]);
      assert.deepEqual(await ledgerUsage(storage), [{ nanos: 100, note: '1 generation' }]);
    });

    it('close() writes everything queued and refuses later records', async () => {
      const { logger, lines } = captureLogger();
      log = createGenerationLog({ storage, logger });
      for (let index = 0; index < 30; index += 1) log.record(generation());
      await log.close();
      assert.equal(log.pending(), 0);
      assert.equal(await storedCount(storage), 30);

      const late = generation();
      log.record(late);
      assert.equal(log.pending(), 0);
      assert.equal(lines.error.length, 1);
      assert.match(lines.error[0]?.message ?? '', /after the log closed/);
      await new Promise((resolve) => setTimeout(resolve, 80));
      assert.equal(await log.find(late.id), null);
    });

    it('keeps records queued while the database fails and retries with a growing backoff', async () => {
      const { logger, lines } = captureLogger();
      log = createGenerationLog({ storage, logger });
      await sql`alter table generations rename to generations_away`.execute(storage.db);
      const inputs = [generation({ cost_nanos: 5 }), generation({ cost_nanos: 6 })];
      for (const input of inputs) log.record(input);

      await waitFor(() => lines.warn.length >= 3);
      assert.equal(log.pending(), 2);
      assert.equal((await log.find(inputs[0]?.id ?? ''))?.cost_nanos, 5);
      assert.equal(lines.warn[0]?.message, 'generation records not written; kept queued, retrying');
      assert.deepEqual(
        lines.warn.slice(0, 3).map((line) => line.retry_in_ms),
        [100, 200, 400],
      );
      const gaps = [1, 2].map((index) => (lines.warn[index]?.at ?? 0) - (lines.warn[index - 1]?.at ?? 0));
      assert.ok((gaps[0] ?? 0) >= 95 && (gaps[1] ?? 0) >= 195, `gaps ${gaps.join(', ')}`);

      await sql`alter table generations_away rename to generations`.execute(storage.db);
      await waitFor(() => log?.pending() === 0, 6000);
      assert.equal(await storedCount(storage), 2);
      assert.deepEqual(await usageRows(storage), [
        { key_hash: KEY_A, day: '2025-03-10', usage: 11, byok: 0 },
      ]);
      assert.deepEqual(await ledgerUsage(storage), [{ nanos: 11, note: '2 generations' }]);
    });

    it('flush() rejects while the database is away, keeping the records', async () => {
      const probe = instrumented(storage);
      const { logger } = captureLogger();
      log = createGenerationLog({ storage: probe.storage, logger });
      probe.refuse(new Error('connection refused'));
      log.record(generation());
      await assert.rejects(log.flush(), /connection refused/);
      assert.equal(log.pending(), 1);
      probe.refuse(null);
      await log.flush();
      assert.equal(log.pending(), 0);
      assert.equal(await storedCount(storage), 1);
    });

    it('holds at most 10,000 records while the database is away, dropping the oldest and saying how many', async () => {
      const probe = instrumented(storage);
      const { logger, lines } = captureLogger();
      log = createGenerationLog({ storage: probe.storage, logger });
      probe.refuse(new Error('database away'));
      const inputs = Array.from({ length: MAX_QUEUED_GENERATIONS + 50 }, (_, index) =>
        generation({ id: `gen-cap-${index}`, cost_nanos: index + 1 }),
      );
      for (const input of inputs) log.record(input);
      assert.equal(log.pending(), MAX_QUEUED_GENERATIONS);
      assert.equal(await log.find('gen-cap-49'), null);
      assert.ok(await log.find('gen-cap-50'));
      assert.ok(await log.find(`gen-cap-${MAX_QUEUED_GENERATIONS + 49}`));

      await waitFor(() => lines.error.length > 0);
      assert.equal(lines.error[0]?.dropped, 50);
      assert.match(lines.error[0]?.message ?? '', /dropped the oldest/);

      probe.refuse(null);
      await log.flush();
      assert.equal(await storedCount(storage), MAX_QUEUED_GENERATIONS);
      // Costs 51 … 10,050 are kept: their sum, and nothing of the dropped ones, reaches the ledger.
      const kept = inputs.slice(50).reduce((sum, input) => sum + input.cost_nanos, 0);
      const ledger = await ledgerUsage(storage);
      assert.equal(
        ledger.reduce((sum, row) => sum + row.nanos, 0),
        kept,
      );
      assert.deepEqual(await usageRows(storage), [
        { key_hash: KEY_A, day: '2025-03-10', usage: kept, byok: 0 },
      ]);
    });

    if (thread || commitThread)
      it('builds the rows on this thread when the SQLite thread cannot load the builder, and says so once', async () => {
        await storage.close();
        storage = await openStorage({
          url: database.settings.database_url,
          schema: database.settings.database_schema,
          thread,
          commitThread,
          outboxBuilder: { url: new URL('./no-such-builder.js', import.meta.url).href, tsx: null },
        });
        const { logger, lines } = captureLogger();
        const written: string[] = [];
        log = createGenerationLog({
          storage,
          logger,
          onOutboxWritten: (rows) => written.push(...rows.map((row) => row.generation_id)),
        });
        const first = generation();
        const firstBuilder = sourcedBuilder(first, { owner: 'worker-1' });
        log.record(first, firstBuilder);
        await log.flush();
        const second = generation();
        const secondBuilder = sourcedBuilder(second, { owner: 'worker-1' });
        log.record(second, secondBuilder);
        await log.flush();
        assert.equal(await storedCount(storage), 2);
        const rows = await storage.db.selectFrom('broadcast_outbox').select('generation_id').execute();
        assert.deepEqual(rows.map((row) => row.generation_id).sort(), [first.id, second.id].sort());
        assert.deepEqual([firstBuilder.calls, secondBuilder.calls], [1, 1]);
        assert.deepEqual(written, [first.id, second.id]);
        assert.deepEqual(
          lines.error.map((line) => line.message),
          ['the SQLite thread cannot build broadcast events; they are built on the request thread'],
        );
        assert.match(String((lines.error[0]?.err as Error | undefined)?.message), /no-such-builder/);
        assert.deepEqual(lines.warn, []);
      });

    if (thread || commitThread)
      it('builds the rows here when a commit that was to build them failed: sources the thread cannot take hold nothing up', async () => {
        const { logger, lines } = captureLogger();
        log = createGenerationLog({ storage, logger });
        // A function cannot be copied to another thread: the commit fails before it begins.
        const input = generation({ metadata: { team: 'search', callback: () => 1 } as never });
        const builder = sourcedBuilder(input, { owner: 'worker-1' });
        log.record(input, builder);
        await waitFor(() => log?.pending() === 0);
        assert.equal(await storedCount(storage), 1);
        const rows = await storage.db.selectFrom('broadcast_outbox').select('generation_id').execute();
        assert.deepEqual(
          rows.map((row) => row.generation_id),
          [input.id],
        );
        assert.equal(builder.calls, 1);
        assert.deepEqual(
          lines.warn.map((line) => line.message),
          ['generation records not written; kept queued, retrying'],
        );
      });

    it('close() gives up on a database that stays away after its timeout, saying how many records are lost', async () => {
      const probe = instrumented(storage);
      const { logger, lines } = captureLogger();
      const doomed = createGenerationLog({ storage: probe.storage, logger, closeTimeoutMs: 400 });
      probe.refuse(new Error('database away'));
      doomed.record(generation());
      doomed.record(generation());
      const start = performance.now();
      await doomed.close();
      const elapsed = performance.now() - start;
      // Timers may fire a little before performance.now() says they are due: allow 50 ms of slack.
      assert.ok(elapsed >= 250 && elapsed < 5000, `closed after ${elapsed} ms`);
      // Attempts at 0, 100 and 300 ms, the waits doubling; a loaded machine may fit fewer before the
      // deadline, never more.
      const waits = lines.warn.map((line) => line.retry_in_ms);
      assert.ok(waits.length >= 1, 'at least one retry');
      assert.deepEqual(waits, [100, 200, 400].slice(0, waits.length));
      assert.deepEqual(
        lines.error.map((line) => line.lost),
        [2],
      );
      assert.equal(await storedCount(storage), 0);
    });
  });

describe('generation log when the SQLite commit thread cannot start', {
  skip: backend.isPostgres ? 'SQLite only' : false,
}, () => {
  it('commits on the event loop instead (32 broadcast rows a commit), says so, and tries again only after a minute', async () => {
    const database = isolatedDatabase();
    const opened = await openStorage({
      url: database.settings.database_url,
      schema: database.settings.database_schema,
    });
    const failures: string[] = [];
    let starts = 0;
    const storage: Storage = {
      ...opened,
      commitThread: createSqliteCommitThread({
        path: 'never opened',
        onFailure: (message) => failures.push(message),
        start: async () => {
          starts += 1;
          throw new Error('no thread for this test');
        },
      }),
    };
    let log: GenerationLog | null = null;
    try {
      await initializeStorage({ storage, initialCreditsUsd: 0, now: new Date() });
      const batches: number[] = [];
      log = createGenerationLog({
        storage,
        logger: captureLogger().logger,
        onOutboxWritten: (rows) => batches.push(rows.length),
      });
      const record = (count: number) => {
        for (let index = 0; index < count; index += 1) {
          const input = generation();
          log?.record(input, fanOutBuilder(input, { destinations: 3, weight: 0 }));
        }
      };
      // The first commit finds no thread and fails (flush says so); the log retries the batch,
      // on this thread's connection.
      record(30);
      await assert.rejects(log.flush(), /no thread for this test/);
      await waitFor(async () => (await storedCount(storage)) === 30);
      assert.equal(starts, 1);
      assert.equal(failures.length, 1);
      assert.match(failures[0] ?? '', /could not start: no thread for this test/);
      // Later commits stay on the event loop, ten records of three destinations each, with no
      // new attempt to start the thread within the minute.
      batches.length = 0;
      record(60);
      await log.flush();
      assert.equal(await storedCount(storage), 90);
      assert.deepEqual(batches, [10, 10, 10, 10, 10, 10]);
      assert.equal(starts, 1);
      assert.equal(storage.commitThread?.available(), false);
    } finally {
      await log?.close();
      await storage.close();
      await database.drop();
    }
  });
});
