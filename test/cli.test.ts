import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { childEnvironment, freePort, waitForHealth } from './helpers/serve-process.js';
import {
  type IsolatedDatabase,
  isolatedDatabase,
  newSecret,
  startTestApp,
  type TestApp,
} from './helpers/test-app.js';

const root = fileURLToPath(new URL('..', import.meta.url));
/** However long a CLI run may take before the test counts it as hung and kills it. */
const SPAWN_TIMEOUT_MS = 20_000;

interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const running = new Set<ChildProcess>();

function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

/** The child's environment: the database under test, quiet logs, and no stray settings from the parent. */
function childEnv(
  database: IsolatedDatabase,
  extra: Record<string, string> = {},
  options: { keepRedis?: boolean } = {},
): NodeJS.ProcessEnv {
  const env = childEnvironment({ LOG_LEVEL: 'silent' });
  if (!options.keepRedis) delete env.REDIS_URL;
  // The database's own settings come last: on PostgreSQL they include its SWITCHYARD_MASTER_KEY.
  return { ...env, ...database.env, ...extra };
}

/** Starts `node --import tsx src/main.ts <args>`; `result` settles when it exits, or rejects after the timeout. */
function spawnCli(
  args: string[],
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; result: Promise<CliResult> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const result = new Promise<CliResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `switchyard ${args.join(' ')} did not exit within ${SPAWN_TIMEOUT_MS} ms\n${stdout}\n${stderr}`,
        ),
      );
    }, SPAWN_TIMEOUT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      running.delete(child);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, result };
}

const cli = (args: string[], env: NodeJS.ProcessEnv) => spawnCli(args, env).result;

