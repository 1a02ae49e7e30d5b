import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createAnthropicMessagesAdapter } from '../../../src/gateway/providers/anthropic/anthropic-messages-adapter.js';
import { thinkingStyleOf } from '../../../src/gateway/providers/anthropic/convert-to-anthropic-messages-request.js';
import { createUpstreamHttp } from '../../../src/gateway/providers/shared/upstream-http.js';
import type { AdapterCall } from '../../../src/spec/provider-adapter.js';
import { UnsupportedRequestError, UpstreamError } from '../../../src/spec/upstream-error.js';
import { collect, startFakeUpstream } from '../../helpers/fake-upstream.js';

// Anthropic names every SSE frame (`event: <type>`) and repeats the type inside the data;
// the shared helper writes bare `data:` frames, so the frames are written here.
type AnthropicEvent = { type: string } & Record<string, unknown>;
const frame = (event: AnthropicEvent) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

async function writeEvents(response: ServerResponse, events: AnthropicEvent[]): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of events) response.write(frame(event));
  response.end();
}

// Events in the shape https://docs.anthropic.com/en/docs/build-with-claude/streaming shows them.
const messageStart: AnthropicEvent = {
  type: 'message_start',
  message: {
    id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
    type: 'message',
    role: 'assistant',
    content: [],
    model: 'claude-sonnet-4-20250514',
    stop_reason: null,
    stop_sequence: null,
    usage: {
      input_tokens: 12,
      cache_creation_input_tokens: 30,
      cache_read_input_tokens: 400,
      output_tokens: 1,
    },
  },
};
/** What the adapter reads of messageStart: the response's identity and the prompt's counts. */
const startMetadata = {
  type: 'response-metadata',
  id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
  model: 'claude-sonnet-4-20250514',
  usage: {
    inputTokens: 442,
    outputTokens: 1,
    cachedInputTokens: 400,
    cacheWriteTokens: 30,
    reasoningTokens: 0,
  },
};
const blockStart = (index: number, contentBlock: Record<string, unknown>): AnthropicEvent => ({
  type: 'content_block_start',
  index,
  content_block: contentBlock,
});
const blockDelta = (index: number, delta: Record<string, unknown>): AnthropicEvent => ({
  type: 'content_block_delta',
  index,
  delta,
});
const blockStop = (index: number): AnthropicEvent => ({ type: 'content_block_stop', index });
const messageDelta = (stopReason: string, outputTokens: number): AnthropicEvent => ({
  type: 'message_delta',
  delta: { stop_reason: stopReason, stop_sequence: null },
  usage: { output_tokens: outputTokens },
});
const messageStop: AnthropicEvent = { type: 'message_stop' };
const overloaded: AnthropicEvent = {
  type: 'error',
  error: { type: 'overloaded_error', message: 'Overloaded' },
};

