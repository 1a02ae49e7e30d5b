import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type RecordedRequest, startFakeUpstream } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  BAIDU,
  chatCompletion,
  createKey,
  DEEPSEEK,
  GMICLOUD,
  generationId,
  generationRecord,
  NOVITA,
  offsetClock,
  REFUSED_URL,
  usageOf,
} from './harness.js';

/**
 * Failover across providers of one model: each fake upstream stands in for one provider of
 * deepseek/deepseek-v4-pro, and `provider.order` with `allow_fallbacks: false` makes the order
 * of the two candidates explicit. Between cases the clock moves past the cool-down.
 */
describe('failover between providers', () => {
  const clock = offsetClock();
  let fakeA: Awaited<ReturnType<typeof startFakeUpstream>>;
  let fakeB: Awaited<ReturnType<typeof startFakeUpstream>>;
  let silent: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  before(async () => {
    [fakeA, fakeB, silent] = await Promise.all([
      startFakeUpstream(),
      startFakeUpstream(),
      startFakeUpstream(),
    ]);
    fakeB.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion('from B'));
    });
    // Never answers: the gateway's headers timeout must end the attempt.
    silent.handle(() => {});
    gateway = await startTestApp({
      demo: true,
      clock,
      config: {
        credits: { initial: 100 },
        providers: {
          baidu: { api_key: 'k', base_url: `${fakeA.url}/v1` },
          novita: { api_key: 'k', base_url: `${fakeB.url}/v1` },
          gmicloud: { api_key: 'k', base_url: `${silent.url}/v1`, timeout_ms: 300 },
          deepinfra: { api_key: 'k', base_url: `${REFUSED_URL}/v1` },
        },
      },
    });
    key = (await createKey(gateway)).key;
  });
  after(async () => {
    await gateway.close();
    await Promise.all([fakeA.close(), fakeB.close(), silent.close()]);
  });

  const ask = (first: string, extra: Record<string, unknown> = {}) =>
    gateway.request('POST', '/api/v1/chat/completions', {
      key,
      headers: { 'x-switchyard-metadata': 'enabled' },
      body: {
        model: DEEPSEEK,
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 50,
        provider: { order: [first, 'novita'], allow_fallbacks: false },
        ...extra,
      },
    });

  const cases: Array<{
    name: string;
    first: { slug: string; name: string; endpointId: string };
    answer?: (request: RecordedRequest, response: ServerResponse) => void;
    status: number;
    errorType: string;
  }> = [
    {
      name: 'a 429 with Retry-After',
      first: BAIDU,
      answer: (_request, response) => {
        response
          .writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' })
          .end(JSON.stringify({ error: { message: 'slow down' } }));
      },
      status: 429,
      errorType: 'rate_limit_exceeded',
    },
    {
      name: 'a 500',
      first: BAIDU,
      answer: (_request, response) => {
        response
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'boom' } }));
      },
      status: 500,
      errorType: 'server',
    },
    {
      name: 'an HTML 502',
      first: BAIDU,
      answer: (_request, response) => {
        response
          .writeHead(502, { 'content-type': 'text/html' })
          .end('<html><body><h1>502 Bad Gateway</h1></body></html>');
      },
      status: 502,
      errorType: 'provider_unavailable',
    },
    {
      name: 'a 200 whose body is not JSON',
      first: BAIDU,
      answer: (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"id": "x", "choices": [');
      },
      status: 502,
      errorType: 'provider_unavailable',
    },
    {
      name: 'a refused connection',
      first: { slug: 'deepinfra/fp4', name: 'DeepInfra', endpointId: 'b78e06e2-7021-47a2-b71e-53534b9ef7e8' },
      status: 502,
      errorType: 'provider_unavailable',
    },
    {
      name: 'no response headers within timeout_ms',
      first: GMICLOUD,
      status: 504,
      errorType: 'timeout',
    },
  ];

  for (const testCase of cases) {
    it(`fails over from ${testCase.name} to the next provider, which then goes first`, async () => {
      clock.advance(10 * 60_000); // past every earlier cool-down
      if (testCase.answer) fakeA.handle(testCase.answer);
      const firstSlug = testCase.first.slug.split('/')[0]!;
      const aCalls = fakeA.requests.length;
      const bCalls = fakeB.requests.length;

      const response = await ask(firstSlug);
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.choices[0].message.content, 'from B');
      assert.equal(response.body.provider, NOVITA.name);
      assert.equal(response.body.model, DEEPSEEK);
      const metadata = response.body.switchyard_metadata;
      assert.equal(metadata.attempt, 2);
      assert.equal(metadata.strategy, 'direct');
      assert.deepEqual(metadata.attempts, [
        { provider: testCase.first.name, model: DEEPSEEK, status: testCase.status },
        { provider: NOVITA.name, model: DEEPSEEK, status: 200 },
      ]);
      assert.deepEqual(metadata.endpoints, {
        total: 2,
        available: [
          { model: DEEPSEEK, provider: testCase.first.name, selected: false },
          { model: DEEPSEEK, provider: NOVITA.name, selected: true },
        ],
      });
      if (testCase.answer) assert.equal(fakeA.requests.length, aCalls + 1);
      assert.equal(fakeB.requests.length, bCalls + 1);
      assert.equal((fakeB.requests.at(-1)!.body as any).model, NOVITA.upstreamModel);

      const record = await generationRecord(gateway, key, generationId(response));
      assert.equal(record.status, 'completed');
      assert.equal(record.provider_name, NOVITA.name);
      assert.equal(record.provider_slug, NOVITA.slug);
      assert.deepEqual(
        record.attempts.map((attempt: any) => [attempt.endpoint_id, attempt.error_type]),
        [
          [testCase.first.endpointId, testCase.errorType],
          [NOVITA.endpointId, null],
        ],
      );
      assert.equal(record.attempts[1].status, 200);
      assert.deepEqual(
        record.provider_responses.map((attempt: any) => attempt.provider_name),
        [testCase.first.name, NOVITA.name],
      );

      // The failed endpoint cools down: the next request goes to B first and A is not called.
      const next = await ask(firstSlug);
      assert.equal(next.status, 200, next.text);
      assert.deepEqual(next.body.switchyard_metadata.attempts, [
        { provider: NOVITA.name, model: DEEPSEEK, status: 200 },
      ]);
      assert.equal(next.body.switchyard_metadata.attempt, 1);
      if (testCase.answer) assert.equal(fakeA.requests.length, aCalls + 1);
    });
  }

  it('records a timeout or refused connection as an attempt without an upstream status', async () => {
    clock.advance(10 * 60_000);
    const response = await ask('gmicloud');
    assert.equal(response.status, 200, response.text);
    const record = await generationRecord(gateway, key, generationId(response));
    // Nothing answered: the stored attempt says so rather than inventing an HTTP status.
    assert.equal(record.attempts[0].status, null);
    assert.equal(record.attempts[0].error_type, 'timeout');
  });

  it('does not retry a 400: the client gets it in the envelope with the provider and its raw body', async () => {
    clock.advance(10 * 60_000);
    const upstreamBody = JSON.stringify({ error: { message: 'max_tokens is too large', type: 'invalid' } });
    fakeA.handle((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' }).end(upstreamBody);
    });
    const bCalls = fakeB.requests.length;
    const response = await ask('baidu');
    assert.equal(response.status, 400, response.text);
    assert.equal(response.body.error.code, 400);
    assert.equal(typeof response.body.error.message, 'string');
    const metadata = response.body.error.metadata;
    assert.equal(metadata.error_type, 'invalid_request');
    assert.equal(metadata.provider_name, BAIDU.name);
    assert.equal(metadata.raw, upstreamBody);
    assert.equal(fakeB.requests.length, bCalls, 'B was not tried');
    assert.deepEqual(response.body.switchyard_metadata.attempts, [
      { provider: BAIDU.name, model: DEEPSEEK, status: 400 },
    ]);
    const record = await generationRecord(gateway, key, generationId(response));
    assert.equal(record.status, 'failed');
    assert.equal(record.http_status, 400);
    assert.equal(record.error_type, 'invalid_request');
    assert.equal(record.attempts.length, 1);

    // An invalid request is the caller's fault, not the endpoint's: it does not cool down.
    fakeA.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion('from A'));
    });
    const next = await ask('baidu');
    assert.equal(next.status, 200, next.text);
    assert.equal(next.body.choices[0].message.content, 'from A');
  });

  it('answers with the last failure and every attempt when all providers fail', async () => {
    clock.advance(10 * 60_000);
    fakeA.handle((_request, response) => {
      response
        .writeHead(503, { 'content-type': 'application/json', 'retry-after': '3' })
        .end('{"error":"busy"}');
    });
    fakeB.handle((_request, response) => {
      response
        .writeHead(429, { 'content-type': 'application/json', 'retry-after': '5' })
        .end('{"error":"later"}');
    });
    try {
      const response = await ask('baidu');
      assert.equal(response.status, 429, response.text);
      assert.equal(response.headers.get('retry-after'), '5');
      const metadata = response.body.error.metadata;
      assert.equal(metadata.error_type, 'rate_limit_exceeded');
      assert.equal(metadata.provider_name, NOVITA.name);
      assert.deepEqual(metadata.previous_errors, [
        { provider: BAIDU.name, status: 503, code: 'provider_overloaded' },
        { provider: NOVITA.name, status: 429, code: 'rate_limit_exceeded' },
      ]);
      assert.equal(response.body.switchyard_metadata.attempt, 2);
      assert.ok(response.body.switchyard_metadata.endpoints.available.every((entry: any) => !entry.selected));
      const record = await generationRecord(gateway, key, generationId(response));
      assert.equal(record.status, 'failed');
      assert.equal(record.http_status, 429);
      assert.equal(record.total_cost, 0);
    } finally {
      fakeB.handle((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion('from B'));
      });
    }
  });

  it('falls back along `models` and bills the model that answered', async () => {
    clock.advance(10 * 60_000);
    fakeA.handle((_request, response) => {
      response.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"down"}');
    });
    const response = await gateway.request('POST', '/api/v1/chat/completions', {
      key,
      headers: { 'x-switchyard-metadata': 'enabled' },
      body: {
        models: [DEEPSEEK, 'switchyard/echo'],
        messages: [{ role: 'user', content: 'echo me' }],
        provider: { only: ['baidu', 'switchyard'] },
      },
    });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.model, 'switchyard/echo');
    assert.equal(response.body.choices[0].message.content, 'echo me');
    const metadata = response.body.switchyard_metadata;
    assert.equal(metadata.strategy, 'fallback');
    assert.equal(metadata.requested, DEEPSEEK);
    assert.equal(metadata.attempt, 2);
    assert.deepEqual(metadata.attempts, [
      { provider: BAIDU.name, model: DEEPSEEK, status: 500 },
      { provider: 'Switchyard Demo', model: 'switchyard/echo', status: 200 },
    ]);
    assert.equal(response.body.usage.cost, 0);
    const record = await generationRecord(gateway, key, generationId(response));
    assert.equal(record.model, 'switchyard/echo');
    assert.equal(record.requested_model, DEEPSEEK);
    assert.equal(record.total_cost, 0);

    // On /responses too: `model` in the reply is the one that answered.
    const responses = await gateway.request('POST', '/api/v1/responses', {
      key,
      body: { model: 'switchyard/fail-500', models: ['switchyard/echo'], input: 'again' },
    });
    assert.equal(responses.status, 200, responses.text);
    assert.equal(responses.body.model, 'switchyard/echo');
    assert.equal(responses.body.output_text, 'again');
  });

  it("shows live uptime for the endpoints it called, and B's usage in the reply", async () => {
    clock.advance(10 * 60_000);
    fakeA.handle((_request, response) => {
      response.writeHead(500).end();
    });
    fakeB.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('from B', usageOf(7, 3)));
    });
    const response = await ask('baidu');
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.usage.prompt_tokens, 7);
    assert.equal(response.body.usage.completion_tokens, 3);
    const request = fakeB.requests.at(-1)!;
    assert.equal(request.url, '/v1/chat/completions');
    assert.equal(request.headers.authorization, 'Bearer k');
    assert.equal((request.body as any).max_tokens, 50);
    assert.deepEqual((request.body as any).messages, [{ role: 'user', content: 'hi' }]);

    const endpoints = await gateway.request('GET', `/api/v1/models/${DEEPSEEK}/endpoints`, { key });
    assert.equal(endpoints.status, 200, endpoints.text);
    const byProvider = new Map<string, any>(
      endpoints.body.data.endpoints.map((endpoint: any) => [endpoint.provider_name, endpoint]),
    );
    assert.equal(byProvider.get(NOVITA.name).uptime_last_5m, 100);
    assert.equal(byProvider.get(BAIDU.name).uptime_last_5m, 0);
    // Over the day both saw successes and failures.
    assert.ok(
      byProvider.get(BAIDU.name).uptime_last_1d > 0 && byProvider.get(BAIDU.name).uptime_last_1d < 100,
    );
    // Never called by this gateway: no figure rather than an invented one.
    assert.equal(byProvider.get('Together').uptime_last_5m, null);
  });
});
