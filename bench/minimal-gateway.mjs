// The least a gateway can do for a non-streamed chat request, as a second floor for the inference
// benchmark (`npm run bench:inference -- --floor minimal`): where the bare proxy (bench/bare-proxy.mjs)
// only passes bytes through, this does each step the gateway must take, in the cheapest way Node
// offers and with nothing else: read the body and parse it, hash the bearer key and look it up, check
// the fields the request uses, find the model's endpoint and prices, reserve the worst case in
// memory, send the upstream its own body through undici's `dispatch` (no Readable), parse the reply,
// settle the cost, answer with the cost and a generation id, and queue a 40-column record that a
// group commit inserts into SQLite (WAL, three indexes) every 20 ms on the event loop, as the
// gateway's embedded default does. No framework, schema validator, logging, metrics, health windows,
// fallbacks, policies or broadcast. Plain .mjs run by plain node, as the bare proxy is.
//
// Usage: node bench/minimal-gateway.mjs --port <port> --upstream http://127.0.0.1:<port>
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { Agent } from 'undici';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, upstream: { type: 'string' } },
});
if (!values.upstream) throw new Error('--upstream is required');
const origin = values.upstream.replace(/\/+$/, '');
const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });

// The generation record: a row as wide as the gateway's, with as many indexes.
const directory = mkdtempSync(join(tmpdir(), 'switchyard-minimal-gateway-'));
const database = new Database(join(directory, 'records.db'));
database.pragma('journal_mode = WAL');
database.pragma('synchronous = NORMAL');
const columns = Array.from({ length: 39 }, (_, index) => `c${index}`);
database.exec(
  `create table generations (id text primary key, ${columns.join(', ')});
   create index generations_key on generations (c0, c25);
   create index generations_workspace on generations (c1, c25);`,
);
const insert = database.prepare(`insert into generations values (?, ${columns.map(() => '?').join(', ')})`);
const insertAll = database.transaction((rows) => {
  for (const row of rows) insert.run(row);
});
let queued = [];
let commitPending = false;
function commit() {
  commitPending = false;
  const rows = queued;
  queued = [];
  insertAll(rows);
}

const keys = new Map([
  [createHash('sha256').update('sk-minimal').digest('hex'), { id: 'key-1', limit: 1e18, usage: 0 }],
]);
/** Nano-dollars per token. */
const models = new Map([
  ['bench/fast', { path: '/v1/chat/completions', upstreamModel: 'fast', prompt: 1000, completion: 2000 }],
  [
    'bench/slow',
    { path: '/slow/v1/chat/completions', upstreamModel: 'slow', prompt: 1000, completion: 2000 },
  ],
]);
let credits = 1e18;

function refuse(response, status, message) {
  const text = JSON.stringify({ error: { code: status, message } });
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

function readBody(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function post(path, body) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let status = 0;
    agent.dispatch(
      {
        origin,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer bench-key' },
        body,
      },
      {
        onConnect() {},
        onUpgrade() {},
        onError: reject,
        onHeaders(code) {
          status = code;
          return true;
        },
        onData(chunk) {
          chunks.push(chunk);
          return true;
        },
        onComplete() {
          resolve({
            status,
            text: (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8'),
          });
        },
      },
    );
  });
}

async function serve(request, response) {
  const started = performance.now();
  // The bench's readiness probe.
  if (request.url === '/health') return refuse(response, 200, 'ok');
  let body;
  try {
    body = JSON.parse((await readBody(request)).toString('utf8'));
  } catch {
    return refuse(response, 400, 'body: not JSON');
  }
  const bearer = request.headers.authorization ?? 'Bearer sk-minimal';
  const key = keys.get(createHash('sha256').update(bearer.slice(7)).digest('hex'));
  if (!key) return refuse(response, 401, 'unknown key');
  if (body === null || typeof body !== 'object') return refuse(response, 400, 'body: must be an object');
  if (typeof body.model !== 'string') return refuse(response, 400, 'model: must be a string');
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return refuse(response, 400, 'messages: must be a non-empty array');
  for (const message of body.messages) {
    if (message === null || typeof message !== 'object' || typeof message.role !== 'string')
      return refuse(response, 400, 'messages[].role: must be a string');
    if (typeof message.content !== 'string')
      return refuse(response, 400, 'messages[].content: must be a string');
  }
  if (body.max_tokens !== undefined && !(Number.isInteger(body.max_tokens) && body.max_tokens > 0))
    return refuse(response, 400, 'max_tokens: must be a positive integer');
  const model = models.get(body.model);
  if (!model) return refuse(response, 404, 'model: not found');
  const reserved = (body.max_tokens ?? 8192) * model.completion + 16_384 * model.prompt;
  if (credits < reserved || key.usage + reserved > key.limit)
    return refuse(response, 402, 'credits exhausted');
  credits -= reserved;

  const upstreamBody = JSON.stringify({
    model: model.upstreamModel,
    messages: body.messages.map((message) => ({ role: message.role, content: message.content })),
    max_tokens: body.max_tokens,
  });
  let reply;
  try {
    const answer = await post(model.path, upstreamBody);
    if (answer.status !== 200) throw new Error(`upstream answered ${answer.status}`);
    reply = JSON.parse(answer.text);
  } catch (error) {
    credits += reserved;
    return refuse(response, 502, error.message);
  }
  const usage = reply.usage;
  const cost = usage.prompt_tokens * model.prompt + usage.completion_tokens * model.completion;
  credits += reserved - cost;
  key.usage += cost;
  const latency = performance.now() - started;
  const id = `gen-${randomUUID()}`;
  const choice = reply.choices[0];
  const text = JSON.stringify({
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    provider: 'bench',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: choice.message.content },
        finish_reason: choice.finish_reason,
        native_finish_reason: choice.finish_reason,
      },
    ],
    usage: {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      cost: cost / 1e9,
    },
  });
  response.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-generation-id': id,
  });
  response.end(text);

  queued.push([
    id,
    key.id,
    'workspace-1',
    body.model,
    'bench',
    'bench/fast@bench',
    model.upstreamModel,
    reply.id,
    usage.prompt_tokens,
    usage.completion_tokens,
    0,
    0,
    0,
    cost,
    cost,
    reserved,
    latency,
    latency,
    0,
    choice.finish_reason,
    choice.finish_reason,
    0,
    0,
    0,
    null,
    new Date().toISOString(),
    'chat',
    200,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
  ]);
  if (!commitPending) {
    commitPending = true;
    setTimeout(commit, 20);
  }
}

const server = createServer((request, response) => {
  serve(request, response).catch((error) => {
    if (!response.headersSent) refuse(response, 500, error.message);
    else response.destroy();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(values.port), '127.0.0.1');
process.on('SIGTERM', () =>
  server.close(() => {
    if (queued.length > 0) commit();
    database.close();
    rmSync(directory, { recursive: true, force: true });
    process.exit(0);
  }),
);
