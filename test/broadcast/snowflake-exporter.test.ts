import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import type { ExportContext, OutboxItem } from '../../src/broadcast/destination-type.js';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import {
  type SnowflakeConfig,
  snowflakeDestination,
  snowflakePolling,
} from '../../src/broadcast/exporters/snowflake.js';
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

const TOKEN = 'pat-secret-0123456789';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const http = createExporterHttp({ allowPrivateNetworks: true });
let receiver: FakeReceiver;

interface FakeTable {
  columns: Map<string, string>;
  rows: Array<Record<string, unknown>>;
}

/** The fake account's state. */
const tables = new Map<string, FakeTable>();
/** Answers by request id, replayed when a request comes back with `retry=true`. */
const executed = new Map<string, ReceiverReply>();
/** Statements answered 202: how many more polls stay 202, and the final answer. */
const running = new Map<string, { polls: number; answer: ReceiverReply }>();
/** How many polls each 202 statement stays running; 0 answers synchronously. */
let pollsWhileRunning = 0;
/** Handles of the statements cancelled. */
const cancelled: string[] = [];

before(async () => {
  receiver = await startReceiver();
});
beforeEach(() => {
  tables.clear();
  executed.clear();
  running.clear();
  pollsWhileRunning = 0;
  cancelled.length = 0;
  snowflakePolling.deadlineMs = 30_000;
  receiver.requests.length = 0;
  receiver.reply = fakeSnowflake;
});
after(async () => {
  await receiver.close();
  await http.close();
});

/** The exporter remembers created tables for the process's life: each test uses its own table. */
let tableCounter = 0;
function config(overrides: Partial<SnowflakeConfig> = {}): SnowflakeConfig {
  tableCounter += 1;
  return {
    account: 'myorg-myaccount',
    token: TOKEN,
    database: 'SNOWFLAKE_LEARNING_DB',
    schema: 'PUBLIC',
    table: `TRACES_${tableCounter}`,
    warehouse: 'COMPUTE_WH',
    ...overrides,
  };
}
/** Aimed at the fake account the way `broadcast.origin_overrides.snowflake` does it. */
const context = (cfg: SnowflakeConfig): ExportContext<SnowflakeConfig> => ({
  ...exportContext(cfg, http),
  originOverride: receiver.url,
});

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Snowflake's QueryFailureStatus. */
function failure(status: number, code: string, message: string, sqlState = '42000'): ReceiverReply {
  return { status, body: { code, message, sqlState, statementHandle: 'failed-handle' } };
}

function resultSet(requestId: string, data: string[][]): ReceiverReply {
  return {
    status: 200,
    body: {
      resultSetMetaData: {
        numRows: data.length,
        format: 'jsonv2',
        rowType: [{ name: 'status', type: 'text' }],
      },
      data,
      code: '090001',
      statementStatusUrl: `/api/v2/statements/${requestId}-h?requestId=${requestId}`,
      requestId,
      sqlState: '00000',
      statementHandle: `${requestId}-h`,
      message: 'Statement executed successfully.',
      createdOn: 1795341602000,
    },
  };
}

const TYPE_READS: Record<string, RegExp> = {
  'VARCHAR NOT NULL': /^r\['(\w+)'\]::VARCHAR$/,
  VARCHAR: /^r\['(\w+)'\]::VARCHAR$/,
  FLOAT: /^r\['(\w+)'\]::FLOAT$/,
  'NUMBER(38,0)': /^r\['(\w+)'\]::NUMBER$/,
  'TIMESTAMP_NTZ(3)': /^TO_TIMESTAMP_NTZ\(r\['(\w+)'\]::NUMBER, 3\)$/,
  VARIANT: /^r\['(\w+)'\]$/,
};

