import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { Kysely, sql } from 'kysely';
import { isUniqueViolation } from '../../src/admin/workspaces/unique-violation.js';
import { usableCpus } from '../../src/platform/usable-cpus.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { initializeStorage } from '../../src/storage/initialize.js';
import { SqliteThreadStoppedError, startSqliteThread } from '../../src/storage/sqlite-thread.js';
import { SqliteThreadDialect } from '../../src/storage/sqlite-thread-dialect.js';
import { startTestApp } from '../helpers/test-app.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('SQLite thread', () => {
  let directory: string;
  let storage: Storage;

  before(async () => {
    directory = mkdtempSync(join(tmpdir(), 'switchyard-sqlite-thread-'));
    storage = await openStorage({
      url: `sqlite:${join(directory, 'db.sqlite')}`,
      schema: 'main',
      thread: true,
    });
    await initializeStorage({ storage, initialCreditsUsd: 0, now: new Date() });
  });
  after(async () => {
    await storage.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('holds the connection in the thread: no connection on this one, no checkpoint thread', () => {
    assert.equal(storage.kind, 'sqlite');
    assert.equal(storage.sqlite, null);
    assert.ok(storage.sqliteThread);
    assert.equal(storage.checkpointer, null);
    // Its Linux thread id, for an owner that lowers its priority: a thread of this process.
    const tid = storage.sqliteThread.threadId();
    if (process.platform === 'linux') {
      assert.ok(tid !== null && tid !== process.pid);
      assert.ok(existsSync(`/proc/self/task/${tid}`));
    }
  });

  it('runs the query builder: rows, affected counts, insert ids', async () => {
    await sql`create table notes (id integer primary key, body text not null unique)`.execute(storage.db);
    const inserted = await sql`insert into notes (body) values (${'one'}), (${'two'})`.execute(storage.db);
    assert.equal(inserted.numAffectedRows, 2n);
    assert.equal(inserted.insertId, 2n);
    const updated = await sql`update notes set body = body || '!' where id = ${1}`.execute(storage.db);
    assert.equal(updated.numAffectedRows, 1n);
    const rows = await sql<{ id: number; body: string }>`select id, body from notes order by id`.execute(
      storage.db,
    );
    assert.deepEqual(rows.rows, [
      { id: 1, body: 'one!' },
      { id: 2, body: 'two' },
    ]);
  });

  it('carries the driver error code across, so constraint violations are recognised', async () => {
    const error = await sql`insert into notes (body) values (${'two'})`.execute(storage.db).then(
      () => null,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof Error);
    assert.match(error.message, /UNIQUE constraint failed: notes\.body/);
    assert.equal((error as { code?: string }).code, 'SQLITE_CONSTRAINT_UNIQUE');
    assert.equal(isUniqueViolation(error), true);
  });

  it('commits a transaction, and rolls one back when its work throws', async () => {
    await storage.db.transaction().execute(async (trx) => {
      await sql`insert into notes (body) values (${'three'})`.execute(trx);
    });
    await assert.rejects(
      storage.db.transaction().execute(async (trx) => {
        await sql`insert into notes (body) values (${'four'})`.execute(trx);
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    const rows = await sql<{ body: string }>`select body from notes order by id`.execute(storage.db);
    assert.deepEqual(
      rows.rows.map((row) => row.body),
      ['one!', 'two', 'three'],
    );
  });

  it('rolls back to a savepoint inside a transaction', async () => {
    const trx = await storage.db.startTransaction().execute();
    await sql`insert into notes (body) values (${'six'})`.execute(trx);
    const inner = await trx.savepoint('before_seven').execute();
    await sql`insert into notes (body) values (${'seven'})`.execute(inner);
    await inner.rollbackToSavepoint('before_seven').execute();
    await trx.commit().execute();
    const rows = await sql<{ body: string }>`select body from notes where body in ('six', 'seven')`.execute(
      storage.db,
    );
    assert.deepEqual(
      rows.rows.map((row) => row.body),
      ['six'],
    );
  });

  it('keeps the generation writer out of an open transaction: a rollback does not undo its records', async () => {
    const thread = storage.sqliteThread;
    assert.ok(thread);
    let proceed: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      proceed = resolve;
    });
    let skipped: string[] | null = null;
    const transaction = storage.db.transaction().execute(async (trx) => {
      await sql`insert into notes (body) values (${'five'})`.execute(trx);
      await gate;
      throw new Error('rolled back');
    });
    // Let the transaction begin, then ask for a group commit while it is open.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const writing = thread
      .writeGenerations([generationRow('gen-thread-1', 700)], new Date().toISOString(), [])
      .then((commit) => {
        skipped = commit.skipped;
      });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(skipped, null, 'the group commit ran inside an open transaction');
    proceed();
    await assert.rejects(transaction, /rolled back/);
    await writing;
    assert.deepEqual(skipped, [], 'the record was new');
    const stored = await storage.db.selectFrom('generations').select(['id', 'cost_nanos']).execute();
    assert.deepEqual(stored, [{ id: 'gen-thread-1', cost_nanos: 700 }]);
    const usage = await storage.db
      .selectFrom('key_usage_daily')
      .select(['key_hash', 'usage_nanos'])
      .execute();
    assert.deepEqual(usage, [{ key_hash: 'k'.repeat(64), usage_nanos: 700 }]);
    const notes = await sql<{ body: string }>`select body from notes where body = 'five'`.execute(storage.db);
    assert.equal(notes.rows.length, 0);
  });

  it('runs a batch sent whole in one transaction: a step that changes nothing where it must ends it, a failing step undoes it', async () => {
    const thread = storage.sqliteThread;
    assert.ok(thread);
    await sql`create table marks (id integer primary key, label text not null unique)`.execute(storage.db);
    const labels = async () =>
      (await sql<{ label: string }>`select label from marks order by id`.execute(storage.db)).rows.map(
        (row) => row.label,
      );
    const insert = (label: string) => ({ sql: 'insert into marks (label) values (?)', parameters: [label] });
    const remove = (label: string) => ({
      sql: 'delete from marks where label = ?',
      parameters: [label],
      requireChanges: true,
    });
    const all = await thread.atomically([insert('a'), insert('b'), remove('b'), insert('c')]);
    assert.equal(all.changes, 4);
    assert.deepEqual(await labels(), ['a', 'c']);
    // `b` is gone: the batch stops at its delete, keeping what ran before it.
    const stopped = await thread.atomically([insert('d'), remove('b'), insert('e')]);
    assert.equal(stopped.changes, 1);
    assert.deepEqual(await labels(), ['a', 'c', 'd']);
    // A unique violation in the third step: the first two are rolled back with it.
    await assert.rejects(
      thread.atomically([insert('f'), remove('a'), insert('c')]),
      (error: Error & { code?: string }) => error.code === 'SQLITE_CONSTRAINT_UNIQUE',
    );
    assert.deepEqual(await labels(), ['a', 'c', 'd']);
    // The connection is not left inside a transaction: the query builder's next one commits.
    await storage.db.transaction().execute(async (trx) => {
      await sql`insert into marks (label) values (${'g'})`.execute(trx);
    });
    assert.deepEqual(await labels(), ['a', 'c', 'd', 'g']);
  });

  it('keeps a batch sent whole out of an open transaction: it runs after the transaction ends', async () => {
    const thread = storage.sqliteThread;
    assert.ok(thread);
    let proceed: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      proceed = resolve;
    });
    const transaction = storage.db.transaction().execute(async (trx) => {
      await sql`insert into marks (label) values (${'h'})`.execute(trx);
      await gate;
      throw new Error('rolled back');
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    let ran = false;
    const batch = thread
      .atomically([{ sql: 'insert into marks (label) values (?)', parameters: ['i'] }])
      .then(() => {
        ran = true;
      });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(ran, false, 'the batch ran inside an open transaction');
    proceed();
    await assert.rejects(transaction, /rolled back/);
    await batch;
    const rows = await sql<{ label: string }>`select label from marks where label in ('h', 'i')`.execute(
      storage.db,
    );
    assert.deepEqual(
      rows.rows.map((row) => row.label),
      ['i'],
    );
  });

  it('leaves the event loop free while a statement runs', async () => {
    let ticks = 0;
    const timer = setInterval(() => {
      ticks += 1;
    }, 2);
    const started = performance.now();
    // A statement of a few hundred milliseconds: on this thread it would hold every timer back.
    const result = await sql<{ total: number }>`
      with recursive counter(n) as (select 1 union all select n + 1 from counter where n < 3000000)
      select sum(n) as total from counter`.execute(storage.db);
    const elapsed = performance.now() - started;
    clearInterval(timer);
    assert.equal(result.rows[0]?.total, (3_000_000 * 3_000_001) / 2);
    assert.ok(elapsed > 20, `the statement took only ${elapsed.toFixed(1)} ms: too short to tell`);
    assert.ok(ticks >= 3, `${ticks} timer ticks in ${elapsed.toFixed(1)} ms`);
  });

  it('refuses to stream results, with a message that says what to do', async () => {
    await assert.rejects(async () => {
      for await (const _row of storage.db.selectFrom('generations').selectAll().stream()) {
        // never reached
      }
    }, /streaming results is not supported by the SQLite thread/);
  });

  it('refuses a value the thread cannot receive without losing the connection', async () => {
    await assert.rejects(sql`select ${Symbol('no') as unknown as string} as value`.execute(storage.db));
    const row = await sql<{ one: number }>`select 1 as one`.execute(storage.db);
    assert.deepEqual(row.rows, [{ one: 1 }]);
  });
});

describe('SQLite thread lifecycle', () => {
  it('answers statements sent before close, refuses later ones, and leaves no WAL behind', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'switchyard-sqlite-thread-'));
    const path = join(directory, 'db.sqlite');
    try {
      const storage = await openStorage({ url: `sqlite:${path}`, schema: 'main', thread: true });
      const thread = storage.sqliteThread;
      assert.ok(thread);
      await sql`create table t (n integer)`.execute(storage.db);
      // Statements already sent run before the close.
      const sent = Array.from({ length: 20 }, (_, index) =>
        thread.query('insert into t (n) values (?)', [index]),
      );
      const closing = storage.close();
      await Promise.all(sent);
      await closing;
      await assert.rejects(thread.query('select 1', []), SqliteThreadStoppedError);
      await assert.rejects(
        thread.writeGenerations([], new Date().toISOString(), []),
        SqliteThreadStoppedError,
      );
      assert.equal(existsSync(`${path}-wal`), false, 'the WAL was left behind');
      const again = await openStorage({ url: `sqlite:${path}`, schema: 'main', thread: true });
      const count = await sql<{ count: number }>`select count(*) as count from t`.execute(again.db);
      assert.equal(count.rows[0]?.count, 20);
      await again.close();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('replaces a thread that stops unasked: its statements fail, the next ones run on a new thread', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'switchyard-sqlite-thread-'));
    const failures: string[] = [];
    const workers: Worker[] = [];
    try {
      const thread = await startSqliteThread({
        path: join(directory, 'db.sqlite'),
        onFailure: (message) => failures.push(message),
        onThreadStart: (worker) => workers.push(worker),
      });
      await thread.lock();
      await thread.query('create table t (n integer)', []);
      await thread.query('insert into t (n) values (?)', [7]);
      const running = thread.query(
        `with recursive c(n) as (select 1 union all select n + 1 from c where n < 50000000) select sum(n) from c`,
        [],
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      await workers[0]?.terminate();
      await assert.rejects(running, /the SQLite thread stopped: exit code 1/);
      assert.deepEqual(failures, ['exit code 1']);
      const rows = await thread.query('select n from t', []);
      assert.deepEqual(rows.rows, [{ n: 7 }]);
      assert.equal(thread.starts(), 2);
      assert.equal(workers.length, 2);
      thread.unlock();
      await thread.close();
      assert.deepEqual(failures, ['exit code 1'], 'the close was reported as a failure');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('does not let a transaction go on after its thread stopped: no half of it is committed', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'switchyard-sqlite-thread-'));
    const workers: Worker[] = [];
    try {
      const thread = await startSqliteThread({
        path: join(directory, 'db.sqlite'),
        onThreadStart: (worker) => workers.push(worker),
      });
      const db = new Kysely<{ t: { n: number } }>({ dialect: new SqliteThreadDialect(thread) });
      await sql`create table t (n integer)`.execute(db);
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await trx.insertInto('t').values({ n: 1 }).execute();
          await workers[0]?.terminate();
          await trx.insertInto('t').values({ n: 2 }).execute();
        }),
        /the SQLite thread stopped inside this transaction; it was rolled back/,
      );
      const rows = await db.selectFrom('t').selectAll().execute();
      assert.deepEqual(rows, []);
      assert.equal(thread.starts(), 2);
      await db.destroy();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('fails to open with the driver’s reason and leaves no thread running', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'switchyard-sqlite-thread-'));
    try {
      // A directory is not a database file.
      await assert.rejects(
        openStorage({ url: `sqlite:${directory}`, schema: 'main', thread: true }),
        /unable to open database file|directory/i,
      );
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('keeps a process alive while a statement runs and lets it end when idle (a CLI that forgets close)', () => {
    const directory = mkdtempSync(join(tmpdir(), 'switchyard-sqlite-thread-'));
    try {
      const script = `
        import { openStorage } from ${JSON.stringify(join(root, 'src/storage/database.ts'))};
        import { sql } from 'kysely';
        const storage = await openStorage({ url: ${JSON.stringify(`sqlite:${join(directory, 'db.sqlite')}`)}, schema: 'main', thread: true });
        const result = await sql\`select 41 + 1 as answer\`.execute(storage.db);
        console.log('answer', result.rows[0].answer);`;
      const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: root,
        encoding: 'utf8',
        timeout: 20_000,
      });
      assert.equal(child.signal, null, 'the process did not end by itself');
      assert.equal(child.status, 0, child.stderr);
      assert.match(child.stdout, /answer 42/);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

function generationRow(id: string, cost: number) {
  return {
    id,
    created_at: '2026-01-02T03:04:05.000Z',
    key_hash: 'k'.repeat(64),
    workspace_id: '00000000-0000-4000-8000-000000000001',
    api_type: 'chat-completions' as const,
    requested_model: 'openai/gpt-4o',
    model: 'openai/gpt-4o',
    provider_slug: 'openai',
    provider_name: 'OpenAI',
    endpoint_id: null,
    upstream_id: null,
    streamed: 0,
    cancelled: 0,
    is_byok: 0,
    status: 'completed' as const,
    http_status: 200,
    error_type: null,
    error_message: null,
    finish_reason: 'stop',
    native_finish_reason: 'stop',
    tokens_prompt: 1,
    tokens_completion: 1,
    tokens_cached: 0,
    tokens_cache_write: 0,
    tokens_reasoning: 0,
    tokens_completion_images: 0,
    cost_nanos: cost,
    input_cost_nanos: 0,
    output_cost_nanos: cost,
    latency_ms: 1,
    first_token_ms: 1,
    generation_time_ms: 1,
    user_id: null,
    session_id: null,
    metadata: null,
    trace: null,
    app_referer: null,
    app_title: null,
    attempts: '[]',
    member_user_id: null,
  };
}

describe('sqlite_thread setting', () => {
  let directory: string;
  before(() => {
    directory = mkdtempSync(join(tmpdir(), 'switchyard-sqlite-thread-setting-'));
  });
  after(() => rmSync(directory, { recursive: true, force: true }));

  for (const setting of ['auto', true, false] as const) {
    it(`${String(setting)}: SQLite ${setting === 'auto' ? 'in its thread with a CPU to spare' : setting ? 'in its thread' : 'on the event loop'}, and the gateway writes through it`, async () => {
      const app = await startTestApp({
        config: {
          sqlite_thread: setting,
          database_url: `sqlite:${join(directory, `${String(setting)}.db`)}`,
          database_schema: 'main',
        },
      });
      try {
        const threaded = setting === 'auto' ? usableCpus() > 1 : setting;
        assert.equal(app.services.storage.sqliteThread !== null, threaded);
        assert.equal(app.services.storage.sqlite === null, threaded);
        const created = await app.request('POST', '/api/v1/keys', {
          body: { name: `thread ${String(setting)}` },
        });
        assert.equal(created.status, 200, created.text);
        const listed = await app.request('GET', '/api/v1/keys');
        assert.equal(listed.status, 200);
        assert.ok(listed.body.data.some((key: { name: string }) => key.name === `thread ${String(setting)}`));
      } finally {
        await app.close();
      }
    });
  }
});
