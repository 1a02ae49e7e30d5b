import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { openStorage } from '../../src/storage/database.js';
import { BACKSTOP_PAGES, startSqliteCheckpointer } from '../../src/storage/sqlite-checkpointer.js';

const directory = mkdtempSync(join(tmpdir(), 'switchyard-checkpointer-'));
after(() => rmSync(directory, { recursive: true, force: true }));

async function waitFor(what: string, check: () => boolean, limitMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const autocheckpoint = (database: SqliteDatabase.Database) =>
  database.pragma('wal_autocheckpoint', { simple: true }) as number;

describe('SQLite checkpoint thread', () => {
  it('checkpoints the WAL from its thread while commits never do, and leaves no WAL after close', async () => {
    const path = join(directory, 'background.db');
    const storage = await openStorage({ url: `sqlite:${path}`, schema: 'main', backgroundCheckpoint: true });
    const database = storage.sqlite as SqliteDatabase.Database;
    const checkpointer = storage.checkpointer;
    assert.ok(checkpointer);
    await checkpointer.ready;
    assert.equal(autocheckpoint(database), BACKSTOP_PAGES, 'commits checkpoint only past the backstop');
    database.exec('create table filler (id integer primary key, body blob not null)');
    const insert = database.prepare('insert into filler (body) values (?)');
    const page = Buffer.alloc(4096, 7);
    // 2,000 pages of commits, more than the 1,000 at which a commit would checkpoint by itself.
    for (let batch = 0; batch < 20; batch += 1) {
      database.transaction(() => {
        for (let row = 0; row < 100; row += 1) insert.run(page);
      })();
    }
    await waitFor('a checkpoint by the thread', () =>
      checkpointer.recent().some((done) => done.checkpointed > 0),
    );
    await waitFor('the rows copied into the database file', () => statSync(path).size > 2_000 * 4096);
    await storage.close();
    assert.equal(existsSync(`${path}-wal`), false, 'the last connection removed the WAL');
    const reopened = new SqliteDatabase(path, { readonly: true });
    try {
      assert.deepEqual(reopened.prepare('select count(*) as n from filler').get(), { n: 2_000 });
    } finally {
      reopened.close();
    }
  });

  it('keeps the WAL bounded under a stream of small commits (the backstop restarts it)', async () => {
    const path = join(directory, 'stream.db');
    const database = new SqliteDatabase(path);
    database.pragma('journal_mode = WAL');
    database.pragma('synchronous = NORMAL');
    database.exec('create table ticks (id integer primary key, at real not null)');
    const checkpointer = startSqliteCheckpointer({ database, path, intervalMs: 20, backstopPages: 100 });
    try {
      await checkpointer.ready;
      const insert = database.prepare('insert into ticks (at) values (?)');
      let largest = 0;
      const until = performance.now() + 1_500;
      // One commit per turn of the event loop, as the gateway's writer does, while the thread
      // checkpoints alongside: without the backstop the WAL may never restart at this rate.
      while (performance.now() < until) {
        for (let index = 0; index < 20; index += 1) insert.run(performance.now());
        largest = Math.max(largest, statSync(`${path}-wal`).size);
        await new Promise((resolve) => setImmediate(resolve));
      }
      // The backstop is 100 pages (400 KB); a commit that meets it while the thread holds the
      // checkpoint lock skips its turn, so the WAL overshoots: by how much depends on how the two
      // threads are scheduled (8.8 MB once in CI, the suite running two files on two busy cores).
      // Without a backstop it grew past 250 MB in this loop.
      assert.ok(largest < 32 * 1024 * 1024, `the WAL reached ${largest} bytes`);
    } finally {
      await checkpointer.stop();
      database.close();
    }
  });

  it('gives checkpoints back to commits when stopped', async () => {
    const path = join(directory, 'stopped.db');
    const storage = await openStorage({ url: `sqlite:${path}`, schema: 'main', backgroundCheckpoint: true });
    try {
      const database = storage.sqlite as SqliteDatabase.Database;
      await storage.checkpointer?.ready;
      assert.equal(autocheckpoint(database), BACKSTOP_PAGES);
      await storage.checkpointer?.stop();
      assert.equal(autocheckpoint(database), 1000);
    } finally {
      await storage.close();
    }
  });

  it('stops cleanly when stopped before it started (the process waits for it)', async () => {
    const path = join(directory, 'early.db');
    const database = new SqliteDatabase(path);
    database.pragma('journal_mode = WAL');
    try {
      // Nothing else keeps this test's event loop alive: a thread let go too early would end the run.
      await startSqliteCheckpointer({ database, path }).stop();
      assert.equal(autocheckpoint(database), 1000);
    } finally {
      database.close();
    }
  });

  it('reports a thread that cannot open the file and leaves checkpoints to commits', async () => {
    const path = join(directory, 'main.db');
    const database = new SqliteDatabase(path);
    database.pragma('journal_mode = WAL');
    const failures: string[] = [];
    const checkpointer = startSqliteCheckpointer({
      database,
      path: join(directory, 'missing', 'nothing.db'),
      onFailure: (message) => failures.push(message),
    });
    try {
      await checkpointer.ready;
      await waitFor('the failure reported', () => failures.length > 0);
      assert.equal(autocheckpoint(database), 1000);
    } finally {
      await checkpointer.stop();
      database.close();
    }
  });

  it('is not started unless asked', async () => {
    const storage = await openStorage({ url: `sqlite:${join(directory, 'plain.db')}`, schema: 'main' });
    try {
      assert.equal(storage.checkpointer, null);
      assert.equal(autocheckpoint(storage.sqlite as SqliteDatabase.Database), 1000);
    } finally {
      await storage.close();
    }
  });
});
