import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { type Static, Type } from 'typebox';
import {
  DeliveryError,
  type DestinationType,
  type ExportContext,
  type OutboxItem,
  type SendOutcome,
} from '../destination-type.js';
import type { ExporterResponse } from '../exporter-http.js';
import { TRACE_ROW_COLUMNS, type TraceRowColumn, traceRow } from '../trace-document.js';
import {
  type ConfigProblem,
  CustomHeadersSchema,
  headerProblems,
  jsonObject,
  mergeHeaders,
  uuidFromSeed,
} from './exporter-support.js';

/**
 * `snowflake`: rows in `<database>.<schema>.<table>` through the Snowflake SQL API v2
 * (https://docs.snowflake.com/en/developer-guide/sql-api/reference), authenticated with a
 * programmatic access token. The table is created on first use; each batch is one MERGE that
 * inserts the rows not there yet (by ROW_ID), its rows travelling as bind variables (one JSON text
 * per row, parsed server-side), never spliced into the SQL. The request id is derived from the
 * batch's idempotency keys and sent with `retry=true`, so Snowflake answers a resent batch with the
 * first execution instead of running it again; statements run with `async=true` and are polled.
 */

const ACCOUNT_PATTERN = '^[a-zA-Z0-9_]+(?:[.-][a-zA-Z0-9_]+)*$';

const snowflakeConfigSchema = Type.Object(
  {
    account: Type.String({ minLength: 1, maxLength: 255, pattern: ACCOUNT_PATTERN }),
    token: Type.String({ minLength: 1 }),
    database: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    schema: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    table: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    warehouse: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type SnowflakeConfig = Static<typeof snowflakeConfigSchema>;

const DEFAULTS = {
  database: 'SNOWFLAKE_LEARNING_DB',
  schema: 'PUBLIC',
  table: 'OPENROUTER_TRACES',
  warehouse: 'COMPUTE_WH',
} as const;

/** Unquoted-identifier syntax; names are then double-quoted, so they keep their case. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/;
/** Seconds Snowflake may run one statement before cancelling it. */
const STATEMENT_TIMEOUT_S = 60;
/**
 * How long a 202 (still running) is polled before the statement is cancelled and the batch retried
 * later; a setting object so that tests can shorten it.
 */
export const snowflakePolling = { deadlineMs: 30_000 };
const POLL_FIRST_MS = 100;
const POLL_MAX_MS = 2_000;
/** The SQL API requires a User-Agent naming the application (RFC 7231 product token). */
const USER_AGENT = 'switchyard-broadcast/1.0';

/** Column type and the expression reading it from the parsed row `r`. */
const COLUMNS: Record<TraceRowColumn, { type: string; read: (path: string) => string }> = {
  ROW_ID: { type: 'VARCHAR NOT NULL', read: (path) => `${path}::VARCHAR` },
  TRACE_ID: { type: 'VARCHAR', read: (path) => `${path}::VARCHAR` },
  SPAN_ID: { type: 'VARCHAR', read: (path) => `${path}::VARCHAR` },
  GENERATION_ID: { type: 'VARCHAR', read: (path) => `${path}::VARCHAR` },
  USER_ID: { type: 'VARCHAR', read: (path) => `${path}::VARCHAR` },
  SESSION_ID: { type: 'VARCHAR', read: (path) => `${path}::VARCHAR` },
  TIMESTAMP: { type: 'TIMESTAMP_NTZ(3)', read: (path) => `TO_TIMESTAMP_NTZ(${path}::NUMBER, 3)` },
  MODEL: { type: 'VARCHAR', read: (path) => `${path}::VARCHAR` },
  PROVIDER: { type: 'VARCHAR', read: (path) => `${path}::VARCHAR` },
  STATUS: { type: 'VARCHAR', read: (path) => `${path}::VARCHAR` },
  SPAN_TYPE: { type: 'VARCHAR', read: (path) => `${path}::VARCHAR` },
  TOTAL_COST: { type: 'FLOAT', read: (path) => `${path}::FLOAT` },
  PROMPT_TOKENS: { type: 'NUMBER(38,0)', read: (path) => `${path}::NUMBER` },
  COMPLETION_TOKENS: { type: 'NUMBER(38,0)', read: (path) => `${path}::NUMBER` },
  TOTAL_TOKENS: { type: 'NUMBER(38,0)', read: (path) => `${path}::NUMBER` },
  LATENCY_MS: { type: 'NUMBER(38,0)', read: (path) => `${path}::NUMBER` },
  ATTRIBUTES: { type: 'VARIANT', read: (path) => path },
  INPUT: { type: 'VARIANT', read: (path) => path },
  OUTPUT: { type: 'VARIANT', read: (path) => path },
  METADATA: { type: 'VARIANT', read: (path) => path },
  MODEL_PARAMETERS: { type: 'VARIANT', read: (path) => path },
};

/** Tables created (or found) by this process, by origin and table; a failed insert forgets its entry. */
const ensuredTables = new Set<string>();

const quote = (identifier: string) => `"${identifier}"`;

interface Target {
  database: string;
  schema: string;
  table: string;
  warehouse: string;
}

function target(config: SnowflakeConfig): Target {
  const resolved = {
    database: config.database ?? DEFAULTS.database,
    schema: config.schema ?? DEFAULTS.schema,
    table: config.table ?? DEFAULTS.table,
    warehouse: config.warehouse ?? DEFAULTS.warehouse,
  };
  if (!Object.values(resolved).every((name) => IDENTIFIER.test(name))) {
    // validate() refuses these at save time; this guards against a config that bypassed it.
    throw new DeliveryError('snowflake database, schema, table or warehouse is not a plain identifier', {
      retryable: false,
    });
  }
  return resolved;
}

const qualifiedTable = (names: Target) => [names.database, names.schema, names.table].map(quote).join('.');

/**
 * The account's host. Account names may hold underscores, which are not valid in host names;
 * Snowflake serves the same account with hyphens instead.
 */
const accountOrigin = (config: SnowflakeConfig) =>
  `https://${config.account.toLowerCase().replace(/_/g, '-')}.snowflakecomputing.com`;

const origin = (config: SnowflakeConfig, override: string | undefined) =>
  (override ?? accountOrigin(config)).replace(/\/+$/, '');

function createTableStatement(names: Target): string {
  const columns = TRACE_ROW_COLUMNS.map((column) => `${quote(column)} ${COLUMNS[column].type}`).join(', ');
  return `CREATE TABLE IF NOT EXISTS ${qualifiedTable(names)} (${columns})`;
}

/**
 * `MERGE INTO … USING (SELECT … FROM VALUES (?), (?)) … WHEN NOT MATCHED THEN INSERT`: one TEXT
 * binding per row, holding the row as JSON (Snowflake refuses PARSE_JSON inside a VALUES list, and
 * a JSON row also carries SQL NULLs, absent keys, without null bindings). A row whose ROW_ID (from
 * the event's idempotency key) is in the table already is skipped: a batch retried after its first
 * execution went through is regrouped by the worker's per-row backoff, so its request id differs and
 * `retry=true` cannot find the first run; the MERGE keeps those rows from landing twice. The match
 * includes TIMESTAMP, the same for every copy of a row, so Snowflake prunes the table's
 * micro-partitions (filled in time order) instead of scanning every ROW_ID.
 */
function mergeStatement(names: Target, rows: number): string {
  const reads = TRACE_ROW_COLUMNS.map(
    (column) => `${COLUMNS[column].read(`r['${column}']`)} AS ${quote(column)}`,
  ).join(', ');
  const placeholders = Array.from({ length: rows }, () => '(?)').join(', ');
  const columns = TRACE_ROW_COLUMNS.map(quote).join(', ');
  const values = TRACE_ROW_COLUMNS.map((column) => `s.${quote(column)}`).join(', ');
  return (
    `MERGE INTO ${qualifiedTable(names)} t USING (SELECT ${reads} FROM (SELECT PARSE_JSON(column1) AS r FROM VALUES ${placeholders})) s ` +
    `ON t."ROW_ID" = s."ROW_ID" AND t."TIMESTAMP" = s."TIMESTAMP" ` +
    `WHEN NOT MATCHED THEN INSERT (${columns}) VALUES (${values})`
  );
}

/** A row as JSON with null fields left out, so they read back as SQL NULL (not a VARIANT null). */
function encodeRow(item: OutboxItem): string {
  const row = traceRow(item.event, item.idempotencyKey);
  return JSON.stringify(Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null)));
}