function createTable(statement: string, requestId: string): ReceiverReply {
  const match = /^CREATE TABLE IF NOT EXISTS "(\w+)"\."(\w+)"\."(\w+)" \((.+)\)$/.exec(statement);
  if (!match)
    return failure(422, '001003', 'SQL compilation error: syntax error line 1 at position 0 unexpected.');
  const columns = new Map<string, string>();
  for (const definition of (match[4] as string).split(/, (?=")/)) {
    const column = /^"(\w+)" (.+)$/.exec(definition);
    if (!column || !TYPE_READS[column[2] as string]) {
      return failure(422, '002040', `SQL compilation error: Unsupported data type '${definition}'.`);
    }
    columns.set(column[1] as string, column[2] as string);
  }
  const key = `${match[1]}.${match[2]}.${match[3]}`;
  if (!tables.has(key)) tables.set(key, { columns, rows: [] });
  return resultSet(requestId, [[`Table ${match[3]} successfully created.`]]);
}

/** Splits a SELECT list at its top-level commas. */
function selectList(text: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index];
    if (char === '(') depth += 1;
    else if (char === ')') depth -= 1;
    else if (char === ',' && depth === 0) {
      items.push(text.slice(start, index).trim());
      start = index + 1;
    }
  }
  items.push(text.slice(start).trim());
  return items;
}

/**
 * Runs the MERGE … USING (SELECT … FROM VALUES …) … WHEN NOT MATCHED THEN INSERT the way Snowflake
 * would, binding each `?` in order: a source row whose ROW_ID and TIMESTAMP are in the table already
 * is skipped.
 */
function merge(
  statement: string,
  bindings: Array<{ type: string; value: string }>,
  requestId: string,
): ReceiverReply {
  const match =
    /^MERGE INTO "(\w+)"\."(\w+)"\."(\w+)" t USING \(SELECT (.+) FROM \(SELECT PARSE_JSON\(column1\) AS r FROM VALUES ((?:\(\?\)(?:, )?)+)\)\) s ON t\."ROW_ID" = s\."ROW_ID" AND t\."TIMESTAMP" = s\."TIMESTAMP" WHEN NOT MATCHED THEN INSERT \(([^)]*)\) VALUES \(([^)]*)\)$/.exec(
      statement,
    );
  if (!match)
    return failure(422, '001003', 'SQL compilation error: syntax error line 1 at position 0 unexpected.');
  const key = `${match[1]}.${match[2]}.${match[3]}`;
  const table = tables.get(key);
  if (!table) {
    return failure(
      422,
      '002003',
      `SQL compilation error:\nTable '${key}' does not exist or not authorized.`,
      '42S02',
    );
  }
  const columns = (match[6] as string).split(', ').map((name) => name.replace(/^"|"$/g, ''));
  const values = (match[7] as string).split(', ');
  const reads = selectList(match[4] as string);
  if (reads.length !== columns.length || values.length !== columns.length)
    return failure(422, '002020', 'SQL compilation error: Insert value list does not match column list');
  for (const [index, column] of columns.entries()) {
    const type = table.columns.get(column);
    const aliased = /^(.+) AS "(\w+)"$/.exec(reads[index] as string);
    const read = type && aliased ? TYPE_READS[type]?.exec(aliased[1] as string) : null;
    if (!read || read[1] !== column || aliased?.[2] !== column || values[index] !== `s."${column}"`)
      return failure(
        422,
        '002023',
        `SQL compilation error: Expression type does not match column data type for ${column}`,
      );
  }
  let inserted = 0;
  for (const binding of bindings) {
    const row = JSON.parse(binding.value) as Record<string, unknown>;
    const stored: Record<string, unknown> = {};
    for (const column of columns) {
      const value = row[column] ?? null;
      stored[column] =
        column === 'TIMESTAMP' && value !== null ? new Date(value as number).toISOString() : value;
    }
    if (table.rows.some((kept) => kept.ROW_ID === stored.ROW_ID && kept.TIMESTAMP === stored.TIMESTAMP))
      continue;
    table.rows.push(stored);
    inserted += 1;
  }
  return resultSet(requestId, [[String(inserted)]]);
}

