import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';
import { acmeCatalog, chatCompletion, createKey } from './harness.js';

/**
 * The direct lane (src/gateway/direct-lane.ts) serves JSON inference requests past Fastify. Two
 * gateways, alike but for `direct_lane`, get the same requests: every answer — status, the headers
 * a client reads, the body (ids and clocks aside) — must be the same, and only the lane's gateway
 * counts them as the lane's.
 */

const BODY_LIMIT = 4096;

/** The headers compared: what clients and SDKs read. */
const COMPARED_HEADERS = [
  'content-type',
  'content-length',
  'cache-control',
  'retry-after',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'connection',
];

interface Answer {
  status: number;
  headers: Record<string, string | null>;
  hasGenerationId: boolean;
  body: string;
}

/** Ids and clocks differ between two gateways and runs; everything else must not. */
function normalized(text: string): string {
  return text
    .replace(/\d{10}-[0-9a-f]{22}/g, '<id>')
    .replace(/"(created|created_at|completed_at)":\d+/g, '"$1":0')
    .replace(/"(latency_ms|generation_time_ms|first_token_ms)":\d+/g, '"$1":0');
}

/** Keep-alive connections, one pool per gateway: whether an answer closes its connection is compared too. */
const agents = new Map<TestApp, Agent>();
const agentOf = (gateway: TestApp): Agent => {
  let agent = agents.get(gateway);
  if (!agent) {
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
    agents.set(gateway, agent);
  }
  return agent;
};

