// How the official `openai` SDK, unmodified, sees the gateway's failures: the error class per HTTP
// status, the message and error body it keeps, the default retries, and a stream cut mid-way.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

async function rejection(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof OpenAI.APIError, `expected an APIError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the call to fail');
}

describe('openai SDK: error classes from the gateway', () => {
  let gateway: TestApp;
  let key: string;
  let client: OpenAI;
  before(async () => {
    gateway = await startTestApp({ demo: true });
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
    assert.equal(created.status, 200, created.text);
    key = created.body.key;
    client = new OpenAI({ baseURL: `${gateway.url}/api/v1`, apiKey: key, maxRetries: 0 });
  });
  after(() => gateway.close());

  it('unknown model → BadRequestError (400) with the message', async () => {
    for (const call of [
      client.chat.completions.create({
        model: 'nobody/no-such-model',
        messages: [{ role: 'user', content: 'hi' }],
      }),
      client.responses.create({ model: 'nobody/no-such-model', input: 'hi' }),
      client.embeddings.create({ model: 'nobody/no-such-model', input: 'hi' }),
    ]) {
      const error = await rejection(call);
      assert.ok(error instanceof OpenAI.BadRequestError, error.constructor.name);
      assert.equal(error.status, 400);
      assert.match(error.message, /^400 /);
      assert.match(error.message, /no-such-model/);
      assert.equal((error.error as any)?.metadata?.error_type, 'invalid_request');
    }
  });

  it('a bad parameter → BadRequestError naming the field', async () => {
    const error = await rejection(
      client.chat.completions.create({
        model: 'switchyard/echo',
        messages: [{ role: 'user', content: 'hi' }],
        temperature: 7,
      }),
    );
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.match(error.message, /body\.temperature/);
  });

  it('the management key → PermissionDeniedError (403)', async () => {
    const management = new OpenAI({
      baseURL: `${gateway.url}/api/v1`,
      apiKey: gateway.managementKey,
      maxRetries: 0,
    });
    for (const call of [
      management.chat.completions.create({
        model: 'switchyard/echo',
        messages: [{ role: 'user', content: 'hi' }],
      }),
      management.responses.create({ model: 'switchyard/echo', input: 'hi' }),
      management.embeddings.create({ model: 'switchyard/embed', input: 'hi' }),
    ]) {
      const error = await rejection(call);
      assert.ok(error instanceof OpenAI.PermissionDeniedError, error.constructor.name);
      assert.equal(error.status, 403);
    }
  });

  it('an unknown key, or none at all → AuthenticationError (401)', async () => {
    const unknown = new OpenAI({ baseURL: `${gateway.url}/api/v1`, apiKey: 'sk-sy-v1-nope', maxRetries: 0 });
    const error = await rejection(unknown.responses.create({ model: 'switchyard/echo', input: 'hi' }));
    assert.ok(error instanceof OpenAI.AuthenticationError, error.constructor.name);
    assert.equal(error.status, 401);
    assert.match(error.message, /Invalid API key/);

    // The SDK cannot be built without a key; its documented way to drop a default header is null.
    const none = new OpenAI({
      baseURL: `${gateway.url}/api/v1`,
      apiKey: 'unused',
      defaultHeaders: { Authorization: null },
      maxRetries: 0,
    });
    const missing = await rejection(
      none.chat.completions.create({ model: 'switchyard/echo', messages: [{ role: 'user', content: 'hi' }] }),
    );
    assert.ok(missing instanceof OpenAI.AuthenticationError, missing.constructor.name);
    assert.match(missing.message, /Missing Authentication header/);
  });

  it('switchyard/fail-429 → RateLimitError with the status and Retry-After', async () => {
    for (const call of [
      client.chat.completions.create({
        model: 'switchyard/fail-429',
        messages: [{ role: 'user', content: 'hi' }],
      }),
      client.responses.create({ model: 'switchyard/fail-429', input: 'hi' }),
      client.responses.create({ model: 'switchyard/fail-429', input: 'hi', stream: true }),
    ]) {
      const error = await rejection(call);
      assert.ok(error instanceof OpenAI.RateLimitError, error.constructor.name);
      assert.equal(error.status, 429);
      assert.equal(error.headers?.get('retry-after'), '1');
      assert.match(error.headers?.get('x-generation-id') ?? '', /^gen-/);
    }
  });

  it('switchyard/fail-500 → InternalServerError', async () => {
    const error = await rejection(
      client.chat.completions.create({
        model: 'switchyard/fail-500',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    assert.ok(error instanceof OpenAI.InternalServerError, error.constructor.name);
    assert.ok(error.status >= 500, String(error.status));
  });

  it('a provider 429 is retried by default too, then surfaces as RateLimitError', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/api/v1`, apiKey: key });
    const startedAt = Date.now();
    const error = await rejection(
      client.chat.completions.create({
        model: 'switchyard/fail-429',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    assert.ok(error instanceof OpenAI.RateLimitError);
    // Two retries, each after Retry-After: 1.
    assert.ok(Date.now() - startedAt >= 1900, `${Date.now() - startedAt} ms`);
  });

  it('chat stream cut mid-way: the content so far arrives, then the SDK throws an APIError from the error chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'switchyard/cut-mid-stream',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    let content = '';
    let thrown: unknown = null;
    try {
      for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    } catch (error) {
      thrown = error;
    }
    assert.equal(content, 'The quick ');
    // The gateway's error chunk has a top-level `error`; the SDK turns any such chunk into an
    // APIError without an HTTP status (the stream had already answered 200).
    assert.ok(thrown instanceof OpenAI.APIError, String(thrown));
    assert.equal(thrown.status, undefined);
    assert.match(thrown.message, /connection cut/i);
  });

  it('responses stream cut mid-way: the SDK yields response.failed (it does not throw)', async () => {
    const stream = await client.responses.create({
      model: 'switchyard/cut-mid-stream',
      input: 'hi',
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const text = events.flatMap((event) =>
      event.type === 'response.output_text.delta' ? [event.delta] : [],
    );
    assert.equal(text.join(''), 'The quick ');
    const last = events.at(-1);
    assert.ok(last?.type === 'response.failed', last?.type);
    assert.equal(last.response.status, 'failed');
    assert.equal(last.response.error?.code, 'server_error');
    assert.match(last.response.error?.message ?? '', /connection cut/i);
  });

  it('responses.stream() helper over a cut stream: finalResponse() resolves with status failed', async () => {
    // The helper does not throw on response.failed: the final snapshot is the failed Response.
    const final = await client.responses
      .stream({ model: 'switchyard/cut-mid-stream', input: 'hi' })
      .finalResponse();
    assert.equal(final.status, 'failed');
    assert.match(final.error?.message ?? '', /connection cut/i);
    assert.equal(final.output_text, 'The quick ');
  });
});