/** Answers like the Snowflake SQL API v2 (https://docs.snowflake.com/en/developer-guide/sql-api/reference). */
function fakeSnowflake(request: ReceivedRequest): ReceiverReply {
  if (
    request.headers.authorization !== `Bearer ${TOKEN}` ||
    request.headers['x-snowflake-authorization-token-type'] !== 'PROGRAMMATIC_ACCESS_TOKEN'
  ) {
    return { status: 401, body: { code: '390303', message: 'Invalid OAuth access token. [pat]' } };
  }
  if (!request.headers['user-agent'])
    return { status: 400, body: { code: '390142', message: 'User-Agent is required' } };
  const url = new URL(request.url, 'http://snowflake');
  const poll = /^\/api\/v2\/statements\/([^/]+)$/.exec(url.pathname);
  if (request.method === 'GET' && poll) {
    const state = running.get(decodeURIComponent(poll[1] as string));
    if (!state) return failure(404, '333333', 'Statement not found');
    if (state.polls > 0) {
      state.polls -= 1;
      return {
        status: 202,
        body: { code: '333334', message: 'Asynchronous execution in progress.', statementHandle: poll[1] },
      };
    }
    return state.answer;
  }
  const cancel = /^\/api\/v2\/statements\/([^/]+)\/cancel$/.exec(url.pathname);
  if (request.method === 'POST' && cancel) {
    const handle = decodeURIComponent(cancel[1] as string);
    if (!running.delete(handle))
      return failure(422, '000605', 'Identified SQL statement is not currently executing.');
    cancelled.push(handle);
    return {
      status: 200,
      body: { code: '000604', message: 'Statement cancelled.', statementHandle: handle },
    };
  }
  if (request.method !== 'POST' || url.pathname !== '/api/v2/statements')
    return { status: 404, body: { message: 'Not found' } };
  const requestId = url.searchParams.get('requestId') ?? '';
  if (!UUID.test(requestId)) return { status: 400, body: { code: '391903', message: 'Invalid requestId' } };
  // retry=true: the first execution's answer comes back and nothing runs again.
  const earlier = executed.get(requestId);
  if (earlier && url.searchParams.get('retry') === 'true') return earlier;
  if (
    request.headers['content-type'] !== 'application/json' ||
    request.headers.accept !== 'application/json'
  ) {
    return { status: 415, body: { message: 'Unsupported Media Type' } };
  }
  const body = request.json;
  if (!isObject(body) || typeof body.statement !== 'string')
    return { status: 400, body: { message: 'statement is required' } };
  if (
    body.database !== 'SNOWFLAKE_LEARNING_DB' ||
    body.schema !== 'PUBLIC' ||
    body.warehouse !== 'COMPUTE_WH'
  ) {
    return failure(
      422,
      '002043',
      'SQL compilation error: Object does not exist, or operation cannot be performed.',
      '02000',
    );
  }
  if (typeof body.timeout !== 'number') return { status: 400, body: { message: 'timeout must be a number' } };
  const bindings = isObject(body.bindings) ? body.bindings : {};
  const placeholders = (body.statement.match(/\?/g) ?? []).length;
  const ordered = Array.from({ length: placeholders }, (_, index) => bindings[String(index + 1)]);
  if (
    Object.keys(bindings).length !== placeholders ||
    !ordered.every((entry) => isObject(entry) && entry.type === 'TEXT' && typeof entry.value === 'string')
  ) {
    return failure(422, '002049', 'SQL compilation error: Bind variable ? not set.');
  }
  let answer: ReceiverReply;
  if (body.statement === 'SELECT 1') answer = resultSet(requestId, [['1']]);
  else if (body.statement.startsWith('CREATE TABLE')) answer = createTable(body.statement, requestId);
  else answer = merge(body.statement, ordered as Array<{ type: string; value: string }>, requestId);
  // async=true answers 202 with the handle at once, however quick the statement.
  if (pollsWhileRunning > 0 || url.searchParams.get('async') === 'true') {
    const handle = `${requestId}-async`;
    running.set(handle, { polls: Math.max(0, pollsWhileRunning - 1), answer });
    answer = {
      status: 202,
      body: {
        code: '333334',
        message: 'Asynchronous execution in progress.',
        statementHandle: handle,
        statementStatusUrl: `/api/v2/statements/${handle}`,
      },
    };
  }
  executed.set(requestId, answer);
  return answer;
}

