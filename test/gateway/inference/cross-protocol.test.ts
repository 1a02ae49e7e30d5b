import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';

/**
 * Each ingress surface reaching each upstream protocol: a chat-completions client served by an
 * Anthropic Messages upstream, a Messages client by a Gemini upstream, a Responses client by an
 * OpenAI Responses upstream. The fake upstreams answer in their provider's real wire format; the
 * assertions check what the upstream received and what the client got back, cost included.
 */
describe('cross-protocol translation through the whole gateway', () => {
  let anthropic: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gemini: Awaited<ReturnType<typeof startFakeUpstream>>;
  let openai: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  before(async () => {
    [anthropic, gemini, openai] = await Promise.all([
      startFakeUpstream(),
      startFakeUpstream(),
      startFakeUpstream(),
    ]);
    gateway = await startTestApp({
      config: {
        credits: { initial: 10 },
        providers: {
          anthropic: { api_key: 'sk-ant-test', base_url: `${anthropic.url}/v1` },
          'google-ai-studio': { api_key: 'goog-test', base_url: `${gemini.url}/v1beta` },
          openai: { api_key: 'sk-openai-test', base_url: `${openai.url}/v1` },
        },
      },
    });
    key = (await gateway.request('POST', '/api/v1/keys', { body: { name: 'app' } })).body.key;
  });
  after(async () => {
    await gateway.close();
    await Promise.all([anthropic.close(), gemini.close(), openai.close()]);
  });

  it('serves chat completions from an Anthropic Messages upstream, streamed and not', async () => {
    anthropic.handle((request, response) => {
      const body = request.body as { stream?: boolean };
      if (!body.stream) {
        response.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: 'msg_up_1',
            type: 'message',
            role: 'assistant',
            model: 'claude-haiku-4-5-20251001',
            content: [{ type: 'text', text: 'Bonjour!' }],
            stop_reason: 'end_turn',
            stop_sequence: null,
            usage: {
              input_tokens: 20,
              output_tokens: 4,
              cache_read_input_tokens: 0,
              cache_creation_input_tokens: 0,
            },
          }),
        );
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const events: Array<[string, unknown]> = [
        [
          'message_start',
          {
            type: 'message_start',
            message: {
              id: 'msg_up_2',
              type: 'message',
              role: 'assistant',
              model: 'claude-haiku-4-5-20251001',
              content: [],
              stop_reason: null,
              usage: { input_tokens: 20, output_tokens: 1 },
            },
          },
        ],
        [
          'content_block_start',
          { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        ],
        [
          'content_block_delta',
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Bon' } },
        ],
        [
          'content_block_delta',
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'jour!' } },
        ],
        ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        [
          'message_delta',
          {
            type: 'message_delta',
            delta: { stop_reason: 'end_turn', stop_sequence: null },
            usage: { output_tokens: 4 },
          },
        ],
        ['message_stop', { type: 'message_stop' }],
      ];
      for (const [event, data] of events)
        response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      response.end();
    });
    const body = {
      model: 'anthropic/claude-haiku-4.5',
      messages: [
        { role: 'system', content: 'Answer in French.' },
        { role: 'user', content: 'Hello' },
      ],
      max_tokens: 100,
    };
    const reply = await gateway.request('POST', '/api/v1/chat/completions', { key, body });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.choices[0].message.content, 'Bonjour!');
    assert.equal(reply.body.choices[0].finish_reason, 'stop');
    assert.equal(reply.body.provider, 'Anthropic');
    // claude-haiku-4.5 at $1/M input and $5/M output: 20 × 1,000 + 4 × 5,000 nano-dollars.
    assert.equal(reply.body.usage.cost, 0.00004);
    const sent = anthropic.requests.at(-1)!;
    assert.equal(sent.url, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], 'sk-ant-test');
    const upstreamBody = sent.body as Record<string, any>;
    assert.equal(upstreamBody.model, 'claude-haiku-4-5-20251001');
    assert.equal(upstreamBody.max_tokens, 100);
    assert.match(JSON.stringify(upstreamBody.system), /Answer in French\./);
    assert.deepEqual(upstreamBody.messages, [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }]);

    const streamed = await gateway.request('POST', '/api/v1/chat/completions', {
      key,
      body: { ...body, stream: true },
    });
    assert.equal(streamed.status, 200, streamed.text);
    const chunks = streamed.text
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: ') && frame !== 'data: [DONE]')
      .map((frame) => JSON.parse(frame.slice(6)));
    const text = chunks
      .flatMap((chunk) => chunk.choices.map((choice: any) => choice.delta.content ?? ''))
      .join('');
    assert.equal(text, 'Bonjour!');
    assert.deepEqual(chunks.at(-1).choices, []);
    assert.equal(chunks.at(-1).usage.completion_tokens, 4);
    assert.ok(streamed.text.trimEnd().endsWith('data: [DONE]'));
  });

  it('bills a stream that fails mid-way with the prompt the upstream counted and the output that came', async () => {
    const TEXT = 'Bonjour, voici une longue réponse qui sera coupée';
    anthropic.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const events: Array<[string, unknown]> = [
        [
          'message_start',
          {
            type: 'message_start',
            message: {
              id: 'msg_cut',
              type: 'message',
              role: 'assistant',
              model: 'claude-haiku-4-5-20251001',
              content: [],
              stop_reason: null,
              usage: { input_tokens: 1234, output_tokens: 1 },
            },
          },
        ],
        [
          'content_block_start',
          { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        ],
        [
          'content_block_delta',
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: TEXT } },
        ],
        ['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
      ];
      for (const [event, data] of events)
        response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      response.end();
    });
    const streamed = await gateway.request('POST', '/api/v1/chat/completions', {
      key,
      body: {
        model: 'anthropic/claude-haiku-4.5',
        messages: [{ role: 'user', content: 'Hello' }],
        max_tokens: 100,
        stream: true,
      },
    });
    assert.equal(streamed.status, 200, streamed.text);
    assert.match(streamed.text, /"finish_reason":"error"/);
    const id = streamed.headers.get('x-generation-id');
    const record = await gateway.request('GET', `/api/v1/generation?id=${id}`, { key });
    assert.equal(record.status, 200, record.text);
    // The prompt as Anthropic counted it (not 5 bytes / 4), and the output that crossed the wire
    // (more than message_start's one token).
    assert.equal(record.body.data.tokens_prompt, 1234);
    assert.equal(record.body.data.tokens_completion, Math.ceil(TEXT.length / 4));
  });

  it('serves Anthropic Messages from a Gemini upstream', async () => {
    gemini.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          candidates: [
            { content: { role: 'model', parts: [{ text: 'Hallo!' }] }, finishReason: 'STOP', index: 0 },
          ],
          usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 2, totalTokenCount: 12 },
          modelVersion: 'gemini-2.5-flash',
        }),
      );
    });
    const reply = await gateway.request('POST', '/api/v1/messages', {
      key,
      body: { model: 'google/gemini-2.5-flash', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.type, 'message');
    assert.deepEqual(reply.body.content, [{ type: 'text', text: 'Hallo!' }]);
    assert.equal(reply.body.stop_reason, 'end_turn');
    assert.equal(reply.body.usage.input_tokens, 10);
    assert.equal(reply.body.usage.output_tokens, 2);
    const sent = gemini.requests.at(-1)!;
    assert.equal(sent.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(sent.headers['x-goog-api-key'], 'goog-test');
    assert.deepEqual((sent.body as any).contents, [{ role: 'user', parts: [{ text: 'Hi' }] }]);
    assert.equal((sent.body as any).generationConfig.maxOutputTokens, 50);
  });

  it('serves Responses from an OpenAI Responses upstream, with the generation record', async () => {
    openai.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'resp_up_1',
          object: 'response',
          status: 'completed',
          model: 'gpt-4.1-mini',
          output: [
            {
              type: 'message',
              id: 'msg_up',
              role: 'assistant',
              status: 'completed',
              content: [{ type: 'output_text', text: 'Hi there', annotations: [] }],
            },
          ],
          usage: { input_tokens: 8, output_tokens: 3, total_tokens: 11 },
        }),
      );
    });
    const reply = await gateway.request('POST', '/api/v1/responses', {
      key,
      body: { model: 'openai/gpt-4.1-mini', input: 'Say hi', instructions: 'Be brief.' },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.output_text, 'Hi there');
    assert.equal(reply.body.status, 'completed');
    assert.equal(reply.body.usage.input_tokens, 8);
    const sent = openai.requests.at(-1)!;
    assert.equal(sent.url, '/v1/responses');
    assert.equal(sent.headers.authorization, 'Bearer sk-openai-test');
    assert.equal((sent.body as any).model, 'gpt-4.1-mini-2025-04-14');
    assert.equal((sent.body as any).instructions, 'Be brief.');
    const id = reply.headers.get('x-generation-id');
    const record = await gateway.request('GET', `/api/v1/generation?id=${id}`, { key });
    assert.equal(record.status, 200, record.text);
    assert.equal(record.body.data.provider_name, 'OpenAI');
    assert.equal(record.body.data.upstream_id, 'resp_up_1');
    assert.equal(record.body.data.tokens_prompt, 8);
  });
  it('carries a refusal from OpenAI chat and Responses upstreams to every surface, streamed and not', async () => {
    const REFUSAL = "I'm sorry, I can't help with that.";
    const halves = [REFUSAL.slice(0, 10), REFUSAL.slice(10)];
    const sse = (response: import('node:http').ServerResponse, events: unknown[]) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const event of events) response.write(`data: ${JSON.stringify(event)}\n\n`);
      response.end('data: [DONE]\n\n');
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id: 'chatcmpl-refused',
      object: 'chat.completion.chunk',
      created: 1_780_000_000,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    openai.handle((request, response) => {
      const body = request.body as { stream?: boolean };
      if (request.url === '/v1/chat/completions') {
        if (body.stream) {
          sse(response, [
            chunk({ role: 'assistant', content: null, refusal: halves[0] }),
            chunk({ refusal: halves[1] }),
            chunk({}, 'stop'),
            {
              ...chunk({}),
              choices: [],
              usage: { prompt_tokens: 9, completion_tokens: 8, total_tokens: 17 },
            },
          ]);
          return;
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: 'chatcmpl-refused',
            object: 'chat.completion',
            created: 1_780_000_000,
            model: 'gpt-4o-mini',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: null, refusal: REFUSAL },
                finish_reason: 'stop',
              },
            ],
            usage: { prompt_tokens: 9, completion_tokens: 8, total_tokens: 17 },
          }),
        );
        return;
      }
      // The Responses API.
      const item = {
        type: 'message',
        id: 'msg_up',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'refusal', refusal: REFUSAL }],
      };
      const whole = {
        id: 'resp_refused',
        object: 'response',
        status: 'completed',
        model: 'gpt-4.1-mini',
        output: [item],
        usage: { input_tokens: 9, output_tokens: 8, total_tokens: 17 },
      };
      if (!body.stream) {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(whole));
        return;
      }
      sse(response, [
        {
          type: 'response.created',
          sequence_number: 0,
          response: { ...whole, status: 'in_progress', output: [] },
        },
        {
          type: 'response.output_item.added',
          sequence_number: 1,
          output_index: 0,
          item: { ...item, status: 'in_progress', content: [] },
        },
        {
          type: 'response.content_part.added',
          sequence_number: 2,
          item_id: 'msg_up',
          output_index: 0,
          content_index: 0,
          part: { type: 'refusal', refusal: '' },
        },
        ...halves.map((delta, index) => ({
          type: 'response.refusal.delta',
          sequence_number: 3 + index,
          item_id: 'msg_up',
          output_index: 0,
          content_index: 0,
          delta,
        })),
        { type: 'response.completed', sequence_number: 5, response: whole },
      ]);
    });
    const call = (path: string, body: Record<string, unknown>) =>
      gateway.request('POST', `/api/v1${path}`, { key, body });
    const dataFrames = (text: string) =>
      text
        .split('\n\n')
        .filter((frame) => frame.startsWith('data: {'))
        .map((frame) => JSON.parse(frame.slice('data: '.length)));
    const messages = [{ role: 'user', content: 'Something you refuse' }];

    for (const model of ['openai/gpt-4o-mini', 'openai/gpt-4.1-mini']) {
      // Chat completions: message.refusal, content null; streamed as delta.refusal.
      const chat = await call('/chat/completions', { model, messages });
      assert.equal(chat.status, 200, chat.text);
      assert.equal(chat.body.choices[0].message.refusal, REFUSAL, model);
      assert.equal(chat.body.choices[0].message.content, null);
      const chatStream = await call('/chat/completions', { model, messages, stream: true });
      assert.equal(chatStream.status, 200, chatStream.text);
      const refused = dataFrames(chatStream.text)
        .flatMap((frame) => frame.choices ?? [])
        .map((choice: { delta: { refusal?: string } }) => choice.delta.refusal ?? '')
        .join('');
      assert.equal(refused, REFUSAL, model);

      // Responses: a message item whose content is a refusal part; streamed as response.refusal.*.
      const responses = await call('/responses', { model, input: 'Something you refuse' });
      assert.equal(responses.status, 200, responses.text);
      assert.deepEqual(
        responses.body.output.map((entry: { content: unknown }) => entry.content),
        [[{ type: 'refusal', refusal: REFUSAL }]],
      );
      assert.equal(responses.body.output_text, '');
      const responsesStream = await call('/responses', {
        model,
        input: 'Something you refuse',
        stream: true,
      });
      const events = dataFrames(responsesStream.text);
      assert.deepEqual(
        events.map((event) => event.sequence_number),
        events.map((_, index) => index),
      );
      assert.equal(
        events
          .filter((event) => event.type === 'response.refusal.delta')
          .map((event) => event.delta)
          .join(''),
        REFUSAL,
      );
      assert.equal(events.find((event) => event.type === 'response.refusal.done')?.refusal, REFUSAL);
      assert.deepEqual(events.at(-1).response.output[0].content, [{ type: 'refusal', refusal: REFUSAL }]);

      // Messages has no refusal block: the refusal is the answer's text.
      const anthropicStyle = await call('/messages', { model, max_tokens: 100, messages });
      assert.equal(anthropicStyle.status, 200, anthropicStyle.text);
      assert.deepEqual(anthropicStyle.body.content, [{ type: 'text', text: REFUSAL }]);
    }
  });

  it('names the stop sequence Anthropic stopped at, of several, streamed and not', async () => {
    anthropic.handle((request, response) => {
      const message = {
        id: 'msg_stop',
        type: 'message',
        role: 'assistant',
        model: 'claude-haiku-4-5-20251001',
        usage: { input_tokens: 5, output_tokens: 3 },
      };
      if (!(request.body as { stream?: boolean }).stream) {
        response.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            ...message,
            content: [{ type: 'text', text: 'one two' }],
            stop_reason: 'stop_sequence',
            stop_sequence: 'END',
          }),
        );
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (type: string, data: Record<string, unknown>) =>
        response.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      send('message_start', { message: { ...message, content: [], stop_reason: null, stop_sequence: null } });
      send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'one two' } });
      send('content_block_stop', { index: 0 });
      send('message_delta', {
        delta: { stop_reason: 'stop_sequence', stop_sequence: 'END' },
        usage: { output_tokens: 3 },
      });
      send('message_stop', {});
      response.end();
    });
    const body = {
      model: 'anthropic/claude-haiku-4.5',
      max_tokens: 50,
      stop_sequences: ['STOP', 'END'],
      messages: [{ role: 'user', content: 'Count' }],
    };
    const whole = await gateway.request('POST', '/api/v1/messages', { key, body });
    assert.equal(whole.status, 200, whole.text);
    assert.deepEqual([whole.body.stop_reason, whole.body.stop_sequence], ['stop_sequence', 'END']);
    const streamed = await gateway.request('POST', '/api/v1/messages', {
      key,
      body: { ...body, stream: true },
    });
    assert.equal(streamed.status, 200, streamed.text);
    assert.match(streamed.text, /"stop_reason":"stop_sequence","stop_sequence":"END"/);
  });
});
