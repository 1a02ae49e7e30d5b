import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { expectError, startTestApp, type TestApp } from './helpers/test-app.js';

describe('ops endpoints and the error renderer', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(() => gateway.close());

  it('serves /health and /ready without a key', async () => {
    const health = await gateway.request('GET', '/health', { key: null });
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });
    const ready = await gateway.request('GET', '/ready', { key: null });
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'ready');
    assert.equal(ready.body.database, gateway.services.storage.kind);
  });

  it('reports requests by route and status, and a latency histogram, on /metrics', async () => {
    await gateway.request('GET', '/api/v1/key', { key: null });
    const metrics = await gateway.request('GET', '/metrics', { key: null });
    assert.equal(metrics.status, 200);
    assert.match(metrics.headers.get('content-type') ?? '', /text\/plain/);
    assert.match(
      metrics.text,
      /switchyard_http_requests_total\{method="GET",route="\/api\/v1\/key",status="401"\} 1/,
    );
    assert.match(
      metrics.text,
      /switchyard_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/health"\}|switchyard_http_request_duration_seconds_bucket/,
    );
  });

  it('publishes an OpenAPI document generated from the route schemas, and a docs page', async () => {
    const document = await gateway.request('GET', '/api/v1/openapi.json', { key: null });
    assert.equal(document.status, 200);
    assert.equal(document.body.openapi, '3.1.0');
    assert.deepEqual(Object.keys(document.body.paths).sort(), [
      '/byok',
      '/byok/{id}',
      '/chat/completions',
      '/credits',
      '/embeddings',
      '/endpoints/zdr',
      '/generation',
      '/guardrails',
      '/guardrails/assignments/keys',
      '/guardrails/assignments/members',
      '/guardrails/{id}',
      '/guardrails/{id}/assignments/keys',
      '/guardrails/{id}/assignments/keys/remove',
      '/guardrails/{id}/assignments/members',
      '/guardrails/{id}/assignments/members/remove',
      '/key',
      '/keys',
      '/keys/{hash}',
      '/messages',
      '/models',
      '/models/count',
      '/models/{author}/{slug}/endpoints',
      '/observability/destinations',
      '/observability/destinations/{id}',
      '/observability/destinations/{id}/deliveries',
      '/observability/destinations/{id}/deliveries/retry',
      '/observability/destinations/{id}/test',
      '/providers',
      '/responses',
      '/workspaces',
      '/workspaces/{id}',
      '/workspaces/{id}/budgets',
      '/workspaces/{id}/budgets/{interval}',
      '/workspaces/{id}/members',
      '/workspaces/{id}/members/add',
      '/workspaces/{id}/members/remove',
    ]);
    const create = document.body.paths['/keys'].post;
    assert.deepEqual(create.requestBody.content['application/json'].schema.required, ['name']);
    assert.ok(create.responses['200'].content['application/json'].schema.properties.key);
    const docs = await gateway.request('GET', '/api/v1/docs/', { key: null });
    assert.equal(docs.status, 200);
    assert.match(docs.text, /<html/i);
  });

  it('answers an unknown route with 404 in the envelope', async () => {
    const message = expectError(await gateway.request('GET', '/api/v1/nope', { key: null }), 404);
    assert.match(message, /GET \/api\/v1\/nope/);
  });

  it('a read that takes no parameters refuses one, naming it, rather than answering about something else', async () => {
    const workspace = (await gateway.request('GET', '/api/v1/key')).body.data.workspace_id as string;
    for (const [path, name] of [
      ['/api/v1/credits?workspace_id=other', 'workspace_id'],
      ['/api/v1/key?include_disabled=true', 'include_disabled'],
      [`/api/v1/workspaces/${workspace}?expand=members`, 'expand'],
      [`/api/v1/workspaces/${workspace}/budgets?interval=daily`, 'interval'],
      ['/api/v1/providers?limit=1', 'limit'],
    ] as const) {
      assert.equal(
        expectError(await gateway.request('GET', path), 400),
        `Invalid request parameters: querystring.${name} is not a known field`,
        path,
      );
    }
    assert.equal((await gateway.request('GET', '/api/v1/credits')).status, 200);
    // Public documents are not refused for a cache-busting parameter.
    assert.equal((await gateway.request('GET', '/api/v1/openapi.json?v=2', { key: null })).status, 200);
  });

  it('refuses malformed JSON, a wrong content type, an empty JSON body and a 10 MB body', async () => {
    const before = await gateway.request('GET', '/api/v1/keys?include_disabled=true');
    assert.match(
      expectError(
        await gateway.request('POST', '/api/v1/keys', {
          rawBody: '{"name": ',
          headers: { 'content-type': 'application/json' },
        }),
        400,
      ),
      /Malformed JSON/,
    );
    // Valid JSON with a prototype-poisoning key: refused, with the rule it broke rather than "malformed".
    for (const rawBody of [
      '{"name": "x", "__proto__": {"admin": true}}',
      '{"name": "x", "constructor": {"prototype": {}}}',
    ]) {
      assert.match(
        expectError(
          await gateway.request('POST', '/api/v1/keys', {
            rawBody,
            headers: { 'content-type': 'application/json' },
          }),
          400,
        ),
        /body must not hold a "__proto__" key, nor a "constructor" key holding "prototype" \(prototype poisoning is refused\)/,
      );
    }
    assert.match(
      expectError(
        await gateway.request('POST', '/api/v1/keys', {
          rawBody: 'name=x',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
        415,
      ),
      /Content-Type/,
    );
    expectError(
      await gateway.request('POST', '/api/v1/keys', {
        rawBody: '',
        headers: { 'content-type': 'application/json' },
      }),
      400,
    );
    const huge = JSON.stringify({ name: 'x'.repeat(10 * 1024 * 1024) });
    assert.match(
      expectError(
        await gateway.request('POST', '/api/v1/keys', {
          rawBody: huge,
          headers: { 'content-type': 'application/json' },
        }),
        413,
      ),
      /too large/,
    );
    const afterwards = await gateway.request('GET', '/api/v1/keys?include_disabled=true');
    assert.deepEqual(afterwards.body, before.body);
  });
});