const table = (cfg: SnowflakeConfig) => tables.get(`${cfg.database}.${cfg.schema}.${cfg.table}`);
/** The statements' requests, in order (the polls of their handles left out). */
const posts = () => receiver.requests.filter((request) => request.method === 'POST');
const statements = () =>
  posts().map((request) => {
    const statement = (request.json as { statement?: string } | undefined)?.statement ?? '';
    return `${request.method} ${new URL(request.url, 'http://x').pathname} ${statement.split(' ').slice(0, 2).join(' ')}`.trim();
  });

test('first batch: CREATE TABLE with VARIANT columns, then one INSERT with bindings, over the SQL API', async () => {
  const cfg = config();
  const item = outboxItem();
  const outcome = await snowflakeDestination.send([item], context(cfg));
  assert.equal(outcome, undefined);
  assert.deepEqual(statements(), [
    'POST /api/v2/statements CREATE TABLE',
    'POST /api/v2/statements MERGE INTO',
  ]);
  const [create, inserted] = posts() as [ReceivedRequest, ReceivedRequest];
  for (const request of [create, inserted]) {
    assert.equal(request.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(request.headers['x-snowflake-authorization-token-type'], 'PROGRAMMATIC_ACCESS_TOKEN');
    assert.equal(request.headers['content-type'], 'application/json');
    assert.equal(request.headers.accept, 'application/json');
    assert.ok(request.headers['user-agent']);
  }
  const insertUrl = new URL(inserted.url, 'http://x');
  assert.match(insertUrl.searchParams.get('requestId') ?? '', UUID);
  assert.equal(insertUrl.searchParams.get('retry'), 'true');
  assert.equal(insertUrl.searchParams.get('async'), 'true');
  const body = inserted.json as Record<string, unknown>;
  assert.deepEqual(
    { database: body.database, schema: body.schema, warehouse: body.warehouse, timeout: body.timeout },
    { database: 'SNOWFLAKE_LEARNING_DB', schema: 'PUBLIC', warehouse: 'COMPUTE_WH', timeout: 60 },
  );
  assert.match(
    String(body.statement),
    new RegExp(`^MERGE INTO "SNOWFLAKE_LEARNING_DB"\\."PUBLIC"\\."${cfg.table}" t USING `),
  );
  assert.equal(String(body.statement).includes('user_12345'), false, 'values travel as bindings, not SQL');
  const created = table(cfg);
  assert.ok(created);
  for (const column of ['ATTRIBUTES', 'INPUT', 'OUTPUT', 'METADATA', 'MODEL_PARAMETERS']) {
    assert.equal(created.columns.get(column), 'VARIANT', column);
  }
  assert.equal(created.columns.get('TIMESTAMP'), 'TIMESTAMP_NTZ(3)');
  assert.equal(created.columns.get('TOTAL_COST'), 'FLOAT');
  assert.equal(created.rows.length, 1);
  const row = created.rows[0] as Record<string, unknown>;
  assert.deepEqual(
    {
      ROW_ID: row.ROW_ID,
      TRACE_ID: row.TRACE_ID,
      SPAN_ID: row.SPAN_ID,
      GENERATION_ID: row.GENERATION_ID,
      USER_ID: row.USER_ID,
      SESSION_ID: row.SESSION_ID,
      TIMESTAMP: row.TIMESTAMP,
      MODEL: row.MODEL,
      PROVIDER: row.PROVIDER,
      STATUS: row.STATUS,
      SPAN_TYPE: row.SPAN_TYPE,
      TOTAL_COST: row.TOTAL_COST,
      TOTAL_TOKENS: row.TOTAL_TOKENS,
      LATENCY_MS: row.LATENCY_MS,
      METADATA: row.METADATA,
      MODEL_PARAMETERS: row.MODEL_PARAMETERS,
      INPUT: row.INPUT,
      OUTPUT: row.OUTPUT,
    },
    {
      ROW_ID: item.idempotencyKey,
      TRACE_ID: '4bf92f3577b34da6a3ce929d0e0e4736',
      SPAN_ID: '00f067aa0ba902b7',
      GENERATION_ID: 'gen-1732276800-abcdefghijklmnop',
      USER_ID: 'user_12345',
      SESSION_ID: 'session_abc',
      TIMESTAMP: '2026-11-22T10:00:00.000Z',
      MODEL: 'openai/gpt-4o',
      PROVIDER: 'openai',
      STATUS: 'ok',
      SPAN_TYPE: 'GENERATION',
      TOTAL_COST: 0.00075,
      TOTAL_TOKENS: 150,
      LATENCY_MS: 1250,
      METADATA: { order_id: 'ORD-12345' },
      MODEL_PARAMETERS: { temperature: 0.2, max_output_tokens: 256 },
      INPUT: sampleEvent().input,
      OUTPUT: sampleEvent().output,
    },
  );
  const attributes = row.ATTRIBUTES as Record<string, unknown>;
  assert.deepEqual(attributes.cost, sampleEvent().cost);
  assert.deepEqual(attributes.identity, sampleEvent().identity);
});

test('later batches skip CREATE; a failed insert (table gone) is not retried and the next batch creates it again', async () => {
  const cfg = config();
  await snowflakeDestination.send([outboxItem()], context(cfg));
  receiver.requests.length = 0;
  await snowflakeDestination.send([outboxItem(sampleEvent({ generation_id: 'gen-2' }))], context(cfg));
  assert.deepEqual(statements(), ['POST /api/v2/statements MERGE INTO']);

  tables.clear();
  await assert.rejects(
    snowflakeDestination.send([outboxItem(sampleEvent({ generation_id: 'gen-3' }))], context(cfg)),
    (error) => {
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.status, 422);
      assert.equal(error.retryable, false);
      assert.match(error.message, /does not exist/);
      return true;
    },
  );
  receiver.requests.length = 0;
  await snowflakeDestination.send([outboxItem(sampleEvent({ generation_id: 'gen-4' }))], context(cfg));
  assert.deepEqual(statements(), [
    'POST /api/v2/statements CREATE TABLE',
    'POST /api/v2/statements MERGE INTO',
  ]);
  assert.equal(table(cfg)?.rows.length, 1);
});