describe('Anthropic Messages adapter against a fake upstream', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  const http = createUpstreamHttp();
  const adapter = createAnthropicMessagesAdapter({ http });
  const call = (overrides: Partial<AdapterCall> = {}): AdapterCall => ({
    request: {
      model: 'claude-sonnet-4-20250514',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
        { type: 'message', role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'image', url: 'https://example.com/paris.jpg' },
            { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' },
            { type: 'file', url: 'data:application/pdf;base64,JVBERi0x', filename: 'forecast.pdf' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Let me check.' }] },
        { type: 'function-call', callId: 'toolu_1', name: 'weather', arguments: '{"city":"Paris"}' },
        { type: 'function-call-output', callId: 'toolu_1', output: '{"temp":21}' },
      ],
      tools: [
        {
          type: 'function',
          name: 'weather',
          description: 'Current weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      toolChoice: 'required',
      parallelToolCalls: false,
      temperature: 0.2,
      topP: 0.9,
      topK: 5,
      stop: ['END'],
      seed: 7,
      user: 'user-42',
    },
    target: { baseUrl: `${upstream.url}/v1/`, apiKey: 'sk-ant-upstream' },
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

  it('sends the canonical request in the Messages wire format and reads text and tool_use', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-20250514',
          content: [
            { type: 'thinking', thinking: 'The user wants Oslo too.', signature: 'EqQBCgIYAhIM' },
            { type: 'text', text: 'Sunny, 21°C. ' },
            { type: 'text', text: 'Checking Oslo.' },
            {
              type: 'tool_use',
              id: 'toolu_01A09q90qw90lq917835lq9',
              name: 'weather',
              input: { city: 'Oslo' },
            },
          ],
          stop_reason: 'tool_use',
          stop_sequence: null,
          usage: {
            input_tokens: 50,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 1000,
            output_tokens: 40,
          },
        }),
      );
    });
    const result = await adapter.generate(call());
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.url, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], 'sk-ant-upstream');
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent.headers.authorization, undefined);
    assert.match(String(sent.headers['content-type']), /application\/json/);
    assert.deepEqual(sent.body, {
      model: 'claude-sonnet-4-20250514',
      max_tokens: 4096,
      system: 'Be brief.\n\nAnswer in English.',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in Paris?' },
            { type: 'image', source: { type: 'url', url: 'https://example.com/paris.jpg' } },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            {
              type: 'document',
              source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' },
              title: 'forecast.pdf',
            },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me check.' },
            { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"temp":21}' }] },
      ],
      tools: [
        {
          name: 'weather',
          description: 'Current weather',
          input_schema: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      temperature: 0.2,
      top_k: 5,
      stop_sequences: ['END'],
      metadata: { user_id: 'user-42' },
    });
    assert.deepEqual(result, {
      id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
      model: 'claude-sonnet-4-20250514',
      text: 'Sunny, 21°C. Checking Oslo.',
      reasoning: 'The user wants Oslo too.',
      toolCalls: [{ callId: 'toolu_01A09q90qw90lq917835lq9', name: 'weather', arguments: '{"city":"Oslo"}' }],
      usage: {
        inputTokens: 1050,
        outputTokens: 40,
        cachedInputTokens: 1000,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
      },
      finishReason: 'tool-calls',
      nativeFinishReason: 'tool_use',
      reasoningBlocks: [
        { text: 'The user wants Oslo too.', signature: 'EqQBCgIYAhIM', format: 'anthropic-claude-v1' },
      ],
    });
  });

  it('notes which tool call a block of interleaved thinking came before', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_4',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-20250514',
          content: [
            { type: 'thinking', thinking: 'Paris first.', signature: 'sig-1' },
            { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: 'Rome' } },
          ],
          stop_reason: 'tool_use',
          usage: { input_tokens: 30, output_tokens: 20 },
        }),
      );
    });
    const result = await adapter.generate(call());
    assert.deepEqual(result.reasoningBlocks, [
      { text: 'Paris first.', signature: 'sig-1', format: 'anthropic-claude-v1' },
      { text: '', redactedData: 'opaque', format: 'anthropic-claude-v1', beforeToolCall: 1 },
    ]);
  });

  it("sends an earlier turn's signed thinking back before that turn's content, unsigned reasoning left out", async () => {
    upstream.handle((request, response) => {
      if ((request.body as { stream?: boolean }).stream) {
        void writeEvents(response, [
          messageStart,
          blockStart(0, { type: 'text', text: '' }),
          blockDelta(0, { type: 'text_delta', text: '{"city":"Paris"}' }),
          blockStop(0),
          messageDelta('end_turn', 5),
          messageStop,
        ]);
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_3',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-20250514',
          content: [{ type: 'text', text: 'Both sunny.' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 30, output_tokens: 3 },
        }),
      );
    });
    const base = call().request;
    await adapter.generate(
      call({
        request: {
          ...base,
          toolChoice: 'auto',
          reasoning: { maxTokens: 2048 },
          maxOutputTokens: 4096,
          input: [
            { type: 'message', role: 'user', content: [{ type: 'text', text: 'Paris and Rome?' }] },
            {
              type: 'function-call',
              callId: 'toolu_1',
              name: 'weather',
              arguments: '{"city":"Paris"}',
              reasoning: [
                { text: 'Two cities.', signature: 'EqQBCgIYAhIM', format: 'anthropic-claude-v1' },
                { text: '', redactedData: 'EmwKAhgBEgy3va3p', format: 'anthropic-claude-v1' },
                // Another provider's reasoning has no signature Anthropic would accept.
                { text: 'unsigned' },
                // Nor is a signed block of no known format sent.
                { text: 'whose?', signature: 'sig-unknown' },
              ],
            },
            {
              type: 'function-call',
              callId: 'toolu_2',
              name: 'weather',
              arguments: '{"city":"Rome"}',
            },
            { type: 'function-call-output', callId: 'toolu_1', output: 'sunny' },
            { type: 'function-call-output', callId: 'toolu_2', output: 'sunny' },
          ],
        },
      }),
    );
    const sent = upstream.requests.at(-1)!.body as any;
    assert.deepEqual(sent.thinking, { type: 'enabled', budget_tokens: 2048 });
    assert.deepEqual(sent.messages[1], {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Two cities.', signature: 'EqQBCgIYAhIM' },
        { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3p' },
        { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: 'Rome' } },
      ],
    });
  });

  it('thinks adaptively on the models that take it: 4.6 given an effort, 4.7 and later always', async () => {
    assert.deepEqual(
      [
        'claude-3-7-sonnet-20250219',
        'claude-sonnet-4-5-20250929',
        'claude-opus-4-20250514',
        'claude-opus-4-6',
        'claude-sonnet-4.6',
        'claude-opus-4-7',
        'claude-opus-4-8',
        'claude-sonnet-5',
        'claude-fable-5',
        'claude-opus-5@20260101',
        'my-claude',
      ].map(thinkingStyleOf),
      [
        'budget',
        'budget',
        'budget',
        'adaptive',
        'adaptive',
        'adaptive-only',
        'adaptive-only',
        'adaptive-only',
        'adaptive-only',
        'adaptive-only',
        'budget',
      ],
    );
    upstream.handle((request, response) => {
      const body = request.body as {
        model: string;
        thinking?: { type: string };
        output_config?: { effort?: string };
      };
      // As Anthropic answers (its rules written out here, not the adapter's): a budget is refused
      // from 4.7 on, adaptive thinking before 4.6, and `xhigh` on 4.6.
      const newest = /^claude-(opus-4-[78]|[a-z]+-5)/.test(body.model);
      const is46 = /^claude-[a-z]+-4[-.]6/.test(body.model);
      const refusal =
        body.thinking?.type === 'enabled' && newest
          ? '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'
          : body.thinking?.type === 'adaptive' && !newest && !is46
            ? 'adaptive thinking is not supported on this model'
            : body.output_config?.effort === 'xhigh' && is46
              ? "This model does not support effort level 'xhigh'. Supported levels: high, low, max, medium"
              : undefined;
      if (refusal) {
        response
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: refusal } }));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_a',
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [{ type: 'text', text: 'ok' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 3, output_tokens: 1 },
        }),
      );
    });
    const ask = {
      type: 'message' as const,
      role: 'user' as const,
      content: [{ type: 'text' as const, text: 'Hi' }],
    };
    const send = async (model: string, request: Partial<AdapterCall['request']>) => {
      await adapter.generate(call({ request: { model, input: [ask], ...request } }));
      return upstream.requests.at(-1)!.body as any;
    };

    const opus47 = await send('claude-opus-4-7', { reasoning: { effort: 'high' } });
    assert.deepEqual(opus47.thinking, { type: 'adaptive', display: 'summarized' });
    assert.deepEqual(opus47.output_config, { effort: 'high' });
    assert.equal(opus47.max_tokens, 4096 + 16_000, 'the default answer room on top of the level’s budget');
    // A budget given to a model that refuses one is read as its nearest effort level.
    const budgeted = await send('claude-opus-4-7', { reasoning: { maxTokens: 3000 }, maxOutputTokens: 9000 });
    assert.deepEqual(budgeted.thinking, { type: 'adaptive', display: 'summarized' });
    assert.deepEqual(budgeted.output_config, { effort: 'low' });
    assert.equal(budgeted.max_tokens, 9000);
    // Reasoning on with no level (/messages `thinking: {type: "adaptive"}`): the model's own default.
    const bare = await send('claude-sonnet-5', { reasoning: { enabled: true } });
    assert.deepEqual(bare.thinking, { type: 'adaptive', display: 'summarized' });
    assert.equal(bare.output_config, undefined);
    // Reasoning left out of the answer: the thinking text is omitted, its signature still sent.
    const hidden = await send('claude-opus-4-8', { reasoning: { effort: 'minimal', include: false } });
    assert.deepEqual(hidden.thinking, { type: 'adaptive', display: 'omitted' });
    assert.deepEqual(hidden.output_config, { effort: 'low' });
    // 4.6 thinks adaptively given an effort, and still takes a budget given one.
    assert.deepEqual((await send('claude-sonnet-4-6', { reasoning: { effort: 'max' } })).thinking, {
      type: 'adaptive',
      display: 'summarized',
    });
    assert.deepEqual((await send('claude-opus-4-6', { reasoning: { maxTokens: 2048 } })).thinking, {
      type: 'enabled',
      budget_tokens: 2048,
    });
    // 4.6 takes no xhigh: its highest level is max.
    const xhigh46 = await send('claude-opus-4-6', { reasoning: { effort: 'xhigh' } });
    assert.deepEqual(xhigh46.output_config, { effort: 'max' });
    assert.deepEqual((await send('claude-opus-4-7', { reasoning: { effort: 'xhigh' } })).output_config, {
      effort: 'xhigh',
    });
    // A cap too small to think in goes without thinking, as with a budget.
    const tiny = await send('claude-opus-4-7', { reasoning: { effort: 'high' }, maxOutputTokens: 50 });
    assert.equal(tiny.thinking, undefined);
    assert.equal(tiny.output_config, undefined);
    assert.equal(tiny.max_tokens, 50);
    // Before 4.6, a budget as before; off is off everywhere.
    assert.deepEqual((await send('claude-sonnet-4-5', { reasoning: { effort: 'medium' } })).thinking, {
      type: 'enabled',
      budget_tokens: 10_000,
    });
    const off = await send('claude-opus-4-7', { reasoning: { effort: 'none' } });
    assert.equal(off.thinking, undefined);
    assert.equal(off.output_config, undefined);
    // The effort sits beside an output format in output_config; sampling goes as with any thinking.
    const formatted = await send('claude-opus-4-7', {
      reasoning: { effort: 'medium' },
      temperature: 0.5,
      responseFormat: { type: 'json_schema', name: 'x', schema: { type: 'object', properties: {} } },
    });
    assert.deepEqual(formatted.output_config, {
      format: {
        type: 'json_schema',
        schema: { type: 'object', properties: {}, additionalProperties: false },
      },
      effort: 'medium',
    });
    assert.equal(formatted.temperature, undefined);
    // An effort that asks for no thinking (/messages output_config.effort without thinking) goes
    // alone to the models that take the field, each at a level it has, and sampling goes with it.
    const alone = (effort: 'low' | 'xhigh' | 'max', extra: Partial<AdapterCall['request']> = {}) => ({
      reasoning: { effort, effortAsksReasoning: false as const },
      ...extra,
    });
    for (const [model, effort, sent] of [
      ['claude-opus-4-7', 'low', 'low'],
      ['claude-opus-4-8', 'xhigh', 'xhigh'],
      ['claude-sonnet-5', 'max', 'max'],
      ['claude-opus-4-6', 'low', 'low'],
      ['claude-sonnet-4-6', 'xhigh', 'max'],
      ['claude-opus-4-5-20251101', 'low', 'low'],
      ['claude-opus-4-5', 'max', 'high'],
    ] as const) {
      const body = await send(model, alone(effort, { temperature: 0.3 }));
      assert.equal(body.thinking, undefined, model);
      assert.deepEqual(body.output_config, { effort: sent }, `${model} ${effort}`);
      assert.equal(body.max_tokens, 4096, model);
      assert.equal(body.temperature, 0.3, model);
    }
    // Models that take no effort get none (they would refuse the field), and no thinking either.
    for (const model of ['claude-sonnet-4-5-20250929', 'claude-haiku-4-5', 'claude-opus-4-1', 'my-claude']) {
      const body = await send(model, alone('low', { maxOutputTokens: 500 }));
      assert.equal(body.thinking, undefined, model);
      assert.equal(body.output_config, undefined, model);
      assert.equal(body.max_tokens, 500, model);
    }
    // With thinking turned off the effort still goes; beside a format it sits in output_config too.
    const disabled = await send('claude-opus-4-7', {
      reasoning: { enabled: false, effort: 'medium', effortAsksReasoning: false },
      responseFormat: { type: 'json_schema', name: 'x', schema: { type: 'object', properties: {} } },
    });
    assert.equal(disabled.thinking, undefined);
    assert.deepEqual(disabled.output_config, {
      format: {
        type: 'json_schema',
        schema: { type: 'object', properties: {}, additionalProperties: false },
      },
      effort: 'medium',
    });
  });

  it('maps tool choice, thinking budgets and the version header override', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_2',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-20250514',
          content: [{ type: 'text', text: 'ok' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 3, output_tokens: 1 },
        }),
      );
    });
    const pinned = createAnthropicMessagesAdapter({ http, version: '2099-01-01' });
    const base = call().request;
    const send = async (request: Partial<AdapterCall['request']>, target = pinned) => {
      await target.generate(call({ request: { ...base, ...request } }));
      const sent = upstream.requests.at(-1)!;
      return { headers: sent.headers, body: sent.body as any };
    };

    const named = await send({ toolChoice: { type: 'function', name: 'weather' }, parallelToolCalls: true });
    assert.equal(named.headers['anthropic-version'], '2099-01-01');
    assert.deepEqual(named.body.tool_choice, { type: 'tool', name: 'weather' });
    assert.deepEqual((await send({ toolChoice: 'none' })).body.tool_choice, { type: 'none' });
    assert.deepEqual((await send({ toolChoice: 'auto', parallelToolCalls: undefined })).body.tool_choice, {
      type: 'auto',
    });
    assert.equal(
      (await send({ toolChoice: undefined, parallelToolCalls: undefined })).body.tool_choice,
      undefined,
    );

    // Thinking budgets on a conversation without an earlier tool turn (see below for one), the tool
    // not forced (see below too).
    const asking = base.input.slice(0, 3);
    const plain = { ...base, toolChoice: 'auto' as const };
    const think = async (request: Partial<AdapterCall['request']>) => {
      await pinned.generate(call({ request: { ...plain, ...request } }));
      return { body: upstream.requests.at(-1)!.body as any };
    };
    const budgeted = (await think({ input: asking, reasoning: { maxTokens: 2000 }, maxOutputTokens: 8000 }))
      .body;
    assert.deepEqual(budgeted.thinking, { type: 'enabled', budget_tokens: 2000 });
    assert.equal(budgeted.max_tokens, 8000);
    const effort = (await think({ input: asking, reasoning: { effort: 'medium' } })).body;
    assert.deepEqual(effort.thinking, { type: 'enabled', budget_tokens: 10_000 });
    assert.equal(effort.max_tokens, 14_096, 'the default answer room comes on top of the budget');
    const clamped = (await think({ input: asking, reasoning: { effort: 'high' }, maxOutputTokens: 3000 }))
      .body;
    assert.deepEqual(clamped.thinking, { type: 'enabled', budget_tokens: 2250 }, 'a quarter left to answer');
    const tooSmall = (await think({ input: asking, reasoning: { effort: 'low' }, maxOutputTokens: 500 }))
      .body;
    assert.equal(tooSmall.thinking, undefined);
    assert.equal((await think({ input: asking, reasoning: { effort: 'none' } })).body.thinking, undefined);

    // The last assistant turn called a tool without its signed thinking (a chat client that kept
    // only the tool call): Anthropic would refuse thinking, so the request goes without it.
    const unsigned = (await think({ reasoning: { effort: 'medium' } })).body;
    assert.equal(unsigned.thinking, undefined);
    assert.equal(unsigned.max_tokens, 4096, 'no budget on top of the answer room');
    const signedTurn = base.input.map((item) =>
      item.type === 'message' && item.role === 'assistant'
        ? {
            ...item,
            reasoning: [{ text: 'Check first.', signature: 'sig-1', format: 'anthropic-claude-v1' as const }],
          }
        : item,
    );
    const signed = (await think({ input: signedTurn, reasoning: { effort: 'medium' } })).body;
    assert.deepEqual(signed.thinking, { type: 'enabled', budget_tokens: 10_000 });
    assert.deepEqual(signed.messages.at(-2).content[0], {
      type: 'thinking',
      thinking: 'Check first.',
      signature: 'sig-1',
    });
    const geminiSigned = base.input.map((item) =>
      item.type === 'function-call'
        ? { ...item, reasoning: [{ text: '', signature: 'gemini-sig', format: 'google-gemini-v1' as const }] }
        : item,
    );
    // Thinking with a forced tool call, or with sampling Anthropic refuses beside it.
    const forced = (await think({ input: asking, reasoning: { effort: 'medium' }, toolChoice: 'required' }))
      .body;
    assert.equal(forced.thinking, undefined, 'Anthropic refuses thinking when tool_choice forces a tool');
    assert.deepEqual(forced.tool_choice, { type: 'any', disable_parallel_tool_use: true });
    const sampled = (
      await think({ input: asking, reasoning: { effort: 'medium' }, temperature: 0.3, topP: 0.9, topK: 5 })
    ).body;
    assert.deepEqual(sampled.thinking, { type: 'enabled', budget_tokens: 10_000 });
    assert.deepEqual([sampled.temperature, sampled.top_p, sampled.top_k], [undefined, undefined, undefined]);
    const wide = (await think({ input: asking, reasoning: { effort: 'medium' }, topP: 0.97 })).body;
    assert.equal(wide.top_p, 0.97, 'top_p from 0.95 is taken with thinking');
    // The newer models refuse temperature and top_p together: the temperature goes.
    const both = (await think({ input: asking, temperature: 0.3, topP: 0.5, reasoning: undefined })).body;
    assert.deepEqual([both.temperature, both.top_p], [0.3, undefined]);
    const fromGemini = (await think({ input: geminiSigned, reasoning: { effort: 'medium' } })).body;
    assert.equal(fromGemini.thinking, undefined, "another provider's signature is never sent to Anthropic");
    assert.ok(!JSON.stringify(fromGemini.messages).includes('gemini-sig'));

    // The target's own headers (an anthropic-beta flag, say) go along and may override the version.
    await adapter.generate(
      call({
        target: {
          baseUrl: upstream.url,
          apiKey: 'sk-ant-upstream',
          headers: { 'anthropic-beta': 'prompt-caching-2024-07-31' },
        },
      }),
    );
    assert.equal(upstream.requests.at(-1)!.headers['anthropic-beta'], 'prompt-caching-2024-07-31');
    assert.equal(upstream.requests.at(-1)!.url, '/messages');
  });

  it('sends a strict tool with strict: true and its schema reshaped, where the model and the schema allow it', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_s',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [{ type: 'text', text: 'ok' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 3, output_tokens: 1 },
        }),
      );
    });
    const parameters = { type: 'object', properties: { city: { type: 'string', maxLength: 40 } } };
    const tools = [
      { type: 'function' as const, name: 'strict_one', parameters, strict: true },
      { type: 'function' as const, name: 'loose_one', parameters },
      // A map (other properties following a schema) has no form in the grammar: sent as it is.
      {
        type: 'function' as const,
        name: 'strict_map',
        parameters: { type: 'object', additionalProperties: { type: 'string' } },
        strict: true,
      },
    ];
    const send = async (request: Partial<AdapterCall['request']>) => {
      await adapter.generate(
        call({
          request: {
            model: 'claude-sonnet-4-5',
            input: [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
            tools,
            ...request,
          },
        }),
      );
      return (upstream.requests.at(-1)!.body as { tools: Array<Record<string, unknown>> }).tools;
    };
    const sent = await send({});
    assert.deepEqual(sent[0], {
      name: 'strict_one',
      input_schema: {
        type: 'object',
        properties: { city: { type: 'string', description: '{maxLength: 40}' } },
        additionalProperties: false,
      },
      strict: true,
    });
    assert.deepEqual(sent[1], { name: 'loose_one', input_schema: parameters });
    assert.deepEqual(sent[2], { name: 'strict_map', input_schema: tools[2]!.parameters });
    // A model without structured outputs takes no strict tools: every schema goes as it is.
    const unlisted = await send({ structuredOutputs: false });
    assert.deepEqual(unlisted[0], { name: 'strict_one', input_schema: parameters });

    // Past Anthropic's limits for one request (20 strict tools, 24 optional parameters, 16 union
    // types, the output format's schema counted too), no tool goes strict: Anthropic would 400.
    const strictTool = (name: string, schema: Record<string, unknown> = parameters) => ({
      type: 'function' as const,
      name,
      parameters: schema,
      strict: true,
    });
    const stricts = (sent: Array<Record<string, unknown>>) => sent.filter((tool) => tool.strict).length;
    const twenty = Array.from({ length: 20 }, (_, index) => strictTool(`t${index}`));
    assert.equal(stricts(await send({ tools: twenty })), 20);
    assert.equal(stricts(await send({ tools: [...twenty, strictTool('t20')] })), 0);
    const optional = (count: number) => ({
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: count }, (_, index) => [`p${index}`, { type: 'string' }]),
      ),
    });
    assert.equal(stricts(await send({ tools: [strictTool('a', optional(24))] })), 1);
    assert.equal(stricts(await send({ tools: [strictTool('a', optional(25))] })), 0);
    const format = {
      type: 'json_schema' as const,
      name: 'f',
      schema: { type: 'object', properties: { x: { type: 'string' } } },
    };
    assert.equal(
      stricts(await send({ tools: [strictTool('a', optional(24))], responseFormat: format })),
      0,
      "the format's optional property is the 25th",
    );
    const unions = {
      type: 'object',
      required: Array.from({ length: 17 }, (_, index) => `u${index}`),
      properties: Object.fromEntries(
        Array.from({ length: 17 }, (_, index) => [`u${index}`, { type: ['string', 'null'] }]),
      ),
    };
    assert.equal(stricts(await send({ tools: [strictTool('u', unions)] })), 0);
    // A property named `properties` is one required parameter, not a schema map to count.
    const named = {
      type: 'object',
      required: ['properties'],
      properties: { properties: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } },
    };
    assert.equal(
      stricts(await send({ tools: Array.from({ length: 7 }, (_, index) => strictTool(`n${index}`, named)) })),
      7,
    );
  });

  it('sends a json_schema format as output_config.format; JSON the grammar cannot enforce is asked for in the system prompt', async () => {
    upstream.handle((request, response) => {
      if ((request.body as { stream?: boolean }).stream) {
        void writeEvents(response, [
          messageStart,
          blockStart(0, { type: 'text', text: '' }),
          blockDelta(0, { type: 'text_delta', text: '{"city":"Paris"}' }),
          blockStop(0),
          messageDelta('end_turn', 5),
          messageStop,
        ]);
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_3',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [{ type: 'text', text: '{"city":"Paris"}' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 3, output_tokens: 5 },
        }),
      );
    });
    const schema = { type: 'object', properties: { city: { type: 'string', minLength: 1 } } };
    const jsonSchema = {
      type: 'json_schema' as const,
      name: 'place',
      schema,
      strict: true,
      description: 'Where it is',
    };
    const ask = {
      type: 'message' as const,
      role: 'user' as const,
      content: [{ type: 'text' as const, text: 'Where?' }],
    };
    const send = async (request: Partial<AdapterCall['request']>, stream = false) => {
      const full = { model: 'claude-sonnet-4-5', instructions: 'Be brief.', input: [ask], ...request };
      if (stream) await collect(adapter.stream(call({ request: full })));
      else await adapter.generate(call({ request: full }));
      return upstream.requests.at(-1)!.body as any;
    };

    const native = await send({ responseFormat: jsonSchema });
    // GA structured outputs: the schema reshaped, the format's description as the schema's; name and
    // strict have no counterpart; no beta header.
    assert.deepEqual(native.output_config, {
      format: {
        type: 'json_schema',
        schema: {
          type: 'object',
          description: 'Where it is',
          properties: { city: { type: 'string', description: '{minLength: 1}' } },
          additionalProperties: false,
        },
      },
    });
    assert.equal(native.system, 'Be brief.');
    assert.equal(upstream.requests.at(-1)!.headers['anthropic-beta'], undefined);
    assert.deepEqual(
      schema.properties.city,
      { type: 'string', minLength: 1 },
      'the canonical schema is kept',
    );
    // Streamed alike, and thinking stays on: the grammar holds the answer, not the thinking.
    const thinking = await send({ responseFormat: jsonSchema, reasoning: { effort: 'low' } }, true);
    assert.equal(thinking.stream, true);
    assert.deepEqual(thinking.output_config, native.output_config);
    assert.deepEqual(thinking.thinking, { type: 'enabled', budget_tokens: 4096 });

    // No JSON mode at Anthropic: json_object is an instruction after the client's.
    const object = await send({ responseFormat: { type: 'json_object' } });
    assert.equal(object.output_config, undefined);
    assert.match(object.system, /^Be brief\.\n\nRespond with one JSON object and nothing else/);
    // A model the catalogue does not list with structured outputs gets the schema as instructions.
    const unlisted = await send({
      responseFormat: jsonSchema,
      structuredOutputs: false,
      instructions: undefined,
    });
    assert.equal(unlisted.output_config, undefined);
    assert.equal(
      unlisted.system,
      `Respond with one JSON value and nothing else: no text before or after it, no Markdown code fence. It must conform to this JSON Schema, "place" (Where it is): ${JSON.stringify(schema)}`,
    );
    // So does a conversation the client prefilled for the assistant: Anthropic refuses a prefill
    // with a JSON output format. System blocks (a cache breakpoint) get the instruction as one more.
    const prefilled = await send({
      responseFormat: jsonSchema,
      instructions: undefined,
      instructionSections: [{ text: 'Be brief.', cacheControl: { type: 'ephemeral' } }],
      input: [ask, { type: 'message', role: 'assistant', content: [{ type: 'text', text: '{"city":' }] }],
    });
    assert.equal(prefilled.output_config, undefined);
    assert.equal(prefilled.system.length, 2);
    assert.deepEqual(prefilled.system[0], {
      type: 'text',
      text: 'Be brief.',
      cache_control: { type: 'ephemeral' },
    });
    assert.match(prefilled.system[1].text, /^Respond with one JSON value/);
    // A text format changes nothing.
    const text = await send({ responseFormat: { type: 'text' } });
    assert.equal(text.output_config, undefined);
    assert.equal(text.system, 'Be brief.');

    // A schema Anthropic's grammar cannot express (a value of any type: zod's z.any(), Pydantic's
    // Any), or one past its complexity limits, is asked for in the instructions: Anthropic would
    // refuse the format.
    const untyped = {
      type: 'json_schema' as const,
      name: 'any',
      schema: { type: 'object', properties: { x: {} } },
    };
    for (const stream of [false, true]) {
      const sent = await send({ responseFormat: untyped, instructions: undefined }, stream);
      assert.equal(sent.output_config, undefined);
      assert.match(sent.system, /^Respond with one JSON value .* "any": \{"type":"object"/);
    }
    const wide = {
      type: 'json_schema' as const,
      name: 'wide',
      schema: {
        type: 'object',
        properties: Object.fromEntries(
          Array.from({ length: 30 }, (_, index) => [`field${index}`, { type: 'string' }]),
        ),
      },
    };
    const tooWide = await send({ responseFormat: wide });
    assert.equal(
      tooWide.output_config,
      undefined,
      '30 optional parameters are past the 24 Anthropic compiles',
    );
    assert.match(tooWide.system, /"wide"/);
  });

  it('rejects function-call arguments that are not a JSON object as the caller’s error', async () => {
    const before = upstream.requests.length;
    const bad = call();
    bad.request.input = [
      { type: 'function-call', callId: 'toolu_x', name: 'weather', arguments: '{"city":' },
    ];
    await assert.rejects(
      adapter.generate(bad),
      (caught: unknown) => caught instanceof UnsupportedRequestError,
    );
    await assert.rejects(
      collect(adapter.stream(bad)),
      (caught: unknown) => caught instanceof UnsupportedRequestError,
    );
    assert.equal(upstream.requests.length, before, 'nothing was sent');
  });

  it('streams text, thinking, tool calls, usage and finish as typed parts', async () => {
    upstream.handle((_request, response) =>
      writeEvents(response, [
        messageStart,
        blockStart(0, { type: 'thinking', thinking: '' }),
        blockDelta(0, { type: 'thinking_delta', thinking: 'Two cities.' }),
        blockDelta(0, { type: 'signature_delta', signature: 'EqQBCgIYAhIM' }),
        blockStop(0),
        blockStart(1, { type: 'text', text: '' }),
        { type: 'ping' },
        blockDelta(1, { type: 'text_delta', text: 'Hel' }),
        blockDelta(1, { type: 'text_delta', text: 'lo' }),
        blockStop(1),
        blockStart(2, { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'weather', input: {} }),
        blockDelta(2, { type: 'input_json_delta', partial_json: '' }),
        blockDelta(2, { type: 'input_json_delta', partial_json: '{"city":' }),
        blockDelta(2, { type: 'input_json_delta', partial_json: '"Oslo"}' }),
        blockStop(2),
        blockStart(3, { type: 'tool_use', id: 'toolu_02', name: 'weather', input: {} }),
        blockDelta(3, { type: 'input_json_delta', partial_json: '{"city":"Rome"}' }),
        blockStop(3),
        // A tool without parameters: its input is the start's `{}`, with one empty delta.
        blockStart(4, { type: 'tool_use', id: 'toolu_03', name: 'now', input: {} }),
        blockDelta(4, { type: 'input_json_delta', partial_json: '' }),
        blockStop(4),
        messageDelta('tool_use', 89),
        messageStop,
      ]),
    );
    const parts = await collect(adapter.stream(call()));
    const sent = upstream.requests.at(-1)!.body as any;
    assert.equal(sent.stream, true);
    assert.deepEqual(parts, [
      startMetadata,
      { type: 'reasoning-delta', delta: 'Two cities.' },
      { type: 'reasoning-signature', signature: 'EqQBCgIYAhIM', format: 'anthropic-claude-v1' },
      { type: 'text-delta', delta: 'Hel' },
      { type: 'text-delta', delta: 'lo' },
      { type: 'tool-call-start', index: 0, callId: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '"Oslo"}' },
      { type: 'tool-call-end', index: 0 },
      { type: 'tool-call-start', index: 1, callId: 'toolu_02', name: 'weather' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{"city":"Rome"}' },
      { type: 'tool-call-end', index: 1 },
      { type: 'tool-call-start', index: 2, callId: 'toolu_03', name: 'now' },
      { type: 'tool-call-delta', index: 2, argumentsDelta: '{}' },
      { type: 'tool-call-end', index: 2 },
      {
        type: 'usage',
        usage: {
          inputTokens: 442,
          outputTokens: 89,
          cachedInputTokens: 400,
          cacheWriteTokens: 30,
          reasoningTokens: 0,
        },
      },
      { type: 'finish', reason: 'tool-calls', nativeReason: 'tool_use' },
    ]);
  });

  it('reports a 429 with its message and Retry-After as a retryable error', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '17' }).end(
        JSON.stringify({
          type: 'error',
          error: {
            type: 'rate_limit_error',
            message: 'Number of request tokens has exceeded your rate limit',
          },
        }),
      );
    });
    const error = await adapter.generate(call()).catch((caught: unknown) => caught);
    assert.ok(error instanceof UpstreamError);
    assert.equal(error.status, 429);
    assert.equal(error.retryable, true);
    assert.equal(error.retryAfterSeconds, 17);
    assert.equal(error.message, 'Number of request tokens has exceeded your rate limit');
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) => caught instanceof UpstreamError && caught.status === 429,
    );
  });

  it('throws an overloaded_error event that arrives before output, retryable as a 529', async () => {
    upstream.handle((_request, response) =>
      writeEvents(response, [messageStart, { type: 'ping' }, overloaded]),
    );
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) =>
        caught instanceof UpstreamError &&
        caught.status === 529 &&
        caught.retryable &&
        caught.message === 'Overloaded',
    );
  });

  it('yields an overloaded_error event that arrives after output as an error part', async () => {
    upstream.handle((_request, response) =>
      writeEvents(response, [
        messageStart,
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'partial' }),
        overloaded,
      ]),
    );
    const parts = await collect(adapter.stream(call()));
    // The counts message_start reported come before the error: the prompt is billed as counted.
    assert.deepEqual(
      parts.map((part) => part.type),
      ['response-metadata', 'text-delta', 'usage', 'error'],
    );
    const usage = parts[2];
    assert.ok(usage?.type === 'usage' && usage.usage.inputTokens > 0);
    const last = parts.at(-1)!;
    assert.ok(last.type === 'error' && last.error.status === 529 && last.error.retryable);
  });

  it('treats a 400 invalid_request_error as not retryable and an HTML 502 as retryable', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          type: 'error',
          error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
        }),
      );
    });
    const invalid = await adapter.generate(call()).catch((caught: unknown) => caught);
    assert.ok(invalid instanceof UpstreamError && invalid.status === 400 && invalid.retryable === false);
    assert.equal(invalid.message, 'max_tokens: Field required');

    upstream.handle((_request, response) => {
      response.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>');
    });
    const html = await adapter.generate(call()).catch((caught: unknown) => caught);
    assert.ok(html instanceof UpstreamError && html.status === 502 && html.retryable);
    assert.equal(html.message, 'Upstream returned HTTP 502');
    assert.match(html.raw ?? '', /Bad Gateway/);
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) => caught instanceof UpstreamError && caught.status === 502,
    );
  });

  it('treats a stream that ends without message_stop as broken: thrown before output, a part after', async () => {
    upstream.handle((_request, response) =>
      writeEvents(response, [
        messageStart,
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'partial' }),
        blockStop(0),
        messageDelta('end_turn', 3),
      ]),
    );
    const parts = await collect(adapter.stream(call()));
    assert.deepEqual(parts.slice(0, 2), [startMetadata, { type: 'text-delta', delta: 'partial' }]);
    const last = parts.at(-1)!;
    assert.equal(parts.length, 4);
    assert.equal(parts[2]?.type, 'usage');
    assert.ok(last.type === 'error' && last.error.retryable && last.error.kind === 'invalid-response');

    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(frame(messageStart));
      response.write('event: content_block_start\ndata: {"type":"content_blo');
      await new Promise((resolve) => setTimeout(resolve, 50));
      response.destroy();
    });
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) => caught instanceof UpstreamError && caught.retryable,
    );
  });

  it('throws a timeout when no output arrives before the first-token timeout', async () => {
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(frame(messageStart));
      response.write(frame(blockStart(0, { type: 'text', text: '' })));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      response.end();
    });
    const started = Date.now();
    await assert.rejects(
      collect(adapter.stream(call({ timeouts: { headersMs: 2000, firstTokenMs: 150, idleMs: 5000 } }))),
      (caught: unknown) => caught instanceof UpstreamError && caught.kind === 'timeout' && caught.retryable,
    );
    assert.ok(Date.now() - started < 900, 'the first-token timeout fired before the upstream finished');
  });
});
