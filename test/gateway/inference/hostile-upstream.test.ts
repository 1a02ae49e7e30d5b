import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  ACME_MODEL,
  acmeCatalog,
  chatChunk,
  chatCompletion,
  createKey,
  generationId,
  generationRecord,
  keyInfo,
  sseData,
  waitFor,
  withClaudeLike,
} from './harness.js';

/**
 * What a careless or broken upstream (or client) sends must not cost a 500, a leaked reservation or
 * free generations: fractional or absurd usage, no usage at all, a refused credential, requests a
 * protocol cannot carry, and a max_tokens no endpoint could honour.
 */
describe('hostile upstreams and careless clients', () => {
  let fake: Awaited<ReturnType<typeof startFakeUpstream>>;
  let second: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;

  before(async () => {
    [fake, second] = await Promise.all([startFakeUpstream(), startFakeUpstream()]);
    const catalog = acmeCatalog(`${fake.url}/v1`);
    catalog.providers.push({ slug: 'beta', name: 'Beta', base_url: `${second.url}/v1` });
    catalog.models.push({
      ...catalog.models[0]!,
      id: 'beta/widget-2',
      name: 'Beta Widget 2',
      provider: 'beta',
    });
    withClaudeLike(catalog, `${second.url}/v1`);
    gateway = await startTestApp({
      config: {
        credits: { initial: 100 },
        catalog,
        providers: { acme: { api_key: 'a' }, beta: { api_key: 'b' }, 'claude-like': { api_key: 'c' } },
      },
    });
  });
  beforeEach(() => {
    second.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion('from beta'));
    });
  });
  after(async () => {
    await gateway.close();
    await Promise.all([fake.close(), second.close()]);
  });

  const chat = (key: string, body: Record<string, unknown>) =>
    gateway.request('POST', '/api/v1/chat/completions', {
      key,
      body: { model: ACME_MODEL, messages: [{ role: 'user', content: 'hello' }], ...body },
    });

  it('bills fractional usage rounded down and releases the reservation', async () => {
    const { key } = await createKey(gateway, { name: 'limited', limit: 0.01 });
    fake.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('ok', { prompt_tokens: 10.5, completion_tokens: 2.9, total_tokens: 13.4 }));
    });
    const reply = await chat(key, { max_tokens: 100 });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.usage.prompt_tokens, 10);
    assert.equal(reply.body.usage.completion_tokens, 2);
    // 10 × 1,000 + 2 × 2,000 nano-dollars, and the key is not left blocked by a stuck reservation.
    assert.equal(reply.body.usage.cost, 0.000014);
    const again = await chat(key, { max_tokens: 100 });
    assert.equal(again.status, 200, again.text);
  });

  it('caps absurd reported usage so records and billing keep flowing', async () => {
    const { key } = await createKey(gateway);
    fake.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('ok', { prompt_tokens: 1e19, completion_tokens: 1, total_tokens: 1e19 }));
    });
    const absurd = await chat(key, {});
    assert.equal(absurd.status, 200, absurd.text);
    // Counted at most the endpoint's context (100,000 tokens), and billed no more than was reserved:
    // the prompt's 25 bytes as tokens at 1,000 nano-dollars and 4,096 output tokens at 2,000.
    assert.equal(absurd.body.usage.prompt_tokens, 100_000);
    assert.equal(absurd.body.usage.cost, 0.008217);
    const record = await generationRecord(gateway, key, generationId(absurd));
    assert.equal(record.tokens_prompt, 100_000);
    await waitFor('the record to be written', () => gateway.services.generations.pending() === 0);
    // 1e999 parses as Infinity: capped the same way, not counted as 0 (a free generation).
    fake.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('ok').replace(/"prompt_tokens":\d+/, '"prompt_tokens":1e999'));
    });
    const infinite = await chat(key, {});
    assert.equal(infinite.status, 200, infinite.text);
    assert.equal(infinite.body.usage.prompt_tokens, 100_000);
    // The reservation again, not 100,000 × 1,000 + 5 × 2,000 nano-dollars.
    assert.equal(infinite.body.usage.cost, 0.008217);
  });

  it('bills no more than the reservation covered, so absurd usage cannot spend past a key limit', async () => {
    const { key } = await createKey(gateway, { name: 'tight', limit: 0.01 });
    fake.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('ok', { prompt_tokens: 1e15, completion_tokens: 1e18, total_tokens: 1e18 }));
    });
    const replies = await Promise.all([1, 2, 3].map(() => chat(key, { max_tokens: 100 })));
    let billed = 0;
    for (const reply of replies) {
      assert.equal(reply.status, 200, reply.text);
      // The worst case reserved: the prompt's 25 bytes as tokens at 1,000 nano-dollars, and 100
      // output tokens at 2,000; the reported 100,000 prompt tokens would have cost $0.1.
      assert.equal(reply.body.usage.cost, 0.000225, JSON.stringify(reply.body.usage));
      assert.equal(reply.body.usage.completion_tokens, 100);
      billed += reply.body.usage.cost;
    }
    await waitFor('the usage to be counted', async () => (await keyInfo(gateway, key)).usage >= 0.000675);
    const info = await keyInfo(gateway, key);
    assert.ok(Math.abs(info.usage - billed) < 1e-9, `${info.usage} against ${billed}`);
    assert.ok(info.usage <= 0.01);
    const record = await generationRecord(gateway, key, generationId(replies[0]!));
    assert.equal(record.total_cost, 0.000225);
  });

  it('bills a reply without usage from what crossed the wire', async () => {
    const { key } = await createKey(gateway);
    fake.handle((_request, response) => {
      const body = JSON.parse(chatCompletion('twelve chars'));
      delete body.usage;
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    const reply = await chat(key, {});
    assert.equal(reply.status, 200, reply.text);
    assert.ok(reply.body.usage.prompt_tokens > 0, JSON.stringify(reply.body.usage));
    assert.equal(reply.body.usage.completion_tokens, 3);
    assert.ok(reply.body.usage.cost > 0);
  });

  it('bills no more output than max_tokens allowed, whatever the upstream streamed or reported', async () => {
    const { key } = await createKey(gateway, { name: 'small', limit: 0.001 });
    // 2,000 words of 40 characters streamed past max_tokens: 20,000 tokens by the wire's estimate.
    const word = 'x'.repeat(40);
    fake.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const frames = [
        chatChunk({ role: 'assistant', content: '' }),
        ...Array.from({ length: 2000 }, () => chatChunk({ content: word })),
        chatChunk({}, 'stop'),
        '[DONE]',
      ];
      response.end(frames.map((frame) => `data: ${frame}\n\n`).join(''));
    });
    const streamed = await chat(key, { max_tokens: 100, stream: true });
    assert.equal(streamed.status, 200, streamed.text);
    const usage = sseData(streamed.text).find((chunk) => chunk.usage)?.usage;
    assert.equal(usage.completion_tokens, 100, JSON.stringify(usage));
    // 100 × 2,000 nano-dollars of output at most, and the prompt's estimate.
    assert.ok(usage.cost <= 0.0002 + 0.00001, JSON.stringify(usage));
    // Reported usage past max_tokens is capped the same way.
    fake.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('ok', { prompt_tokens: 10, completion_tokens: 50_000, total_tokens: 50_010 }));
    });
    const reported = await chat(key, { max_tokens: 100 });
    assert.equal(reported.status, 200, reported.text);
    assert.equal(reported.body.usage.completion_tokens, 100);
    assert.equal(reported.body.usage.cost, 0.00021);
    // The key's limit held: both together cost under it.
    const info = await gateway.request('GET', '/api/v1/key', { key });
    assert.ok(info.body.data.usage <= 0.001, JSON.stringify(info.body.data));
  });

  it('answers a max_tokens no endpoint can honour without a 500', async () => {
    const { key } = await createKey(gateway);
    fake.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion('ok'));
    });
    for (const maxTokens of [5e12, Number.MAX_SAFE_INTEGER, 1e300]) {
      const reply = await chat(key, { max_tokens: maxTokens });
      assert.ok(reply.status < 500, `${maxTokens}: ${reply.status} ${reply.text}`);
    }
  });

  it('fails over when a provider refuses its credential, and says 502 rather than 401', async () => {
    const { key } = await createKey(gateway);
    fake.handle((_request, response) => {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"bad key"}}');
    });
    const fallback = await chat(key, { models: ['beta/widget-2'] });
    assert.equal(fallback.status, 200, fallback.text);
    assert.equal(fallback.body.choices[0].message.content, 'from beta');
    const alone = await chat(key, {});
    assert.equal(alone.status, 502, alone.text);
    assert.equal(alone.body.error.metadata.error_type, 'provider_unavailable');
  });

  it('moves past a protocol that cannot carry the request, and answers 400 when none can', async () => {
    const { key } = await createKey(gateway);
    const unparseable = {
      messages: [
        { role: 'user', content: 'call it' },
        {
          role: 'assistant',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'done' },
      ],
    };
    const alone = await chat(key, { model: 'claude-like/widget-3', ...unparseable });
    assert.equal(alone.status, 400, alone.text);
    assert.match(alone.body.error.message, /not valid JSON/);
    const next = await chat(key, {
      model: 'claude-like/widget-3',
      models: ['beta/widget-2'],
      ...unparseable,
    });
    assert.equal(next.status, 200, next.text);
    assert.equal(next.body.model, 'beta/widget-2');
    // Only the answered request was billed: the refused candidates released their reservations.
    const info = await keyInfo(gateway, key);
    assert.equal(info.usage, next.body.usage.cost);
  });

  it('cuts a stream whose upstream sends an unbounded event', async () => {
    const { key } = await createKey(gateway);
    fake.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(
        `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'a' } }] })}\n\n`,
      );
      const blob = 'x'.repeat(1024 * 1024);
      let sent = 0;
      const timer = setInterval(() => {
        if (sent++ > 8 || response.destroyed) {
          clearInterval(timer);
          response.end();
          return;
        }
        response.write(blob);
      }, 5);
    });
    const reply = await chat(key, { stream: true });
    assert.equal(reply.status, 200);
    const chunks = sseData(reply.text);
    assert.ok(
      chunks.some((chunk) => chunk.error),
      reply.text.slice(0, 500),
    );
  });
});
