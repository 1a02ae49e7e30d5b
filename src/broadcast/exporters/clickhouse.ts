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
  mergeHeaders,
  sha256Hex,
  urlProblems,
} from './exporter-support.js';

/**
 * `clickhouse`: rows in `<database>.<table>` (default OPENROUTER_TRACES) through the ClickHouse
 * HTTP interface (https://clickhouse.com/docs/interfaces/http). The table is created on first use
 * as a ReplacingMergeTree keyed by ROW_ID (the outbox idempotency key), and each INSERT carries an
 * `insert_deduplication_token` derived from its keys, so a resent batch is dropped at insert time
 * and any duplicate that slips through disappears when parts merge.
 */

const clickhouseConfigSchema = Type.Object(
  {
    /** The HTTP(S) interface URL, e.g. `https://abc.clickhouse.cloud:8443`. */
    host: Type.String({ format: 'uri' }),
    database: Type.String({ minLength: 1, maxLength: 128 }),
    username: Type.String({ minLength: 1 }),
    /** May be empty: a self-hosted `default` user often has no password. */
    password: Type.String(),
    table: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    headers: Type.Optional(CustomHeadersSchema),
  },
  { additionalProperties: false },
);

export type ClickhouseConfig = Static<typeof clickhouseConfigSchema>;

const DEFAULT_TABLE = 'OPENROUTER_TRACES';
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

const COLUMN_TYPES: Record<TraceRowColumn, string> = {
  ROW_ID: 'String',
  TRACE_ID: 'String',
  SPAN_ID: 'String',
  GENERATION_ID: 'String',
  USER_ID: 'Nullable(String)',
  SESSION_ID: 'Nullable(String)',
  TIMESTAMP: "DateTime64(3, 'UTC')",
  MODEL: 'Nullable(String)',
  PROVIDER: 'Nullable(String)',
  STATUS: 'LowCardinality(String)',
  SPAN_TYPE: 'LowCardinality(String)',
  TOTAL_COST: 'Float64',
  PROMPT_TOKENS: 'UInt64',
  COMPLETION_TOKENS: 'UInt64',
  TOTAL_TOKENS: 'UInt64',
  LATENCY_MS: 'UInt64',
  ATTRIBUTES: 'String',
  INPUT: 'Nullable(String)',
  OUTPUT: 'Nullable(String)',
  METADATA: 'String',
  MODEL_PARAMETERS: 'String',
};

/** JSON columns: stored as String holding JSON text. */
const JSON_COLUMNS = new Set<TraceRowColumn>([
  'ATTRIBUTES',
  'INPUT',
  'OUTPUT',
  'METADATA',
  'MODEL_PARAMETERS',
]);

/**
 * Tables this process has already created (or found), by host, database and table. A failed
 * insert forgets its entry, so a table dropped behind our back is created again on the next try.
 */
const ensuredTables = new Set<string>();

const quote = (identifier: string) => `\`${identifier}\``;

function tableName(config: ClickhouseConfig): string {
  const table = config.table ?? DEFAULT_TABLE;
  if (!IDENTIFIER.test(config.database) || !IDENTIFIER.test(table)) {
    // validate() refuses these at save time; this guards against a config that bypassed it.
    throw new DeliveryError('clickhouse database or table name is not a plain identifier', {
      retryable: false,
    });
  }
  return `${quote(config.database)}.${quote(table)}`;
}

/**
 * `CREATE TABLE IF NOT EXISTS`. Partitions follow TIMESTAMP, which is fixed per event, so copies of
 * a row always meet in the same partition where ReplacingMergeTree collapses them.
 * `non_replicated_deduplication_window` turns insert-token deduplication on for plain (self-hosted,
 * non-replicated) servers; replicated and cloud engines deduplicate by default.
 */
function createTableStatement(config: ClickhouseConfig): string {
  const columns = TRACE_ROW_COLUMNS.map((column) => `  ${quote(column)} ${COLUMN_TYPES[column]}`).join(',\n');
  return [
    `CREATE TABLE IF NOT EXISTS ${tableName(config)}`,
    `(\n${columns}\n)`,
    'ENGINE = ReplacingMergeTree',
    `PARTITION BY toYYYYMM(${quote('TIMESTAMP')})`,
    `ORDER BY (${quote('TIMESTAMP')}, ${quote('ROW_ID')})`,
    'SETTINGS non_replicated_deduplication_window = 1000',
  ].join('\n');
}

