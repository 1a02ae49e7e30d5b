import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';
import { createKey } from '../gateway/inference/harness.js';
import { backend, isolatedDatabase, startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * `sqlite_commit_thread` (on by default): with SQLite's connection on the event loop, the
 * generation group commit runs in a thread with a connection of its own. The event loop goes on
 * while a commit waits for the write lock another connection holds, and the records are stored all
 * the same; off, the commit runs on the event loop's connection.
 */

/** Takes the write lock of `path` in another thread; `release()` commits and closes. */
async function takeWriteLock(path: string): Promise<{ release: () => Promise<void> }> {
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    const Database = require(workerData.module);
    const db = new Database(workerData.path);
    db.exec('begin immediate');
    db.prepare("update meta set value = value where key = (select key from meta limit 1)").run();
    parentPort.postMessage('locked');
    parentPort.once('message', () => {
      db.exec('commit');
      db.close();
      parentPort.postMessage('released');
    });
  `;
  const worker = new Worker(source, {
    eval: true,
    workerData: { path, module: createRequire(import.meta.url).resolve('better-sqlite3') },
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return {
    release: async () => {
      const released = new Promise<void>((resolve) => worker.once('message', () => resolve()));
      worker.postMessage('release');
      await released;
      await worker.terminate();
    },
  };
}

const chat = (gateway: TestApp, key: string, text: string) =>
  gateway.request('POST', '/api/v1/chat/completions', {
    key,
    body: { model: 'switchyard/echo', messages: [{ role: 'user', content: text }] },
  });

describe('SQLite group commits in a thread of their own', {
  skip: backend.isPostgres || backend.sqliteThread ? 'SQLite on the event loop only' : false,
}, () => {
  const database = isolatedDatabase();
  let gateway: TestApp;
  let key: string;
  before(async () => {
    gateway = await startTestApp({ demo: true, database });
    key = (await createKey(gateway)).key;
  });
  after(async () => {
    await gateway.close();
    await database.drop();
  });

  it('a commit that waits for another writer leaves the event loop free, and the record is stored', async () => {
    const answered = await chat(gateway, key, 'before the lock');
    assert.equal(answered.status, 200, answered.text);
    await gateway.services.generations.flush();
    assert.equal(
      gateway.services.storage.commitThread?.started(),
      true,
      'the first commit started the thread',
    );

    const path = gateway.config.database_url.slice('sqlite:'.length);
    const lock = await takeWriteLock(path);
    const order: string[] = [];
    const locked = await chat(gateway, key, 'while another connection writes');
    assert.equal(locked.status, 200, locked.text);
    const id = locked.headers.get('x-generation-id');
    assert.ok(id);
    const flushed = gateway.services.generations.flush().then(() => order.push('flushed'));
    // On the event loop, the commit would hold it in SQLite's busy handler until the lock is
    // released: neither the timer nor the request below would run before it.
    await new Promise((resolve) => setTimeout(resolve, 20));
    order.push('timer');
    const models = await gateway.request('GET', '/api/v1/models?limit=1', { key: null });
    assert.equal(models.status, 200);
    order.push('answered meanwhile');
    assert.equal(gateway.services.generations.pending(), 1, 'the record waits for the lock');
    await lock.release();
    await flushed;
    assert.deepEqual(order, ['timer', 'answered meanwhile', 'flushed']);
    const record = await gateway.request('GET', `/api/v1/generation?id=${id}`, { key });
    assert.equal(record.status, 200, record.text);
    assert.equal(record.body.data.id, id);
  });

  it('records committed by the thread are in the file after the gateway closes', async () => {
    const answered = await chat(gateway, key, 'the last one');
    assert.equal(answered.status, 200, answered.text);
    const id = answered.headers.get('x-generation-id');
    // No flush: closing writes what is queued, through the thread, before the storage closes.
    await gateway.close();
    const file = new SqliteDatabase(gateway.config.database_url.slice('sqlite:'.length), { readonly: true });
    try {
      const row = file.prepare('select id, status from generations where id = ?').get(id) as
        | { id: string; status: string }
        | undefined;
      assert.deepEqual(row, { id, status: 'completed' });
      const count = file.prepare('select count(*) as n from generations').get() as { n: number };
      assert.equal(count.n, 3);
    } finally {
      file.close();
    }
  });
});

describe('SQLite group commits on the event loop (sqlite_commit_thread: false)', {
  skip: backend.isPostgres || backend.sqliteThread ? 'SQLite on the event loop only' : false,
}, () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp({ demo: true, config: { sqlite_commit_thread: false } });
  });
  after(async () => {
    await gateway.close();
  });

  it('commits on the connection of the event loop and stores the record', async () => {
    assert.equal(gateway.services.storage.commitThread, null);
    const { key } = await createKey(gateway);
    const answered = await chat(gateway, key, 'hello');
    assert.equal(answered.status, 200, answered.text);
    await gateway.services.generations.flush();
    const record = await gateway.request(
      'GET',
      `/api/v1/generation?id=${answered.headers.get('x-generation-id')}`,
      { key },
    );
    assert.equal(record.status, 200, record.text);
    assert.equal(record.body.data.status, 'completed');
  });
});
