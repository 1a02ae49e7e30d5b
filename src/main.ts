import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Value } from 'typebox/value';
import { CreateKeyBody } from './admin/keys/key-schemas.js';
import { buildApp, buildServices } from './app.js';
import { MAX_USD_AMOUNT, usdToNanos } from './billing/money.js';
import type { Config } from './config/config-schema.js';
import { ConfigError, loadConfig } from './config/load-config.js';
import { AppError } from './errors/app-error.js';
import { applyAllocationSitePretenuring } from './platform/allocation-site-pretenuring.js';
import { applyHeapGrowth } from './platform/heap-growth.js';
import { lowerHelperThreads } from './platform/helper-threads.js';
import { applyParallelScavenge } from './platform/parallel-scavenge.js';
import { collectStartupGarbage } from './platform/startup-garbage.js';
import { capYoungGeneration } from './platform/young-generation.js';

const help = `switchyard — self-hosted model gateway

Usage: switchyard <command> [options]

Commands:
  serve                                   start the gateway (default command)
  migrate                                 bring the database schema up to date and exit
  keys create --name N [--management] [--limit USD] [--limit-reset daily|weekly|monthly]
                                          create an API key; prints the secret once
  keys list                               list every API key (hash, name, kind, state, usage)
  credits add <usd>                       grant credits to the account
  --help, -h                              show this help

Configuration comes from the environment (PORT, HOST, PUBLIC_URL, DATABASE_URL,
DATABASE_SCHEMA, REDIS_URL, REDIS_PREFIX, LOG_LEVEL, SWITCHYARD_MASTER_KEY,
SWITCHYARD_BOOTSTRAP_KEY, SWITCHYARD_CONFIG, <PROVIDER>_API_KEY)
and the optional config file named by SWITCHYARD_CONFIG. See the README.`;

class UsageError extends Error {}

/**
 * After shutdown's timeout cut the open connections: how long the close may take to unwind those
 * requests (at most 5 s) and write the records left (retried for at most 5 s against a failing
 * database) before the process gives up and exits.
 */
const FINAL_WRITES_MS = 15_000;

const megabytes = (bytes: number) => Math.round(bytes / 1_048_576);

async function serve(config: Config): Promise<void> {
  applyHeapGrowth(config.heap_growth_percent);
  const scavenge = applyParallelScavenge(config.parallel_scavenge);
  const pretenuring = applyAllocationSitePretenuring(config.allocation_site_pretenuring);
  const youngCap = capYoungGeneration(config.young_generation_mb);
  // Before the app starts its own threads (SQLite, delivery): those keep the priority they choose.
  const helpers = lowerHelperThreads(config.helper_thread_niceness);
  const { app, services, inFlight } = await buildApp({ config });
  if (helpers)
    app.log.info(
      { niceness: config.helper_thread_niceness, ...helpers },
      'helper threads lowered below the request thread',
    );
  if (scavenge)
    app.log.info({ flag: scavenge, setting: config.parallel_scavenge }, 'parallel scavenging off');
  if (pretenuring) app.log.info({ flag: pretenuring }, 'allocation-site pretenuring off');
  if (services.storage.kind === 'sqlite')
    app.log.info(
      { setting: config.sqlite_thread, thread: services.storage.sqliteThread !== null },
      services.storage.sqliteThread ? 'SQLite runs in its own thread' : 'SQLite runs on the event loop',
    );
  if (youngCap) app.log.info({ megabytes: config.young_generation_mb }, 'young generation capped');
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
    // Past the timeout the requests still open are cut as a client going away would cut them: each
    // aborts its upstream call, is billed for what it produced and recorded as cancelled, and the
    // close below writes those records. Exiting at once had lost them, and held their reservations.
    const timer = setTimeout(() => {
      app.log.warn(
        { requests: inFlight.count },
        'shutdown timed out; cutting the connections still open and recording their requests',
      );
      app.server.closeAllConnections();
      const last = setTimeout(() => {
        app.log.error('shutdown could not finish its writes; exiting');
        process.exit(1);
      }, FINAL_WRITES_MS);
      last.unref();
    }, config.shutdown_timeout_ms);
    timer.unref();
    app.close().then(
      () => {
        app.log.info('shutdown complete');
        process.exit(0);
      },
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // Ready first: Fastify's ready step (route schemas compiled, onReady hooks) makes start-up
  // garbage too and grows the young generation to 32 MB, which young_generation_mb would then
  // only stop from growing further. Collected after it, the gateway serves from 1 MB.
  await app.ready();
  const collected = await collectStartupGarbage();
  if (collected)
    app.log.info(
      {
        heap_mb: [collected.heapTotalBefore, collected.heapTotalAfter].map(megabytes),
        rss_mb: [collected.rssBefore, collected.rssAfter].map(megabytes),
      },
      'startup garbage collected',
    );
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    // Nothing is served (the port is taken, say): release the database and Redis so the process
    // exits with the error instead of idling on open connections.
    await app.close();
    throw error;
  }
}

