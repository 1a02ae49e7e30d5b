// Signed reasoning through the surfaces OpenAI-style clients speak: the `openai` SDK, unmodified,
// against a real gateway whose Anthropic and Gemini upstreams refuse a tool loop's second turn as
// the real ones do when the first turn's signed reasoning does not come back. Chat clients carry
// it as `reasoning_details`, Responses clients as reasoning items in `input`; /messages clients
// as thinking blocks (test/sdk/anthropic-messages.test.ts, and Gemini's below).
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { streamThinkingToolTurn } from '../helpers/anthropic-thinking-turn.js';
import { type RecordedRequest, startFakeUpstream } from '../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

const SIGNATURE = 'EqQBCgIYAhIMsignature-of-turn-one';
const REDACTED = 'EmwKAhgBEgy3va3p-redacted';
const GEMINI_SIGNATURE = 'CiQB0e2Kb0Xq1xPzgemini-signature';

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

type AnthropicBody = {
  thinking?: unknown;
  stream?: boolean;
  messages: Array<{ role: string; content: Array<Record<string, unknown>> }>;
};

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/**
 * Anthropic with thinking on: the first turn thinks (signed, then a redacted block) and calls the
 * tool; the turn with the tool's result is refused unless the assistant turn starts with those
 * blocks unchanged, as Anthropic refuses it. Without `thinking` the second turn is accepted.
 */
function anthropicUpstream(request: RecordedRequest, response: ServerResponse): void {
  const body = request.body as AnthropicBody;
  const last = body.messages.at(-1);
  if (last?.content.some?.((block) => block.type === 'tool_result')) {
    const assistant = body.messages.at(-2);
    const [first, second] = assistant?.content ?? [];
    const intact =
      first?.type === 'thinking' &&
      first.signature === SIGNATURE &&
      first.thinking === 'Paris: call the tool.' &&
      second?.type === 'redacted_thinking' &&
      second.data === REDACTED;
    if (body.thinking !== undefined && !intact) {
      json(response, 400, {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.',
        },
      });
      return;
    }
    json(response, 200, {
      id: 'msg_turn_2',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [{ type: 'text', text: body.thinking === undefined ? 'Sunny (no thinking).' : 'Sunny.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 80, output_tokens: 8 },
    });
    return;
  }
  const content = [
    { type: 'thinking', thinking: 'Paris: call the tool.', signature: SIGNATURE },
    { type: 'redacted_thinking', data: REDACTED },
    { type: 'tool_use', id: 'toolu_paris', name: 'get_weather', input: { city: 'Paris' } },
  ];
  if (!body.stream) {
    json(response, 200, {
      id: 'msg_turn_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content,
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 40, output_tokens: 30 },
    });
    return;
  }
  streamThinkingToolTurn(response, { signature: SIGNATURE, redacted: REDACTED });
}

type GeminiBody = { contents: Array<{ role: string; parts: Array<Record<string, unknown>> }> };

/**
 * Gemini 3: the first turn thinks and calls the tool, the call's part carrying a thought signature;
 * a turn whose history holds that call without its signature is refused with Google's 400.
 */
function geminiUpstream(request: RecordedRequest, response: ServerResponse): void {
  const body = request.body as GeminiBody;
  const streamed = request.url.includes('streamGenerateContent');
  const modelTurn = body.contents.find((content) => content.role === 'model');
  let parts: Array<Record<string, unknown>>;
  if (modelTurn) {
    const call = modelTurn.parts.find((part) => 'functionCall' in part);
    if (call && call.thoughtSignature !== GEMINI_SIGNATURE) {
      json(response, 400, {
        error: {
          code: 400,
          message: 'Function call `get_weather` in the `1.` content block is missing a `thought_signature`.',
          status: 'INVALID_ARGUMENT',
        },
      });
      return;
    }
    parts = [{ text: 'Sunny in Paris.' }];
  } else {
    parts = [
      { text: 'The user wants the weather.', thought: true },
      { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: GEMINI_SIGNATURE },
    ];
  }
  const reply = {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 10, thoughtsTokenCount: 12 },
    modelVersion: 'gemini-3-flash-preview',
    responseId: 'resp-gemini',
  };
  if (!streamed) {
    json(response, 200, reply);
    return;
  }
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  response.end(`data: ${JSON.stringify(reply)}\r\n\r\n`);
}

