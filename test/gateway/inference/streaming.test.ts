import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startFakeUpstream, writeSse } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  BAIDU,
  chatChunk,
  chatCompletion,
  chatStreamFrames,
  createKey,
  DEEPSEEK,
  disconnectingClient,
  GMICLOUD,
  generationId,
  generationRecord,
  keyInfo,
  NOVITA,
  offsetClock,
  parseSse,
  promptBound,
  sseData,
  usd,
  waitFor,
} from './harness.js';

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

/** Starts an upstream stream, sends `frames`, then breaks the connection in the middle of a frame. */
async function cutAfter(response: ServerResponse, frames: string[]): Promise<void> {
  response.writeHead(200, SSE_HEADERS);
  for (const frame of frames) response.write(`data: ${frame}\n\n`);
  response.write('data: {"id":"up-s","object":"chat.comp');
  // Let the frames go out, then close the socket without ending the chunked body.
  await new Promise((resolve) => setTimeout(resolve, 20));
  response.socket?.end();
}

/**
 * Streams through the gateway: failover before the first output, in-band errors after it on every
 * surface, the first-token timeout, and a client that goes away mid-stream.
 */
describe('streaming: commit at first output, failures before and after it', () => {
  const clock = offsetClock();
  let fakeA: Awaited<ReturnType<typeof startFakeUpstream>>;
  let fakeB: Awaited<ReturnType<typeof startFakeUpstream>>;
  let mute: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  before(async () => {
    [fakeA, fakeB, mute] = await Promise.all([startFakeUpstream(), startFakeUpstream(), startFakeUpstream()]);
    fakeB.handle((request, response) => {
      if ((request.body as any).stream) return writeSse(response, chatStreamFrames(['Hello', ' from', ' B']));
      response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion('from B'));
    });
    // Sends its headers and a role-only chunk, then nothing: only the first-token timeout ends it.
    mute.handle((_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      response.write(`data: ${chatChunk({ role: 'assistant', content: '' })}\n\n`);
    });
    gateway = await startTestApp({
      clock,
      config: {
        credits: { initial: 100 },
        providers: {
          baidu: { api_key: 'k', base_url: `${fakeA.url}/v1` },
          novita: { api_key: 'k', base_url: `${fakeB.url}/v1` },
          gmicloud: { api_key: 'k', base_url: `${mute.url}/v1`, first_token_timeout_ms: 300 },
        },
      },
    });
    key = (await createKey(gateway)).key;
  });
  after(async () => {
    await gateway.close();
    await Promise.all([fakeA.close(), fakeB.close(), mute.close()]);
  });

  const stream = (path: string, body: Record<string, unknown>, first = 'baidu', requestKey = key) =>
    gateway.request('POST', path, {
      key: requestKey,
      headers: { 'x-switchyard-metadata': 'enabled' },
      body: {
        model: DEEPSEEK,
        stream: true,
        provider: { order: [first, 'novita'], allow_fallbacks: false },
        ...body,
      },
    });
  const chat = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 };

  it('fails over when a stream breaks before its first output', async () => {
    clock.advance(10 * 60_000);
    fakeA.handle(async (_request, response) =>
      cutAfter(response, [chatChunk({ role: 'assistant', content: '' })]),
    );
    const response = await stream('/api/v1/chat/completions', chat);
    assert.equal(response.status, 200, response.text);
    const events = sseData(response.text);
    assert.equal(events.at(-1), '[DONE]');
    const text = events
      .slice(0, -1)
      .flatMap((event) => event.choices)
      .map((choice: any) => choice.delta?.content ?? '')
      .join('');
    assert.equal(text, 'Hello from B');
    const usageChunk = events.at(-2);
    assert.deepEqual(usageChunk.choices, []);
    assert.equal(usageChunk.provider, NOVITA.name);
    assert.deepEqual(usageChunk.switchyard_metadata.attempts, [
      { provider: BAIDU.name, model: DEEPSEEK, status: 502 },
      { provider: NOVITA.name, model: DEEPSEEK, status: 200 },
    ]);
    assert.equal(usageChunk.switchyard_metadata.attempt, 2);
    const record = await generationRecord(gateway, key, generationId(response));
    assert.equal(record.status, 'completed');
    assert.equal(record.streamed, true);
    assert.equal(record.provider_name, NOVITA.name);
    assert.equal(record.attempts.length, 2);
  });

  it('fails over when the stream carries an error object before any output', async () => {
    clock.advance(10 * 60_000);
    fakeA.handle((_request, response) =>
      writeSse(response, [JSON.stringify({ error: { message: 'overloaded', code: 503 } })]),
    );
    const response = await stream('/api/v1/responses', { input: 'hi' });
    assert.equal(response.status, 200, response.text);
    const events = sseData(response.text);
    assert.equal(events.at(-1), '[DONE]');
    const completed = events.at(-2);
    assert.equal(completed.type, 'response.completed');
    assert.equal(completed.response.output_text, 'Hello from B');
    assert.deepEqual(
      completed.response.switchyard_metadata.attempts.map((attempt: any) => attempt.status),
      [503, 200],
    );
  });

  it('fails over when no output arrives before first_token_timeout_ms', async () => {
    clock.advance(10 * 60_000);
    const response = await stream('/api/v1/chat/completions', chat, 'gmicloud');
    assert.equal(response.status, 200, response.text);
    const usageChunk = sseData(response.text).at(-2);
    assert.deepEqual(usageChunk.switchyard_metadata.attempts, [
      { provider: GMICLOUD.name, model: DEEPSEEK, status: 504 },
      { provider: NOVITA.name, model: DEEPSEEK, status: 200 },
    ]);
    const record = await generationRecord(gateway, key, generationId(response));
    assert.equal(record.attempts[0].error_type, 'timeout');
  });

  /** A stream cut after "Hello": 5 output characters, billed as ceil(5 / 4) = 2 tokens. */
  const cutMidStream = () => {
    fakeA.handle(async (_request, response) =>
      cutAfter(response, [chatChunk({ role: 'assistant', content: '' }), chatChunk({ content: 'Hello' })]),
    );
  };

  /** The record of a stream cut after output: failed, with what was produced billed. */
  async function assertBilledFailure(id: string | null, requestKey: string, promptText: string[]) {
    const record = await generationRecord(gateway, requestKey, id);
    assert.equal(record.status, 'failed');
    assert.equal(record.streamed, true);
    assert.equal(record.cancelled, false);
    assert.equal(record.http_status, 200);
    assert.equal(record.finish_reason, 'error');
    assert.equal(record.provider_name, BAIDU.name);
    assert.equal(record.tokens_completion, 2);
    assert.equal(record.tokens_prompt, Math.ceil(promptBound(promptText) / 4));
    const expected = Math.round(
      record.tokens_prompt * BAIDU.promptNanos + record.tokens_completion * BAIDU.completionNanos,
    );
    assert.equal(record.total_cost, usd(expected));
    return record;
  }

  it('chat: a stream cut mid-frame after output ends in-band with an error chunk, usage and [DONE]', async () => {
    clock.advance(10 * 60_000);
    cutMidStream();
    const { key: fresh } = await createKey(gateway, { name: 'cut' });
    const response = await stream('/api/v1/chat/completions', chat, 'baidu', fresh);
    assert.equal(response.status, 200, response.text);
    const events = sseData(response.text);
    assert.deepEqual(
      events.slice(0, -3).map((event) => event.choices[0].delta.content),
      ['Hello'],
    );
    const [failure, usageChunk, done] = events.slice(-3);
    assert.equal(failure.choices[0].finish_reason, 'error');
    assert.equal(typeof failure.error.message, 'string');
    assert.equal(failure.error.metadata.provider_name, BAIDU.name);
    assert.deepEqual(usageChunk.choices, []);
    assert.equal(usageChunk.usage.completion_tokens, 2);
    assert.ok(usageChunk.usage.cost > 0);
    assert.equal(done, '[DONE]');
    const record = await assertBilledFailure(generationId(response), fresh, ['hi']);
    assert.equal(usageChunk.usage.cost, record.total_cost);
    // The key is charged what was produced, no more.
    assert.equal((await keyInfo(gateway, fresh)).usage, record.total_cost);
  });

  it('responses: a stream cut after output ends with response.failed and [DONE]', async () => {
    clock.advance(10 * 60_000);
    cutMidStream();
    const response = await stream('/api/v1/responses', { input: 'hi', max_output_tokens: 100 });
    assert.equal(response.status, 200, response.text);
    const events = sseData(response.text);
    assert.equal(events.at(-1), '[DONE]');
    const failed = events.at(-2);
    assert.equal(failed.type, 'response.failed');
    assert.equal(failed.response.status, 'failed');
    assert.equal(typeof failed.response.error.message, 'string');
    assert.ok(failed.response.usage.cost > 0);
    const deltas = events.filter((event) => event.type === 'response.output_text.delta');
    assert.deepEqual(
      deltas.map((event) => event.delta),
      ['Hello'],
    );
    // Every event is numbered in order, the failure included.
    assert.deepEqual(
      events.slice(0, -1).map((event) => event.sequence_number),
      events.slice(0, -1).map((_, index) => index),
    );
    await assertBilledFailure(generationId(response), key, ['hi']);
  });

  it('messages: a stream cut after output ends with event: error', async () => {
    clock.advance(10 * 60_000);
    cutMidStream();
    const response = await stream('/api/v1/messages', chat);
    assert.equal(response.status, 200, response.text);
    const frames = parseSse(response.text);
    const names = frames.map((frame) => frame.event);
    assert.equal(names[0], 'message_start');
    assert.equal(names.at(-1), 'error');
    assert.ok(!names.includes('message_stop'));
    const error = JSON.parse(frames.at(-1)!.data);
    assert.equal(error.type, 'error');
    assert.equal(typeof error.error.message, 'string');
    const text = frames
      .filter((frame) => frame.event === 'content_block_delta')
      .map((frame) => JSON.parse(frame.data).delta.text)
      .join('');
    assert.equal(text, 'Hello');
    await assertBilledFailure(generationId(response), key, ['hi']);
  });

  it('bills a cut stream with an image in its prompt a bounded estimate, not the whole context', async () => {
    clock.advance(10 * 60_000);
    cutMidStream();
    const { key: fresh } = await createKey(gateway, { name: 'image' });
    const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };
    const response = await stream(
      '/api/v1/chat/completions',
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, image] }], max_tokens: 100 },
      'baidu',
      fresh,
    );
    assert.equal(response.status, 200, response.text);
    assert.equal(sseData(response.text).at(-1), '[DONE]');
    const record = await generationRecord(gateway, fresh, generationId(response));
    assert.equal(record.status, 'failed');
    assert.equal(record.tokens_completion, 2);
    // Without reported usage the prompt is estimated from its text; an image cannot cost a million tokens.
    assert.ok(record.tokens_prompt < 1000, String(record.tokens_prompt));
    assert.ok(record.total_cost < 0.001, String(record.total_cost));
    assert.equal((await keyInfo(gateway, fresh)).usage, record.total_cost);
  });

  it('aborts the upstream call when the client disconnects, records it cancelled and settles the reservation', async () => {
    clock.advance(10 * 60_000);
    // Worst case of one request: the prompt bound and 1000 output tokens, at Baidu's full prices.
    const worstNanos = Math.ceil(promptBound(['hi']) * BAIDU.promptNanos + 1000 * BAIDU.completionNanos);
    // Room for one and a half requests: a reservation left unsettled would refuse the next one.
    const limitNanos = Math.round(worstNanos * 1.5);
    const { key: limited } = await createKey(gateway, { name: 'limited', limit: usd(limitNanos) });

    let upstreamClosed = false;
    let upstreamFinished = false;
    fakeA.handle(async (_request, response) => {
      response.on('close', () => {
        upstreamClosed = true;
        upstreamFinished = response.writableFinished;
      });
      response.writeHead(200, SSE_HEADERS);
      response.write(`data: ${chatChunk({ role: 'assistant', content: '' })}\n\n`);
      for (let index = 0; index < 200 && !upstreamClosed; index += 1) {
        response.write(`data: ${chatChunk({ content: `word${index} ` })}\n\n`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      response.end('data: [DONE]\n\n');
    });

    const client = disconnectingClient(gateway.url, limited, {
      model: DEEPSEEK,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 1000,
      stream: true,
      provider: { order: ['baidu'], allow_fallbacks: false },
    });
    const head = await client.response;
    assert.equal(head.statusCode, 200);
    const id = head.headers['x-generation-id'] as string;
    assert.match(await client.firstChunk(), /word0/);
    client.hangUp();

    await waitFor('the upstream request to be aborted', () => upstreamClosed);
    assert.equal(upstreamFinished, false, 'the upstream stream was cut, not finished');
    const record = await waitFor('the cancelled record', async () => {
      const found = await gateway.request('GET', `/api/v1/generation?id=${id}`, { key: limited });
      return found.status === 200 ? found.body.data : null;
    });
    assert.equal(record.cancelled, true);
    assert.equal(record.status, 'cancelled');
    // The client left: no error of the provider's is recorded.
    assert.equal(record.error_type, null);
    assert.equal(record.error_message, null);
    assert.notEqual(record.finish_reason, 'error');
    assert.equal(record.streamed, true);
    assert.ok(record.tokens_completion > 0, 'what was produced is billed');
    assert.ok(record.total_cost > 0);

    const info = await keyInfo(gateway, limited);
    assert.equal(info.usage, record.total_cost);
    assert.ok(info.usage <= info.limit);
    assert.equal(info.limit_remaining, usd(limitNanos - Math.round(record.total_cost * 1e9)));

    // The reservation was released: a request of the same worst case still fits.
    fakeA.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion('ok'));
    });
    const next = await gateway.request('POST', '/api/v1/chat/completions', {
      key: limited,
      body: {
        model: DEEPSEEK,
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 1000,
        provider: { order: ['baidu'], allow_fallbacks: false },
      },
    });
    assert.equal(next.status, 200, next.text);
  });
  it('aborts a non-streamed upstream call when the client goes away, and records it cancelled', async () => {
    clock.advance(10 * 60_000);
    const { key: fresh, hash } = await createKey(gateway, { name: 'impatient', limit: 1 });
    let upstreamClosed = false;
    fakeA.handle((_request, response) => {
      response.on('close', () => {
        upstreamClosed = true;
      });
    });
    const calls = fakeA.requests.length;
    const client = disconnectingClient(gateway.url, fresh, {
      ...chat,
      model: DEEPSEEK,
      provider: { order: ['baidu'], allow_fallbacks: false },
    });
    await waitFor('the upstream call', () => fakeA.requests.length > calls);
    client.hangUp();
    await waitFor('the upstream request to be aborted', () => upstreamClosed);

    // No generation id reached the client; the record is found by key once the log has written it.
    const row = await waitFor('the record', async () => {
      await gateway.services.generations.flush();
      return gateway.services.storage.db
        .selectFrom('generations')
        .selectAll()
        .where('key_hash', '=', hash)
        .executeTakeFirst();
    });
    assert.equal(row.cancelled, 1);
    assert.equal(row.status, 'cancelled');
    assert.equal(row.error_type, null);
    assert.equal(row.cost_nanos, 0);
    const info = await keyInfo(gateway, fresh);
    assert.equal(info.usage, 0);
    assert.equal(info.limit_remaining, 1);
  });
});