/** A UUID (version-4 layout) derived from the batch's keys: the same batch, the same request id. */
const batchRequestId = (items: readonly OutboxItem[]) =>
  uuidFromSeed(`snowflake-insert:${items.map((item) => item.idempotencyKey).join(',')}`);

/** Auth and content headers; custom headers are merged underneath and cannot replace them. */
function requestHeaders(config: SnowflakeConfig, withBody: boolean): Record<string, string> {
  const own: Record<string, string> = {
    Authorization: `Bearer ${config.token}`,
    'X-Snowflake-Authorization-Token-Type': 'PROGRAMMATIC_ACCESS_TOKEN',
    Accept: 'application/json',
    'User-Agent': USER_AGENT,
    ...(withBody ? { 'Content-Type': 'application/json' } : {}),
  };
  return mergeHeaders(config.headers, own);
}

interface Execution {
  statement: string;
  requestId: string;
  /** Ask Snowflake to answer with an earlier execution of the same request id, if there was one. */
  retry: boolean;
  bindings?: Record<string, { type: 'TEXT'; value: string }>;
}

type Context = Omit<ExportContext<SnowflakeConfig>, 'destination'>;

/** Runs one statement: POST, then poll while Snowflake answers 202 (still running). */
async function execute(context: Context, execution: Execution): Promise<void> {
  const { config } = context;
  const names = target(config);
  const base = origin(config, context.originOverride);
  // async=true: Snowflake answers 202 with the statement's handle at once, and the statement is
  // polled. Run synchronously it may hold the answer for 45 s, past the HTTP client's 15 s header
  // timeout, and the batch would be resent while its first run was still going.
  const query = new URLSearchParams({
    requestId: execution.requestId,
    async: 'true',
    ...(execution.retry ? { retry: 'true' } : {}),
  });
  const response = await context.http.send(`${base}/api/v2/statements?${query}`, {
    method: 'POST',
    headers: requestHeaders(config, true),
    body: JSON.stringify({
      statement: execution.statement,
      timeout: STATEMENT_TIMEOUT_S,
      database: names.database,
      schema: names.schema,
      warehouse: names.warehouse,
      ...(execution.bindings ? { bindings: execution.bindings } : {}),
    }),
    signal: context.signal,
  });
  if (response.status === 202) await waitForStatement(context, base, statementHandle(response));
}