const OPENAI_ENCRYPTED = 'gAAAAABpEncryptedReasoningOfTurnOne';

type OpenAiResponsesBody = {
  stream?: boolean;
  include?: string[];
  input: Array<Record<string, unknown>>;
};

/**
 * OpenAI's Responses API with `store: false`: the first turn reasons (encrypted, as `include` asks)
 * and calls the tool. OpenAI accepts a second turn without the reasoning, and the model then
 * reasons afresh; this fake says which it got, so that a test sees whether it came back whole and
 * in its place, right before the call.
 */
function openAiResponsesUpstream(request: RecordedRequest, response: ServerResponse): void {
  const body = request.body as OpenAiResponsesBody;
  const callAt = body.input.findIndex((item) => item.type === 'function_call');
  const output: Array<Record<string, unknown>> = [];
  if (callAt >= 0) {
    const kept =
      body.input[callAt - 1]?.type === 'reasoning' &&
      body.input[callAt - 1]?.encrypted_content === OPENAI_ENCRYPTED &&
      !('id' in (body.input[callAt - 1] ?? {}));
    output.push({
      id: 'msg_2',
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: kept ? 'Sunny.' : 'Sunny (reasoning lost).', annotations: [] }],
    });
  } else {
    const encrypted = body.include?.includes('reasoning.encrypted_content');
    output.push(
      {
        id: 'rs_1',
        type: 'reasoning',
        summary: [],
        ...(encrypted ? { encrypted_content: OPENAI_ENCRYPTED } : {}),
      },
      {
        id: 'fc_1',
        type: 'function_call',
        status: 'completed',
        call_id: 'call_paris',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
      },
    );
  }
  const done = {
    id: 'resp_1',
    object: 'response',
    status: 'completed',
    model: 'gpt-5-mini-2025-08-07',
    output,
    usage: { input_tokens: 30, output_tokens: 20, output_tokens_details: { reasoning_tokens: 12 } },
  };
  if (!body.stream) {
    json(response, 200, done);
    return;
  }
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  const events: Array<Record<string, unknown>> = [
    { type: 'response.created', response: { ...done, status: 'in_progress', output: [] } },
  ];
  output.forEach((item, index) => {
    events.push({ type: 'response.output_item.added', output_index: index, item });
    if (item.type === 'message')
      events.push({
        type: 'response.output_text.delta',
        item_id: item.id,
        output_index: index,
        content_index: 0,
        delta: (item.content as Array<{ text: string }>)[0]!.text,
      });
    events.push({ type: 'response.output_item.done', output_index: index, item });
  });
  events.push({ type: 'response.completed', response: done });
  response.end(
    events
      .map(
        (event, index) =>
          `event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number: index })}\n\n`,
      )
      .join(''),
  );
}