describe('openai SDK: default retries', () => {
  let gateway: TestApp;
  let key: string;
  before(async () => {
    // One request per key per second: the second call in the same second gets 429 + Retry-After.
    gateway = await startTestApp({
      demo: true,
      config: { limits: { rate_limit: { requests: 1, window_seconds: 1 } } },
    });
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
    assert.equal(created.status, 200, created.text);
    key = created.body.key;
  });
  after(() => gateway.close());

  it('a 429 from the gateway is retried after Retry-After and then succeeds', async () => {
    const retries: string[] = [];
    const client = new OpenAI({
      baseURL: `${gateway.url}/api/v1`,
      apiKey: key,
      // Default maxRetries (2); a logger only to observe the retry the SDK makes.
      logLevel: 'info',
      logger: {
        error: () => {},
        warn: () => {},
        info: (message: string) => retries.push(message),
        debug: () => {},
      },
    });
    // Start at the beginning of a second, so both calls land in the same one-second window.
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
    const first = await client.chat.completions.create({
      model: 'switchyard/echo',
      messages: [{ role: 'user', content: 'one' }],
    });
    assert.equal(first.choices[0]?.message.content, 'one');
    const startedAt = Date.now();
    const second = await client.chat.completions.create({
      model: 'switchyard/echo',
      messages: [{ role: 'user', content: 'two' }],
    });
    assert.equal(second.choices[0]?.message.content, 'two');
    assert.ok(
      retries.some((message) => /429/.test(message) && /retrying/.test(message)),
      retries.join('\n'),
    );
    assert.ok(Date.now() - startedAt >= 500, 'the SDK waited for Retry-After');
  });
});
