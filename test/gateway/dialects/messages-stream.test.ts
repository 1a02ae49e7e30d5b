import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { partialParse } from '@anthropic-ai/sdk/_vendor/partial-json-parser/parser';
import type { GenerationInfo, GenerationSummary } from '../../../src/gateway/dialects/dialect.js';
import type { MessagesBody } from '../../../src/gateway/dialects/messages/messages-body-schema.js';
import { messagesDialect } from '../../../src/gateway/dialects/messages/messages-dialect.js';
import type { StreamPart } from '../../../src/spec/stream-part.js';
import type { Usage } from '../../../src/spec/usage.js';

const body: MessagesBody = {
  model: 'anthropic/claude-sonnet-4',
  max_tokens: 1024,
  stream: true,
  messages: [{ role: 'user', content: 'Hi' }],
};
const info: GenerationInfo = {
  id: 'gen-1730000000-a1b2c3',
  createdAt: 1730000000,
  model: 'anthropic/claude-sonnet-4',
  providerSlug: 'anthropic',
  providerName: 'Anthropic',
};
const usage = {
  inputTokens: 120,
  outputTokens: 30,
  cachedInputTokens: 100,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};
const summary = (metadata: Record<string, unknown> | null = null): GenerationSummary => ({
  usage,
  cost: { totalNanos: 45_000, inputNanos: 15_000, outputNanos: 30_000 },
  isByok: false,
  metadata,
});

/**
 * Splits SSE text into frames the way Anthropic clients read them: each frame is exactly an
 * `event:` line and a `data:` line, the data is JSON, and its `type` repeats the event name.
 */
function readFrames(text: string): any[] {
  assert.ok(text.endsWith('\n\n'), 'the stream ends with a complete frame');
  return text
    .slice(0, -2)
    .split('\n\n')
    .map((raw) => {
      const match = /^event: ([a-z_]+)\ndata: (.+)$/.exec(raw);
      assert.ok(match, `frame is one event line and one data line: ${JSON.stringify(raw)}`);
      const data = JSON.parse(match[2] as string);
      assert.equal(data.type, match[1], 'the data type equals the event name');
      return data;
    });
}

/** Runs parts through a fresh encoder and returns everything it wrote. */
function encode(
  parts: StreamPart[],
  ending: {
    summary?: GenerationSummary;
    failure?: Parameters<ReturnType<typeof messagesDialect.streamEncoder>['fail']>[0];
  } = {},
  request: MessagesBody = body,
  usageAtStart: Usage | null = null,
): string {
  const encoder = messagesDialect.streamEncoder(request, info);
  let text = encoder.start(usageAtStart);
  for (const part of parts) text += encoder.part(part);
  const final = ending.summary ?? summary();
  text += ending.failure ? encoder.fail(ending.failure, final) : encoder.end(final);
  return text;
}

/**
 * What the Anthropic SDK's MessageStream builds from the events (content by block index), tool
 * input read with its partial-JSON parser.
 */
function accumulate(events: any[]) {
  let message: any;
  for (const event of events) {
    if (event.type === 'message_start') message = structuredClone(event.message);
    else if (event.type === 'content_block_start') {
      assert.equal(event.index, message.content.length, 'blocks are numbered in order');
      message.content.push(structuredClone(event.content_block));
    } else if (event.type === 'content_block_delta') {
      const block = message.content[event.index];
      if (event.delta.type === 'text_delta') block.text += event.delta.text;
      else if (event.delta.type === 'thinking_delta') block.thinking += event.delta.thinking;
      else if (event.delta.type === 'input_json_delta') {
        block.json = (block.json ?? '') + event.delta.partial_json;
      }
    } else if (event.type === 'message_delta') {
      message.stop_reason = event.delta.stop_reason;
      message.stop_sequence = event.delta.stop_sequence;
      message.usage = { ...message.usage, ...event.usage };
    }
  }
  for (const block of message.content) {
    if (block.type === 'tool_use' && block.json !== undefined) {
      block.input = partialParse(block.json);
      delete block.json;
    }
  }
  return message;
}

const messageStart = {
  type: 'message_start',
  message: {
    id: 'msg_1730000000-a1b2c3',
    type: 'message',
    role: 'assistant',
    model: 'anthropic/claude-sonnet-4',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    provider: 'Anthropic',
  },
};
const finalUsage = {
  input_tokens: 20,
  output_tokens: 30,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 100,
  cost: 0.000045,
  is_byok: false,
};