async function withServices<T>(
  config: Config,
  work: (services: Awaited<ReturnType<typeof buildServices>>) => Promise<T>,
) {
  const services = await buildServices({ config, redis: null });
  try {
    return await work(services);
  } finally {
    await services.storage.close();
  }
}

function parseUsd(raw: string | undefined, what: string): number {
  if (raw === undefined || !/^\d+(\.\d+)?$/.test(raw))
    throw new UsageError(`${what} must be a non-negative number of USD, got "${raw ?? ''}"`);
  const usd = Number(raw);
  if (usd > MAX_USD_AMOUNT) throw new UsageError(`${what} must be at most ${MAX_USD_AMOUNT}`);
  return usd;
}

/** A key's `--limit`: 0, or at least one nano-dollar (what the API accepts). */
function parseLimit(raw: string): number {
  const usd = parseUsd(raw, '--limit');
  if (usd > 0 && usdToNanos(usd) < 1)
    throw new UsageError('--limit must be 0 or at least 0.000000001 (one nano-dollar)');
  return usd;
}

/** Positionals each command takes (the command and its subcommand counted), and its options. */
const SHAPES: Record<string, { positionals: number; options: readonly string[] }> = {
  serve: { positionals: 1, options: [] },
  migrate: { positionals: 1, options: [] },
  'keys create': { positionals: 2, options: ['name', 'management', 'limit', 'limit-reset'] },
  'keys list': { positionals: 2, options: [] },
  'credits add': { positionals: 3, options: [] },
};

/** Refuses arguments the command does not take, rather than ignoring them. */
function checkArguments(
  command: string,
  sub: string | undefined,
  positionals: readonly string[],
  values: Record<string, unknown>,
): void {
  const name = command === 'keys' || command === 'credits' ? `${command} ${sub ?? ''}` : command;
  const shape = SHAPES[name];
  // Unknown commands and missing subcommands are refused where the command is read.
  if (!shape) return;
  const extra = positionals[shape.positionals];
  if (extra !== undefined) throw new UsageError(`${name} takes no argument "${extra}"`);
  for (const option of Object.keys(values)) {
    if (option !== 'help' && !shape.options.includes(option))
      throw new UsageError(`${name} takes no option --${option}`);
  }
}

