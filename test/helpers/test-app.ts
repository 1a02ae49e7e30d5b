import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import type { Config } from '../../src/config/config-schema.js';
import { loadConfig } from '../../src/config/load-config.js';
import type { Clock } from '../../src/platform/clock.js';

/** Which backends this run tests against: SQLite always, PostgreSQL and Redis when their URLs are set. */
export const backend = {
  databaseUrl: process.env.DATABASE_URL ?? null,
  redisUrl: process.env.REDIS_URL ?? null,
  isPostgres: (process.env.DATABASE_URL ?? '').startsWith('postgres'),
  /** `SWITCHYARD_TEST_SQLITE_THREAD=1`: every gateway keeps SQLite in its thread (`sqlite_thread`). */
  sqliteThread: process.env.SWITCHYARD_TEST_SQLITE_THREAD === '1',
};

export interface IsolatedDatabase {
  /** Spread into the config; on PostgreSQL it carries the master key every instance on it must share. */
  settings: { database_url: string; database_schema: string; master_key?: string };
  /** Environment variables that point a child process (the CLI) at the same database. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

/** A database of its own for one test: a temp SQLite file, or a fresh schema on the PostgreSQL server. */
export function isolatedDatabase(): IsolatedDatabase {
  if (backend.isPostgres && backend.databaseUrl) {
    const url = backend.databaseUrl;
    const schema = `t_${randomBytes(6).toString('hex')}`;
    // PostgreSQL needs a configured master key (there is no file to generate it into); instances
    // sharing this database share it. SQLite tests use the generated key file beside the database.
    const masterKey = randomBytes(32).toString('hex');
    return {
      settings: { database_url: url, database_schema: schema, master_key: masterKey },
      env: { DATABASE_URL: url, DATABASE_SCHEMA: schema, SWITCHYARD_MASTER_KEY: masterKey },
      async drop() {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await client.end();
      },
    };
  }
  const directory = mkdtempSync(join(tmpdir(), 'switchyard-test-'));
  const url = `sqlite:${join(directory, 'switchyard.db')}`;
  return {
    settings: { database_url: url, database_schema: 'public' },
    env: { DATABASE_URL: url },
    async drop() {
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

export const newSecret = () => `sk-sy-v1-${randomBytes(32).toString('hex')}`;

export interface ClientResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface TestApp {
  url: string;
  config: Config;
  services: Awaited<ReturnType<typeof buildApp>>['services'];
  managementKey: string;
  database: IsolatedDatabase;
  /** The listening HTTP server (tests that watch requests and responses as the server sees them). */
  server: Server;
  request<T = any>(
    method: string,
    path: string,
    options?: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<ClientResponse<T>>;
  close(): Promise<void>;
}

/**
 * Starts a real listening gateway on an ephemeral port with its own database (and its own Redis
 * prefix when Redis is configured). `request` speaks to it over HTTP like any client would.
 */
export async function startTestApp(
  options: {
    config?: Record<string, unknown>;
    clock?: Clock;
    database?: IsolatedDatabase;
    redisPrefix?: string;
    /**
     * Keep the built-in demo provider in the catalogue. Off by default here, so catalogue tests
     * compare the gateway with the bundled snapshot alone; inference tests turn it on.
     */
    demo?: boolean;
  } = {},
): Promise<TestApp> {
  const database = options.database ?? isolatedDatabase();
  const managementKey = newSecret();
  const config = loadConfig(
    {},
    {
      port: 0,
      log_level: 'silent',
      bootstrap_key: managementKey,
      redis_url: backend.redisUrl,
      redis_prefix: options.redisPrefix ?? `switchyard-test-${randomBytes(6).toString('hex')}:`,
      // Forced either way (the default, auto, follows the host's CPUs): the plain suite keeps SQLite
      // on the event loop and SWITCHYARD_TEST_SQLITE_THREAD=1 in its thread, so both paths stay tested.
      sqlite_thread: backend.sqliteThread,
      ...database.settings,
      ...options.config,
      // The worker runs on the request thread, where the broadcast tests were written to observe it
      // (an injected clock reaches it only there), unless a test asks for its own thread
      // (test/broadcast/worker-thread.test.ts; gateways started as processes run the default).
      broadcast: {
        worker_thread: false,
        ...(options.config?.broadcast as Record<string, unknown> | undefined),
      },
      providers: {
        ...(options.demo ? {} : { switchyard: { enabled: false } }),
        ...(options.config?.providers as Record<string, unknown> | undefined),
      },
    },
  );
  const { app, services } = await buildApp({ config, ...(options.clock ? { clock: options.clock } : {}) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  const url = `http://127.0.0.1:${address.port}`;
  let closed = false;
  return {
    url,
    config,
    services,
    managementKey,
    database,
    server: app.server,
    async request(method, path, requestOptions = {}) {
      const headers: Record<string, string> = { ...requestOptions.headers };
      const key = requestOptions.key === undefined ? managementKey : requestOptions.key;
      if (key !== null) headers.authorization ??= `Bearer ${key}`;
      let body: string | undefined;
      if (requestOptions.rawBody !== undefined) body = requestOptions.rawBody;
      else if (requestOptions.body !== undefined) {
        body = JSON.stringify(requestOptions.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(`${url}${path}`, { method, headers, body });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // Not JSON (metrics, RSS, HTML): the text is the body.
      }
      return { status: response.status, headers: response.headers, body: parsed as any, text };
    },
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      if (!options.database) await database.drop();
    },
  };
}

/** Asserts the spec 2.1 envelope with HTTP status = error.code, and returns the message. */
export function expectError(response: ClientResponse, status: number): string {
  if (response.status !== status) {
    throw new Error(`expected status ${status}, got ${response.status}: ${response.text}`);
  }
  const error = response.body?.error;
  if (!error || error.code !== status || typeof error.message !== 'string' || error.message.length === 0) {
    throw new Error(`expected an error envelope with code ${status}, got ${response.text}`);
  }
  if (/\n\s+at /.test(response.text)) throw new Error(`a stack trace leaked: ${response.text}`);
  return error.message;
}