test('privacy mode and absent optional parts: INPUT/OUTPUT NULL, no cost detail, identity or request context', async () => {
  const cfg = config();
  await snowflakeDestination.send([outboxItem(privateEvent())], context(cfg));
  const row = table(cfg)?.rows[0] as Record<string, unknown>;
  assert.equal(row.INPUT, null);
  assert.equal(row.OUTPUT, null);
  const attributes = row.ATTRIBUTES as Record<string, unknown>;
  for (const key of ['cost', 'identity', 'request_context']) assert.equal(key in attributes, false, key);
  const sent = receiver.requests.at(-1)?.text ?? '';
  for (const secret of ['Say hello', 'You are terse', 'Hello.', 'a'.repeat(64), 'example.com']) {
    assert.equal(sent.includes(secret), false, `${secret} must not be sent`);
  }
});

test('custom headers are merged in but cannot replace the token or its type', async () => {
  const cfg = config({
    headers: {
      'X-Proxy-Tenant': 'acme',
      authorization: 'Bearer stolen',
      'X-Snowflake-Authorization-Token-Type': 'OAUTH',
    },
  });
  await snowflakeDestination.send([outboxItem()], context(cfg));
  for (const request of receiver.requests) {
    assert.equal(request.headers['x-proxy-tenant'], 'acme');
    assert.equal(request.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(request.headers['x-snowflake-authorization-token-type'], 'PROGRAMMATIC_ACCESS_TOKEN');
  }
  assert.equal(table(cfg)?.rows.length, 1);
});

test('the same batch resent gets the same request id, and Snowflake answers it without inserting again', async () => {
  const cfg = config();
  const items = [outboxItem(), outboxItem(sampleEvent({ generation_id: 'gen-2' }))];
  await snowflakeDestination.send(items, context(cfg));
  await snowflakeDestination.send(
    items.map((item) => ({ ...item, attempt: 2 })),
    context(cfg),
  );
  const ids = posts()
    .filter((request) => String((request.json as { statement?: string }).statement).startsWith('MERGE'))
    .map((request) => new URL(request.url, 'http://x').searchParams.get('requestId'));
  assert.equal(ids.length, 2);
  assert.equal(ids[0], ids[1]);
  assert.equal(table(cfg)?.rows.length, 2);
  assert.deepEqual(
    table(cfg)?.rows.map((row) => row.ROW_ID),
    items.map((item) => item.idempotencyKey),
  );
  receiver.requests.length = 0;
  await snowflakeDestination.send(items.slice(0, 1), context(cfg));
  const other = new URL(receiver.requests[0]?.url ?? '', 'http://x').searchParams.get('requestId');
  assert.notEqual(other, ids[0]);
});

test('a batch regrouped on retry (a new request id) inserts each row once', async () => {
  const cfg = config();
  const [a, b, c, d] = ['gen-a', 'gen-b', 'gen-c', 'gen-d'].map((id) =>
    outboxItem(sampleEvent({ generation_id: id })),
  ) as [OutboxItem, OutboxItem, OutboxItem, OutboxItem];
  // The first run went through, but its answer never reached the worker (a timeout): each row is
  // retried on its own backoff and comes back in other batches, under other request ids.
  await snowflakeDestination.send([a, b, c], context(cfg));
  await snowflakeDestination.send(
    [
      { ...b, attempt: 2 },
      { ...c, attempt: 2 },
    ],
    context(cfg),
  );
  await snowflakeDestination.send([{ ...a, attempt: 2 }, d], context(cfg));
  const ids = posts()
    .filter((request) => String((request.json as { statement?: string }).statement).startsWith('MERGE'))
    .map((request) => new URL(request.url, 'http://x').searchParams.get('requestId'));
  assert.equal(new Set(ids).size, 3, 'three batches, three request ids');
  assert.deepEqual(
    table(cfg)?.rows.map((row) => row.ROW_ID),
    [a, b, c, d].map((item) => item.idempotencyKey),
  );
});

test('202 (still running) is polled at /api/v2/statements/{handle} until the statement finishes', async () => {
  const cfg = config();
  pollsWhileRunning = 2;
  await snowflakeDestination.send([outboxItem()], context(cfg));
  assert.deepEqual(
    receiver.requests.map(
      (request) =>
        `${request.method} ${new URL(request.url, 'http://x').pathname.replace(/[0-9a-f-]{36}/, 'ID')}`,
    ),
    [
      'POST /api/v2/statements',
      'GET /api/v2/statements/ID-async',
      'GET /api/v2/statements/ID-async',
      'POST /api/v2/statements',
      'GET /api/v2/statements/ID-async',
      'GET /api/v2/statements/ID-async',
    ],
  );
  assert.equal(table(cfg)?.rows.length, 1);
});

test('a statement still running at the poll deadline is cancelled before the batch is retried', async () => {
  const cfg = config();
  await snowflakeDestination.send([outboxItem()], context(cfg));
  snowflakePolling.deadlineMs = 600;
  pollsWhileRunning = 1_000;
  await assert.rejects(
    snowflakeDestination.send([outboxItem(sampleEvent({ generation_id: 'gen-slow' }))], context(cfg)),
    (error) => {
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.retryable, true);
      assert.match(error.message, /still running after 0\.6s; cancelled/);
      return true;
    },
  );
  assert.equal(cancelled.length, 1);
  assert.match(receiver.requests.at(-1)?.url ?? '', /^\/api\/v2\/statements\/[0-9a-f-]{36}-async\/cancel$/);
});

