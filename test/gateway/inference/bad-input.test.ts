import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';
import { type ClientResponse, expectError, startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  chatCompletion,
  createKey,
  DEEPSEEK,
  GMICLOUD,
  generationId,
  generationRecord,
  keyInfo,
  promptBound,
  usd,
} from './harness.js';

// GMICloud's prices for deepseek-v4-pro, nano-dollars per token.
const GMI_PROMPT_NANOS = 661.2;
const GMI_COMPLETION_NANOS = 1322.4;

/**
 * Bad input through HTTP on every surface: each is refused with the right status and a message that
 * names the field (never a 500), and none leaves a reservation behind: the limited key that made
 * them all still has its whole limit, which the last request needs.
 */
describe('bad input on the inference surfaces', () => {
  let silent: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;
  // The valid request of this suite, sent to GMICloud (which never answers until the end).
  const valid = {
    model: DEEPSEEK,
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 100,
    provider: { only: ['gmicloud'] },
  };
  const limitNanos = Math.ceil(promptBound(['hi']) * GMI_PROMPT_NANOS + 100 * GMI_COMPLETION_NANOS);

  before(async () => {
    silent = await startFakeUpstream();
    silent.handle(() => {});
    gateway = await startTestApp({
      demo: true,
      config: {
        credits: { initial: 100 },
        providers: {
          baidu: { api_key: 'k', base_url: `${silent.url}/v1` },
          gmicloud: { api_key: 'k', base_url: `${silent.url}/v1`, timeout_ms: 300 },
        },
      },
    });
    // The limit is exactly the worst case of `valid`: any reservation left behind refuses it.
    key = (await createKey(gateway, { name: 'limited', limit: usd(limitNanos) })).key;
  });
  after(async () => {
    await gateway.close();
    await silent.close();
  });

  const post = (path: string, body: unknown, requestKey: string | null = key) =>
    gateway.request('POST', `/api/v1${path}`, { key: requestKey, body });

  /** A 400 in the standard envelope whose message names `field`, with error_type invalid_request. */
  function expectInvalid(response: ClientResponse, field: RegExp) {
    const message = expectError(response, 400);
    assert.match(message, /^Invalid request parameters: /);
    assert.match(message, field);
    assert.equal(response.body.error.metadata?.error_type, 'invalid_request', response.text);
  }

  /** An Anthropic-style error envelope (`{ type: 'error', error: { type, message, error_type } }`). */
  function expectAnthropicError(response: ClientResponse, status: number, type: string, message: RegExp) {
    assert.equal(response.status, status, response.text);
    assert.equal(response.body.type, 'error', response.text);
    assert.equal(response.body.error.type, type);
    assert.match(response.body.error.message, message);
    assert.equal(typeof response.body.error.error_type, 'string');
  }

  describe('/chat/completions', () => {
    it('an unknown model → 400 naming body.model', async () => {
      expectInvalid(
        await post('/chat/completions', { ...valid, model: 'nobody/no-such-model' }),
        /body\.model .*unknown model "nobody\/no-such-model"/,
      );
    });

    it('models with 4 entries → 400 naming body.models', async () => {
      const models = ['switchyard/echo', 'switchyard/scripted', 'switchyard/fail-500', 'switchyard/fail-429'];
      expectInvalid(await post('/chat/completions', { ...valid, model: undefined, models }), /body\.models/);
    });

    it('a malformed tool → 400 naming body.tools', async () => {
      expectInvalid(
        await post('/chat/completions', { ...valid, tools: [{ type: 'function' }] }),
        /body\.tools/,
      );
    });

    it('malformed JSON → 400', async () => {
      const response = await gateway.request('POST', '/api/v1/chat/completions', {
        key,
        rawBody: '{"model": "switchyard/echo", "messages": [',
        headers: { 'content-type': 'application/json' },
      });
      assert.match(expectError(response, 400), /Malformed JSON/);
    });

    it('a max_price no endpoint meets → 404 saying which preference excluded them', async () => {
      const response = await post('/chat/completions', {
        ...valid,
        provider: { max_price: { prompt: 0.01 } },
      });
      const message = expectError(response, 404);
      assert.match(message, /No endpoints available for deepseek\/deepseek-v4-pro/);
      assert.match(message, /2 excluded by provider\.max_price/);
      assert.equal(response.body.error.metadata.error_type, 'not_found');
    });

    it('the management key → 403', async () => {
      const response = await post('/chat/completions', valid, gateway.managementKey);
      assert.match(expectError(response, 403), /Management keys cannot be used for inference/);
      assert.equal(response.body.error.metadata.error_type, 'permission_denied');
    });

    it('an upstream that never answers → 504 after timeout_ms, not a hang', async () => {
      const started = Date.now();
      const response = await post('/chat/completions', valid);
      assert.ok(Date.now() - started < 5000, 'answered within a bounded time');
      expectError(response, 504);
      assert.equal(response.body.error.metadata.error_type, 'timeout');
      assert.equal(response.body.error.metadata.provider_name, GMICLOUD.name);
      const record = await generationRecord(gateway, key, generationId(response));
      assert.equal(record.status, 'failed');
      assert.equal(record.http_status, 504);
      assert.equal(record.total_cost, 0);
    });

    it('a streamed request to an upstream that never answers → a 504 before anything was streamed', async () => {
      const response = await post('/chat/completions', { ...valid, stream: true });
      expectError(response, 504);
      assert.doesNotMatch(response.headers.get('content-type') ?? '', /event-stream/);
    });
  });

  describe('/responses', () => {
    const base = { model: DEEPSEEK, input: 'hi', max_output_tokens: 100, provider: { only: ['gmicloud'] } };

    it('an empty input → 400 naming body.input', async () => {
      expectInvalid(await post('/responses', { ...base, input: '' }), /body\.input/);
      expectInvalid(await post('/responses', { ...base, input: [] }), /body\.input/);
    });

    it('invalid provider fields → 400 naming them', async () => {
      expectInvalid(
        await post('/responses', { ...base, provider: { sort: 'cheapest' } }),
        /body\.provider\.sort/,
      );
      expectInvalid(
        await post('/responses', { ...base, provider: { only: 'gmicloud' } }),
        /body\.provider\.only/,
      );
      expectInvalid(
        await post('/responses', { ...base, provider: { bogus: true } }),
        /body\.provider\.bogus/,
      );
    });

    it('metadata over its limits → 400 naming body.metadata', async () => {
      const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`k${index}`, 'v']));
      expectInvalid(await post('/responses', { ...base, metadata: seventeen }), /body\.metadata/);
      expectInvalid(
        await post('/responses', { ...base, metadata: { 'a[b]': 'v' } }),
        /body\.metadata.*bracket/,
      );
      expectInvalid(
        await post('/responses', { ...base, metadata: { a: 'v'.repeat(513) } }),
        /body\.metadata\.a/,
      );
      expectInvalid(
        await post('/responses', { ...base, metadata: { ['k'.repeat(65)]: 'v' } }),
        /body\.metadata/,
      );
    });

    it('tool_choice other than auto → 400 naming body.tool_choice', async () => {
      expectInvalid(await post('/responses', { ...base, tool_choice: 'required' }), /body\.tool_choice/);
    });

    it('a malformed tool → 400 naming body.tools', async () => {
      expectInvalid(await post('/responses', { ...base, tools: [{ type: 'function' }] }), /body\.tools/);
    });

    it('the management key → 403', async () => {
      expectError(await post('/responses', base, gateway.managementKey), 403);
    });
  });

  describe('/messages', () => {
    const base = {
      model: DEEPSEEK,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
      provider: { only: ['gmicloud'] },
    };

    it('an unknown model → 400 in the Anthropic envelope', async () => {
      expectAnthropicError(
        await post('/messages', { ...base, model: 'nobody/no-such-model' }),
        400,
        'invalid_request_error',
        /body\.model/,
      );
    });

    it('a missing max_tokens → 400 in the Anthropic envelope, schema failures included', async () => {
      const { max_tokens: _omitted, ...rest } = base;
      expectAnthropicError(await post('/messages', rest), 400, 'invalid_request_error', /body\.max_tokens/);
    });

    it('a malformed tool → 400 naming body.tools', async () => {
      expectAnthropicError(
        await post('/messages', { ...base, tools: [{ name: 'lookup' }] }),
        400,
        'invalid_request_error',
        /body\.tools/,
      );
    });

    it('an unknown key → 401 and the management key → 403, both in the Anthropic envelope', async () => {
      expectAnthropicError(
        await post('/messages', base, `sk-sy-v1-${'0'.repeat(64)}`),
        401,
        'authentication_error',
        /./,
      );
      expectAnthropicError(
        await post('/messages', base, gateway.managementKey),
        403,
        'permission_error',
        /Management keys/,
      );
    });

    it('an upstream that never answers → 504 timeout_error', async () => {
      expectAnthropicError(await post('/messages', base), 504, 'timeout_error', /./);
    });
  });

  describe('/embeddings', () => {
    it('an unknown model, a model that does not embed, an empty input → 400', async () => {
      expectInvalid(await post('/embeddings', { model: 'nobody/no-such-model', input: 'x' }), /body\.model/);
      expectInvalid(
        await post('/embeddings', { model: 'switchyard/echo', input: 'x' }),
        /does not produce embeddings/,
      );
      expectInvalid(await post('/embeddings', { model: 'switchyard/embed', input: [] }), /body\.input/);
    });

    it('more values than the demo model makes in one answer → 400 saying how many were asked', async () => {
      // 2,048 inputs of 4,096 dimensions each: within both fields' own limits, a 180 MB answer together.
      const input = Array.from({ length: 2048 }, (_, index) => `x${index}`);
      const response = await post('/embeddings', { model: 'switchyard/embed', input, dimensions: 4096 });
      expectError(response, 400);
      // The provider's refusal, as a provider's refusal reads (reference: the upstream's text in `raw`).
      assert.equal(response.body.error.metadata.error_type, 'invalid_request');
      assert.match(
        response.body.error.metadata.raw,
        /inputs × dimensions must be at most 262144 \(2048 inputs × 4096 dimensions asked\)/,
      );
    });

    it('the management key → 403', async () => {
      const response = await post(
        '/embeddings',
        { model: 'switchyard/embed', input: 'x' },
        gateway.managementKey,
      );
      expectError(response, 403);
      assert.equal(response.body.error.metadata.error_type, 'permission_denied');
    });
  });

  describe('afterwards', () => {
    it('the key still has its whole limit, and a request needing all of it goes through', async () => {
      const info = await keyInfo(gateway, key);
      assert.equal(info.usage, 0);
      assert.equal(info.limit_remaining, usd(limitNanos));

      silent.handle((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion('finally'));
      });
      const response = await post('/chat/completions', valid);
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.choices[0].message.content, 'finally');
    });
  });
});