describe('signed reasoning round trips through chat completions and responses (openai SDK)', () => {
  let gateway: TestApp;
  let anthropic: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gemini: Awaited<ReturnType<typeof startFakeUpstream>>;
  let openai: Awaited<ReturnType<typeof startFakeUpstream>>;
  let client: OpenAI;
  let key: string;

  before(async () => {
    [anthropic, gemini, openai] = await Promise.all([
      startFakeUpstream(),
      startFakeUpstream(),
      startFakeUpstream(),
    ]);
    anthropic.handle(anthropicUpstream);
    gemini.handle(geminiUpstream);
    openai.handle(openAiResponsesUpstream);
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
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
    assert.equal(created.status, 200, created.text);
    key = created.body.key;
    client = new OpenAI({ baseURL: `${gateway.url}/api/v1`, apiKey: key, maxRetries: 0 });
  });
  after(async () => {
    await gateway.close();
    await Promise.all([anthropic.close(), gemini.close(), openai.close()]);
  });

  const claude = {
    model: 'anthropic/claude-sonnet-4.5',
    max_tokens: 4096,
    reasoning: { max_tokens: 2048 },
    tools: [weather],
  };
  const question = { role: 'user' as const, content: 'Weather in Paris?' };
  const toolResult = (id: string) => ({ role: 'tool' as const, tool_call_id: id, content: 'sunny' });

  it('chat, Anthropic, streamed: reasoning_details from the deltas, sent back, are accepted', async () => {
    const stream = await client.chat.completions.create({
      ...claude,
      messages: [question],
      stream: true,
    } as OpenAI.ChatCompletionCreateParamsStreaming);
    const details: unknown[] = [];
    let reasoning = '';
    let call: { id: string; name: string; arguments: string } | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as
        | (OpenAI.ChatCompletionChunk.Choice.Delta & { reasoning?: string; reasoning_details?: unknown[] })
        | undefined;
      if (!delta) continue;
      reasoning += delta.reasoning ?? '';
      details.push(...(delta.reasoning_details ?? []));
      const toolCall = delta.tool_calls?.[0];
      if (toolCall?.id) call = { id: toolCall.id, name: toolCall.function?.name ?? '', arguments: '' };
      if (call && toolCall?.function?.arguments) call.arguments += toolCall.function.arguments;
    }
    assert.equal(reasoning, 'Paris: call the tool.');
    assert.deepEqual(details, [
      {
        type: 'reasoning.text',
        text: 'Paris: call the tool.',
        signature: SIGNATURE,
        format: 'anthropic-claude-v1',
        index: 0,
      },
      { type: 'reasoning.encrypted', data: REDACTED, format: 'anthropic-claude-v1', index: 1 },
    ]);
    assert.deepEqual(call, { id: 'toolu_paris', name: 'get_weather', arguments: '{"city":"Paris"}' });
    const second = await client.chat.completions.create({
      ...claude,
      messages: [
        question,
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } },
          ],
          reasoning_details: details,
        } as OpenAI.ChatCompletionAssistantMessageParam,
        toolResult(call.id),
      ],
    });
    assert.equal(second.choices[0]?.message.content, 'Sunny.');
    const sent = anthropic.requests.at(-1)!.body as AnthropicBody;
    assert.ok(sent.thinking, 'thinking stayed on');
  });

  it('chat, Anthropic, not streamed: the message sent back as received is accepted', async () => {
    const first = await client.chat.completions.create({ ...claude, messages: [question] });
    const message = first.choices[0]!.message as OpenAI.ChatCompletionMessage & {
      reasoning_details?: unknown[];
    };
    assert.equal(message.reasoning_details?.length, 2);
    const second = await client.chat.completions.create({
      ...claude,
      messages: [question, message as OpenAI.ChatCompletionAssistantMessageParam, toolResult('toolu_paris')],
    });
    assert.equal(second.choices[0]?.message.content, 'Sunny.');
  });

  it('chat, Anthropic: a client that drops the reasoning gets its answer without thinking, not a 400', async () => {
    const second = await client.chat.completions.create({
      ...claude,
      messages: [
        question,
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'toolu_paris',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        toolResult('toolu_paris'),
      ],
    });
    assert.equal(second.choices[0]?.message.content, 'Sunny (no thinking).');
    assert.equal((anthropic.requests.at(-1)!.body as AnthropicBody).thinking, undefined);
  });

  it('chat, Gemini 3, both ways: the thought signature travels on its tool call', async () => {
    const gemini3 = { model: 'google/gemini-3-flash-preview', tools: [weather] };
    for (const stream of [false, true]) {
      let call: { id: string; arguments: string };
      let details: Array<Record<string, unknown>> = [];
      if (stream) {
        const chunks = await client.chat.completions.create({
          ...gemini3,
          messages: [question],
          stream: true,
        });
        call = { id: '', arguments: '' };
        for await (const chunk of chunks) {
          const delta = chunk.choices[0]?.delta as {
            reasoning_details?: Array<Record<string, unknown>>;
          } & OpenAI.ChatCompletionChunk.Choice.Delta;
          details.push(...(delta?.reasoning_details ?? []));
          const toolCall = delta?.tool_calls?.[0];
          if (toolCall?.id) call.id = toolCall.id;
          call.arguments += toolCall?.function?.arguments ?? '';
        }
      } else {
        const first = await client.chat.completions.create({ ...gemini3, messages: [question] });
        const message = first.choices[0]!.message as OpenAI.ChatCompletionMessage & {
          reasoning?: string;
          reasoning_details?: Array<Record<string, unknown>>;
        };
        assert.equal(message.reasoning, 'The user wants the weather.');
        const toolCall = message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
        call = { id: toolCall.id, arguments: toolCall.function.arguments };
        details = message.reasoning_details ?? [];
      }
      assert.deepEqual(details, [
        {
          type: 'reasoning.encrypted',
          data: GEMINI_SIGNATURE,
          id: call.id,
          format: 'google-gemini-v1',
          index: 0,
        },
      ]);
      const second = await client.chat.completions.create({
        ...gemini3,
        messages: [
          question,
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: call.id, type: 'function', function: { name: 'get_weather', arguments: call.arguments } },
            ],
            reasoning_details: details,
          } as OpenAI.ChatCompletionAssistantMessageParam,
          toolResult(call.id),
        ],
      });
      assert.equal(second.choices[0]?.message.content, 'Sunny in Paris.', `stream: ${stream}`);
    }
  });

  it('chat: reasoning_details entries are checked, and an unknown format is nobody’s', async () => {
    const bad = await gateway.request('POST', '/api/v1/chat/completions', {
      headers: { authorization: `Bearer ${key}` },
      body: {
        model: 'google/gemini-3-flash-preview',
        messages: [
          question,
          { role: 'assistant', content: 'x', reasoning_details: [{ type: 'reasoning.encrypted' }] },
          { role: 'user', content: 'and?' },
        ],
      },
    });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.body.error.message, /body\.messages\.1\.reasoning_details\.0\.data/);
    const noType = await gateway.request('POST', '/api/v1/chat/completions', {
      headers: { authorization: `Bearer ${key}` },
      body: {
        model: 'google/gemini-3-flash-preview',
        messages: [question, { role: 'assistant', content: 'x', reasoning_details: [{ text: 'x' }] }],
      },
    });
    assert.equal(noType.status, 400, noType.text);
    assert.match(noType.body.error.message, /reasoning_details\.0\.type/);
    // An entry of a type the gateway does not know is passed over: clients echo the list verbatim.
    const otherType = await gateway.request('POST', '/api/v1/chat/completions', {
      headers: { authorization: `Bearer ${key}` },
      body: {
        model: 'google/gemini-3-flash-preview',
        messages: [
          question,
          { role: 'assistant', content: 'x', reasoning_details: [{ type: 'reasoning.future', blob: 1 }] },
          { role: 'user', content: 'and?' },
        ],
      },
    });
    assert.equal(otherType.status, 200, otherType.text);
    // A Gemini signature labelled with a format the gateway does not know never reaches Gemini.
    const before = gemini.requests.length;
    const unknown = await gateway.request('POST', '/api/v1/chat/completions', {
      headers: { authorization: `Bearer ${key}` },
      body: {
        model: 'google/gemini-3-flash-preview',
        messages: [
          question,
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
            reasoning_details: [
              { type: 'reasoning.encrypted', data: GEMINI_SIGNATURE, id: 'c1', format: 'gemini-v9' },
            ],
          },
          toolResult('c1'),
        ],
      },
    });
    // Gemini refuses the placeholder here (this fake checks for the real signature): its 400 passes on.
    assert.equal(unknown.status, 400, unknown.text);
    assert.equal(gemini.requests.length, before + 1);
    const sent = gemini.requests.at(-1)!.body as GeminiBody;
    assert.equal(sent.contents[1]?.parts[0]?.thoughtSignature, 'skip_thought_signature_validator');
  });

  it('responses, Anthropic, streamed: the output sent back as input is accepted', async () => {
    const stream = await client.responses.create({
      model: 'anthropic/claude-sonnet-4.5',
      input: 'Weather in Paris?',
      reasoning: { max_tokens: 2048 } as OpenAI.Reasoning,
      tools: [
        { type: 'function', name: 'get_weather', parameters: weather.function.parameters, strict: false },
      ],
      stream: true,
    });
    let output: OpenAI.Responses.ResponseOutputItem[] = [];
    const done: OpenAI.Responses.ResponseOutputItem[] = [];
    for await (const event of stream) {
      if (event.type === 'response.output_item.done') done.push(event.item);
      if (event.type === 'response.completed') output = event.response.output;
    }
    assert.deepEqual(done, output, 'each item as done is the item as completed');
    assert.deepEqual(
      output.map((item) => item.type),
      ['reasoning', 'reasoning', 'function_call'],
    );
    assert.deepEqual(
      output.slice(0, 2).map((item) => {
        const { id: _id, ...rest } = item as unknown as Record<string, unknown>;
        return rest;
      }),
      [
        {
          type: 'reasoning',
          status: 'completed',
          summary: [],
          content: [{ type: 'reasoning_text', text: 'Paris: call the tool.' }],
          signature: SIGNATURE,
          format: 'anthropic-claude-v1',
        },
        {
          type: 'reasoning',
          status: 'completed',
          summary: [],
          content: [{ type: 'reasoning_text', text: '' }],
          // Labelled with its format: typed clients drop `format` and keep `encrypted_content`.
          encrypted_content: `anthropic-claude-v1:${REDACTED}`,
          format: 'anthropic-claude-v1',
        },
      ],
    );
    const call = output[2] as OpenAI.Responses.ResponseFunctionToolCall;
    const second = await client.responses.create({
      model: 'anthropic/claude-sonnet-4.5',
      reasoning: { max_tokens: 2048 } as OpenAI.Reasoning,
      tools: [
        { type: 'function', name: 'get_weather', parameters: weather.function.parameters, strict: false },
      ],
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        ...(output as OpenAI.Responses.ResponseInputItem[]),
        { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
      ],
    });
    assert.equal(second.output_text, 'Sunny.');
  });

  it('responses, Gemini 3, not streamed: the signature comes back as a reasoning item before its call', async () => {
    const params = {
      model: 'google/gemini-3-flash-preview',
      tools: [
        {
          type: 'function' as const,
          name: 'get_weather',
          parameters: weather.function.parameters,
          strict: false,
        },
      ],
    };
    const first = await client.responses.create({ ...params, input: 'Weather in Paris?' });
    assert.deepEqual(
      first.output.map((item) => item.type),
      ['reasoning', 'reasoning', 'function_call'],
    );
    const sealed = first.output[1] as unknown as Record<string, unknown>;
    assert.equal(sealed.encrypted_content, `google-gemini-v1:${GEMINI_SIGNATURE}`);
    assert.equal(sealed.format, 'google-gemini-v1');
    const call = first.output[2] as OpenAI.Responses.ResponseFunctionToolCall;
    const second = await client.responses.create({
      ...params,
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
      ],
    });
    assert.equal(second.output_text, 'Sunny in Paris.');
  });

  it('messages, Gemini 3: the signature rides a thinking block, labelled, and comes back to Gemini', async () => {
    const anthropicClient = new Anthropic({ baseURL: `${gateway.url}/api`, apiKey: key, maxRetries: 0 });
    const params = {
      model: 'google/gemini-3-flash-preview',
      max_tokens: 1024,
      tools: [
        { name: 'get_weather', input_schema: weather.function.parameters as Anthropic.Tool.InputSchema },
      ],
    };
    for (const stream of [false, true]) {
      const first = stream
        ? await anthropicClient.messages
            .stream({ ...params, messages: [{ role: 'user', content: 'Weather in Paris?' }] })
            .finalMessage()
        : await anthropicClient.messages.create({
            ...params,
            messages: [{ role: 'user', content: 'Weather in Paris?' }],
          });
      const signed = first.content.find(
        (block): block is Anthropic.ThinkingBlock => block.type === 'thinking' && block.signature !== '',
      );
      assert.equal(signed?.signature, `google-gemini-v1:${GEMINI_SIGNATURE}`, `stream: ${stream}`);
      const call = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
      const second = await anthropicClient.messages.create({
        ...params,
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] },
        ],
      });
      assert.equal((second.content[0] as Anthropic.TextBlock).text, 'Sunny in Paris.', `stream: ${stream}`);
    }
  });
  const gpt5 = { model: 'openai/gpt-5-mini', tools: [weather] };

  it('chat, OpenAI Responses upstream, both ways: the encrypted reasoning goes back before its call', async () => {
    for (const stream of [false, true]) {
      let call = { id: '', arguments: '' };
      let details: Array<Record<string, unknown>> = [];
      if (stream) {
        const chunks = await client.chat.completions.create({ ...gpt5, messages: [question], stream: true });
        for await (const chunk of chunks) {
          const delta = chunk.choices[0]?.delta as {
            reasoning_details?: Array<Record<string, unknown>>;
          } & OpenAI.ChatCompletionChunk.Choice.Delta;
          details.push(...(delta?.reasoning_details ?? []));
          const toolCall = delta?.tool_calls?.[0];
          if (toolCall?.id) call.id = toolCall.id;
          call.arguments += toolCall?.function?.arguments ?? '';
        }
      } else {
        const first = await client.chat.completions.create({ ...gpt5, messages: [question] });
        const message = first.choices[0]!.message as OpenAI.ChatCompletionMessage & {
          reasoning_details?: Array<Record<string, unknown>>;
        };
        const toolCall = message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
        call = { id: toolCall.id, arguments: toolCall.function.arguments };
        details = message.reasoning_details ?? [];
      }
      assert.deepEqual(details, [
        {
          type: 'reasoning.encrypted',
          data: OPENAI_ENCRYPTED,
          ...(stream ? {} : { id: 'call_paris' }),
          format: 'openai-responses-v1',
          index: 0,
        },
      ]);
      const second = await client.chat.completions.create({
        ...gpt5,
        messages: [
          question,
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: call.id, type: 'function', function: { name: 'get_weather', arguments: call.arguments } },
            ],
            reasoning_details: details,
          } as OpenAI.ChatCompletionAssistantMessageParam,
          toolResult(call.id),
        ],
      });
      assert.equal(second.choices[0]?.message.content, 'Sunny.', `stream: ${stream}`);
    }
  });

  it('responses, OpenAI Responses upstream: the output sent back as input keeps the reasoning', async () => {
    const tools = [
      {
        type: 'function' as const,
        name: 'get_weather',
        parameters: weather.function.parameters,
        strict: false,
      },
    ];
    const first = await client.responses.create({ model: gpt5.model, input: 'Weather in Paris?', tools });
    const reasoning = first.output.find((item) => item.type === 'reasoning');
    assert.equal(reasoning?.encrypted_content, `openai-responses-v1:${OPENAI_ENCRYPTED}`);
    const call = first.output.find((item) => item.type === 'function_call')!;
    const second = await client.responses.create({
      model: gpt5.model,
      tools,
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
      ],
    });
    assert.equal(second.output_text, 'Sunny.');
  });

  it('messages, OpenAI Responses upstream, streamed: a labelled redacted_thinking block carries it back', async () => {
    const anthropicClient = new Anthropic({ baseURL: `${gateway.url}/api`, apiKey: key, maxRetries: 0 });
    const params = {
      model: gpt5.model,
      max_tokens: 1024,
      tools: [
        { name: 'get_weather', input_schema: weather.function.parameters as Anthropic.Tool.InputSchema },
      ],
    };
    const first = await anthropicClient.messages
      .stream({ ...params, messages: [{ role: 'user', content: 'Weather in Paris?' }] })
      .finalMessage();
    const redacted = first.content.find(
      (block): block is Anthropic.RedactedThinkingBlock => block.type === 'redacted_thinking',
    );
    assert.equal(redacted?.data, `openai-responses-v1:${OPENAI_ENCRYPTED}`);
    const call = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    const second = await anthropicClient.messages.create({
      ...params,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] },
      ],
    });
    assert.equal((second.content[0] as Anthropic.TextBlock).text, 'Sunny.');
  });
});
