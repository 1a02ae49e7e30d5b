import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import type { ExportContext } from '../../src/broadcast/destination-type.js';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import { type ClickhouseConfig, clickhouseDestination } from '../../src/broadcast/exporters/clickhouse.js';
import {
  exportContext,
  type FakeReceiver,
  outboxItem,
  privateEvent,
  type ReceivedRequest,
  type ReceiverReply,
  sampleEvent,
  startReceiver,
} from '../helpers/broadcast-fixtures.js';

const USER = 'switchyard';
const PASSWORD = 'ch-secret-0123';
const DATABASE = 'observability';

const http = createExporterHttp({ allowPrivateNetworks: true });
let receiver: FakeReceiver;

interface FakeTable {
  columns: Map<string, string>;
  engine: string;
  rows: Array<Record<string, unknown>>;
  tokens: Set<string>;
}
/** The fake server's tables, by `db.table`. */
const tables = new Map<string, FakeTable>();

before(async () => {
  receiver = await startReceiver();
});
beforeEach(() => {
  tables.clear();
  receiver.requests.length = 0;
  receiver.reply = fakeClickhouse;
});
after(async () => {
  await receiver.close();
  await http.close();
});

/**
 * The exporter remembers created tables per host/database/table for the process's life, so each
 * test writes to its own table and starts with an empty server.
 */
let tableCounter = 0;
function config(overrides: Partial<ClickhouseConfig> = {}): ClickhouseConfig {
  tableCounter += 1;
  return {
    host: receiver.url,
    database: DATABASE,
    username: USER,
    password: PASSWORD,
    table: `TRACES_${tableCounter}`,
    ...overrides,
  };
}
const context = (cfg: ClickhouseConfig): ExportContext<ClickhouseConfig> => exportContext(cfg, http);

/** ClickHouse's error answer: status from exceptionCodeToHTTPStatus.cpp, text body, code header. */
function clickhouseError(status: number, code: number, name: string, message: string): ReceiverReply {
  return {
    status,
    headers: { 'x-clickhouse-exception-code': String(code), 'content-type': 'text/plain; charset=UTF-8' },
    body: `Code: ${code}. DB::Exception: ${message}. (${name}) (version 24.8.4.13 (official build))\n`,
  };
}

const STRING = (value: unknown) => typeof value === 'string';
const TYPE_CHECKS: Record<string, (value: unknown) => boolean> = {
  String: STRING,
  'Nullable(String)': (value) => value === null || STRING(value),
  'LowCardinality(String)': STRING,
  "DateTime64(3, 'UTC')": (value) =>
    STRING(value) && /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/.test(value as string),
  Float64: (value) => typeof value === 'number',
  UInt64: (value) => Number.isInteger(value) && (value as number) >= 0,
};

function createTable(statement: string): ReceiverReply {
  const match = /^CREATE TABLE IF NOT EXISTS `(\w+)`\.`(\w+)`\s*\(([\s\S]+)\)\s*ENGINE = ([\s\S]+)$/.exec(
    statement,
  );
  if (!match) return clickhouseError(400, 62, 'SYNTAX_ERROR', 'Syntax error: failed at position 1');
  const [, database, table, body, engine] = match as unknown as string[];
  if (database !== DATABASE)
    return clickhouseError(404, 81, 'UNKNOWN_DATABASE', `Database ${database} does not exist`);
  const columns = new Map<string, string>();
  for (const line of (body as string).split(',\n')) {
    const column = /^\s*`(\w+)` (.+?)\s*$/.exec(line);
    if (!column || !TYPE_CHECKS[column[2] as string]) {
      return clickhouseError(400, 50, 'UNKNOWN_TYPE', `Unknown data type in: ${line}`);
    }
    columns.set(column[1] as string, column[2] as string);
  }
  const key = `${database}.${table}`;
  if (!tables.has(key)) tables.set(key, { columns, engine: engine as string, rows: [], tokens: new Set() });
  return { status: 200, body: '' };
}

