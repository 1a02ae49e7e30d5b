// The official `@anthropic-ai/sdk`, unmodified (only baseURL and apiKey set), against a real
// gateway's `/api/v1/messages`: the SDK appends `/v1/messages` to a baseURL of `<gateway>/api`.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { chatChunk, DEEPSEEK, usageOf } from '../gateway/inference/harness.js';
import { streamThinkingToolTurn } from '../helpers/anthropic-thinking-turn.js';
import { startFakeUpstream, writeSse } from '../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

const SENTENCE = 'The quick brown fox jumps over the lazy dog.';

const weatherTool: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

async function rejection(promise: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof Anthropic.APIError, `expected an APIError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the call to fail');
}

describe('@anthropic-ai/sdk: messages against the demo provider', () => {
  let gateway: TestApp;
  let key: string;
  let client: Anthropic;
  const clientWith = (apiKey: string) =>
    new Anthropic({ baseURL: `${gateway.url}/api`, apiKey, maxRetries: 0 });
  before(async () => {
    gateway = await startTestApp({ demo: true });
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
    assert.equal(created.status, 200, created.text);
    key = created.body.key;
    client = clientWith(key);
  });
  after(() => gateway.close());

  it('create: text content, stop_reason, usage, id', async () => {
    const { data: message, response } = await client.messages
      .create({
        model: 'switchyard/echo',
        max_tokens: 256,
        system: 'Repeat after me.',
        messages: [{ role: 'user', content: 'hello from the sdk' }],
      })
      .withResponse();
    assert.equal(message.type, 'message');
    assert.equal(message.role, 'assistant');
    assert.equal(typeof message.id, 'string');
    assert.ok(message.id.length > 0);
    assert.match(response.headers.get('x-generation-id') ?? '', /^gen-/);
    assert.equal(message.model, 'switchyard/echo');
    assert.deepEqual(
      message.content.map((block) => block.type),
      ['text'],
    );
    const [block] = message.content;
    assert.ok(block?.type === 'text');
    assert.equal(block.text, 'hello from the sdk');
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.stop_sequence, null);
    assert.ok(message.usage.input_tokens > 0);
    assert.ok(message.usage.output_tokens > 0);
  });

  it('create: max_tokens cut → stop_reason max_tokens', async () => {
    const message = await client.messages.create({
      model: 'switchyard/echo',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'x'.repeat(100) }],
    });
    assert.equal(message.stop_reason, 'max_tokens');
    const [block] = message.content;
    assert.ok(block?.type === 'text');
    assert.equal(block.text, 'x'.repeat(16));
  });

  it('create with content blocks and an earlier assistant turn', async () => {
    const message = await client.messages.create({
      model: 'switchyard/echo',
      max_tokens: 256,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'first' }] },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: [{ type: 'text', text: 'second' }] },
      ],
    });
    const [block] = message.content;
    assert.ok(block?.type === 'text');
    assert.equal(block.text, 'second');
  });

  it('messages.stream(): text events and finalMessage()', async () => {
    const stream = client.messages.stream({
      model: 'switchyard/scripted',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const deltas: string[] = [];
    const events: string[] = [];
    stream.on('text', (delta) => deltas.push(delta));
    stream.on('streamEvent', (event) => events.push(event.type));
    const final = await stream.finalMessage();
    assert.equal(deltas.join(''), SENTENCE);
    assert.equal(events[0], 'message_start');
    assert.equal(events.at(-1), 'message_stop');
    assert.equal(final.stop_reason, 'end_turn');
    assert.ok(final.usage.output_tokens > 0);
    const [block] = final.content;
    assert.ok(block?.type === 'text');
    assert.equal(block.text, SENTENCE);
  });

  it('create({ stream: true }): the raw events in order', async () => {
    const stream = await client.messages.create({
      model: 'switchyard/scripted',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const events: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((event) => event.type);
    const deltas = types.filter((type) => type === 'content_block_delta').length;
    assert.deepEqual(types, [
      'message_start',
      'content_block_start',
      ...Array(deltas).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const start = events[0];
    assert.ok(start?.type === 'message_start');
    assert.equal(start.message.role, 'assistant');
    assert.deepEqual(start.message.content, []);
    const delta = events.at(-2);
    assert.ok(delta?.type === 'message_delta');
    assert.equal(delta.delta.stop_reason, 'end_turn');
    assert.ok(delta.usage.output_tokens > 0);
  });

  it('tool use round trip: a tool_use block, then tool_result sent back', async () => {
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await client.messages.create({
      model: 'switchyard/scripted',
      max_tokens: 256,
      messages,
      tools: [weatherTool],
    });
    assert.equal(first.stop_reason, 'tool_use');
    const toolUse = first.content.find((block) => block.type === 'tool_use');
    assert.ok(toolUse?.type === 'tool_use', JSON.stringify(first.content));
    assert.equal(toolUse.name, 'get_weather');
    assert.deepEqual(toolUse.input, {});
    assert.equal(typeof toolUse.id, 'string');

    messages.push(
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '{"temperature_c":21}' }],
      },
    );
    const second = await client.messages.create({ model: 'switchyard/scripted', max_tokens: 256, messages });
    assert.equal(second.stop_reason, 'end_turn');
    const [block] = second.content;
    assert.ok(block?.type === 'text');
    assert.equal(block.text, SENTENCE);
  });

  it('tool use streamed: inputJson events and the tool_use block in finalMessage()', async () => {
    const stream = client.messages.stream({
      model: 'switchyard/scripted',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [weatherTool],
    });
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    const toolUse = final.content.find((block) => block.type === 'tool_use');
    assert.ok(toolUse?.type === 'tool_use', JSON.stringify(final.content));
    assert.equal(toolUse.name, 'get_weather');
    assert.deepEqual(toolUse.input, {});
  });

  it('unknown model → BadRequestError (400) with the Anthropic error type', async () => {
    const error = await rejection(
      client.messages.create({
        model: 'nobody/no-such-model',
        max_tokens: 256,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    assert.ok(error instanceof Anthropic.BadRequestError, error.constructor.name);
    assert.equal(error.status, 400);
    assert.equal(error.type, 'invalid_request_error');
    assert.match(error.message, /no-such-model/);
  });

  it('a missing max_tokens → BadRequestError naming the field', async () => {
    const error = await rejection(
      client.messages.create({
        model: 'switchyard/echo',
        messages: [{ role: 'user', content: 'hi' }],
      } as any),
    );
    assert.ok(error instanceof Anthropic.BadRequestError, error.constructor.name);
    assert.match(error.message, /body\.max_tokens/);
    // Anthropic's envelope on every /messages error, schema failures included (reference §9.3).
    assert.equal(error.type, 'invalid_request_error', JSON.stringify(error.error));
  });

  it('an unknown key → AuthenticationError (401)', async () => {
    const error = await rejection(
      clientWith('sk-sy-v1-nope').messages.create({
        model: 'switchyard/echo',
        max_tokens: 256,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    assert.ok(error instanceof Anthropic.AuthenticationError, error.constructor.name);
    assert.equal(error.status, 401);
    // Anthropic's envelope on every /messages error, authentication included (reference §9.3).
    assert.equal(error.type, 'authentication_error', JSON.stringify(error.error));
  });

  it('the management key → PermissionDeniedError (403)', async () => {
    const error = await rejection(
      clientWith(gateway.managementKey).messages.create({
        model: 'switchyard/echo',
        max_tokens: 256,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    assert.ok(error instanceof Anthropic.PermissionDeniedError, error.constructor.name);
    assert.equal(error.status, 403);
    assert.equal(error.type, 'permission_error');
  });

  it('switchyard/fail-429 → RateLimitError with Retry-After', async () => {
    for (const stream of [false, true]) {
      const error = await rejection(
        client.messages.create({
          model: 'switchyard/fail-429',
          max_tokens: 256,
          messages: [{ role: 'user', content: 'hi' }],
          stream,
        }),
      );
      assert.ok(error instanceof Anthropic.RateLimitError, error.constructor.name);
      assert.equal(error.status, 429);
      assert.equal(error.type, 'rate_limit_error');
      assert.equal(error.headers?.get('retry-after'), '1');
      // The envelope's request_id is the generation id (no `request-id` header is sent, so the
      // SDK's error.requestID stays empty).
      assert.match((error.error as any)?.request_id ?? '', /^gen-/);
      assert.equal((error.error as any)?.error?.error_type, 'rate_limit_exceeded');
    }
  });

  it('switchyard/fail-500 → InternalServerError', async () => {
    const error = await rejection(
      client.messages.create({
        model: 'switchyard/fail-500',
        max_tokens: 256,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    assert.ok(error instanceof Anthropic.InternalServerError, error.constructor.name);
  });

  it('a stream cut mid-way: text so far, then the SDK throws from the error event', async () => {
    const stream = client.messages.stream({
      model: 'switchyard/cut-mid-stream',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const deltas: string[] = [];
    stream.on('text', (delta) => deltas.push(delta));
    const error = await rejection(stream.finalMessage());
    assert.equal(deltas.join(''), 'The quick ');
    assert.equal(error.status, undefined);
    assert.match(error.message, /connection cut/i);
  });
});

describe('@anthropic-ai/sdk: the gateway rate limit', () => {
  let gateway: TestApp;
  let client: Anthropic;
  before(async () => {
    gateway = await startTestApp({
      demo: true,
      config: { limits: { rate_limit: { requests: 1, window_seconds: 60 } } },
    });
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
    assert.equal(created.status, 200, created.text);
    client = new Anthropic({ baseURL: `${gateway.url}/api`, apiKey: created.body.key, maxRetries: 0 });
  });
  after(() => gateway.close());

  it('a 429 from the key limit is a RateLimitError in the Anthropic envelope', async () => {
    const params = {
      model: 'switchyard/echo',
      max_tokens: 256,
      messages: [{ role: 'user' as const, content: 'hi' }],
    };
    // A window of a minute: unless the minute turns between the two calls, the second is refused.
    if (60 - ((Date.now() / 1000) % 60) < 2) await new Promise((resolve) => setTimeout(resolve, 2100));
    await client.messages.create(params);
    const error = await rejection(client.messages.create(params));
    assert.ok(error instanceof Anthropic.RateLimitError, error.constructor.name);
    assert.equal(error.type, 'rate_limit_error', JSON.stringify(error.error));
    assert.ok(Number(error.headers?.get('retry-after')) >= 1);
  });
});

describe('@anthropic-ai/sdk: extended thinking with tools, through an Anthropic upstream', () => {
  let gateway: TestApp;
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let client: Anthropic;
  const SIGNATURE = 'EqQBCgIYAhIMsignature-of-turn-one';
  const REDACTED = 'EmwKAhgBEgy3va3p-redacted';
  before(async () => {
    upstream = await startFakeUpstream();
    gateway = await startTestApp({
      config: {
        credits: { initial: 10 },
        providers: { anthropic: { api_key: 'sk-ant-test', base_url: `${upstream.url}/v1` } },
      },
    });
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
    assert.equal(created.status, 200, created.text);
    client = new Anthropic({ baseURL: `${gateway.url}/api`, apiKey: created.body.key, maxRetries: 0 });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('the second turn sends the first turn’s thinking back, signature and redacted block unchanged', async () => {
    upstream.handle((request, response) => {
      const body = request.body as {
        messages: Array<{ role: string; content: Array<Record<string, unknown>> }>;
      };
      const last = body.messages.at(-1);
      const isToolResultTurn = last?.content.some?.((block) => block.type === 'tool_result');
      if (isToolResultTurn) {
        // As Anthropic does with thinking on: the assistant turn that called the tool must start
        // with its thinking blocks, unchanged.
        const assistant = body.messages.at(-2);
        const first = assistant?.content[0];
        if (first?.type !== 'thinking' || first.signature !== SIGNATURE) {
          response.writeHead(400, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              type: 'error',
              error: {
                type: 'invalid_request_error',
                message:
                  'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.',
              },
            }),
          );
          return;
        }
        assert.deepEqual(assistant?.content[1], { type: 'redacted_thinking', data: REDACTED });
        response.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: 'msg_turn_2',
            type: 'message',
            role: 'assistant',
            model: 'claude-sonnet-4-5-20250929',
            content: [{ type: 'text', text: 'It is sunny in Paris.' }],
            stop_reason: 'end_turn',
            stop_sequence: null,
            usage: { input_tokens: 80, output_tokens: 8 },
          }),
        );
        return;
      }
      streamThinkingToolTurn(response, { signature: SIGNATURE, redacted: REDACTED });
    });
    const params = {
      model: 'anthropic/claude-sonnet-4.5',
      max_tokens: 4096,
      thinking: { type: 'enabled' as const, budget_tokens: 2048 },
      tools: [weatherTool],
      messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
    };
    const first = await client.messages.stream(params).finalMessage();
    assert.deepEqual(
      first.content.map((block) => block.type),
      ['thinking', 'redacted_thinking', 'tool_use'],
    );
    const thinking = first.content[0] as Anthropic.ThinkingBlock;
    assert.equal(thinking.thinking, 'Paris: call the tool.');
    assert.equal(thinking.signature, SIGNATURE);
    assert.equal((first.content[1] as Anthropic.RedactedThinkingBlock).data, REDACTED);
    const call = first.content[2] as Anthropic.ToolUseBlock;
    const second = await client.messages.create({
      ...params,
      messages: [
        ...params.messages,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] },
      ],
    });
    assert.equal(second.content.length, 1);
    assert.equal((second.content[0] as Anthropic.TextBlock).text, 'It is sunny in Paris.');
  });
});

describe('@anthropic-ai/sdk: usage and cut-off tool calls, from Anthropic and from an OpenAI-compatible upstream', () => {
  let anthropic: Awaited<ReturnType<typeof startFakeUpstream>>;
  let compatible: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let client: Anthropic;
  const claude = {
    model: 'anthropic/claude-sonnet-4.5',
    max_tokens: 256,
    messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
    tools: [weatherTool],
  };
  const deepseek = { ...claude, model: DEEPSEEK };

  /** Anthropic's framing: an `event:` line, then the data (`raw` for a frame JSON.stringify cannot write). */
  const writeEvents = (
    response: ServerResponse,
    events: Array<({ type: string } & Record<string, unknown>) | { raw: string; type: string }>,
  ) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const event of events) {
      const data = 'raw' in event && typeof event.raw === 'string' ? event.raw : JSON.stringify(event);
      response.write(`event: ${event.type}\ndata: ${data}\n\n`);
    }
    response.end();
  };
  const messageStart = (usage: Record<string, number>) => ({
    type: 'message_start',
    message: {
      id: 'msg_up',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage,
    },
  });
  const rawEvents = async (params: Anthropic.MessageCreateParamsNonStreaming) => {
    const events: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of await client.messages.create({ ...params, stream: true })) events.push(event);
    return events;
  };
  const compatibleToolCall = (args: string[], finishReason: string | null) => [
    chatChunk({ role: 'assistant', content: '' }),
    chatChunk({
      tool_calls: [
        { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
      ],
    }),
    ...args.map((fragment) => chatChunk({ tool_calls: [{ index: 0, function: { arguments: fragment } }] })),
    ...(finishReason === null
      ? []
      : [
          chatChunk({}, finishReason),
          JSON.stringify({ id: 'up-s', object: 'chat.completion.chunk', choices: [], usage: usageOf(10, 5) }),
          '[DONE]',
        ]),
  ];

  before(async () => {
    [anthropic, compatible] = await Promise.all([startFakeUpstream(), startFakeUpstream()]);
    gateway = await startTestApp({
      config: {
        credits: { initial: 10 },
        providers: {
          anthropic: { api_key: 'sk-ant-test', base_url: `${anthropic.url}/v1` },
          novita: { api_key: 'k', base_url: `${compatible.url}/v1` },
        },
      },
    });
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
    assert.equal(created.status, 200, created.text);
    client = new Anthropic({ baseURL: `${gateway.url}/api`, apiKey: created.body.key, maxRetries: 0 });
  });
  after(async () => {
    await gateway.close();
    await Promise.all([anthropic.close(), compatible.close()]);
  });

  it("message_start carries Anthropic's prompt counts; message_delta and finalMessage() the whole usage", async () => {
    anthropic.handle((_request, response) =>
      writeEvents(response, [
        messageStart({
          input_tokens: 12,
          cache_creation_input_tokens: 30,
          cache_read_input_tokens: 400,
          output_tokens: 1,
        }),
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Sunny.' } },
        { type: 'content_block_stop', index: 0 },
        // The older message_delta, output only: the gateway's carries every count all the same.
        {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: 25 },
        },
        { type: 'message_stop' },
      ]),
    );
    const events = await rawEvents(claude);
    const start = events[0];
    assert.ok(start?.type === 'message_start');
    assert.deepEqual(start.message.usage, {
      input_tokens: 12,
      output_tokens: 1,
      cache_creation_input_tokens: 30,
      cache_read_input_tokens: 400,
    });
    const delta = events.at(-2);
    assert.ok(delta?.type === 'message_delta');
    assert.equal(delta.usage.input_tokens, 12);
    assert.equal(delta.usage.output_tokens, 25);
    assert.equal(delta.usage.cache_creation_input_tokens, 30);
    assert.equal(delta.usage.cache_read_input_tokens, 400);

    const final = await client.messages.stream(claude).finalMessage();
    assert.deepEqual(final.usage, {
      input_tokens: 12,
      output_tokens: 25,
      cache_creation_input_tokens: 30,
      cache_read_input_tokens: 400,
    });
  });

  it('an upstream that counts only at the end: zeros in message_start, the whole usage in message_delta and finalMessage()', async () => {
    compatible.handle((_request, response) =>
      writeSse(response, [
        chatChunk({ role: 'assistant', content: '' }),
        chatChunk({ content: 'Sunny.' }),
        chatChunk({}, 'stop'),
        JSON.stringify({ id: 'up-s', object: 'chat.completion.chunk', choices: [], usage: usageOf(10, 5) }),
        '[DONE]',
      ]),
    );
    const events = await rawEvents(deepseek);
    const start = events[0];
    assert.ok(start?.type === 'message_start');
    assert.deepEqual(start.message.usage, {
      input_tokens: 0,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
    const delta = events.at(-2);
    assert.ok(delta?.type === 'message_delta');
    assert.equal(delta.usage.input_tokens, 10);
    assert.equal(delta.usage.output_tokens, 5);

    // The SDK takes message_delta's counts over message_start's zeros.
    const final = await client.messages.stream(deepseek).finalMessage();
    assert.deepEqual(final.usage, {
      input_tokens: 10,
      output_tokens: 5,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
  });

  it('a message_start count JSON cannot carry back (1e999) is held to the context, not sent as null', async () => {
    const start = JSON.stringify(messageStart({ input_tokens: 7, output_tokens: 1 }));
    anthropic.handle((_request, response) =>
      writeEvents(response, [
        { type: 'message_start', raw: start.replace('"input_tokens":7', '"input_tokens":1e999') },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: 'Sunny.' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } },
        { type: 'message_stop' },
      ]),
    );
    const events = await rawEvents(claude);
    const opening = events[0];
    assert.ok(opening?.type === 'message_start');
    const counted = opening.message.usage.input_tokens;
    assert.ok(Number.isSafeInteger(counted) && counted > 0, String(counted));
    const delta = events.at(-2);
    assert.ok(delta?.type === 'message_delta');
    assert.equal(delta.usage.input_tokens, counted);
  });

  it('a tool call max_tokens cut off: stop_reason max_tokens and the same input streamed and whole, even malformed', async () => {
    const cases = [
      { args: ['{"city": "Paris", ', '"unit": "cel'], input: { city: 'Paris' } },
      // Malformed before the cut (a regular expression's \d, unescaped): the SDK's parser would throw.
      { args: ['{"city": "Paris", "pattern": "\\d', '+", "unit": "cel'], input: { city: 'Paris' } },
      { args: ['{"ci'], input: {} },
    ];
    for (const { args, input } of cases) {
      compatible.handle((request, response) => {
        if ((request.body as { stream?: boolean }).stream)
          return writeSse(response, compatibleToolCall(args, 'length'));
        response.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: 'up-1',
            object: 'chat.completion',
            created: 1,
            model: 'upstream-model',
            choices: [
              {
                index: 0,
                message: {
                  role: 'assistant',
                  content: null,
                  tool_calls: [
                    {
                      id: 'call_1',
                      type: 'function',
                      function: { name: 'get_weather', arguments: args.join('') },
                    },
                  ],
                },
                finish_reason: 'length',
              },
            ],
            usage: usageOf(10, 5),
          }),
        );
      });
      const final = await client.messages.stream(deepseek).finalMessage();
      assert.equal(final.stop_reason, 'max_tokens');
      assert.deepEqual(final.content, [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input }]);
      const whole = await client.messages.create(deepseek);
      assert.equal(whole.stop_reason, 'max_tokens');
      assert.deepEqual(whole.content, final.content);
    }
  });

  it('Anthropic cutting a tool_use at max_tokens: its fragments pass as they came, and the SDK reads the members completed', async () => {
    const fragments = ['{"city": "Par', 'is", "unit": "cel'];
    anthropic.handle((_request, response) =>
      writeEvents(response, [
        messageStart({ input_tokens: 40, output_tokens: 1 }),
        {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'tool_use', id: 'toolu_cut', name: 'get_weather', input: {} },
        },
        ...fragments.map((partial_json) => ({
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'input_json_delta', partial_json },
        })),
        { type: 'content_block_stop', index: 0 },
        {
          type: 'message_delta',
          delta: { stop_reason: 'max_tokens', stop_sequence: null },
          usage: { output_tokens: 12 },
        },
        { type: 'message_stop' },
      ]),
    );
    const events = await rawEvents(claude);
    assert.deepEqual(
      events.flatMap((event) =>
        event.type === 'content_block_delta' && event.delta.type === 'input_json_delta'
          ? [event.delta.partial_json]
          : [],
      ),
      fragments,
    );
    const final = await client.messages.stream(claude).finalMessage();
    assert.equal(final.stop_reason, 'max_tokens');
    assert.deepEqual(final.content, [
      { type: 'tool_use', id: 'toolu_cut', name: 'get_weather', input: { city: 'Paris' } },
    ]);
  });

  it('a stream cut in the middle of malformed arguments: the SDK throws the APIError of the cut, not a JSON error', async () => {
    // No finish_reason, no [DONE]: the upstream went away mid-call.
    compatible.handle((_request, response) =>
      writeSse(response, compatibleToolCall(['{"city": "Paris", "pattern": "\\d+", ', '"unit": "c'], null)),
    );
    const stream = client.messages.stream(deepseek);
    const blocks: Anthropic.ContentBlock[] = [];
    stream.on('contentBlock', (block) => blocks.push(block));
    const error = await rejection(stream.finalMessage());
    assert.match(error.message, /ended before it finished/);
    assert.deepEqual(blocks, [
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
    ]);
  });
});