test('a statement that fails while polled (422) fails the batch without retry', async () => {
  const cfg = config();
  await snowflakeDestination.send([outboxItem()], context(cfg));
  pollsWhileRunning = 1;
  receiver.reply = (request) => {
    if (request.method === 'POST') {
      const answer = fakeSnowflake(request);
      for (const state of running.values())
        state.answer = failure(422, '100069', 'Error parsing JSON: unknown keyword', '22P02');
      return answer;
    }
    return fakeSnowflake(request);
  };
  await assert.rejects(
    snowflakeDestination.send([outboxItem(sampleEvent({ generation_id: 'gen-9' }))], context(cfg)),
    (error) => {
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.status, 422);
      assert.equal(error.retryable, false);
      assert.match(error.message, /Error parsing JSON/);
      return true;
    },
  );
});

test('an invalid token (401) is not retryable', async () => {
  await assert.rejects(
    snowflakeDestination.send([outboxItem()], context(config({ token: 'expired' }))),
    (error) => {
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.status, 401);
      assert.equal(error.retryable, false);
      assert.match(error.message, /390303/);
      return true;
    },
  );
});

test('429 carries Retry-After; 503 and 500 are retryable; 400 is not', async () => {
  receiver.reply = () => ({
    status: 429,
    headers: { 'retry-after': '20' },
    body: { code: '390502', message: 'Too many requests' },
  });
  await assert.rejects(snowflakeDestination.send([outboxItem()], context(config())), {
    retryable: true,
    retryAfterMs: 20_000,
  });
  receiver.reply = () => ({ status: 503, body: { message: 'Service Unavailable' } });
  await assert.rejects(snowflakeDestination.send([outboxItem()], context(config())), {
    retryable: true,
    status: 503,
  });
  receiver.reply = () => ({ status: 500, body: { message: 'Internal error' } });
  await assert.rejects(snowflakeDestination.send([outboxItem()], context(config())), {
    retryable: true,
    status: 500,
  });
  receiver.reply = () => ({ status: 400, body: { code: '390142', message: 'Incoming request is invalid' } });
  await assert.rejects(snowflakeDestination.send([outboxItem()], context(config())), {
    retryable: false,
    status: 400,
  });
});