function insert(query: string, params: URLSearchParams, text: string): ReceiverReply {
  const match = /^INSERT INTO `(\w+)`\.`(\w+)` FORMAT JSONEachRow$/.exec(query);
  if (!match) return clickhouseError(400, 62, 'SYNTAX_ERROR', 'Syntax error: failed at position 1');
  const key = `${match[1]}.${match[2]}`;
  const table = tables.get(key);
  if (!table) return clickhouseError(404, 60, 'UNKNOWN_TABLE', `Table ${key} does not exist`);
  const token = params.get('insert_deduplication_token');
  // Insert deduplication: a block whose token was seen is acknowledged and dropped.
  if (token && table.tokens.has(token)) return { status: 200, body: '' };
  const rows: Array<Record<string, unknown>> = [];
  for (const line of text.split('\n').filter((entry) => entry.length > 0)) {
    let row: Record<string, unknown>;
    try {
      row = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return clickhouseError(
        400,
        27,
        'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
        'Cannot parse input: expected "{"',
      );
    }
    for (const [column, value] of Object.entries(row)) {
      const type = table.columns.get(column);
      if (!type)
        return clickhouseError(
          400,
          117,
          'INCORRECT_DATA',
          `Unknown field found while parsing JSONEachRow format: ${column}`,
        );
      if (!TYPE_CHECKS[type]?.(value))
        return clickhouseError(
          400,
          27,
          'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
          `Cannot parse ${column} as ${type}`,
        );
    }
    rows.push(row);
  }
  table.rows.push(...rows);
  if (token) table.tokens.add(token);
  return { status: 200, body: '' };
}

/** Answers like the ClickHouse HTTP interface (https://clickhouse.com/docs/interfaces/http). */
function fakeClickhouse(request: ReceivedRequest): ReceiverReply {
  if (request.headers.authorization && request.headers['x-clickhouse-user']) {
    return clickhouseError(
      403,
      516,
      'AUTHENTICATION_FAILED',
      'Invalid authentication: it is not allowed to use Authorization HTTP header and authentication via parameters simultaneously',
    );
  }
  if (request.headers['x-clickhouse-user'] !== USER || request.headers['x-clickhouse-key'] !== PASSWORD) {
    return clickhouseError(
      403,
      516,
      'AUTHENTICATION_FAILED',
      `${String(request.headers['x-clickhouse-user'])}: Authentication failed: password is incorrect, or there is no user with such name`,
    );
  }
  const url = new URL(request.url, 'http://clickhouse');
  if (url.pathname !== '/') return { status: 404, body: 'There is no handle /x\n' };
  const query = url.searchParams.get('query');
  if (request.method === 'GET') {
    if (query === 'SELECT 1')
      return {
        status: 200,
        headers: { 'content-type': 'text/tab-separated-values; charset=UTF-8' },
        body: '1\n',
      };
    return clickhouseError(500, 164, 'READONLY', 'Cannot execute query in readonly mode');
  }
  if (request.method !== 'POST') return { status: 400, body: 'unsupported method' };
  if (query === null) return createTable(request.text);
  return insert(query, url.searchParams, request.text);
}

const table = (cfg: ClickhouseConfig) => tables.get(`${cfg.database}.${cfg.table}`);
const paths = () =>
  receiver.requests.map(
    (request) =>
      `${request.method} ${new URL(request.url, 'http://x').searchParams.get('query')?.split(' FORMAT')[0] ?? '(body)'}`,
  );