/** One request (raw, so that any header or body can be sent) on the gateway's keep-alive connection. */
function send(
  gateway: TestApp,
  options: { method?: string; path: string; headers: Record<string, string>; body?: string | Buffer },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${gateway.url}${options.path}`, {
      method: options.method ?? 'POST',
      agent: agentOf(gateway),
      headers: options.headers,
    });
    request.on('error', reject);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const headers: Record<string, string | null> = {};
        for (const name of COMPARED_HEADERS) {
          const value = response.headers[name];
          headers[name] = value === undefined ? null : String(value);
        }
        resolve({
          status: response.statusCode ?? 0,
          headers,
          hasGenerationId: typeof response.headers['x-generation-id'] === 'string',
          body: normalized(Buffer.concat(chunks).toString('utf8')),
        });
      });
    });
    request.end(options.body);
  });
}

/** A lane counter of `/metrics`: how many requests of `route` the lane served. */
async function laneCount(gateway: TestApp, route: string): Promise<number> {
  const metrics = await gateway.request('GET', '/metrics', { key: null });
  const line = metrics.text
    .split('\n')
    .find((candidate) => candidate.startsWith(`switchyard_direct_lane_requests_total{route="${route}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('the direct lane', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let lane: TestApp;
  let routes: TestApp;
  const keys = new Map<TestApp, { key: string; management: string }>();

  before(async () => {
    upstream = await startFakeUpstream();
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(chatCompletion('Hello.'));
    });
    const config = (directLane: boolean) => ({
      direct_lane: directLane,
      credits: { initial: 100 },
      limits: { body_bytes: BODY_LIMIT, rate_limit: { requests: 1000, window_seconds: 60 } },
      catalog: acmeCatalog(`${upstream.url}/v1`),
      providers: { acme: { api_key: 'k' } },
    });
    [lane, routes] = await Promise.all([
      startTestApp({ demo: true, config: config(true) }),
      startTestApp({ demo: true, config: config(false) }),
    ]);
    for (const gateway of [lane, routes])
      keys.set(gateway, { key: (await createKey(gateway)).key, management: gateway.managementKey });
  });
  after(async () => {
    for (const agent of agents.values()) agent.destroy();
    await Promise.all([lane?.close(), routes?.close()]);
    await upstream?.close();
  });

  /** Sends the same request to both gateways, in turn, and asserts the two answers are the same. */
  async function both(
    path: string,
    options: {
      body?: unknown;
      rawBody?: string | Buffer;
      headers?: Record<string, string>;
      key?: 'key' | 'management' | null;
    },
  ): Promise<Answer> {
    const answers: Answer[] = [];
    for (const gateway of [lane, routes]) {
      const { key, management } = keys.get(gateway) as { key: string; management: string };
      const which = options.key === undefined ? 'key' : options.key;
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        ...(which === null ? {} : { authorization: `Bearer ${which === 'key' ? key : management}` }),
        ...options.headers,
      };
      const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
      answers.push(
        await send(gateway, { path: `/api/v1${path}`, headers, ...(body === undefined ? {} : { body }) }),
      );
    }
    assert.deepEqual(answers[0], answers[1], 'the lane answers as the route does');
    return answers[0] as Answer;
  }

  const chat = { model: 'switchyard/echo', messages: [{ role: 'user', content: 'same answer' }] };

  it('answers a generation on every surface as the routes do, streamed or not', async () => {
    assert.equal((await both('/chat/completions', { body: chat })).status, 200);
    assert.equal((await both('/chat/completions', { body: { ...chat, stream: true } })).status, 200);
    assert.equal(
      (await both('/chat/completions', { body: { ...chat, model: 'acme/widget-1' } })).status,
      200,
    );
    const input = { model: 'switchyard/echo', input: 'same answer' };
    assert.equal((await both('/responses', { body: input })).status, 200);
    const streamed = await both('/responses', { body: { ...input, stream: true } });
    assert.match(streamed.body, /response\.completed/);
    const message = { model: 'switchyard/echo', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] };
    assert.equal((await both('/messages', { body: message })).status, 200);
    assert.match((await both('/messages', { body: { ...message, stream: true } })).body, /message_stop/);
    const embedded = await both('/embeddings', { body: { model: 'switchyard/embed', input: ['a', 'b'] } });
    assert.equal(embedded.status, 200);
    assert.equal(embedded.hasGenerationId, true);
  });

  it('refuses what the routes refuse, with the same status, headers and envelope', async () => {
    // Schema, unknown field, the dialect's own rules, upstream failures.
    const schema = await both('/chat/completions', { body: { model: 'x' } });
    assert.equal(schema.status, 400);
    assert.match(JSON.parse(schema.body).error.message, /body\.messages/);
    await both('/chat/completions', { body: { ...chat, tempratur: 1 } });
    await both('/chat/completions', { body: { ...chat, n: 3 } });
    await both('/chat/completions', { body: { ...chat, model: 'switchyard/fail-429' } });
    await both('/chat/completions', { body: { ...chat, model: 'no/such-model' } });
    await both('/responses', { body: { model: 'switchyard/echo', input: [] } });
    await both('/messages', { body: { model: 'switchyard/echo', messages: [] } });
    await both('/embeddings', { body: { model: 'switchyard/embed', input: [] } });
    // A management key on inference.
    assert.equal((await both('/chat/completions', { body: chat, key: 'management' })).status, 403);
  });

  it('reads bodies as the routes do: malformed, empty, too deep, too large, other charsets', async () => {
    for (const path of ['/chat/completions', '/messages', '/responses', '/embeddings']) {
      assert.equal((await both(path, { rawBody: '{"model": ' })).status, 400);
      assert.equal((await both(path, { rawBody: '' })).status, 400);
      assert.equal((await both(path, { rawBody: '{"__proto__": {"polluted": true}}' })).status, 400);
      assert.equal((await both(path, { rawBody: `${'['.repeat(200)}${']'.repeat(200)}` })).status, 400);
      assert.equal(
        (await both(path, { rawBody: JSON.stringify({ ...chat, pad: 'x'.repeat(BODY_LIMIT) }) })).status,
        413,
      );
    }
    // Bytes that are not UTF-8 (a Latin-1 é, a lone continuation byte, a cut sequence) are refused,
    // not read as U+FFFD; the character U+FFFD itself, sent as UTF-8, is text like any other.
    for (const bytes of [[0xe9], [0x80], [0xe2, 0x82]]) {
      const invalid = await both('/chat/completions', {
        rawBody: Buffer.concat([
          Buffer.from('{"model":"switchyard/echo","messages":[{"role":"user","content":"caf'),
          Buffer.from(bytes),
          Buffer.from('"}]}'),
        ]),
      });
      assert.equal(invalid.status, 400);
      assert.equal(
        JSON.parse(invalid.body).error.message,
        'Invalid request parameters: body must be valid UTF-8 (RFC 8259): it holds a byte sequence that is not',
      );
    }
    // 1e400 parses as Infinity, which an integer schema lets through: refused, named, on any route.
    const overflow = await both('/chat/completions', {
      rawBody: '{"model":"switchyard/echo","messages":[{"role":"user","content":"hi"}],"max_tokens":1e400}',
    });
    assert.equal(overflow.status, 400);
    assert.equal(
      JSON.parse(overflow.body).error.message,
      'Invalid request parameters: body.max_tokens must be a finite number (it overflows a double)',
    );
    const digits = await both('/responses', {
      rawBody: `{"model":"switchyard/echo","input":"hi","temperature":${'9'.repeat(400)}}`,
    });
    assert.match(JSON.parse(digits.body).error.message, /body\.temperature must be a finite number/);
    // The same text inside a string is text.
    const quoted = await both('/chat/completions', {
      body: { ...chat, messages: [{ role: 'user', content: `1e400 and ${'9'.repeat(400)}` }] },
    });
    assert.equal(quoted.status, 200);
    const replacement = await both('/chat/completions', {
      body: { ...chat, messages: [{ role: 'user', content: 'caf\uFFFD' }] },
    });
    assert.equal(replacement.status, 200);
    assert.match(JSON.parse(replacement.body).choices[0].message.content, /caf\uFFFD/);
    const utf16 = await both('/chat/completions', {
      body: chat,
      headers: { 'content-type': 'application/json; charset=utf-16' },
    });
    assert.equal(utf16.status, 415);
    // No content coding is decoded: labelled plain JSON and real gzip bytes are both a 415, identity is none.
    const labelled = await both('/chat/completions', { body: chat, headers: { 'content-encoding': 'gzip' } });
    assert.equal(labelled.status, 415);
    assert.match(JSON.parse(labelled.body).error.message, /Content-Encoding "gzip" is not supported/);
    const gzipped = await both('/messages', {
      rawBody: gzipSync(JSON.stringify(chat)),
      headers: { 'content-encoding': 'GZIP' },
    });
    assert.equal(gzipped.status, 415);
    assert.equal(JSON.parse(gzipped.body).type, 'error', 'in the Anthropic envelope on /messages');
    const identity = await both('/chat/completions', {
      body: chat,
      headers: { 'content-encoding': 'identity' },
    });
    assert.equal(identity.status, 200);
    // Other Content-Types go to Fastify on both gateways; the answers agree all the same: text is
    // read as a string (then refused by the schema), anything else is not read at all.
    const text = await both('/chat/completions', { body: chat, headers: { 'content-type': 'text/plain' } });
    assert.equal(text.status, 400);
    assert.match(JSON.parse(text.body).error.message, /body must be object/);
    const xml = await both('/chat/completions', {
      body: chat,
      headers: { 'content-type': 'application/xml' },
    });
    assert.equal(xml.status, 415);
    assert.equal(
      (
        await both('/chat/completions', {
          body: chat,
          headers: { 'content-type': 'application/json; charset=UTF-8' },
        })
      ).status,
      200,
    );
    // Spellings of JSON the lane takes, or leaves to Fastify: the same answers either way.
    for (const contentType of [
      'Application/JSON',
      'application/json;charset="utf-8"',
      'application/json; charset=latin1',
      'application/json; foo=bar',
      'application/json; charset=',
      'application/vnd.api+json',
    ])
      await both('/chat/completions', { body: chat, headers: { 'content-type': contentType } });
  });

  it('closes the connection after a body it cannot read, as Fastify does, and keeps it after a schema refusal', async () => {
    const malformed = await both('/chat/completions', { rawBody: '{"model": ' });
    assert.equal(malformed.headers.connection, 'close');
    const tooLarge = await both('/chat/completions', { rawBody: 'x'.repeat(BODY_LIMIT + 1) });
    assert.equal(tooLarge.headers.connection, 'close');
    const schema = await both('/chat/completions', { body: { model: 'x' } });
    assert.equal(schema.headers.connection, 'keep-alive');
  });

  it('authenticates as the routes do', async () => {
    assert.equal((await both('/chat/completions', { body: chat, key: null })).status, 401);
    assert.equal(
      (await both('/chat/completions', { body: chat, key: null, headers: { authorization: 'Basic abc' } }))
        .status,
      401,
    );
    assert.equal(
      (
        await both('/messages', {
          body: chat,
          key: null,
          headers: { authorization: `Bearer sk-sy-v1-${'0'.repeat(64)}` },
        })
      ).status,
      401,
    );
  });

  it('takes the query and one trailing slash the router allows, and leaves other methods to it', async () => {
    assert.equal((await both('/chat/completions/', { body: chat })).status, 200);
    assert.equal((await both('/chat/completions?trace=1', { body: chat })).status, 200);
    const get = await Promise.all(
      [lane, routes].map((gateway) => gateway.request('GET', '/api/v1/chat/completions', { key: null })),
    );
    assert.deepEqual(
      get.map((answer) => answer.status),
      [404, 404],
    );
  });

  it('counts what it serves: the lane counter on the lane, the request metrics on both', async () => {
    const route = '/api/v1/chat/completions';
    const before = await laneCount(lane, route);
    await both('/chat/completions', { body: chat });
    await both('/chat/completions', { body: { model: 'x' } });
    assert.equal(await laneCount(lane, route), before + 2);
    assert.equal(await laneCount(routes, route), 0, 'the routes-only gateway never takes the lane');
    // A Content-Type the lane leaves to Fastify is not the lane's.
    await both('/chat/completions', { body: chat, headers: { 'content-type': 'text/plain' } });
    assert.equal(await laneCount(lane, route), before + 2);
    for (const gateway of [lane, routes]) {
      const metrics = await gateway.request('GET', '/metrics', { key: null });
      assert.match(
        metrics.text,
        /switchyard_http_requests_total\{method="POST",route="\/api\/v1\/chat\/completions",status="200"\} \d+/,
      );
    }
  });

  it('leaves the same request metrics behind as the routes, a client that hung up mid-body included', async () => {
    for (const gateway of [lane, routes]) {
      const { key } = keys.get(gateway) as { key: string };
      await new Promise<void>((resolve) => {
        const request = httpRequest(`${gateway.url}/api/v1/chat/completions`, {
          method: 'POST',
          agent: false,
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'content-length': '500',
          },
        });
        request.on('error', () => resolve());
        request.write('{"model": "switchyard/echo", ');
        setTimeout(() => {
          request.destroy();
          resolve();
        }, 50);
      });
    }
    // Both gateways saw the same requests in the same order: their counts per route and status agree.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const counts = await Promise.all(
      [lane, routes].map(async (gateway) => {
        const metrics = await gateway.request('GET', '/metrics', { key: null });
        return metrics.text
          .split('\n')
          .filter(
            (line) => line.startsWith('switchyard_http_requests_total{') && line.includes('route="/api/v1/'),
          )
          .sort();
      }),
    );
    assert.ok((counts[0] ?? []).length > 5);
    assert.deepEqual(counts[0], counts[1]);
  });
});