test('testConnection runs SELECT 1 in the configured database, schema and warehouse, creating nothing', async () => {
  await snowflakeDestination.testConnection(context(config()));
  const [request] = receiver.requests as [ReceivedRequest];
  assert.equal((request.json as { statement: string }).statement, 'SELECT 1');
  assert.equal((request.json as { warehouse: string }).warehouse, 'COMPUTE_WH');
  assert.equal(tables.size, 0);
  await assert.rejects(snowflakeDestination.testConnection(context(config({ token: 'bad' }))), {
    retryable: false,
    status: 401,
  });
  await assert.rejects(snowflakeDestination.testConnection(context(config({ warehouse: 'MISSING_WH' }))), {
    retryable: false,
    status: 422,
  });
});

test('without an origin override the account host is used; urls() names it', () => {
  assert.deepEqual(snowflakeDestination.urls(config({ account: 'MyOrg-My_Account' })), [
    'https://myorg-my-account.snowflakecomputing.com/api/v2/statements',
  ]);
  assert.deepEqual(snowflakeDestination.urls(config({ account: 'xy12345.us-east-1' })), [
    'https://xy12345.us-east-1.snowflakecomputing.com/api/v2/statements',
  ]);
});

test('validate() refuses bad account identifiers and identifiers that are not plain names', () => {
  const problems = (overrides: Partial<SnowflakeConfig>) =>
    (snowflakeDestination.validate?.(config(overrides)) ?? []).map((problem) => problem.field);
  assert.deepEqual(problems({}), []);
  for (const account of ['my account', '-lead', 'two..dots', 'trail-', 'a/b']) {
    assert.deepEqual(problems({ account }), ['account'], account);
  }
  assert.deepEqual(problems({ database: 'DB"; DROP TABLE X; --' }), ['database']);
  assert.deepEqual(problems({ schema: '1SCHEMA' }), ['schema']);
  assert.deepEqual(problems({ table: 'my-table' }), ['table']);
  assert.deepEqual(problems({ warehouse: 'WH ONE' }), ['warehouse']);
});

test('an identifier that bypassed validate() is refused before any SQL is sent', async () => {
  await assert.rejects(snowflakeDestination.send([outboxItem()], context(config({ table: 'T"; DROP' }))), {
    retryable: false,
  });
  assert.equal(receiver.requests.length, 0);
});

test('config surface: defaults, secrets, batch size', () => {
  assert.deepEqual(snowflakeDestination.defaults, {
    database: 'SNOWFLAKE_LEARNING_DB',
    schema: 'PUBLIC',
    table: 'OPENROUTER_TRACES',
    warehouse: 'COMPUTE_WH',
  });
  assert.deepEqual(snowflakeDestination.secretFields, ['token']);
  assert.equal(snowflakeDestination.testOnSave, false);
  assert.ok(snowflakeDestination.maxBatch >= 1);
});