test('first batch: CREATE TABLE (typed, ReplacingMergeTree by ROW_ID) then INSERT … FORMAT JSONEachRow', async () => {
  const cfg = config();
  const item = outboxItem();
  await clickhouseDestination.send([item], context(cfg));
  assert.deepEqual(paths(), ['POST (body)', `POST INSERT INTO \`${DATABASE}\`.\`${cfg.table}\``]);
  const [create, inserted] = receiver.requests as [ReceivedRequest, ReceivedRequest];
  assert.match(create.text, /ENGINE = ReplacingMergeTree\s/);
  assert.match(create.text, /ORDER BY \(`TIMESTAMP`, `ROW_ID`\)/);
  const created = table(cfg);
  assert.ok(created);
  assert.deepEqual(Object.fromEntries(created.columns), {
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
  });
  assert.match(
    new URL(inserted.url, 'http://x').searchParams.get('insert_deduplication_token') ?? '',
    /^[0-9a-f]{64}$/,
  );
  assert.equal(created.rows.length, 1);
  const row = created.rows[0] as Record<string, unknown>;
  assert.deepEqual(
    { ...row, ATTRIBUTES: undefined, INPUT: undefined, OUTPUT: undefined },
    {
      ROW_ID: item.idempotencyKey,
      TRACE_ID: '4bf92f3577b34da6a3ce929d0e0e4736',
      SPAN_ID: '00f067aa0ba902b7',
      GENERATION_ID: 'gen-1732276800-abcdefghijklmnop',
      USER_ID: 'user_12345',
      SESSION_ID: 'session_abc',
      TIMESTAMP: '2026-11-22 10:00:00.000',
      MODEL: 'openai/gpt-4o',
      PROVIDER: 'openai',
      STATUS: 'ok',
      SPAN_TYPE: 'GENERATION',
      TOTAL_COST: 0.00075,
      PROMPT_TOKENS: 100,
      COMPLETION_TOKENS: 50,
      TOTAL_TOKENS: 150,
      LATENCY_MS: 1250,
      METADATA: '{"order_id":"ORD-12345"}',
      MODEL_PARAMETERS: '{"temperature":0.2,"max_output_tokens":256}',
      ATTRIBUTES: undefined,
      INPUT: undefined,
      OUTPUT: undefined,
    },
  );
  assert.deepEqual(JSON.parse(row.INPUT as string), sampleEvent().input);
  assert.deepEqual(JSON.parse(row.OUTPUT as string), sampleEvent().output);
  const attributes = JSON.parse(row.ATTRIBUTES as string) as Record<string, unknown>;
  assert.equal(attributes.finish_reason, 'stop');
  assert.equal(attributes.status, 'completed');
  assert.deepEqual(attributes.cost, sampleEvent().cost);
  assert.deepEqual(attributes.identity, sampleEvent().identity);
  assert.deepEqual(attributes.request_context, sampleEvent().request_context);
});

test('later batches to the same table skip CREATE; a failed insert makes the next one create it again', async () => {
  const cfg = config();
  await clickhouseDestination.send([outboxItem()], context(cfg));
  receiver.requests.length = 0;
  await clickhouseDestination.send([outboxItem(sampleEvent({ generation_id: 'gen-2' }))], context(cfg));
  assert.deepEqual(paths(), [`POST INSERT INTO \`${DATABASE}\`.\`${cfg.table}\``]);

  tables.clear(); // dropped behind the exporter's back
  receiver.requests.length = 0;
  await assert.rejects(clickhouseDestination.send([outboxItem()], context(cfg)), (error) => {
    assert.ok(error instanceof DeliveryError);
    assert.equal(error.status, 404);
    assert.match(error.message, /UNKNOWN_TABLE/);
    return true;
  });
  await clickhouseDestination.send([outboxItem()], context(cfg));
  assert.equal(paths().filter((path) => path === 'POST (body)').length, 1);
  assert.equal(table(cfg)?.rows.length, 1);
});