/** A file-backed SQLite database must exist already (`serve` or `migrate` creates it). */
function requireExistingDatabase(databaseUrl: string): void {
  if (!databaseUrl.startsWith('sqlite:')) return;
  const path = databaseUrl.slice('sqlite:'.length);
  if (path === '' || path === ':memory:' || existsSync(path)) return;
  throw new ConfigError(
    `no database at ${path} (DATABASE_URL): start the gateway or run "switchyard migrate" to create it`,
  );
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      name: { type: 'string' },
      management: { type: 'boolean' },
      limit: { type: 'string' },
      'limit-reset': { type: 'string' },
    },
  });
  const [command = 'serve', sub, arg] = positionals;
  if (values.help || command === 'help') {
    console.log(help);
    return 0;
  }
  checkArguments(command, sub, positionals, values);
  const config = loadConfig();
  // Administration works on an existing database: a mistyped path must not create an empty one
  // (with a new master key) and report success against it.
  if (command === 'keys' || command === 'credits') requireExistingDatabase(config.database_url);
  switch (command) {
    case 'serve':
      await serve(config);
      return -1;
    case 'migrate':
      await withServices(config, async () =>
        console.log(`database at ${config.database_url.replace(/\/\/[^@]*@/, '//***@')} is up to date`),
      );
      return 0;
    case 'keys':
      if (sub === 'create') {
        if (!values.name) throw new UsageError('keys create needs --name');
        const name: string = values.name;
        // The API's rule for a key's name (POST /keys): 1–200 characters, not blank, no NUL.
        const characters = name.length;
        if (!Value.Check(CreateKeyBody.properties.name, name))
          throw new UsageError(
            `--name must be 1 to 200 characters, not blank, without NUL, got ${characters} characters`,
          );
        const reset = values['limit-reset'];
        if (reset !== undefined && !['daily', 'weekly', 'monthly'].includes(reset)) {
          throw new UsageError('--limit-reset must be daily, weekly or monthly');
        }
        const input = {
          name,
          limit: values.limit === undefined ? null : parseLimit(values.limit),
          limit_reset: (reset ?? null) as 'daily' | 'weekly' | 'monthly' | null,
        };
        const created = await withServices(config, (services) =>
          values.management ? services.keys.createManagementKey(input) : services.keys.create(input),
        );
        console.log(`created ${values.management ? 'management' : 'inference'} key "${created.data.name}"`);
        console.log(`hash: ${created.data.hash}`);
        console.log(`key:  ${created.key}`);
        console.log('The secret is shown only this once; store it now.');
        return 0;
      }
      if (sub === 'list') {
        const keys = await withServices(config, (services) => services.keys.listAll());
        console.log(['hash', 'kind', 'state', 'usage_usd', 'limit_usd', 'name'].join('\t'));
        for (const key of keys) {
          const state = key.disabled
            ? 'disabled'
            : key.expires_at && Date.parse(key.expires_at) <= Date.now()
              ? 'expired'
              : 'active';
          console.log(
            [
              key.hash,
              key.is_management_key ? 'management' : 'inference',
              state,
              key.usage,
              key.limit ?? '-',
              key.name,
            ].join('\t'),
          );
        }
        return 0;
      }
      throw new UsageError('keys needs a subcommand: create or list');
    case 'credits':
      if (sub === 'add') {
        const usd = parseUsd(arg, 'credits add <usd>');
        if (usd <= 0) throw new UsageError('credits add <usd> must be greater than 0');
        if (usdToNanos(usd) < 1)
          throw new UsageError('credits add <usd> must be at least 0.000000001 (one nano-dollar)');
        const totals = await withServices(config, async (services) => {
          await services.credits.grant({
            nanos: usdToNanos(usd),
            note: 'switchyard credits add',
            at: new Date(),
          });
          return services.credits.totals();
        });
        console.log(`added $${usd}; total credits now $${totals.grantedNanos / 1e9}`);
        return 0;
      }
      throw new UsageError('credits needs a subcommand: add <usd>');
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

run(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof ConfigError) console.error(`switchyard: ${error.message}`);
    else if (
      error instanceof UsageError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ||
      (error instanceof AppError && error.status < 500)
    ) {
      console.error(`switchyard: ${(error as Error).message}\nRun "switchyard --help" for usage.`);
      process.exitCode = 2;
      return;
    } else console.error('switchyard: failed:', error);
    process.exitCode = 1;
  },
);