function describeRun(run: CliResult): string {
  return `exit ${run.code} (signal ${run.signal})\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
}

function assertExit(run: CliResult, code: number): void {
  assert.equal(run.code, code, describeRun(run));
}

/** Parses the secret and hash that `keys create` prints. */
function createdKey(run: CliResult): { key: string; hash: string } {
  assertExit(run, 0);
  const key = /^key: {2}(sk-sy-v1-[0-9a-f]{64})$/m.exec(run.stdout)?.[1];
  const hash = /^hash: ([0-9a-f]{64})$/m.exec(run.stdout)?.[1];
  assert.ok(key, `no "key:  sk-sy-v1-…" line in:\n${run.stdout}`);
  assert.ok(hash, `no "hash: <64 hex>" line in:\n${run.stdout}`);
  return { key, hash };
}

interface RawResponse {
  status: number;
  headers: string;
  body: string;
}

/** Everything a raw socket receives, with a way to wait until it holds what the test expects. */
function record(socket: Socket) {
  let received = Buffer.alloc(0);
  let ended = false;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const waiter of waiters) waiter();
  };
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    wake();
  });
  socket.on('end', () => {
    ended = true;
    wake();
  });
  socket.on('close', () => {
    ended = true;
    wake();
  });
  // Errors show up as an early end; this keeps a late reset from crashing the runner.
  socket.on('error', () => {});
  return {
    get ended() {
      return ended;
    },
    /** Resolves with `parse`'s answer once it gives one; rejects if the socket ends or time runs out first. */
    until<T>(what: string, parse: (bytes: Buffer) => T | undefined, timeoutMs: number): Promise<T> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`no ${what} within ${timeoutMs} ms`)), timeoutMs);
        const check = () => {
          const found = parse(received);
          if (found !== undefined) finish(null, found);
          else if (ended) finish(new Error(`connection closed before ${what}`));
        };
        const finish = (error: Error | null, value?: T) => {
          clearTimeout(timer);
          waiters.delete(check);
          if (error) reject(new Error(`${error.message}; received:\n${received.toString('utf8')}`));
          else resolve(value as T);
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/** The final (non-1xx) response in `bytes`, once its headers and Content-Length body are complete. */
function finalResponse(bytes: Buffer): RawResponse | undefined {
  let rest = bytes;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const headers = rest.subarray(0, end).toString('utf8');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(headers)?.[1]);
    rest = rest.subarray(end + 4);
    if (status >= 100 && status < 200) continue;
    const length = Number(/^content-length:\s*(\d+)\r?$/im.exec(headers)?.[1] ?? Number.NaN);
    if (Number.isNaN(length) || rest.length < length) return undefined;
    return { status, headers, body: rest.subarray(0, length).toString('utf8') };
  }
}

/** Resolves with the error code of a connection attempt, or 'connected'. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

describe('the switchyard CLI', () => {
  after(killAll);

  it('--help prints the usage with every command and exits 0', async () => {
    const database = isolatedDatabase();
    try {
      const run = await cli(['--help'], childEnv(database));
      assertExit(run, 0);
      assert.match(run.stdout, /^Usage: switchyard <command>/m);
      for (const command of ['serve', 'migrate', 'keys create', 'keys list', 'credits add']) {
        assert.match(run.stdout, new RegExp(`^ {2}${command}\\b`, 'm'), `help lacks "${command}"`);
      }
      assert.equal(run.stderr, '');
    } finally {
      await database.drop();
    }
  });

  describe('keys and credits against one database', () => {
    let database: IsolatedDatabase;
    let gateway: TestApp | undefined;
    let management: { key: string; hash: string };
    let inference: { key: string; hash: string };

    before(() => {
      database = isolatedDatabase();
    });
    after(async () => {
      killAll();
      await gateway?.close();
      await database.drop();
    });

    /** The gateway on the same database, started once the CLI has created the keys. */
    const app = async () => {
      gateway ??= await startTestApp({ database });
      return gateway;
    };

    it('migrate brings the database up to date and exits 0', async () => {
      const run = await cli(['migrate'], childEnv(database));
      assertExit(run, 0);
      assert.match(run.stdout, /is up to date/);
      // A second run on the migrated database is a no-op that also succeeds.
      assertExit(await cli(['migrate'], childEnv(database)), 0);
    });

    it('migrate sets up a second database (a second schema on PostgreSQL) while this one exists', async () => {
      const second = isolatedDatabase();
      try {
        const run = await cli(['migrate'], childEnv(second));
        assertExit(run, 0);
        const list = await cli(['keys', 'list'], childEnv(second));
        assertExit(list, 0);
        assert.equal(
          list.stdout.trim(),
          ['hash', 'kind', 'state', 'usage_usd', 'limit_usd', 'name'].join('\t'),
        );
      } finally {
        await second.drop();
      }
    });

    it('keys create --management prints a secret that the gateway accepts as a management key', async () => {
      const run = await cli(['keys', 'create', '--management', '--name', 'admin'], childEnv(database));
      management = createdKey(run);
      assert.match(run.stdout, /created management key "admin"/);

      const gateway = await app();
      const current = await gateway.request('GET', '/api/v1/key', { key: management.key });
      assert.equal(current.status, 200, current.text);
      assert.equal(current.body.data.is_management_key, true);
      assert.equal(current.body.data.name, 'admin');
      assert.equal(current.body.data.hash, management.hash);
      // It can manage keys: listing them works.
      const list = await gateway.request('GET', '/api/v1/keys', { key: management.key });
      assert.equal(list.status, 200, list.text);
    });

    it('keys create --name app --limit 5 creates an inference key with that limit', async () => {
      const run = await cli(['keys', 'create', '--name', 'app', '--limit', '5'], childEnv(database));
      inference = createdKey(run);
      assert.match(run.stdout, /created inference key "app"/);

      const gateway = await app();
      const current = await gateway.request('GET', '/api/v1/key', { key: inference.key });
      assert.equal(current.status, 200, current.text);
      assert.equal(current.body.data.is_management_key, false);
      assert.equal(current.body.data.limit, 5);
      assert.equal(current.body.data.limit_remaining, 5);
      assert.equal(current.body.data.hash, inference.hash);
      // An inference key cannot manage keys.
      const list = await gateway.request('GET', '/api/v1/keys', { key: inference.key });
      assert.equal(list.status, 403, list.text);
    });

    it('keys list shows both keys with their kinds', async () => {
      const run = await cli(['keys', 'list'], childEnv(database));
      assertExit(run, 0);
      const lines = run.stdout.trim().split('\n');
      assert.deepEqual(lines[0]?.split('\t'), ['hash', 'kind', 'state', 'usage_usd', 'limit_usd', 'name']);
      const row = (hash: string) => lines.find((line) => line.startsWith(`${hash}\t`))?.split('\t');
      assert.deepEqual(row(management.hash), [management.hash, 'management', 'active', '0', '-', 'admin']);
      assert.deepEqual(row(inference.hash), [inference.hash, 'inference', 'active', '0', '5', 'app']);
    });

    it('credits add 12.5 grants credits that GET /credits reports', async () => {
      const run = await cli(['credits', 'add', '12.5'], childEnv(database));
      assertExit(run, 0);
      assert.match(run.stdout, /added \$12\.5; total credits now \$12\.5/);

      const gateway = await app();
      const credits = await gateway.request('GET', '/api/v1/credits');
      assert.equal(credits.status, 200, credits.text);
      assert.equal(credits.body.data.total_credits, 12.5);
      assert.equal(credits.body.data.total_usage, 0);
    });
  });

  describe('bad usage', () => {
    let database: IsolatedDatabase;
    const cases: Array<{ args: string[]; message: RegExp }> = [
      { args: ['keys', 'create'], message: /keys create needs --name/ },
      {
        args: ['keys', 'create', '--name', 'x', '--limit-reset', 'hourly'],
        message: /--limit-reset must be daily, weekly or monthly/,
      },
      {
        args: ['keys', 'create', '--name', 'x', '--limit', 'lots'],
        message: /--limit must be a non-negative number/,
      },
      { args: ['keys'], message: /keys needs a subcommand/ },
      {
        args: ['credits', 'add', 'abc'],
        message: /credits add <usd> must be a non-negative number of USD, got "abc"/,
      },
      { args: ['credits', 'add', '--', '-3'], message: /must be a non-negative number of USD, got "-3"/ },
      { args: ['credits', 'add', '0'], message: /credits add <usd> must be greater than 0/ },
      { args: ['credits', 'add'], message: /must be a non-negative number of USD, got ""/ },
      { args: ['credits', 'add', '-3'], message: /Unknown option '-3'/ },
      { args: ['frobnicate'], message: /unknown command "frobnicate"/ },
      // The API's rules hold on the command line too.
      {
        args: ['keys', 'create', '--name', 'n'.repeat(201)],
        message: /--name must be 1 to 200 characters, not blank, without NUL, got 201 characters/,
      },
      { args: ['keys', 'create', '--name', '   '], message: /--name must be 1 to 200 characters, not blank/ },
      {
        args: ['keys', 'create', '--name', 'x', '--limit', '0.0000000001'],
        message: /--limit must be 0 or at least 0\.000000001 \(one nano-dollar\)/,
      },
      {
        args: ['credits', 'add', '0.0000000001'],
        message: /credits add <usd> must be at least 0\.000000001 \(one nano-dollar\)/,
      },
      // What a command does not take is refused, not ignored.
      { args: ['keys', 'list', 'extra'], message: /keys list takes no argument "extra"/ },
      { args: ['keys', 'list', '--name', 'x'], message: /keys list takes no option --name/ },
      { args: ['credits', 'add', '1', '2'], message: /credits add takes no argument "2"/ },
      { args: ['migrate', 'now'], message: /migrate takes no argument "now"/ },
      { args: ['serve', '--management'], message: /serve takes no option --management/ },
    ];
    const runs = new Map<string, CliResult>();
    before(async () => {
      database = isolatedDatabase();
      assertExit(await cli(['migrate'], childEnv(database)), 0);
      // Each run is a cold start of node + tsx; a few at a time keeps this suite short.
      const pending = [...cases];
      const worker = async () => {
        for (let next = pending.shift(); next; next = pending.shift()) {
          runs.set(next.args.join(' '), await cli(next.args, childEnv(database)));
        }
      };
      await Promise.all([worker(), worker(), worker()]);
    });
    after(async () => {
      killAll();
      await database.drop();
    });

    for (const { args, message } of cases) {
      it(`\`${args.join(' ')}\` exits 2 with a message and a pointer to --help`, async () => {
        const run = runs.get(args.join(' '));
        assert.ok(run, 'the command did not run');
        assertExit(run, 2);
        assert.match(run.stderr, message);
        assert.match(run.stderr, /Run "switchyard --help" for usage/);
        assert.equal(run.stdout, '');
      });
    }

    it('the refused commands changed nothing', async () => {
      const list = await cli(['keys', 'list'], childEnv(database));
      assertExit(list, 0);
      assert.equal(list.stdout.trim().split('\n').length, 1, `expected only the header:\n${list.stdout}`);
      const gateway = await startTestApp({ database });
      try {
        const credits = await gateway.request('GET', '/api/v1/credits');
        assert.equal(credits.status, 200, credits.text);
        assert.equal(credits.body.data.total_credits, 0);
      } finally {
        await gateway.close();
      }
    });

    it('an invalid configuration exits 1 and names the setting', async () => {
      const run = await cli(['migrate'], childEnv(database, { PORT: 'abc' }));
      assertExit(run, 1);
      assert.match(run.stderr, /^switchyard: PORT: must be an integer, got "abc"/m);
      assert.doesNotMatch(run.stderr, /\n\s+at /, 'a stack trace leaked');
    });

    it('keys and credits refuse a SQLite database that does not exist, creating nothing', async () => {
      const directory = mkdtempSync(join(tmpdir(), 'switchyard-cli-'));
      try {
        const missing = join(directory, 'typo', 'switchyard.db');
        for (const args of [
          ['keys', 'list'],
          ['credits', 'add', '5'],
        ]) {
          const run = await cli(args, childEnv(database, { DATABASE_URL: `sqlite:${missing}` }));
          assertExit(run, 1);
          assert.match(run.stderr, /no database at .*typo\/switchyard\.db \(DATABASE_URL\)/);
          assert.match(run.stderr, /run "switchyard migrate"/);
        }
        assert.deepEqual(readdirSync(directory), [], 'no directory, database or master key was made');
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    });

    it('a missing config file exits 1 and names its path', async () => {
      const run = await cli(
        ['keys', 'list'],
        childEnv(database, { SWITCHYARD_CONFIG: '/nonexistent/switchyard.yaml' }),
      );
      assertExit(run, 1);
      assert.match(run.stderr, /cannot read config file \/nonexistent\/switchyard\.yaml/);
    });
  });

  describe('serve', () => {
    let database: IsolatedDatabase;
    before(() => {
      database = isolatedDatabase();
    });
    after(async () => {
      killAll();
      await database.drop();
    });

    it('exits 1 with the error when the port is taken, instead of idling on open connections', async () => {
      const { createServer } = await import('node:net');
      const blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const port = (blocker.address() as { port: number }).port;
      try {
        const run = await cli(
          ['serve'],
          childEnv(
            database,
            { PORT: String(port), HOST: '127.0.0.1', REDIS_PREFIX: `cli-test-${port}:` },
            { keepRedis: true },
          ),
        );
        assertExit(run, 1);
        assert.match(run.stderr, /EADDRINUSE/);
      } finally {
        await new Promise<void>((resolve) => blocker.close(() => resolve()));
      }
    });

    it('serves with the young generation the start-up collection left, not the one starting grew', async () => {
      // Starting (and Fastify's ready step: route schemas compiled, hooks run) grows V8's new space
      // to 32 MB; young_generation_mb only stops growth, so unless the start-up collection comes
      // after all of it, the gateway serves with a young generation four times its cap.
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const { child, result } = spawnCli(
        ['serve'],
        childEnv(database, {
          PORT: String(port),
          HOST: '127.0.0.1',
          REDIS_PREFIX: `switchyard-test-${randomBytes(6).toString('hex')}:`,
        }),
      );
      const exited = result.then(
        (run) => ({ run, error: null }),
        (error: Error) => ({ run: null, error }),
      );
      await waitForHealth(url, child, undefined, SPAWN_TIMEOUT_MS);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      child.kill('SIGTERM');
      const outcome = await exited;
      if (outcome.error) throw outcome.error;
      assert.ok(outcome.run);
      assertExit(outcome.run, 0);
      const newSpace = /^switchyard_nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)$/m.exec(metrics);
      assert.ok(newSpace, `no new-space size in /metrics:\n${metrics.slice(0, 2000)}`);
      const defaultCapBytes = 8 * 1_048_576;
      assert.ok(
        Number(newSpace[1]) <= defaultCapBytes,
        `the young generation is ${Number(newSpace[1]) / 1_048_576} MB, over its 8 MB cap`,
      );
    });

    it('on SIGTERM finishes the in-flight request, exits 0 and stops listening', async () => {
      const port = await freePort();
      const bootstrap = newSecret();
      const url = `http://127.0.0.1:${port}`;
      const { child, result } = spawnCli(
        ['serve'],
        childEnv(
          database,
          {
            PORT: String(port),
            HOST: '127.0.0.1',
            SWITCHYARD_BOOTSTRAP_KEY: bootstrap,
            REDIS_PREFIX: `switchyard-test-${randomBytes(6).toString('hex')}:`,
          },
          { keepRedis: true },
        ),
      );
      // Surface a hang or an early exit as a failure of this test rather than an unhandled rejection.
      const exited = result.then(
        (run) => ({ run, error: null }),
        (error: Error) => ({ run: null, error }),
      );
      await waitForHealth(url, child, undefined, SPAWN_TIMEOUT_MS);

      const socket = createConnection({ port, host: '127.0.0.1' });
      await once(socket, 'connect');
      const received = record(socket);
      const body = JSON.stringify({ name: 'in-flight', limit: 7 });
      const half = Math.floor(body.length / 2);
      socket.write(
        [
          'POST /api/v1/keys HTTP/1.1',
          `Host: 127.0.0.1:${port}`,
          `Authorization: Bearer ${bootstrap}`,
          'Content-Type: application/json',
          `Content-Length: ${Buffer.byteLength(body)}`,
          // The server answers "100 Continue" once it has read the headers: from then on the
          // request is in flight, whatever the machine's load.
          'Expect: 100-continue',
          '',
          '',
        ].join('\r\n') + body.slice(0, half),
      );
      await received.until(
        '"100 Continue"',
        (bytes) => (/^HTTP\/1\.1 100 Continue\r\n\r\n/.test(bytes.toString('utf8')) ? true : undefined),
        SPAWN_TIMEOUT_MS,
      );
      child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 300));
      // The listener is closed (new connections are refused) while the request is still open.
      const deadline = Date.now() + SPAWN_TIMEOUT_MS;
      while ((await tryConnect(port)) !== 'ECONNREFUSED') {
        assert.ok(Date.now() < deadline, 'serve kept accepting connections after SIGTERM');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(child.exitCode, null, 'serve exited before the in-flight request finished');
      assert.equal(received.ended, false, 'serve dropped the in-flight connection');
      socket.write(body.slice(half));

      const answer = await received.until('the final response', finalResponse, SPAWN_TIMEOUT_MS);
      assert.equal(answer.status, 200, `${answer.headers}\n\n${answer.body}`);
      // Shutdown has begun, so the server tells the client not to reuse the connection.
      assert.match(answer.headers, /^connection: close\r?$/im);
      const created = JSON.parse(answer.body);
      assert.match(created.key, /^sk-sy-v1-[0-9a-f]{64}$/);
      assert.equal(created.data.name, 'in-flight');
      assert.equal(created.data.limit, 7);

      const outcome = await exited;
      if (outcome.error) throw outcome.error;
      assert.ok(outcome.run);
      assertExit(outcome.run, 0);
      // The client kept its keep-alive connection open: the server must not wait for it to go away.
      if (!received.ended) {
        await Promise.race([once(socket, 'close'), new Promise((resolve) => setTimeout(resolve, 2000))]);
      }
      assert.equal(received.ended, true, 'the server left the idle connection open');
      socket.destroy();
      assert.equal(await tryConnect(port), 'ECONNREFUSED');

      // The key the in-flight request created was committed before the process exited.
      const list = await cli(['keys', 'list'], childEnv(database));
      assertExit(list, 0);
      assert.match(list.stdout, /\tinference\tactive\t0\t7\tin-flight$/m);
    });
  });
});
