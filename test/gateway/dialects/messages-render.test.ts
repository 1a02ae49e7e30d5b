import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type {
  GenerationFailure,
  GenerationInfo,
  GenerationSummary,
} from '../../../src/gateway/dialects/dialect.js';
import type { MessagesBody } from '../../../src/gateway/dialects/messages/messages-body-schema.js';
import { messagesDialect } from '../../../src/gateway/dialects/messages/messages-dialect.js';
import type { GenerationResult } from '../../../src/spec/stream-part.js';

const body: MessagesBody = {
  model: 'anthropic/claude-sonnet-4',
  max_tokens: 1024,
  messages: [{ role: 'user', content: 'Hi' }],
};
const info: GenerationInfo = {
  id: 'gen-1730000000-a1b2c3',
  createdAt: 1730000000,
  model: 'anthropic/claude-sonnet-4',
  providerSlug: 'anthropic',
  providerName: 'Anthropic',
};
const summary = (overrides: Partial<GenerationSummary> = {}): GenerationSummary => ({
  usage: {
    inputTokens: 1200,
    outputTokens: 50,
    cachedInputTokens: 1000,
    cacheWriteTokens: 150,
    reasoningTokens: 0,
  },
  cost: { totalNanos: 1_234_500, inputNanos: 734_500, outputNanos: 500_000 },
  isByok: false,
  metadata: null,
  ...overrides,
});
const result = (overrides: Partial<GenerationResult>): GenerationResult => ({
  id: 'chatcmpl-1',
  model: 'claude-sonnet-4-20250514',
  text: '',
  reasoning: '',
  toolCalls: [],
  usage: summary().usage,
  finishReason: 'stop',
  nativeFinishReason: 'end_turn',
  ...overrides,
});
const render = (
  generation: Partial<GenerationResult>,
  extra: Partial<GenerationSummary> = {},
  request = body,
) => messagesDialect.renderResult(request, info, result(generation), summary(extra)) as any;

