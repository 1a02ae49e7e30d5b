import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAiChatAdapter } from '../../../src/gateway/providers/openai-chat/openai-chat-adapter.js';
import { createUpstreamHttp } from '../../../src/gateway/providers/shared/upstream-http.js';
import type { AdapterCall } from '../../../src/spec/provider-adapter.js';
import type { StreamPart } from '../../../src/spec/stream-part.js';
import { UpstreamError } from '../../../src/spec/upstream-error.js';
import { collect, startFakeUpstream, writeSse } from '../../helpers/fake-upstream.js';

// Chunks in the shape OpenAI's chat-completions stream sends them (stream_options.include_usage).
const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  JSON.stringify({
    id: 'chatcmpl-abc',
    object: 'chat.completion.chunk',
    created: 1_786_000_000,
    model: 'gpt-4o-mini-2024-07-18',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
const usageChunk = JSON.stringify({
  id: 'chatcmpl-abc',
  object: 'chat.completion.chunk',
  created: 1_786_000_000,
  model: 'gpt-4o-mini-2024-07-18',
  choices: [],
  usage: {
    prompt_tokens: 21,
    completion_tokens: 5,
    total_tokens: 26,
    prompt_tokens_details: { cached_tokens: 8 },
    completion_tokens_details: { reasoning_tokens: 2 },
  },
});

describe('OpenAI chat-completions adapter against a fake upstream', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  const http = createUpstreamHttp();
  const adapter = createOpenAiChatAdapter({
    http,
    maxTokensField: 'max_completion_tokens',
    supportsTopK: false,
  });
  const call = (overrides: Partial<AdapterCall> = {}): AdapterCall => ({
    request: {
      model: 'gpt-4o-mini',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        { type: 'function-call', callId: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' },
        { type: 'function-call-output', callId: 'call_1', output: '{"temp":21}' },
      ],
      tools: [
        {
          type: 'function',
          name: 'weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      maxOutputTokens: 100,
      temperature: 0.2,
      topK: 5,
      stop: ['END'],
    },
    target: { baseUrl: `${upstream.url}/v1/`, apiKey: 'sk-upstream' },
    signal: new AbortController().signal,
    timeouts: { headersMs: 2000, firstTokenMs: 2000, idleMs: 2000 },
    ...overrides,
  });

  before(async () => {
    upstream = await startFakeUpstream();
  });
  after(async () => {
    await http.close();
    await upstream.close();
  });

  it('sends the canonical request in the chat-completions wire format', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          model: 'gpt-4o-mini-2024-07-18',
          choices: [
            { index: 0, message: { role: 'assistant', content: 'Sunny, 21°C.' }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 30, completion_tokens: 6, total_tokens: 36 },
        }),
      );
    });
    const result = await adapter.generate(call());
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.url, '/v1/chat/completions');
    assert.equal(sent.headers.authorization, 'Bearer sk-upstream');
    assert.deepEqual(sent.body, {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ],
      max_completion_tokens: 100,
      temperature: 0.2,
      stop: ['END'],
    });
    assert.equal(result.text, 'Sunny, 21°C.');
    assert.equal(result.finishReason, 'stop');
    assert.equal(result.id, 'chatcmpl-1');
    assert.deepEqual(result.usage, {
      inputTokens: 30,
      outputTokens: 6,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    });
  });

  it('reads content sent as a list of parts (Mistral reasoning): text as text, thinking as reasoning', async () => {
    const thinking = (text: string) => ({ type: 'thinking', thinking: [{ type: 'text', text }] });
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-m',
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: [
                  thinking('2 plus 2.'),
                  { type: 'text', text: 'The answer ' },
                  { type: 'text', text: 'is 4.' },
                ],
              },
              finish_reason: 'stop',
            },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 20, total_tokens: 23 },
        }),
      );
    });
    const result = await adapter.generate(call());
    assert.equal(result.text, 'The answer is 4.');
    assert.equal(result.reasoning, '2 plus 2.');

    const delta = (content: unknown) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-m', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(delta([thinking('2 plus 2.')]));
      response.write(delta([{ type: 'text', text: 'The answer ' }]));
      response.write(delta('is 4.'));
      response.write(
        `data: ${JSON.stringify({ id: 'chatcmpl-m', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`,
      );
      response.end('data: [DONE]\n\n');
    });
    const parts = await collect(adapter.stream(call()));
    assert.deepEqual(
      parts.filter((part) => part.type === 'text-delta' || part.type === 'reasoning-delta'),
      [
        { type: 'reasoning-delta', delta: '2 plus 2.' },
        { type: 'text-delta', delta: 'The answer ' },
        { type: 'text-delta', delta: 'is 4.' },
      ],
    );
  });

  it('reads a legacy function_call answer as a tool call, streamed and not', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-f',
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: null,
                function_call: { name: 'weather', arguments: '{"city":"Oslo"}' },
              },
              finish_reason: 'function_call',
            },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        }),
      );
    });
    const result = await adapter.generate(call());
    assert.deepEqual(
      result.toolCalls.map((toolCall) => [toolCall.name, toolCall.arguments]),
      [['weather', '{"city":"Oslo"}']],
    );
    assert.equal(result.finishReason, 'tool-calls');

    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-f', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(chunk({ role: 'assistant', function_call: { name: 'weather', arguments: '' } }));
      response.write(chunk({ function_call: { arguments: '{"city":' } }));
      response.write(chunk({ function_call: { arguments: '"Oslo"}' } }));
      response.write(chunk({}, 'function_call'));
      response.end('data: [DONE]\n\n');
    });
    const parts = await collect(adapter.stream(call()));
    const calls = parts.filter((part) => part.type.startsWith('tool-call'));
    assert.equal(calls[0]?.type === 'tool-call-start' ? calls[0].name : '', 'weather');
    assert.equal(
      calls.map((part) => (part.type === 'tool-call-delta' ? part.argumentsDelta : '')).join(''),
      '{"city":"Oslo"}',
    );
    assert.equal(calls.at(-1)?.type, 'tool-call-end');
  });

  it('reads tool-call arguments sent as an object instead of a JSON string as that JSON', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-2',
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: null,
                tool_calls: [
                  {
                    id: 'call_9',
                    type: 'function',
                    function: { name: 'weather', arguments: { city: 'Oslo' } },
                  },
                ],
              },
              finish_reason: 'tool_calls',
            },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        }),
      );
    });
    const result = await adapter.generate(call());
    assert.deepEqual(
      result.toolCalls.map((toolCall) => [toolCall.name, toolCall.arguments]),
      [['weather', '{"city":"Oslo"}']],
    );
  });

  it('streams text, reasoning, tool calls, usage and finish as typed parts', async () => {
    upstream.handle((_request, response) =>
      writeSse(response, [
        chunk({ role: 'assistant', content: '' }),
        chunk({ reasoning_content: 'thinking' }),
        chunk({ content: 'Hel' }),
        chunk({ content: 'lo' }),
        chunk({
          tool_calls: [
            { index: 0, id: 'call_9', type: 'function', function: { name: 'weather', arguments: '' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }),
        chunk({}, 'tool_calls'),
        usageChunk,
        '[DONE]',
      ]),
    );
    const parts = await collect(adapter.stream(call()));
    assert.deepEqual(upstream.requests.at(-1)!.body, {
      ...(upstream.requests.at(-1)!.body as object),
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.deepEqual(parts, [
      { type: 'response-metadata', id: 'chatcmpl-abc', model: 'gpt-4o-mini-2024-07-18' },
      { type: 'reasoning-delta', delta: 'thinking' },
      { type: 'text-delta', delta: 'Hel' },
      { type: 'text-delta', delta: 'lo' },
      { type: 'tool-call-start', index: 0, callId: 'call_9', name: 'weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '"Oslo"}' },
      { type: 'tool-call-end', index: 0 },
      {
        type: 'usage',
        usage: {
          inputTokens: 21,
          outputTokens: 5,
          cachedInputTokens: 8,
          cacheWriteTokens: 0,
          reasoningTokens: 2,
        },
      },
      { type: 'finish', reason: 'tool-calls', nativeReason: 'tool_calls' },
    ]);
  });

  it('keeps streamed tool calls apart when the upstream reuses index 0 or sends none', async () => {
    const calls = (
      first: Record<string, unknown>,
      second: Record<string, unknown>,
      rest: Record<string, unknown>[] = [],
    ) => [
      chunk({ role: 'assistant', content: null }),
      chunk({
        tool_calls: [
          {
            ...first,
            id: 'call_x',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":' },
          },
        ],
      }),
      chunk({ tool_calls: [{ ...first, function: { arguments: '"Paris"}' } }] }),
      chunk({
        tool_calls: [
          {
            ...second,
            id: 'call_y',
            type: 'function',
            function: { name: 'get_time', arguments: '{"tz":"CET"}' },
          },
        ],
      }),
      ...rest.map((delta) => chunk(delta)),
      chunk({}, 'tool_calls'),
      usageChunk,
      '[DONE]',
    ];
    const start = [
      { type: 'tool-call-start', index: 0, callId: 'call_x', name: 'get_weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '"Paris"}' },
    ];
    const second = [
      { type: 'tool-call-start', index: 1, callId: 'call_y', name: 'get_time' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{"tz":"CET"}' },
    ];
    // Distinct upstream indexes: both calls end with the stream. A call whose index another call
    // took can get no more arguments, and ends at once.
    const expected = [
      ...start,
      ...second,
      { type: 'tool-call-end', index: 0 },
      { type: 'tool-call-end', index: 1 },
    ];
    const takenOver = [
      ...start,
      { type: 'tool-call-end', index: 0 },
      ...second,
      { type: 'tool-call-end', index: 1 },
    ];
    const toolParts = (parts: Array<{ type: string }>) =>
      parts.filter((part) => part.type.startsWith('tool-call'));
    // Ollama: every call at index 0. No index at all (Mistral-style). And the usual distinct indexes,
    // where a call may repeat its id on each chunk.
    for (const [first, other, parts] of [
      [{ index: 0 }, { index: 0 }, takenOver],
      [{}, {}, takenOver],
      [{ index: 0 }, { index: 1 }, expected],
    ] as const) {
      upstream.handle((_request, response) => writeSse(response, calls(first, other)));
      assert.deepEqual(toolParts(await collect(adapter.stream(call()))), parts, JSON.stringify(first));
    }
    // Continuation chunks that repeat an empty id, or vary it without a name, stay in their call.
    for (const id of ['', 'call_other']) {
      upstream.handle((_request, response) =>
        writeSse(response, [
          chunk({
            tool_calls: [
              {
                index: 0,
                id: 'call_x',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":' },
              },
            ],
          }),
          chunk({ tool_calls: [{ index: 0, id, function: { arguments: '"Paris"}' } }] }),
          chunk({}, 'tool_calls'),
          usageChunk,
          '[DONE]',
        ]),
      );
      assert.deepEqual(
        toolParts(await collect(adapter.stream(call()))),
        [...start, { type: 'tool-call-end', index: 0 }],
        JSON.stringify(id),
      );
    }
    // A call that repeats its id on a later chunk is the same call.
    upstream.handle((_request, response) =>
      writeSse(
        response,
        calls({ index: 0 }, { index: 1 }, [
          { tool_calls: [{ index: 1, id: 'call_y', function: { arguments: '' } }] },
        ]),
      ),
    );
    assert.deepEqual(toolParts(await collect(adapter.stream(call()))), expected);
  });

  it('starts a tool call that comes with its name with its first argument piece, before the next chunk is sent', async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(
        `data: ${chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] })}\n\n`,
      );
      response.write(
        `data: ${chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] })}\n\n`,
      );
      // The rest of the stream waits until the start has been read.
      await released;
      response.write(
        `data: ${chunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] })}\n\n`,
      );
      response.write(`data: ${chunk({}, 'tool_calls')}\n\ndata: [DONE]\n\n`);
      response.end();
    });
    const parts: StreamPart[] = [];
    for await (const part of adapter.stream(call())) {
      parts.push(part);
      if (part.type === 'tool-call-start') release();
    }
    assert.deepEqual(
      parts.filter((part) => part.type.startsWith('tool-call')),
      [
        { type: 'tool-call-start', index: 0, callId: 'call_1', name: 'get_weather' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '"Oslo"}' },
        { type: 'tool-call-end', index: 0 },
      ],
    );
  });

  it('starts a call whose name came in pieces and no arguments at its finish reason, before the stream ends', async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(
        `data: ${chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_', arguments: '' } }] })}\n\n`,
      );
      response.write(`data: ${chunk({ tool_calls: [{ index: 0, function: { name: 'time' } }] })}\n\n`);
      response.write(`data: ${chunk({}, 'tool_calls')}\n\n`);
      // The usage and the stream's end wait until the start has been read.
      await released;
      response.write(`data: ${usageChunk}\n\ndata: [DONE]\n\n`);
      response.end();
    });
    const parts: StreamPart[] = [];
    for await (const part of adapter.stream(call())) {
      parts.push(part);
      if (part.type === 'tool-call-start') release();
    }
    assert.deepEqual(
      parts
        .filter((part) => part.type.startsWith('tool-call') || part.type === 'usage')
        .map((part) => part.type),
      ['tool-call-start', 'tool-call-end', 'usage'],
    );
    assert.deepEqual(
      parts.find((part) => part.type === 'tool-call-start'),
      {
        type: 'tool-call-start',
        index: 0,
        callId: 'call_1',
        name: 'get_time',
      },
    );
  });

  it('starts a tool call whose name comes after its id with that name, not with an empty one', async () => {
    const toolParts = (parts: StreamPart[]) => parts.filter((part) => part.type.startsWith('tool-call'));
    const stream = async (deltas: Record<string, unknown>[][]) => {
      upstream.handle((_request, response) =>
        writeSse(response, [
          chunk({ role: 'assistant', content: null }),
          ...deltas.map((toolCalls) => chunk({ tool_calls: toolCalls })),
          chunk({}, 'tool_calls'),
          usageChunk,
          '[DONE]',
        ]),
      );
      return toolParts(await collect(adapter.stream(call())));
    };
    const weather = (index: number, callId: string, argumentsDeltas: string[]) => [
      { type: 'tool-call-start', index, callId, name: 'get_weather' },
      ...argumentsDeltas.map((argumentsDelta) => ({ type: 'tool-call-delta', index, argumentsDelta })),
    ];
    const end = (index: number) => ({ type: 'tool-call-end', index });

    // The id alone (with an empty name, or none), the name in the next delta, then the arguments.
    for (const opening of [{ name: '' }, {}]) {
      assert.deepEqual(
        await stream([
          [{ index: 0, id: 'call_1', type: 'function', function: { ...opening, arguments: '' } }],
          [{ index: 0, function: { name: 'get_weather' } }],
          [{ index: 0, function: { arguments: '{"city":' } }],
          [{ index: 0, function: { arguments: '"Oslo"}' } }],
        ]),
        [...weather(0, 'call_1', ['{"city":', '"Oslo"}']), end(0)],
        JSON.stringify(opening),
      );
    }
    // The id with the name's first piece, the rest of the name in later deltas (with an id
    // repeated, or none), then the arguments: the call starts with the whole name.
    for (const id of [{ id: 'call_1' }, {}]) {
      assert.deepEqual(
        await stream([
          [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_', arguments: '' } }],
          [{ index: 0, ...id, function: { name: 'wea' } }],
          [{ index: 0, ...id, function: { name: 'ther', arguments: '{"city":' } }],
          [{ index: 0, function: { arguments: '"Oslo"}' } }],
        ]),
        [...weather(0, 'call_1', ['{"city":', '"Oslo"}']), end(0)],
        JSON.stringify(id),
      );
    }
    // The name in pieces: joined until the arguments begin. A piece repeating the whole name (a
    // server that sends the name on every chunk) adds nothing.
    assert.deepEqual(
      await stream([
        [{ index: 0, id: 'call_1', function: { arguments: '' } }],
        [{ index: 0, function: { name: 'get_' } }],
        [{ index: 0, function: { name: 'weather' } }],
        [{ index: 0, function: { name: 'get_weather', arguments: '{}' } }],
        [{ index: 0, function: { name: 'get_weather', arguments: '' } }],
      ]),
      [...weather(0, 'call_1', ['{}']), end(0)],
    );
    // Arguments before the name wait for it, and follow the start.
    assert.deepEqual(
      await stream([
        [{ index: 0, id: 'call_1', function: { arguments: '{"city":"Oslo"}' } }],
        [{ index: 0, function: { name: 'get_weather' } }],
      ]),
      [...weather(0, 'call_1', ['{"city":"Oslo"}']), end(0)],
    );
    // A name that comes with no arguments after it: the call starts when the stream ends. One that
    // never comes: the call starts with what is known (an empty name) rather than not at all.
    assert.deepEqual(
      await stream([[{ index: 0, id: 'call_1' }], [{ index: 0, function: { name: 'get_weather' } }]]),
      [...weather(0, 'call_1', []), end(0)],
    );
    assert.deepEqual(await stream([[{ index: 0, id: 'call_1', function: { arguments: '{}' } }]]), [
      { type: 'tool-call-start', index: 0, callId: 'call_1', name: '' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
      end(0),
    ]);
    // The id after the name-less opening delta is the call's.
    assert.deepEqual(
      await stream([
        [{ index: 0, type: 'function' }],
        [{ index: 0, id: 'call_7', function: { name: 'get_weather', arguments: '{}' } }],
      ]),
      [...weather(0, 'call_7', ['{}']), end(0)],
    );
    // A held call starts, with what is known, before the next call does: starts keep their order.
    assert.deepEqual(
      await stream([
        [{ index: 0, id: 'call_1' }],
        [{ index: 0, function: { name: 'get_weather' } }],
        [{ index: 1, id: 'call_2', function: { name: 'get_weather', arguments: '{}' } }],
        [{ index: 0, function: { arguments: '{}' } }],
      ]),
      [
        ...weather(0, 'call_1', []),
        ...weather(1, 'call_2', ['{}']),
        { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
        end(0),
        end(1),
      ],
    );
    // Several calls reusing index 0 (Ollama), each with its name late: each takes over the last.
    assert.deepEqual(
      await stream([
        [{ index: 0, id: 'call_1' }],
        [{ index: 0, function: { name: 'get_weather', arguments: '{}' } }],
        [{ index: 0, id: 'call_2', function: { name: '' } }],
        [{ index: 0, function: { name: 'get_weather', arguments: '{}' } }],
      ]),
      [...weather(0, 'call_1', ['{}']), end(0), ...weather(1, 'call_2', ['{}']), end(1)],
    );
  });

  it('reads a 200 JSON answer to a streamed request as the error it carries', async () => {
    upstream.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
        .end(JSON.stringify({ error: { message: 'Upstream overloaded, try later', code: 503 } }));
    });
    const overloaded = await collect(adapter.stream(call())).catch((caught: unknown) => caught);
    assert.ok(overloaded instanceof UpstreamError);
    assert.equal(overloaded.message, 'Upstream overloaded, try later');
    assert.equal(overloaded.status, 503);
    assert.equal(overloaded.retryable, true);
    // A code that is no HTTP error status is a bad gateway; JSON without an error, a bad answer.
    upstream.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'model not found', code: 'not_found' } }));
    });
    const odd = await collect(adapter.stream(call())).catch((caught: unknown) => caught);
    assert.ok(odd instanceof UpstreamError);
    assert.equal(odd.message, 'model not found');
    assert.equal(odd.status, 502);
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"choices":[]}');
    });
    const whole = await collect(adapter.stream(call())).catch((caught: unknown) => caught);
    assert.ok(whole instanceof UpstreamError);
    assert.equal(whole.kind, 'invalid-response');
    assert.match(whole.message, /answered a streamed request with JSON \(HTTP 200\), not an event stream/);
    assert.equal(whole.retryable, true);
    // vLLM's error object, after leading blanks, in two chunks.
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('\n  ');
      setTimeout(
        () =>
          response.end('{"object":"error","message":"context too long","type":"BadRequestError","code":400}'),
        20,
      );
    });
    const vllm = await collect(adapter.stream(call())).catch((caught: unknown) => caught);
    assert.ok(vllm instanceof UpstreamError);
    assert.equal(vllm.message, 'context too long');
    assert.equal(vllm.status, 400);
    assert.equal(vllm.retryable, false);
  });

  it('reads an event stream labelled application/json as the stream it is', async () => {
    // Foundry Local sends its SSE as application/json; OpenAI's SDKs read it.
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      for (const frame of [
        chunk({ role: 'assistant', content: 'Hi' }),
        chunk({}, 'stop'),
        usageChunk,
        '[DONE]',
      ])
        response.write(`data: ${frame}\n\n`);
      response.end();
    });
    const parts = await collect(adapter.stream(call()));
    assert.deepEqual(
      parts.filter((part) => part.type === 'text-delta' || part.type === 'finish'),
      [
        { type: 'text-delta', delta: 'Hi' },
        { type: 'finish', reason: 'stop', nativeReason: 'stop' },
      ],
    );
  });

  it('reports a 429 with its message and Retry-After as a retryable error', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '17' }).end(
        JSON.stringify({
          error: {
            message: 'Rate limit reached for gpt-4o-mini',
            type: 'requests',
            code: 'rate_limit_exceeded',
          },
        }),
      );
    });
    const error = await adapter.generate(call()).catch((caught: unknown) => caught);
    assert.ok(error instanceof UpstreamError);
    assert.equal(error.status, 429);
    assert.equal(error.retryable, true);
    assert.equal(error.retryAfterSeconds, 17);
    assert.equal(error.message, 'Rate limit reached for gpt-4o-mini');
    // Streaming fails the same way, before any part.
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) => caught instanceof UpstreamError && caught.status === 429,
    );
  });

  it('treats a 400 as not retryable, an HTML 502 and invalid JSON as retryable upstream faults', async () => {
    upstream.handle((_request, response) => {
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end('{"error":{"message":"Invalid tools"}}');
    });
    const invalid = await adapter.generate(call()).catch((caught: unknown) => caught);
    assert.ok(invalid instanceof UpstreamError && invalid.status === 400 && invalid.retryable === false);

    upstream.handle((_request, response) => {
      response.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>');
    });
    const html = await adapter.generate(call()).catch((caught: unknown) => caught);
    assert.ok(html instanceof UpstreamError && html.status === 502 && html.retryable);
    assert.equal(html.message, 'Upstream returned HTTP 502');
    assert.match(html.raw ?? '', /Bad Gateway/);

    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"choices": [');
    });
    const garbled = await adapter.generate(call()).catch((caught: unknown) => caught);
    assert.ok(garbled instanceof UpstreamError && garbled.kind === 'invalid-response' && garbled.retryable);
  });

  it('stops reading an error body at its cap without ending the process', async () => {
    const page = `<html><body>${'Bad Gateway '.repeat(10_000)}</body></html>`; // ~120 KB
    upstream.handle((_request, response) => {
      response.writeHead(502, { 'content-type': 'text/html' }).end(page);
    });
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const failed = await adapter.generate(call()).catch((caught: unknown) => caught);
      assert.ok(failed instanceof UpstreamError && failed.status === 502 && failed.retryable, String(failed));
      assert.equal(failed.raw, '', 'an error body over the cap is not kept');
    }
    // An 'error' emitted with no listener would have ended the process before this line.
    await new Promise((resolve) => setTimeout(resolve, 50));
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-after',
          object: 'chat.completion',
          model: 'gpt-4o-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: 'fine' }, finish_reason: 'stop' }],
        }),
      );
    });
    assert.equal((await adapter.generate(call())).text, 'fine');
  });

  it('fails (never hangs) on a reply cut mid-body, and on a client abort while the body arrives', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '4000' });
      response.write('{"id":"chatcmpl-abc","choices":[');
      setTimeout(() => response.socket?.destroy(), 20);
    });
    const cut = await adapter.generate(call()).catch((caught: unknown) => caught);
    assert.ok(cut instanceof UpstreamError, String(cut));
    assert.ok(cut.retryable, `a cut reply is the endpoint's fault (${cut.kind})`);

    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '4000' });
      response.write('{"id":"chatcmpl-abc","choices":[');
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const aborted = await adapter
      .generate(call({ signal: controller.signal }))
      .catch((caught: unknown) => caught);
    assert.ok(aborted instanceof UpstreamError && aborted.kind === 'aborted', String(aborted));
  });

  it('turns a stream cut mid-frame after output into an in-band error part', async () => {
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`data: ${chunk({ content: 'partial' })}\n\n`);
      response.write('data: {"id":"chatcmpl-abc","choi');
      // Let the bytes leave before the connection drops, as a real cut mid-frame does.
      await new Promise((resolve) => setTimeout(resolve, 50));
      response.destroy();
    });
    const parts = await collect(adapter.stream(call()));
    assert.deepEqual(parts.slice(0, 2), [
      { type: 'response-metadata', id: 'chatcmpl-abc', model: 'gpt-4o-mini-2024-07-18' },
      { type: 'text-delta', delta: 'partial' },
    ]);
    const last = parts.at(-1)!;
    assert.equal(last.type, 'error');
    assert.ok(last.type === 'error' && last.error.retryable);
  });

  it('keeps a call whose arguments are slow to come from the first-token timeout', async () => {
    // A server that sends the call's id and name at once, then buffers its whole argument text.
    // A name that is no tool of the request is held until its arguments begin: the held call is a
    // sign of life, not silence.
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`data: ${chunk({ role: 'assistant', content: null })}\n\n`);
      response.write(
        `data: ${chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'lookup', arguments: '' } }] })}\n\n`,
      );
      await new Promise((resolve) => setTimeout(resolve, 400));
      response.write(`data: ${chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] })}\n\n`);
      response.write(`data: ${chunk({}, 'tool_calls')}\n\ndata: [DONE]\n\n`);
      response.end();
    });
    const timeouts = { headersMs: 2000, firstTokenMs: 250, idleMs: 5000 };
    const parts = await collect(adapter.stream(call({ timeouts })));
    assert.deepEqual(
      parts.filter((part) => part.type.startsWith('tool-call')).map((part) => part.type),
      ['tool-call-start', 'tool-call-delta', 'tool-call-end'],
    );
    // Named as one of the request's tools ("weather"), it starts with its first delta.
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(
        `data: ${chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'weather', arguments: '' } }] })}\n\n`,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      response.write(`data: ${chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] })}\n\n`);
      response.write(`data: ${chunk({}, 'tool_calls')}\n\ndata: [DONE]\n\n`);
      response.end();
    });
    const stream = adapter.stream(call({ timeouts }))[Symbol.asyncIterator]();
    const began = Date.now();
    let first = await stream.next();
    while (!first.done && first.value.type === 'response-metadata') first = await stream.next();
    assert.deepEqual(first.value, { type: 'tool-call-start', index: 0, callId: 'c1', name: 'weather' });
    assert.ok(Date.now() - began < 250, 'the start did not wait for the arguments');
    while (!(await stream.next()).done);
  });

  it('fails over in the end from a call named and then never continued, however busy the stream', async () => {
    let stop = false;
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(
        `data: ${chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'lookup', arguments: '' } }] })}\n\n`,
      );
      // Empty chunks keep the idle timeout away; the call never gets its arguments.
      for (let beat = 0; !stop && beat < 200; beat++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        response.write(`data: ${chunk({})}\n\n`);
      }
      response.end();
    });
    const started = Date.now();
    await assert.rejects(
      collect(adapter.stream(call({ timeouts: { headersMs: 2000, firstTokenMs: 100, idleMs: 5000 } }))),
      (caught: unknown) => caught instanceof UpstreamError && caught.kind === 'timeout' && caught.retryable,
    );
    stop = true;
    const waited = Date.now() - started;
    // Ten first-token timeouts (1 s), not the upstream's four seconds of chunks.
    assert.ok(waited >= 900 && waited < 3000, `waited ${waited} ms`);
  });

  it('throws a timeout when no output arrives before the first-token timeout, and when headers never come', async () => {
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`data: ${chunk({ role: 'assistant', content: '' })}\n\n`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      response.end();
    });
    const started = Date.now();
    await assert.rejects(
      collect(adapter.stream(call({ timeouts: { headersMs: 2000, firstTokenMs: 150, idleMs: 5000 } }))),
      (caught: unknown) => caught instanceof UpstreamError && caught.kind === 'timeout' && caught.retryable,
    );
    assert.ok(Date.now() - started < 900, 'the first-token timeout fired before the upstream finished');

    upstream.handle(() => {
      // never answers
    });
    await assert.rejects(
      adapter.generate(call({ timeouts: { headersMs: 150, firstTokenMs: 2000, idleMs: 2000 } })),
      (caught: unknown) => caught instanceof UpstreamError && caught.kind === 'timeout',
    );
  });

  it('ends a stream whose upstream sends bytes but no event for the idle timeout, with an in-band timeout', {
    timeout: 10_000,
  }, async () => {
    // After its first output: only SSE comments, then an unfinished data line grown a byte at a time.
    for (const drip of [': keep-alive\n', ' ']) {
      let interval: NodeJS.Timeout | undefined;
      upstream.handle((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(`data: ${chunk({ role: 'assistant', content: 'Hi' })}\n\n`);
        if (drip === ' ') response.write('data: {"choices":');
        interval = setInterval(() => response.write(drip), 40);
        response.on('close', () => clearInterval(interval));
      });
      const started = Date.now();
      const parts = await collect(
        adapter.stream(call({ timeouts: { headersMs: 2000, firstTokenMs: 2000, idleMs: 300 } })),
      );
      clearInterval(interval);
      assert.ok(Date.now() - started < 2000, `ended after ${Date.now() - started} ms`);
      assert.deepEqual(
        parts.filter((part) => part.type === 'text-delta'),
        [{ type: 'text-delta', delta: 'Hi' }],
      );
      const last = parts.at(-1)!;
      assert.equal(last.type, 'error', JSON.stringify(parts));
      assert.ok(last.type === 'error' && last.error.kind === 'timeout', JSON.stringify(last));
      assert.match(last.type === 'error' ? last.error.message : '', /no event for 300 ms/);
    }
  });

  it('stops reading and reports an abort when the caller aborts', async () => {
    upstream.handle((_request, response) =>
      writeSse(
        response,
        [chunk({ content: 'a' }), chunk({ content: 'b' }), chunk({}, 'stop'), '[DONE]'],
        200,
      ),
    );
    const controller = new AbortController();
    const parts: StreamPart[] = [];
    for await (const part of adapter.stream(call({ signal: controller.signal }))) {
      parts.push(part);
      if (part.type === 'text-delta') controller.abort();
    }
    assert.deepEqual(
      parts.map((part) => part.type),
      ['response-metadata', 'text-delta', 'error'],
    );
    const last = parts.at(-1)!;
    assert.ok(last.type === 'error' && last.error.kind === 'aborted' && !last.error.retryable);
  });
});

