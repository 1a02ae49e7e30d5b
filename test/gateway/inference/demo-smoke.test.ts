import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';

describe('inference with the demo provider', () => {
  let gateway: TestApp;
  let key: string;
  before(async () => {
    gateway = await startTestApp({ demo: true });
    key = (await gateway.request('POST', '/api/v1/keys', { body: { name: 'app' } })).body.key;
  });
  after(() => gateway.close());

  it('answers chat completions from the echo model', async () => {
    const response = await gateway.request('POST', '/api/v1/chat/completions', {
      key,
      body: { model: 'switchyard/echo', messages: [{ role: 'user', content: 'hello there' }] },
    });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.choices[0].message.content, 'hello there');
    assert.match(response.headers.get('x-generation-id') ?? '', /^gen-/);
    const record = await gateway.request(
      'GET',
      `/api/v1/generation?id=${response.headers.get('x-generation-id')}`,
      { key },
    );
    assert.equal(record.status, 200, record.text);
  });

  it('writes a non-streamed answer or an embedding before it records the generation, in the same tick', async () => {
    // The record waits for the answer (the client is not kept waiting for it), but is queued before
    // the client can ask for it: the server's response has ended when the log sees the record.
    const responses: ServerResponse[] = [];
    const watch = (_request: IncomingMessage, response: ServerResponse) => responses.push(response);
    gateway.server.on('request', watch);
    const log = gateway.services.generations;
    const record = log.record;
    const answered: boolean[] = [];
    log.record = (input, outbox) => {
      answered.push(responses.at(-1)?.writableEnded ?? false);
      record(input, outbox);
    };
    try {
      for (const [path, body] of [
        [
          '/api/v1/chat/completions',
          { model: 'switchyard/echo', messages: [{ role: 'user', content: 'hi' }] },
        ],
        ['/api/v1/responses', { model: 'switchyard/echo', input: 'hi' }],
        [
          '/api/v1/messages',
          { model: 'switchyard/echo', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
        ],
        ['/api/v1/embeddings', { model: 'switchyard/embed', input: 'hi' }],
      ] as const) {
        const response = await gateway.request('POST', path, { key, body });
        assert.equal(response.status, 200, response.text);
        const id = response.headers.get('x-generation-id');
        const stored = await gateway.request('GET', `/api/v1/generation?id=${id}`, { key });
        assert.equal(stored.status, 200, stored.text);
        assert.equal(stored.body.data.id, id);
      }
      assert.deepEqual(answered, [true, true, true, true]);
    } finally {
      log.record = record;
      gateway.server.off('request', watch);
    }
  });

  it('counts generations in the Prometheus metrics', async () => {
    const reply = await gateway.request('POST', '/api/v1/chat/completions', {
      key,
      body: { model: 'switchyard/echo', messages: [{ role: 'user', content: 'count me' }] },
    });
    assert.equal(reply.status, 200, reply.text);
    const metrics = await gateway.request('GET', '/metrics', { key: null });
    assert.match(
      metrics.text,
      /switchyard_generations_total\{provider="switchyard",model="switchyard\/echo",status="completed"\} [1-9]/,
    );
    assert.match(
      metrics.text,
      /switchyard_generation_first_token_seconds_count\{provider="switchyard"\} [1-9]/,
    );
  });

  it('streams responses', async () => {
    const response = await gateway.request('POST', '/api/v1/responses', {
      key,
      body: { model: 'switchyard/scripted', input: 'hi', stream: true },
    });
    assert.equal(response.status, 200, response.text);
    assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
    const frames = response.text.split('\n\n').filter(Boolean);
    assert.equal(frames.at(-1), 'data: [DONE]');
    const events = frames.slice(0, -1).map((frame) => JSON.parse(frame.slice('data: '.length)));
    assert.deepEqual(
      events.map((event) => event.sequence_number),
      events.map((_, index) => index),
    );
    const types = events.map((event) => event.type);
    assert.deepEqual(types.slice(0, 4), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    assert.equal(types.at(-1), 'response.completed');
    const text = events
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta);
    assert.equal(text.join(''), 'The quick brown fox jumps over the lazy dog.');
    assert.equal(events.at(-1).response.output_text, 'The quick brown fox jumps over the lazy dog.');
  });

  it('streams messages', async () => {
    const response = await gateway.request('POST', '/api/v1/messages', {
      key,
      body: {
        model: 'switchyard/scripted',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      },
    });
    assert.equal(response.status, 200, response.text);
    const names = [...response.text.matchAll(/^event: (\S+)$/gm)].map((match) => match[1]);
    assert.deepEqual(names.slice(0, 2), ['message_start', 'content_block_start']);
    assert.deepEqual(names.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  });
});