describe('a client that stops reading a stream', () => {
  it('is dropped after limits.client_stall_ms, and its generation is recorded as cancelled', async () => {
    const gateway = await startTestApp({
      demo: true,
      config: { limits: { client_stall_ms: 200, body_bytes: 16 * 1024 * 1024 } },
    });
    try {
      const { key } = await createKey(gateway);
      // The echo model streams the prompt back a word per event: megabytes more than socket buffers hold.
      const prompt = 'word '.repeat(300_000);
      const { request: httpRequest } = await import('node:http');
      const head = await new Promise<{ id: string; socket: import('node:net').Socket }>((resolve, reject) => {
        const request = httpRequest(`${gateway.url}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        });
        request.on('error', reject);
        request.on('response', (response) => {
          // Read nothing: the server's writes back up until it gives the client up.
          response.pause();
          response.socket.on('error', () => {});
          resolve({ id: String(response.headers['x-generation-id']), socket: response.socket });
        });
        request.end(
          JSON.stringify({
            model: 'switchyard/echo',
            messages: [{ role: 'user', content: prompt }],
            stream: true,
          }),
        );
      });
      // A paused client never reads the server's FIN; the record says what the server did.
      const record = await waitFor('the record of the dropped stream', async () => {
        const found = await gateway.request('GET', `/api/v1/generation?id=${head.id}`, { key });
        return found.status === 200 ? found.body.data : null;
      });
      assert.equal(record.streamed, true);
      assert.equal(record.cancelled, true, JSON.stringify(record));
      assert.equal(record.status, 'cancelled');
      head.socket.destroy();
    } finally {
      await gateway.close();
    }
  });
});