test('privacy mode and absent optional parts: INPUT/OUTPUT null, no cost detail, identity or request context', async () => {
  const cfg = config();
  await clickhouseDestination.send([outboxItem(privateEvent())], context(cfg));
  const row = table(cfg)?.rows[0] as Record<string, unknown>;
  assert.equal(row.INPUT, null);
  assert.equal(row.OUTPUT, null);
  const attributes = JSON.parse(row.ATTRIBUTES as string) as Record<string, unknown>;
  for (const key of ['cost', 'identity', 'request_context']) assert.equal(key in attributes, false, key);
  const sent = receiver.requests.at(-1)?.text ?? '';
  for (const secret of ['Say hello', 'You are terse', 'Hello.', 'a'.repeat(64), 'example.com']) {
    assert.equal(sent.includes(secret), false, `${secret} must not be sent`);
  }
});

test('custom headers are merged in but cannot replace the credentials or add Authorization', async () => {
  const cfg = config({
    headers: { 'X-Proxy-Tenant': 'acme', 'x-clickhouse-key': 'stolen', Authorization: 'Basic Zm9vOmJhcg==' },
  });
  await clickhouseDestination.send([outboxItem()], context(cfg));
  for (const request of receiver.requests) {
    assert.equal(request.headers['x-proxy-tenant'], 'acme');
    assert.equal(request.headers['x-clickhouse-key'], PASSWORD);
    assert.equal(request.headers.authorization, undefined);
  }
  assert.equal(table(cfg)?.rows.length, 1);
});

test('the same batch sent twice carries the same dedup token and row ids; the server keeps one copy', async () => {
  const cfg = config();
  const items = [outboxItem(), outboxItem(sampleEvent({ generation_id: 'gen-2' }))];
  await clickhouseDestination.send(items, context(cfg));
  await clickhouseDestination.send(
    items.map((item) => ({ ...item, attempt: 2 })),
    context(cfg),
  );
  const inserts = receiver.requests.filter((request) => request.url.includes('INSERT'));
  assert.equal(inserts.length, 2);
  const token = (request: ReceivedRequest) =>
    new URL(request.url, 'http://x').searchParams.get('insert_deduplication_token');
  assert.equal(token(inserts[0] as ReceivedRequest), token(inserts[1] as ReceivedRequest));
  assert.equal(inserts[0]?.text, inserts[1]?.text);
  assert.equal(table(cfg)?.rows.length, 2);
  assert.deepEqual(
    table(cfg)?.rows.map((row) => row.ROW_ID),
    items.map((item) => item.idempotencyKey),
  );
});

test('a wrong password is refused (403 AUTHENTICATION_FAILED) and not retried', async () => {
  await assert.rejects(
    clickhouseDestination.send([outboxItem()], context(config({ password: 'wrong' }))),
    (error) => {
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.status, 403);
      assert.equal(error.retryable, false);
      assert.match(error.message, /Code: 516\. DB::Exception: .*Authentication failed/);
      return true;
    },
  );
});

test('500 is retryable, 429 carries Retry-After, 400 is not retryable', async () => {
  receiver.reply = () => clickhouseError(500, 241, 'MEMORY_LIMIT_EXCEEDED', 'Memory limit (total) exceeded');
  await assert.rejects(clickhouseDestination.send([outboxItem()], context(config())), {
    retryable: true,
    status: 500,
  });
  receiver.reply = () => ({ status: 429, headers: { 'retry-after': '12' }, body: 'Too Many Requests' });
  await assert.rejects(clickhouseDestination.send([outboxItem()], context(config())), {
    retryable: true,
    retryAfterMs: 12_000,
  });
  receiver.reply = () =>
    clickhouseError(400, 27, 'CANNOT_PARSE_INPUT_ASSERTION_FAILED', 'Cannot parse input');
  await assert.rejects(clickhouseDestination.send([outboxItem()], context(config())), {
    retryable: false,
    status: 400,
  });
});

