import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { type Generated, Kysely, SqliteDialect, sql } from 'kysely';
import { cachingStatements, STATEMENT_CACHE_SIZE } from '../../src/storage/sqlite-statements.js';

function open() {
  const connection = new SqliteDatabase(':memory:');
  connection.exec('create table items (id integer primary key, name text not null)');
  return connection;
}

describe('cachingStatements', () => {
  it('hands out the prepared statement of a text it has seen', () => {
    const database = cachingStatements(open(), STATEMENT_CACHE_SIZE);
    const first = database.prepare('select * from items where id = ?');
    assert.equal(database.prepare('select * from items where id = ?'), first);
    assert.notEqual(database.prepare('select * from items where name = ?'), first);
    assert.equal(database.cachedStatements(), 2);
  });

  it('drops the least recently used text past its capacity', () => {
    const database = cachingStatements(open(), 2);
    const a = database.prepare('select 1');
    const b = database.prepare('select 2');
    assert.equal(database.prepare('select 1'), a); // now the most recent
    database.prepare('select 3'); // evicts "select 2"
    assert.equal(database.cachedStatements(), 2);
    assert.equal(database.prepare('select 1'), a);
    assert.notEqual(database.prepare('select 2'), b);
  });

  it('gives a fresh statement while the cached one is still being iterated', () => {
    const connection = open();
    connection.exec("insert into items (name) values ('a'), ('b'), ('c')");
    const database = cachingStatements(connection, STATEMENT_CACHE_SIZE);
    const text = 'select name from items order by id';
    const iterator = database.prepare(text).iterate([]);
    assert.deepEqual(iterator.next().value, { name: 'a' });
    // The same text again, mid-iteration: runs on its own statement instead of throwing "busy".
    assert.deepEqual(database.prepare(text).all([]), [{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    assert.deepEqual(iterator.next().value, { name: 'b' });
    iterator.return?.();
    assert.equal(database.prepare(text).busy, false);
  });

  it('serves Kysely: reads, writes, streams and close', async () => {
    const connection = open();
    const database = cachingStatements(connection, STATEMENT_CACHE_SIZE);
    const db = new Kysely<{ items: { id: Generated<number>; name: string } }>({
      dialect: new SqliteDialect({ database }),
    });
    for (const name of ['x', 'y', 'z']) await db.insertInto('items').values({ name }).execute();
    const byName = (name: string) => db.selectFrom('items').select('id').where('name', '=', name).execute();
    assert.deepEqual(await byName('y'), [{ id: 2 }]);
    assert.deepEqual(await byName('z'), [{ id: 3 }], 'the cached statement binds new parameters');
    // Kysely holds its one SQLite connection for a stream, so nothing interleaves with it there; a
    // stream left early still frees its (cached) statement for the next run of the same text.
    const names = () => db.selectFrom('items').select('name').orderBy('id');
    for await (const row of names().stream()) {
      assert.equal(row.name, 'x');
      break;
    }
    // Leaving the loop reset the statement: the same text is served from the cache again, not busy.
    const streamed = database.prepare(names().compile().sql);
    assert.equal(streamed.busy, false);
    assert.equal(database.prepare(names().compile().sql), streamed);
    assert.deepEqual(
      (await names().execute()).map((row) => row.name),
      ['x', 'y', 'z'],
    );
    const { rows } = await sql<{ n: number }>`select count(*) as n from items`.execute(db);
    assert.equal(rows[0]?.n, 3);
    await db.destroy();
    assert.equal(connection.open, false);
  });
});