describe('messages dialect: rendering a result', () => {
  it('renders a text answer as an Anthropic message with usage excluding cached input', () => {
    assert.deepEqual(render({ text: 'Hello there.' }), {
      id: 'msg_1730000000-a1b2c3',
      type: 'message',
      role: 'assistant',
      model: 'anthropic/claude-sonnet-4',
      content: [{ type: 'text', text: 'Hello there.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: 50,
        output_tokens: 50,
        cache_creation_input_tokens: 150,
        cache_read_input_tokens: 1000,
        cost: 0.0012345,
        is_byok: false,
      },
      provider: 'Anthropic',
    });
  });

  it('renders tool calls as tool_use blocks with parsed input, stopping with tool_use', () => {
    const rendered = render({
      text: 'Let me check.',
      toolCalls: [
        { callId: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { callId: 'call_2', name: 'get_time', arguments: '{"tz":' },
        { callId: 'call_3', name: 'noop', arguments: '' },
      ],
      finishReason: 'tool-calls',
      nativeFinishReason: 'tool_calls',
    });
    assert.deepEqual(rendered.content, [
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} },
      { type: 'tool_use', id: 'call_3', name: 'noop', input: {} },
    ]);
    assert.equal(rendered.stop_reason, 'tool_use');
    // Some upstreams (Gemini) report a plain stop with tool calls; agent loops need tool_use.
    const plainStop = render({
      toolCalls: [{ callId: 'c', name: 'x', arguments: '{}' }],
      finishReason: 'stop',
      nativeFinishReason: 'STOP',
    });
    assert.equal(plainStop.stop_reason, 'tool_use');
  });

  it("keeps the provider's signed reasoning blocks, each before the tool call it preceded", () => {
    const rendered = render({
      reasoning: 'Paris first.Now Rome.',
      reasoningBlocks: [
        { text: 'Paris first.', signature: 'sig-1' },
        { text: '', redactedData: 'opaque' },
        { text: 'Now Rome.', signature: 'sig-2', beforeToolCall: 1 },
        { text: 'Done.', signature: 'sig-3', beforeToolCall: 2 },
      ],
      toolCalls: [
        { callId: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { callId: 'call_2', name: 'get_weather', arguments: '{"city":"Rome"}' },
      ],
      finishReason: 'tool-calls',
      nativeFinishReason: 'tool_use',
    });
    assert.deepEqual(rendered.content, [
      { type: 'thinking', thinking: 'Paris first.', signature: 'sig-1' },
      { type: 'redacted_thinking', data: 'opaque' },
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'thinking', thinking: 'Now Rome.', signature: 'sig-2' },
      { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
      { type: 'thinking', thinking: 'Done.', signature: 'sig-3' },
    ]);
  });

  it('puts thinking first, with an empty signature', () => {
    const rendered = render({ reasoning: 'The user greets me.', text: 'Hello!' });
    assert.deepEqual(rendered.content, [
      { type: 'thinking', thinking: 'The user greets me.', signature: '' },
      { type: 'text', text: 'Hello!' },
    ]);
  });

  it('maps finish reasons to stop reasons', () => {
    assert.equal(
      render({ text: 'Cut', finishReason: 'length', nativeFinishReason: 'length' }).stop_reason,
      'max_tokens',
    );
    assert.equal(
      render({ finishReason: 'content-filter', nativeFinishReason: 'content_filter' }).stop_reason,
      'refusal',
    );
    assert.equal(render({ finishReason: 'other', nativeFinishReason: null }).stop_reason, 'end_turn');
    assert.equal(render({ finishReason: 'stop', nativeFinishReason: 'stop' }).stop_reason, 'end_turn');
    // An upstream speaking Anthropic's vocabulary is passed through.
    const stopped = render(
      { text: 'One, two', finishReason: 'stop', nativeFinishReason: 'stop_sequence' },
      {},
      { ...body, stop_sequences: [', three'] },
    );
    assert.equal(stopped.stop_reason, 'stop_sequence');
    assert.equal(stopped.stop_sequence, ', three');
    const ambiguous = render(
      { finishReason: 'stop', nativeFinishReason: 'stop_sequence' },
      {},
      { ...body, stop_sequences: ['a', 'b'] },
    );
    assert.deepEqual([ambiguous.stop_reason, ambiguous.stop_sequence], ['stop_sequence', null]);
  });

  it('adds switchyard_metadata only when the client asked for it, and reports BYOK', () => {
    assert.equal('switchyard_metadata' in render({ text: 'x' }), false);
    const metadata = { attempt: 1, is_byok: true };
    const rendered = render({ text: 'x' }, { metadata, isByok: true });
    assert.deepEqual(rendered.switchyard_metadata, metadata);
    assert.equal(rendered.usage.is_byok, true);
  });

  it('never reports negative uncached input', () => {
    const rendered = render(
      { text: 'x' },
      {
        usage: {
          inputTokens: 10,
          outputTokens: 1,
          cachedInputTokens: 10,
          cacheWriteTokens: 5,
          reasoningTokens: 0,
        },
      },
    );
    assert.equal(rendered.usage.input_tokens, 0);
  });
});

describe('messages dialect: rendering a failure', () => {
  const failure = (status: number, errorType: string, message = 'Something failed'): GenerationFailure => ({
    status,
    message,
    errorType,
  });

  it('uses the Anthropic envelope with the native type beside the gateway error_type', () => {
    assert.deepEqual(
      messagesDialect.renderFailure(failure(429, 'rate_limit_exceeded', 'Rate limit exceeded'), 'gen-1-abc'),
      {
        type: 'error',
        error: {
          type: 'rate_limit_error',
          message: 'Rate limit exceeded',
          error_type: 'rate_limit_exceeded',
        },
        request_id: 'gen-1-abc',
      },
    );
    const withMetadata = messagesDialect.renderFailure(
      { ...failure(502, 'provider_unavailable'), metadata: { provider_name: 'Anthropic' } },
      null,
    ) as any;
    assert.deepEqual(withMetadata, {
      type: 'error',
      error: {
        type: 'api_error',
        message: 'Something failed',
        error_type: 'provider_unavailable',
        metadata: { provider_name: 'Anthropic' },
      },
      request_id: null,
    });
  });

  it('maps every status to Anthropic native error types', () => {
    const cases: Array<[number, string]> = [
      [400, 'invalid_request_error'],
      [401, 'authentication_error'],
      [402, 'billing_error'],
      [403, 'permission_error'],
      [404, 'not_found_error'],
      [408, 'timeout_error'],
      [413, 'request_too_large'],
      [422, 'invalid_request_error'],
      [429, 'rate_limit_error'],
      [500, 'api_error'],
      [502, 'api_error'],
      [503, 'overloaded_error'],
      [504, 'timeout_error'],
      [524, 'timeout_error'],
      [529, 'overloaded_error'],
    ];
    for (const [status, type] of cases) {
      const rendered = messagesDialect.renderFailure(failure(status, 'server'), null) as any;
      assert.equal(rendered.error.type, type, `status ${status}`);
    }
  });
});