/** The interface URL without a trailing slash; requests go to `<base>/` (`?query=…` when the SQL is not the body). */
function baseUrl(config: ClickhouseConfig): string {
  const url = new URL(config.host);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function requestUrl(config: ClickhouseConfig, params: Record<string, string>): string {
  const query = new URLSearchParams(params).toString();
  return `${baseUrl(config)}/${query ? `?${query}` : ''}`;
}

/**
 * Auth and content headers, with custom headers merged in underneath: a custom header cannot
 * replace them, nor add `Authorization` (ClickHouse refuses Basic auth next to X-ClickHouse-User).
 */
function requestHeaders(config: ClickhouseConfig, contentType?: string): Record<string, string> {
  const own: Record<string, string> = {
    'X-ClickHouse-User': config.username,
    'X-ClickHouse-Key': config.password,
    ...(contentType ? { 'Content-Type': contentType } : {}),
  };
  return mergeHeaders(config.headers, own, ['authorization']);
}

/**
 * ClickHouse may start a 200 answer before a late failure; it then names the error in the
 * `X-ClickHouse-Exception-Code` header and the body instead of the status.
 */
function checkLateException(response: ExporterResponse): void {
  const code = response.headers['x-clickhouse-exception-code'];
  if (code === undefined) return;
  throw new DeliveryError(`clickhouse failed (code ${String(code)}): ${response.body.slice(0, 300)}`, {
    retryable: true,
    status: response.status,
  });
}

/** `2026-11-22 10:00:00.000`: the text form DateTime64(3, 'UTC') parses by default. */
const clickhouseTimestamp = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

function encodeRow(item: OutboxItem): string {
  const row = traceRow(item.event, item.idempotencyKey);
  const encoded: Record<string, unknown> = {};
  for (const column of TRACE_ROW_COLUMNS) {
    const value = row[column];
    if (column === 'TIMESTAMP') encoded[column] = clickhouseTimestamp(row.TIMESTAMP);
    else if (JSON_COLUMNS.has(column)) encoded[column] = value === null ? null : JSON.stringify(value);
    else encoded[column] = value;
  }
  return JSON.stringify(encoded);
}

/** Stable for the same set of items in the same order: the batch's insert identity. */
const deduplicationToken = (items: readonly OutboxItem[]) =>
  sha256Hex(items.map((item) => item.idempotencyKey).join(','));

async function ensureTable(context: ExportContext<ClickhouseConfig>, key: string): Promise<void> {
  if (ensuredTables.has(key)) return;
  const { config } = context;
  const response = await context.http.send(requestUrl(config, {}), {
    method: 'POST',
    headers: requestHeaders(config, 'text/plain; charset=utf-8'),
    body: createTableStatement(config),
    signal: context.signal,
  });
  checkLateException(response);
  ensuredTables.add(key);
}

async function send(
  items: readonly OutboxItem[],
  context: ExportContext<ClickhouseConfig>,
): Promise<SendOutcome | undefined> {
  const { config } = context;
  const table = tableName(config);
  const key = `${baseUrl(config)}|${config.database}|${config.table ?? DEFAULT_TABLE}`;
  try {
    await ensureTable(context, key);
    const url = requestUrl(config, {
      query: `INSERT INTO ${table} FORMAT JSONEachRow`,
      insert_deduplication_token: deduplicationToken(items),
    });
    const response = await context.http.send(url, {
      method: 'POST',
      headers: requestHeaders(config, 'application/x-ndjson'),
      body: `${items.map(encodeRow).join('\n')}\n`,
      signal: context.signal,
    });
    checkLateException(response);
  } catch (error) {
    ensuredTables.delete(key);
    throw error;
  }
  return undefined;
}

/** `SELECT 1` over the HTTP interface with the credentials: reads nothing, writes nothing. */
async function testConnection(context: Omit<ExportContext<ClickhouseConfig>, 'destination'>): Promise<void> {
  const { config } = context;
  const response = await context.http.send(requestUrl(config, { query: 'SELECT 1' }), {
    method: 'GET',
    headers: requestHeaders(config),
    signal: context.signal,
  });
  checkLateException(response);
  if (response.body.trim() !== '1') {
    throw new DeliveryError(
      `not a ClickHouse HTTP interface: SELECT 1 answered ${response.body.slice(0, 100)}`,
      {
        retryable: false,
        status: response.status,
      },
    );
  }
}

function validate(config: ClickhouseConfig): ConfigProblem[] {
  // The HTTP interface URL, e.g. https://abc.clickhouse.cloud:8443: requests append `/?query=…`.
  const problems = urlProblems({ host: config.host });
  if (!IDENTIFIER.test(config.database)) {
    problems.push({
      field: 'database',
      message: 'must be letters, digits and underscores, not starting with a digit',
    });
  }
  if (config.table !== undefined && !IDENTIFIER.test(config.table)) {
    problems.push({
      field: 'table',
      message: 'must be letters, digits and underscores, not starting with a digit',
    });
  }
  return [...problems, ...headerProblems(config.headers)];
}

export const clickhouseDestination: DestinationType<ClickhouseConfig> = {
  type: 'clickhouse',
  configSchema: clickhouseConfigSchema,
  defaults: { table: DEFAULT_TABLE },
  secretFields: ['password'],
  // Sent as `X-ClickHouse-User`.
  headerFields: ['username'],
  validate,
  urls: (config) => [`${baseUrl(config)}/`],
  maxBatch: 100,
  testOnSave: false,
  send,
  testConnection,
};
