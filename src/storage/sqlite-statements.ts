import type { Database as SqliteConnection, Statement } from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/** Distinct SQL texts kept prepared; `in (…)` lists of every length make the set open-ended. */
export const STATEMENT_CACHE_SIZE = 256;

/**
 * The settings of every connection to the embedded database: WAL (readers never wait for the
 * writer), commits synced at checkpoints only, a lock wait of up to 5 s, foreign keys enforced. Also
 * run in the SQLite thread from its source text: it may use only its parameter.
 */
export function configureSqliteConnection(connection: SqliteConnection): void {
  connection.pragma('journal_mode = WAL');
  connection.pragma('synchronous = NORMAL');
  connection.pragma('busy_timeout = 5000');
  connection.pragma('foreign_keys = ON');
}

/** What Kysely's SQLite dialect needs of a database, plus the cache's size for tests. */
export interface CachingSqliteDatabase extends SqliteDatabase {
  prepare(sql: string): Statement;
  cachedStatements(): number;
}

/**
 * The connection as Kysely's SQLite dialect sees it, with its prepared statements kept for reuse.
 * Kysely prepares every query anew, and better-sqlite3's `prepare` (parse and plan the SQL, build a
 * statement object) cost more than running the small statements the outbox worker issues hundreds of
 * times a second. Least recently used texts are dropped past `capacity`. A statement still being
 * iterated (Kysely's `stream()`) is `busy` and cannot run twice at once: a second user of the same
 * text then gets a fresh, uncached one. SQLite re-prepares a cached statement itself after a schema
 * change (a migration). It also runs in the SQLite thread, from its source text (sqlite-thread.ts):
 * it may use only its parameters and globals.
 */
export function cachingStatements(connection: SqliteConnection, capacity: number): CachingSqliteDatabase {
  const cache = new Map<string, Statement>();
  return {
    prepare(sql: string) {
      const cached = cache.get(sql);
      if (cached !== undefined) {
        if (cached.busy) return connection.prepare(sql);
        // Most recently used last: the map's first key is the one to drop.
        cache.delete(sql);
        cache.set(sql, cached);
        return cached;
      }
      const statement = connection.prepare(sql);
      cache.set(sql, statement);
      if (cache.size > capacity) {
        const oldest = cache.keys().next().value;
        if (oldest !== undefined) cache.delete(oldest);
      }
      return statement;
    },
    close() {
      cache.clear();
      connection.close();
    },
    cachedStatements: () => cache.size,
  };
}