describe('OpenAI chat-completions request conversion', () => {
  it('refuses what the protocol cannot carry, before any request is sent', async () => {
    const { convertToOpenAiChatRequest } = await import(
      '../../../src/gateway/providers/openai-chat/convert-to-openai-chat-request.js'
    );
    const options = { maxTokensField: 'max_tokens' as const, supportsTopK: true, stream: false };
    assert.throws(
      () =>
        convertToOpenAiChatRequest(
          {
            model: 'm',
            input: [
              {
                type: 'message',
                role: 'user',
                content: [{ type: 'file', url: 'https://example.com/a.pdf' }],
              },
            ],
          },
          options,
        ),
      /only as data: URLs/,
    );
    assert.throws(
      () =>
        convertToOpenAiChatRequest(
          {
            model: 'm',
            input: [
              {
                type: 'message',
                role: 'assistant',
                content: [{ type: 'image', url: 'https://example.com/a.png' }],
              },
            ],
          },
          options,
        ),
      /only text in assistant turns/,
    );
    const inline = convertToOpenAiChatRequest(
      {
        model: 'm',
        input: [
          {
            type: 'message',
            role: 'user',
            content: [{ type: 'file', url: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' }],
          },
        ],
      },
      options,
    );
    assert.deepEqual(inline.messages, [
      {
        role: 'user',
        content: [
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
        ],
      },
    ]);
  });
});