test('an exception reported in a 200 answer (X-ClickHouse-Exception-Code) fails the batch, retryably', async () => {
  receiver.reply = (request) =>
    request.url.includes('INSERT')
      ? {
          status: 200,
          headers: { 'x-clickhouse-exception-code': '209' },
          body: 'Code: 209. DB::Exception: Timeout exceeded while writing to socket. (SOCKET_TIMEOUT)',
        }
      : fakeClickhouse(request);
  await assert.rejects(clickhouseDestination.send([outboxItem()], context(config())), (error) => {
    assert.ok(error instanceof DeliveryError);
    assert.equal(error.retryable, true);
    assert.match(error.message, /209/);
    return true;
  });
});

test('testConnection runs SELECT 1 over HTTP with the credentials and creates nothing', async () => {
  await clickhouseDestination.testConnection(context(config()));
  const [request] = receiver.requests as [ReceivedRequest];
  assert.equal(request.method, 'GET');
  assert.equal(request.url, '/?query=SELECT+1');
  assert.equal(request.headers['x-clickhouse-user'], USER);
  assert.equal(tables.size, 0);
});

test('testConnection fails on wrong credentials and on something that is not ClickHouse', async () => {
  await assert.rejects(clickhouseDestination.testConnection(context(config({ password: 'nope' }))), {
    retryable: false,
    status: 403,
  });
  receiver.reply = () => ({
    status: 200,
    headers: { 'content-type': 'text/html' },
    body: '<html>hello</html>',
  });
  await assert.rejects(clickhouseDestination.testConnection(context(config())), { retryable: false });
});

test('a host with a path keeps it; identifiers are backtick-quoted', async () => {
  receiver.reply = (request) => {
    const url = new URL(request.url, 'http://x');
    if (!url.pathname.startsWith('/clickhouse/')) return { status: 404, body: 'not found' };
    return fakeClickhouse({ ...request, url: `/${url.search}` });
  };
  const cfg = config({ host: `${receiver.url}/clickhouse/` });
  await clickhouseDestination.send([outboxItem()], context(cfg));
  assert.deepEqual(
    receiver.requests.map((request) => request.url.split('?')[0]),
    ['/clickhouse/', '/clickhouse/'],
  );
  assert.deepEqual(clickhouseDestination.urls(cfg), [`${receiver.url}/clickhouse/`]);
  assert.equal(table(cfg)?.rows.length, 1);
});

test('validate() checks the host URL and refuses identifiers that are not plain names', () => {
  const problems = (overrides: Partial<ClickhouseConfig>) =>
    (clickhouseDestination.validate?.(config(overrides)) ?? []).map((problem) => problem.field);
  assert.deepEqual(problems({}), []);
  assert.deepEqual(problems({ host: 'https://abc.clickhouse.cloud:8443' }), []);
  assert.deepEqual(problems({ host: 'tcp://abc.clickhouse.cloud:9440' }), ['host']);
  assert.deepEqual(problems({ host: 'https://user:pw@abc.clickhouse.cloud:8443' }), ['host']);
  assert.deepEqual(problems({ host: 'https://abc.clickhouse.cloud:8443/?database=x' }), ['host']);
  assert.deepEqual(problems({ database: 'db`; DROP TABLE x; --' }), ['database']);
  assert.deepEqual(problems({ table: '1traces' }), ['table']);
  assert.deepEqual(problems({ table: 'my-traces' }), ['table']);
});

test('an identifier that bypassed validate() is refused before any SQL is sent', async () => {
  await assert.rejects(clickhouseDestination.send([outboxItem()], context(config({ table: 'x` ; DROP' }))), {
    retryable: false,
  });
  assert.equal(receiver.requests.length, 0);
});

test('config surface: defaults, secrets, batch size', () => {
  assert.deepEqual(clickhouseDestination.defaults, { table: 'OPENROUTER_TRACES' });
  assert.deepEqual(clickhouseDestination.secretFields, ['password']);
  assert.equal(clickhouseDestination.testOnSave, false);
  assert.ok(clickhouseDestination.maxBatch >= 1);
});