describe('readiness and draining', () => {
  it('answers /ready with 503 in the envelope when the database is unreachable', async () => {
    const gateway = await startTestApp();
    try {
      await gateway.services.storage.close();
      const response = await gateway.request('GET', '/ready', { key: null });
      assert.match(expectError(response, 503), /Database is not reachable/);
      assert.equal((await gateway.request('GET', '/health', { key: null })).status, 200);
    } finally {
      await gateway.close();
    }
  });
});

describe('errors raised before routing', () => {
  it('renders a malformed URL and oversized headers in the envelope', async () => {
    const gateway = await startTestApp();
    try {
      assert.match(expectError(await gateway.request('GET', '/api/v1/keys/%ZZ'), 400), /not a valid url/i);
      const { request: httpRequest } = await import('node:http');
      const url = new URL(gateway.url);
      const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            path: '/health',
            headers: { 'x-padding': 'x'.repeat(20_000) },
          },
          (reply) => {
            let body = '';
            reply.setEncoding('utf8');
            reply.on('data', (chunk: string) => {
              body += chunk;
            });
            reply.on('end', () => resolve({ status: reply.statusCode ?? 0, body }));
          },
        );
        request.on('error', reject);
        request.end();
      });
      assert.equal(response.status, 431);
      assert.deepEqual(JSON.parse(response.body), {
        error: { code: 431, message: 'Request header fields too large' },
      });
    } finally {
      await gateway.close();
    }
  });

  it('closes its side of a connection it refused, even when the client never closes its own', async () => {
    const gateway = await startTestApp();
    const { connect } = await import('node:net');
    const url = new URL(gateway.url);
    // allowHalfOpen: the client does not answer the server's FIN, as a careless or hostile one would not.
    const socket = connect({ host: url.hostname, port: Number(url.port), allowHalfOpen: true });
    try {
      let received = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => {
        received += chunk;
      });
      const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()));
      socket.write('GARBAGE\r\n\r\n');
      await ended;
      assert.match(received, /^HTTP\/1\.1 400 /);
      assert.match(received, /"message":"Malformed HTTP request"/);
      // The server let the socket go (it no longer counts the connection): no descriptor is held
      // for as long as the client keeps its end open.
      const open = () =>
        new Promise<number>((resolve, reject) =>
          gateway.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
        );
      const deadline = Date.now() + 2000;
      while ((await open()) > 0 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(await open(), 0);
    } finally {
      socket.destroy();
      await gateway.close();
    }
  });
});