/** Resolves once `done()` holds, checking every millisecond for up to two seconds. */
async function waitFor(done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 1) {
    if (waited > 2000) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

describe('the direct lane under a rate limit and while closing', () => {
  it('refuses past the key’s rate limit in the surface’s envelope, as the route does', async () => {
    const gateways = await Promise.all(
      [true, false].map((directLane) =>
        startTestApp({
          demo: true,
          config: { direct_lane: directLane, limits: { rate_limit: { requests: 2, window_seconds: 3600 } } },
        }),
      ),
    );
    try {
      const answers: Answer[][] = [];
      for (const gateway of gateways) {
        const { key } = await createKey(gateway);
        const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
        const chat = JSON.stringify({
          model: 'switchyard/echo',
          messages: [{ role: 'user', content: 'hi' }],
        });
        const message = JSON.stringify({
          model: 'switchyard/echo',
          max_tokens: 5,
          messages: [{ role: 'user', content: 'hi' }],
        });
        answers.push([
          await send(gateway, { path: '/api/v1/chat/completions', headers, body: chat }),
          await send(gateway, { path: '/api/v1/chat/completions', headers, body: chat }),
          await send(gateway, { path: '/api/v1/chat/completions', headers, body: chat }),
          await send(gateway, { path: '/api/v1/messages', headers, body: message }),
        ]);
      }
      // Retry-After counts down the window's seconds: the two gateways, asked in turn, may straddle a
      // second. Both say the same wait within one second; the rest must be equal.
      const waits = answers.map((run) => run.map((answer) => answer.headers['retry-after']));
      for (const [index, wait] of (waits[0] ?? []).entries()) {
        const other = waits[1]?.[index];
        if (wait === null || wait === undefined) assert.equal(other, wait);
        else assert.ok(Math.abs(Number(wait) - Number(other)) <= 1, `${wait} against ${other}`);
      }
      const withoutWaits = answers.map((run) =>
        run.map((answer) => ({ ...answer, headers: { ...answer.headers, 'retry-after': null } })),
      );
      assert.deepEqual(withoutWaits[0], withoutWaits[1]);
      const [first, second, third, fourth] = answers[0] as Answer[];
      assert.deepEqual([first?.status, second?.status, third?.status, fourth?.status], [200, 200, 429, 429]);
      assert.equal(third?.headers['x-ratelimit-limit'], '2');
      assert.ok(Number(third?.headers['retry-after']) >= 1);
      assert.equal(JSON.parse(third?.body ?? '{}').error.metadata.error_type, 'rate_limit_exceeded');
      // Anthropic's envelope on /messages.
      assert.equal(JSON.parse(fourth?.body ?? '{}').type, 'error');
    } finally {
      await Promise.all(gateways.map((gateway) => gateway.close()));
    }
  });

  it('leaves a request that arrives on a kept connection while closing to Fastify: a 503 with Connection: close', async () => {
    const answers: string[] = [];
    for (const directLane of [true, false]) {
      const gateway = await startTestApp({ demo: true, config: { direct_lane: directLane } });
      try {
        const { key } = await createKey(gateway);
        const body = JSON.stringify({
          model: 'switchyard/echo',
          messages: [{ role: 'user', content: 'hi' }],
        });
        const socket = connect(Number(new URL(gateway.url).port), '127.0.0.1');
        const received: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => received.push(chunk));
        const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
        await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
        // The request line and a header: the connection is busy, so closing does not drop it as idle.
        socket.write(`POST /api/v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n`);
        await new Promise((resolve) => setTimeout(resolve, 50));
        const closing = gateway.close();
        await waitFor(() => !gateway.server.listening);
        socket.write(
          `authorization: Bearer ${key}\r\ncontent-type: application/json\r\n` +
            `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        await ended;
        await closing;
        const text = Buffer.concat(received).toString('utf8');
        // The date header and the request id differ between the two gateways; the rest must not.
        answers.push(text.replace(/^date: .*\r\n/im, '').replace(/"request_id":"[^"]*"/, ''));
      } finally {
        await gateway.close();
      }
    }
    assert.equal(answers[0], answers[1], 'the lane leaves it to the route');
    const [head, payload] = (answers[0] as string).split('\r\n\r\n');
    assert.match(head ?? '', /^HTTP\/1\.1 503 /);
    assert.match(head ?? '', /\r\nconnection: close/i);
    assert.equal(JSON.parse(payload ?? '{}').error.code, 503);
  });

  it('finishes an answer in flight when the server closes, with Connection: close', async () => {
    const upstream = await startFakeUpstream();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let arrived: () => void = () => {};
    const arrival = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    upstream.handle(async (_request, response) => {
      arrived();
      await held;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(chatCompletion('Late.'));
    });
    const gateway = await startTestApp({
      config: {
        credits: { initial: 100 },
        catalog: acmeCatalog(`${upstream.url}/v1`),
        providers: { acme: { api_key: 'k' } },
      },
    });
    try {
      const { key } = await createKey(gateway);
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
      const body = JSON.stringify({ model: 'acme/widget-1', messages: [{ role: 'user', content: 'hi' }] });
      const inFlight = send(gateway, { path: '/api/v1/chat/completions', headers, body });
      await arrival;
      const closing = gateway.close();
      // The server no longer accepts connections; what it still answers is the request in flight.
      release();
      const answer = await inFlight;
      assert.equal(answer.status, 200, answer.body);
      assert.equal(answer.headers.connection, 'close');
      assert.match(answer.body, /Late\./);
      await closing;
    } finally {
      release();
      await gateway.close();
      await upstream.close();
    }
  });
});