describe('errors raised before the handler, in each surface’s envelope', () => {
  let gateway: TestApp;
  let key: string;
  before(async () => {
    gateway = await startTestApp({
      demo: true,
      config: { limits: { rate_limit: { requests: 1, window_seconds: 60 } } },
    });
    key = (await createKey(gateway)).key;
  });
  after(() => gateway.close());

  it('a rate-limited key gets 429 with Retry-After and X-RateLimit-*, typed on every surface', async () => {
    const chat = { model: 'switchyard/echo', messages: [{ role: 'user', content: 'hi' }] };
    const first = await gateway.request('POST', '/api/v1/chat/completions', { key, body: chat });
    assert.equal(first.status, 200, first.text);

    const limited = await gateway.request('POST', '/api/v1/chat/completions', { key, body: chat });
    expectError(limited, 429);
    assert.equal(limited.body.error.metadata.error_type, 'rate_limit_exceeded');
    assert.ok(Number(limited.headers.get('retry-after')) > 0);
    assert.equal(limited.headers.get('x-ratelimit-limit'), '1');
    assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');

    const messages = await gateway.request('POST', '/api/v1/messages', {
      key,
      body: { ...chat, max_tokens: 10 },
    });
    assert.equal(messages.status, 429, messages.text);
    assert.equal(messages.body.type, 'error');
    assert.equal(messages.body.error.type, 'rate_limit_error');
    assert.equal(messages.body.error.error_type, 'rate_limit_exceeded');
    assert.ok(Number(messages.headers.get('retry-after')) > 0);

    const embeddings = await gateway.request('POST', '/api/v1/embeddings', {
      key,
      body: { model: 'switchyard/embed', input: 'x' },
    });
    expectError(embeddings, 429);
    assert.equal(embeddings.body.error.metadata.error_type, 'rate_limit_exceeded');
  });
});
