import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { backend, startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * A second connection writes to the gateway's SQLite file (the broadcast worker's thread, or the CLI
 * in another process). A transaction that reads before it writes must wait for that writer, not
 * fail: begun deferred, its upgrade to a write fails at once (SQLITE_BUSY or SQLITE_BUSY_SNAPSHOT)
 * without calling the busy handler; begun immediate, it waits for the lock.
 */

/** Holds the write lock of `path` from another thread for `ms`, after a write of its own. */
function holdWriteLock(path: string, ms: number): Promise<{ locked: Promise<void>; done: Promise<void> }> {
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    const Database = require(workerData.module);
    const db = new Database(workerData.path);
    db.pragma('busy_timeout = 5000');
    db.exec('begin immediate');
    db.prepare("update meta set value = value where key = (select key from meta limit 1)").run();
    parentPort.postMessage('locked');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.ms);
    db.exec('commit');
    db.close();
    parentPort.postMessage('done');
  `;
  const worker = new Worker(source, {
    eval: true,
    workerData: { path, ms, module: createRequire(import.meta.url).resolve('better-sqlite3') },
  });
  let locked: () => void = () => undefined;
  let done: () => void = () => undefined;
  const result = {
    locked: new Promise<void>((resolve) => {
      locked = resolve;
    }),
    done: new Promise<void>((resolve) => {
      done = resolve;
    }),
  };
  worker.on('message', (message) => (message === 'locked' ? locked() : done()));
  worker.on('error', (error) => {
    throw error;
  });
  return Promise.resolve(result);
}

describe('SQLite with a second writer', { skip: backend.isPostgres ? 'SQLite only' : false }, () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(async () => {
    await gateway.close();
  });

  it('a workspace budget set while another connection holds the write lock waits for it and succeeds', async () => {
    const path = gateway.config.database_url.slice('sqlite:'.length);
    const workspaces = await gateway.request('GET', '/api/v1/workspaces/default');
    assert.equal(workspaces.status, 200, workspaces.text);
    const id = workspaces.body.data.id as string;
    const holder = await holdWriteLock(path, 300);
    await holder.locked;
    const started = Date.now();
    // Reads the workspace row first (lockWorkspaceRow), then writes the budget.
    const created = await gateway.request('PUT', `/api/v1/workspaces/${id}/budgets/monthly`, {
      body: { limit_usd: 100 },
    });
    assert.equal(created.status, 200, created.text);
    assert.ok(Date.now() - started >= 200, 'it waited for the other writer');
    await holder.done;
  });
});