function statementHandle(response: ExporterResponse): string {
  const handle = jsonObject(response.body)?.statementHandle;
  if (typeof handle !== 'string' || handle.length === 0) {
    throw new DeliveryError('snowflake answered 202 without a statement handle', {
      retryable: true,
      status: 202,
    });
  }
  return handle;
}

/**
 * Polls `GET /api/v2/statements/{handle}` until it stops answering 202. A failure there (422)
 * surfaces as the DeliveryError of the HTTP client. Past the deadline the statement is cancelled
 * (`POST …/cancel`) before the batch is retried: the worker may regroup its rows under a new request
 * id, and a MERGE still running beside its retry could miss the rows the other commits.
 */
async function waitForStatement(context: Context, base: string, handle: string): Promise<void> {
  const deadlineMs = snowflakePolling.deadlineMs;
  const deadline = Date.now() + deadlineMs;
  let wait = POLL_FIRST_MS;
  while (Date.now() + wait <= deadline) {
    try {
      await delay(wait, undefined, { signal: context.signal });
    } catch (error) {
      throw new DeliveryError('delivery aborted', { retryable: true, cause: error });
    }
    const response = await context.http.send(`${base}/api/v2/statements/${encodeURIComponent(handle)}`, {
      method: 'GET',
      headers: requestHeaders(context.config, false),
      signal: context.signal,
    });
    if (response.status !== 202) return;
    wait = Math.min(wait * 2, POLL_MAX_MS);
  }
  // Best effort: a statement that finished meanwhile cannot be cancelled, and its rows are in.
  await context.http
    .send(`${base}/api/v2/statements/${encodeURIComponent(handle)}/cancel`, {
      method: 'POST',
      headers: requestHeaders(context.config, false),
      signal: context.signal,
    })
    .catch(() => undefined);
  throw new DeliveryError(
    `snowflake statement ${handle} still running after ${deadlineMs / 1000}s; cancelled`,
    {
      retryable: true,
      status: 202,
    },
  );
}

async function send(
  items: readonly OutboxItem[],
  context: ExportContext<SnowflakeConfig>,
): Promise<SendOutcome | undefined> {
  const names = target(context.config);
  const key = `${origin(context.config, context.originOverride)}|${qualifiedTable(names)}`;
  try {
    if (!ensuredTables.has(key)) {
      // IF NOT EXISTS makes it safe to run again, so it gets a fresh request id each time.
      await execute(context, {
        statement: createTableStatement(names),
        requestId: randomUUID(),
        retry: false,
      });
      ensuredTables.add(key);
    }
    const bindings = Object.fromEntries(
      items.map((item, index) => [String(index + 1), { type: 'TEXT' as const, value: encodeRow(item) }]),
    );
    await execute(context, {
      statement: mergeStatement(names, items.length),
      requestId: batchRequestId(items),
      retry: true,
      bindings,
    });
  } catch (error) {
    ensuredTables.delete(key);
    throw error;
  }
  return undefined;
}

/** `SELECT 1` in the configured database, schema and warehouse: checks token and context, stores nothing. */
async function testConnection(context: Context): Promise<void> {
  await execute(context, { statement: 'SELECT 1', requestId: randomUUID(), retry: false });
}

function validate(config: SnowflakeConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (!new RegExp(ACCOUNT_PATTERN).test(config.account) || config.account.length > 255) {
    problems.push({ field: 'account', message: 'must be an account identifier such as myorg-myaccount' });
  }
  for (const field of ['database', 'schema', 'table', 'warehouse'] as const) {
    const value = config[field];
    if (value !== undefined && !IDENTIFIER.test(value)) {
      problems.push({ field, message: 'must be letters, digits, _ and $, not starting with a digit' });
    }
  }
  return [...problems, ...headerProblems(config.headers)];
}

export const snowflakeDestination: DestinationType<SnowflakeConfig> = {
  type: 'snowflake',
  configSchema: snowflakeConfigSchema,
  defaults: { ...DEFAULTS },
  secretFields: ['token'],
  validate,
  urls: (config) => [`${accountOrigin(config)}/api/v2/statements`],
  maxBatch: 50,
  testOnSave: false,
  send,
  testConnection,
};