describe('messages dialect: streaming', () => {
  it('streams a text answer as Anthropic does', () => {
    const events = readFrames(
      encode([
        { type: 'response-metadata', id: 'chatcmpl-1', model: 'claude' },
        { type: 'text-delta', delta: 'Hel' },
        { type: 'text-delta', delta: '' },
        { type: 'text-delta', delta: 'lo' },
        { type: 'usage', usage },
        { type: 'finish', reason: 'stop', nativeReason: 'end_turn' },
      ]),
    );
    assert.deepEqual(events, [
      messageStart,
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: finalUsage,
      },
      { type: 'message_stop' },
    ]);
  });

  it("opens with the counts the upstream reported as it began, in Anthropic's terms", () => {
    // Anthropic's message_start: 12 uncached prompt tokens, 400 read from the cache, 30 written.
    const atStart = {
      ...usage,
      inputTokens: 442,
      outputTokens: 1,
      cachedInputTokens: 400,
      cacheWriteTokens: 30,
    };
    const events = readFrames(encode([{ type: 'text-delta', delta: 'Hi' }], {}, body, atStart));
    assert.deepEqual(events[0].message.usage, {
      input_tokens: 12,
      output_tokens: 1,
      cache_creation_input_tokens: 30,
      cache_read_input_tokens: 400,
    });
    // message_delta still carries the whole usage, input included.
    assert.deepEqual(events.at(-2).usage, finalUsage);
  });

  it('streams a tool call as a tool_use block with input_json_delta', () => {
    const events = readFrames(
      encode([
        { type: 'text-delta', delta: 'Checking.' },
        { type: 'tool-call-start', index: 0, callId: 'toolu_01', name: 'get_weather' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '"Paris"}' },
        { type: 'tool-call-end', index: 0 },
        { type: 'finish', reason: 'tool-calls', nativeReason: 'tool_use' },
      ]),
    );
    assert.deepEqual(events.slice(1), [
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking.' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: {} },
      },
      {
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'input_json_delta', partial_json: '{"city":' },
      },
      {
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'input_json_delta', partial_json: '"Paris"}' },
      },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: finalUsage },
      { type: 'message_stop' },
    ]);
  });

  it('streams thinking then text as two blocks', () => {
    const events = readFrames(
      encode([
        { type: 'reasoning-delta', delta: 'The user ' },
        { type: 'reasoning-delta', delta: 'greets me.' },
        { type: 'text-delta', delta: 'Hello!' },
        { type: 'finish', reason: 'stop', nativeReason: 'stop' },
      ]),
    );
    assert.deepEqual(events.slice(1, -2), [
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'The user ' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'greets me.' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hello!' } },
      { type: 'content_block_stop', index: 1 },
    ]);
  });

  it('ends a failed stream with the open block closed and an error event, no message_stop', () => {
    const events = readFrames(
      encode([{ type: 'text-delta', delta: 'Partial answ' }], {
        failure: { status: 529, message: 'Provider returned error', errorType: 'provider_overloaded' },
      }),
    );
    assert.deepEqual(events.slice(1), [
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Partial answ' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'error',
        error: {
          type: 'overloaded_error',
          message: 'Provider returned error',
          error_type: 'provider_overloaded',
        },
      },
    ]);
  });

  it('carries switchyard_metadata on message_stop (and on error events) when asked for', () => {
    const metadata = { attempt: 1, strategy: 'direct' };
    const events = readFrames(encode([{ type: 'text-delta', delta: 'x' }], { summary: summary(metadata) }));
    assert.deepEqual(events.at(-1), { type: 'message_stop', switchyard_metadata: metadata });
    const failed = readFrames(
      encode([], {
        summary: summary(metadata),
        failure: { status: 500, message: 'Internal Server Error', errorType: 'server' },
      }),
    );
    assert.deepEqual(failed.at(-1), {
      type: 'error',
      error: { type: 'api_error', message: 'Internal Server Error', error_type: 'server' },
      switchyard_metadata: metadata,
    });
  });

  it('says tool_use when tool calls were streamed but the upstream said stop, and end_turn with no finish', () => {
    const withTools = readFrames(
      encode([
        { type: 'tool-call-start', index: 0, callId: 'c1', name: 'x' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
        { type: 'tool-call-end', index: 0 },
        { type: 'finish', reason: 'stop', nativeReason: 'STOP' },
      ]),
    );
    assert.equal(withTools.at(-2).delta.stop_reason, 'tool_use');
    const noFinish = readFrames(encode([{ type: 'text-delta', delta: 'x' }]));
    assert.equal(noFinish.at(-2).delta.stop_reason, 'end_turn');
    const cut = readFrames(
      encode([
        { type: 'text-delta', delta: 'x' },
        { type: 'finish', reason: 'length', nativeReason: 'length' },
      ]),
    );
    assert.equal(cut.at(-2).delta.stop_reason, 'max_tokens');
  });

  it('writes interleaved tool calls as complete blocks in order', () => {
    // An OpenAI-compatible upstream starts call 1 before call 0 ends and ends both at the finish.
    const events = readFrames(
      encode([
        { type: 'tool-call-start', index: 0, callId: 'call_a', name: 'get_weather' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
        { type: 'tool-call-start', index: 1, callId: 'call_b', name: 'get_time' },
        { type: 'tool-call-delta', index: 1, argumentsDelta: '{"tz":"CET"}' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '"Paris"}' },
        { type: 'text-delta', delta: 'Done.' },
        { type: 'tool-call-end', index: 0 },
        { type: 'tool-call-end', index: 1 },
        { type: 'finish', reason: 'tool-calls', nativeReason: 'tool_calls' },
      ]),
    );
    const opened = events.filter((event) => event.type === 'content_block_start').map((event) => event.index);
    const stopped = events.filter((event) => event.type === 'content_block_stop').map((event) => event.index);
    assert.deepEqual(opened, [0, 1, 2]);
    assert.deepEqual(stopped, [0, 1, 2]);
    // Every delta lands in the block that is open at that moment.
    let open = -1;
    for (const event of events) {
      if (event.type === 'content_block_start') open = event.index;
      if (event.type === 'content_block_delta') assert.equal(event.index, open);
      if (event.type === 'content_block_stop') open = -1;
    }
    assert.deepEqual(accumulate(events).content, [
      { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_b', name: 'get_time', input: { tz: 'CET' } },
      { type: 'text', text: 'Done.' },
    ]);
  });

  it('accumulates to the same message the JSON result renders', () => {
    const parts: StreamPart[] = [
      { type: 'reasoning-delta', delta: 'Weather question.' },
      { type: 'text-delta', delta: 'Let me ' },
      { type: 'text-delta', delta: 'check.' },
      { type: 'tool-call-start', index: 0, callId: 'toolu_7', name: 'get_weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":"Oslo"}' },
      { type: 'tool-call-end', index: 0 },
      { type: 'usage', usage },
      { type: 'finish', reason: 'tool-calls', nativeReason: 'tool_use' },
    ];
    const streamed = accumulate(readFrames(encode(parts)));
    const rendered = messagesDialect.renderResult(
      body,
      info,
      {
        id: null,
        model: null,
        text: 'Let me check.',
        reasoning: 'Weather question.',
        toolCalls: [{ callId: 'toolu_7', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
        usage,
        finishReason: 'tool-calls',
        nativeFinishReason: 'tool_use',
      },
      summary(),
    ) as any;
    assert.deepEqual(streamed, rendered);
  });

  it("streams a call's arguments only while they are the beginning of a JSON object", () => {
    const events = readFrames(
      encode([
        { type: 'tool-call-start', index: 0, callId: 'toolu_1', name: 'grep' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: ' \n' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '{"path": "src", ' },
        // A regular expression's backslash the model did not escape: JSON has no \d.
        { type: 'tool-call-delta', index: 0, argumentsDelta: '"pattern": "\\d+", ' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '"limit": 3}' },
        { type: 'tool-call-end', index: 0 },
        { type: 'finish', reason: 'tool-calls', nativeReason: 'tool_calls' },
      ]),
    );
    const fragments = events
      .filter((event) => event.type === 'content_block_delta')
      .map((event) => event.delta.partial_json);
    assert.deepEqual(fragments, ['{"path": "src", ', '"pattern": "\\']);
  });

  it('a call cut by max_tokens or malformed accumulates, read by the SDK, to the JSON result', () => {
    const cases = [
      { args: ['{"city": "Paris", ', '"unit": "cel'], input: { city: 'Paris' } },
      { args: ['{"path": "src", "pattern": "\\d+', '", "limit": 3'], input: { path: 'src' } },
      { args: ['{"city":"Oslo"}', '{"city":"Oslo"}'], input: { city: 'Oslo' } },
      { args: ['{"ci'], input: {} },
    ];
    for (const { args, input } of cases) {
      const streamed = accumulate(
        readFrames(
          encode([
            { type: 'tool-call-start', index: 0, callId: 'toolu_9', name: 'tool' },
            ...args.map(
              (argumentsDelta): StreamPart => ({ type: 'tool-call-delta', index: 0, argumentsDelta }),
            ),
            { type: 'tool-call-end', index: 0 },
            { type: 'finish', reason: 'length', nativeReason: 'length' },
          ]),
        ),
      );
      const rendered = messagesDialect.renderResult(
        body,
        info,
        {
          id: null,
          model: null,
          text: '',
          reasoning: '',
          toolCalls: [{ callId: 'toolu_9', name: 'tool', arguments: args.join('') }],
          usage,
          finishReason: 'length',
          nativeFinishReason: 'length',
        },
        summary(),
      ) as any;
      assert.deepEqual(streamed, rendered, args.join(''));
      assert.deepEqual(rendered.content[0].input, input);
      assert.equal(rendered.stop_reason, 'max_tokens');
    }
  });
});
