import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatCompletionsDialect } from '../../../src/gateway/dialects/chat-completions/chat-completions-dialect.js';
import type {
  GenerationFailure,
  GenerationInfo,
  GenerationSummary,
} from '../../../src/gateway/dialects/dialect.js';
import type { StreamPart } from '../../../src/spec/stream-part.js';

const body = { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'Hi' }], stream: true } as any;

const info: GenerationInfo = {
  id: 'gen-1730000000-abc',
  createdAt: 1730000000,
  model: 'openai/gpt-4o',
  providerSlug: 'openai',
  providerName: 'OpenAI',
};

const summary = (overrides: Partial<GenerationSummary> = {}): GenerationSummary => ({
  usage: { inputTokens: 10, outputTokens: 2, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
  cost: { totalNanos: 40_000, inputNanos: 25_000, outputNanos: 15_000 },
  isByok: false,
  metadata: null,
  ...overrides,
});

const usageOf = {
  prompt_tokens: 10,
  completion_tokens: 2,
  total_tokens: 12,
  prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0 },
  cost: 0.00004,
  is_byok: false,
  cost_details: {
    upstream_inference_cost: null,
    upstream_inference_prompt_cost: 0.000025,
    upstream_inference_completions_cost: 0.000015,
  },
};

/** Runs parts through an encoder the way the route does, and returns the whole SSE text. */
function encode(
  parts: StreamPart[],
  close: { summary: GenerationSummary; failure?: GenerationFailure },
  requestBody = body,
): string {
  const encoder = chatCompletionsDialect.streamEncoder(requestBody, info);
  let text = encoder.start();
  for (const part of parts) text += encoder.part(part);
  text += close.failure ? encoder.fail(close.failure, close.summary) : encoder.end(close.summary);
  return text;
}

/**
 * Splits SSE text into frames, checking the framing a client relies on: every event is one
 * `data: ` line followed by a blank line, the last is `[DONE]`, and every other one is JSON.
 */
function frames(text: string): any[] {
  assert.ok(text.endsWith('\n\n'), 'the stream ends on a frame boundary');
  const events = text.slice(0, -2).split('\n\n');
  assert.equal(events.at(-1), 'data: [DONE]');
  return events.slice(0, -1).map((event) => {
    assert.ok(event.startsWith('data: '), event);
    assert.ok(!event.slice(6).includes('\n'), 'one line per event');
    return JSON.parse(event.slice(6));
  });
}

const envelope = {
  id: 'gen-1730000000-abc',
  object: 'chat.completion.chunk',
  created: 1730000000,
  model: 'openai/gpt-4o',
  provider: 'OpenAI',
};

const deltaChunk = (delta: object) => ({
  ...envelope,
  choices: [
    {
      index: 0,
      delta: { role: 'assistant', ...delta },
      finish_reason: null,
      native_finish_reason: null,
      logprobs: null,
    },
  ],
});

/** The usage chunk comes exactly once, last before [DONE], with no choices. */
function assertSingleUsageChunkLast(chunks: any[]) {
  const withUsage = chunks.filter((chunk) => 'usage' in chunk);
  assert.equal(withUsage.length, 1);
  assert.equal(chunks.at(-1), withUsage[0]);
  assert.deepEqual(chunks.at(-1).choices, []);
}

describe('chat-completions dialect: the SSE stream', () => {
  it('streams text as chunks, then a finish chunk, one usage chunk and [DONE]', () => {
    const text = encode(
      [
        { type: 'response-metadata', id: 'chatcmpl-1', model: 'gpt-4o' },
        { type: 'text-delta', delta: 'Hel' },
        { type: 'text-delta', delta: '' },
        { type: 'text-delta', delta: 'lo' },
        { type: 'usage', usage: summary().usage },
        { type: 'finish', reason: 'stop', nativeReason: 'stop' },
      ],
      { summary: summary() },
    );
    const chunks = frames(text);
    assert.deepEqual(chunks, [
      deltaChunk({ content: 'Hel' }),
      deltaChunk({ content: 'lo' }),
      {
        ...envelope,
        choices: [
          {
            index: 0,
            delta: { role: 'assistant', content: '' },
            finish_reason: 'stop',
            native_finish_reason: 'stop',
            logprobs: null,
          },
        ],
      },
      { ...envelope, choices: [], usage: usageOf },
    ]);
    assertSingleUsageChunkLast(chunks);
  });

  it('round-trips text that needs escaping', () => {
    const tricky = 'quote " backslash \\ newline \n tab \t line-sep \u2028 emoji 🚂 </script>';
    const chunks = frames(encode([{ type: 'text-delta', delta: tricky }], { summary: summary() }));
    assert.equal(chunks[0].choices[0].delta.content, tricky);
  });

  it('streams reasoning as delta.reasoning, and leaves it out when the caller excluded it', () => {
    const parts: StreamPart[] = [
      { type: 'reasoning-delta', delta: 'Think' },
      { type: 'text-delta', delta: 'Answer' },
    ];
    const shown = frames(encode(parts, { summary: summary() }));
    assert.deepEqual(shown.slice(0, 2), [
      deltaChunk({ reasoning: 'Think' }),
      deltaChunk({ content: 'Answer' }),
    ]);
    const hidden = frames(encode(parts, { summary: summary() }, { ...body, reasoning: { exclude: true } }));
    assert.deepEqual(hidden[0], deltaChunk({ content: 'Answer' }));
    assert.equal(hidden.length, 3);
  });

  it('streams signed reasoning as whole reasoning_details entries, interleaved thinking with its call id', () => {
    const A = 'anthropic-claude-v1' as const;
    const parts: StreamPart[] = [
      { type: 'reasoning-delta', delta: 'Paris ' },
      { type: 'reasoning-delta', delta: 'first.' },
      { type: 'reasoning-signature', signature: 'sig-1', format: A },
      { type: 'tool-call-start', index: 0, callId: 'c0', name: 'weather' },
      { type: 'tool-call-end', index: 0 },
      // Thinking between two calls waits for the next call's start to carry its id.
      { type: 'reasoning-delta', delta: 'Rome next.' },
      { type: 'reasoning-signature', signature: 'sig-2', format: A },
      { type: 'reasoning-redacted', data: 'opaque', format: A },
      { type: 'tool-call-start', index: 1, callId: 'c1', name: 'weather' },
      { type: 'tool-call-end', index: 1 },
      // What no call follows goes out before the finish.
      { type: 'reasoning-delta', delta: 'Done.' },
      { type: 'reasoning-signature', signature: 'sig-3', format: A },
    ];
    const chunks = (requestBody: typeof body) => frames(encode(parts, { summary: summary() }, requestBody));
    const details = (requestBody: typeof body) =>
      chunks(requestBody).flatMap((chunk) => chunk.choices?.[0]?.delta?.reasoning_details ?? []);
    assert.deepEqual(details(body), [
      { type: 'reasoning.text', text: 'Paris first.', signature: 'sig-1', format: A, index: 0 },
      { type: 'reasoning.text', text: 'Rome next.', signature: 'sig-2', id: 'c1', format: A, index: 1 },
      { type: 'reasoning.encrypted', data: 'opaque', id: 'c1', format: A, index: 2 },
      { type: 'reasoning.text', text: 'Done.', signature: 'sig-3', format: A, index: 3 },
    ]);
    // The waiting entries go out just before the call they precede, and the last before the finish.
    const order = chunks(body).map((chunk) => {
      const delta = chunk.choices?.[0]?.delta ?? {};
      return delta.reasoning_details
        ? `details:${delta.reasoning_details.length}`
        : delta.tool_calls
          ? `call:${delta.tool_calls[0].id}`
          : (chunk.choices?.[0]?.finish_reason ?? (delta.reasoning ? 'reasoning' : 'other'));
    });
    assert.deepEqual(order.slice(0, 8), [
      'reasoning',
      'reasoning',
      'details:1',
      'call:c0',
      'reasoning',
      'details:2',
      'call:c1',
      'reasoning',
    ]);
    assert.deepEqual(order.slice(8, 10), ['details:1', 'stop']);
    // Reasoning left out: Anthropic's thinking goes back whole or not at all.
    assert.deepEqual(details({ ...body, reasoning: { exclude: true } }), []);
  });

  it('streams tool calls as OpenAI tool_call deltas that accumulate into the arguments', () => {
    const chunks = frames(
      encode(
        [
          { type: 'tool-call-start', index: 0, callId: 'call_1', name: 'weather' },
          { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
          { type: 'tool-call-delta', index: 0, argumentsDelta: '"Oslo"}' },
          { type: 'tool-call-end', index: 0 },
          { type: 'tool-call-start', index: 1, callId: 'call_2', name: 'time' },
          { type: 'tool-call-delta', index: 1, argumentsDelta: '{}' },
          { type: 'tool-call-end', index: 1 },
          { type: 'finish', reason: 'tool-calls', nativeReason: 'tool_calls' },
        ],
        { summary: summary() },
      ),
    );
    assert.deepEqual(chunks.slice(0, 5), [
      deltaChunk({
        tool_calls: [
          { index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '' } },
        ],
      }),
      deltaChunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      deltaChunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }),
      deltaChunk({
        tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'time', arguments: '' } }],
      }),
      deltaChunk({ tool_calls: [{ index: 1, function: { arguments: '{}' } }] }),
    ]);
    // What an OpenAI client assembles from the deltas.
    const calls: Array<{ id: string; name: string; arguments: string }> = [];
    for (const chunk of chunks) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        calls[call.index] ??= { id: call.id, name: call.function.name, arguments: '' };
        calls[call.index]!.arguments += call.function.arguments ?? '';
      }
    }
    assert.deepEqual(calls, [
      { id: 'call_1', name: 'weather', arguments: '{"city":"Oslo"}' },
      { id: 'call_2', name: 'time', arguments: '{}' },
    ]);
    assert.equal(chunks[5].choices[0].finish_reason, 'tool_calls');
    assert.equal(chunks[5].choices[0].native_finish_reason, 'tool_calls');
    assertSingleUsageChunkLast(chunks);
  });

  it('maps length and a missing finish part', () => {
    const length = frames(
      encode(
        [
          { type: 'text-delta', delta: 'x' },
          { type: 'finish', reason: 'length', nativeReason: 'max_tokens' },
        ],
        {
          summary: summary(),
        },
      ),
    );
    assert.equal(length[1].choices[0].finish_reason, 'length');
    assert.equal(length[1].choices[0].native_finish_reason, 'max_tokens');
    const unfinished = frames(encode([{ type: 'text-delta', delta: 'x' }], { summary: summary() }));
    assert.equal(unfinished[1].choices[0].finish_reason, 'stop');
    assert.equal(unfinished[1].choices[0].native_finish_reason, null);
  });

  it('puts switchyard_metadata on the usage chunk only', () => {
    const metadata = { requested: 'openai/gpt-4o', strategy: 'direct', attempt: 1 };
    const chunks = frames(encode([{ type: 'text-delta', delta: 'x' }], { summary: summary({ metadata }) }));
    assert.deepEqual(chunks.at(-1), {
      ...envelope,
      choices: [],
      usage: usageOf,
      switchyard_metadata: metadata,
    });
    assert.equal(chunks.filter((chunk) => 'switchyard_metadata' in chunk).length, 1);
  });

  it('ends a stream that failed after output with the in-band error chunk, usage and [DONE]', () => {
    const failure: GenerationFailure = {
      status: 429,
      message: 'Rate limit exceeded',
      errorType: 'rate_limit_exceeded',
      metadata: { provider_code: 'rate_limited' },
    };
    const chunks = frames(
      encode(
        [
          { type: 'text-delta', delta: 'Hel' },
          { type: 'error', error: { message: 'boom' } as any },
        ],
        { summary: summary(), failure },
      ),
    );
    assert.deepEqual(chunks, [
      deltaChunk({ content: 'Hel' }),
      {
        ...envelope,
        error: {
          code: 429,
          message: 'Rate limit exceeded',
          metadata: { error_type: 'rate_limit_exceeded', provider_code: 'rate_limited' },
        },
        choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error', native_finish_reason: null }],
      },
      { ...envelope, choices: [], usage: usageOf },
    ]);
    assertSingleUsageChunkLast(chunks);
  });

  it('closes only once: a second end or fail writes nothing', () => {
    const encoder = chatCompletionsDialect.streamEncoder(body, info);
    const first = encoder.end(summary());
    assert.equal(encoder.end(summary()), '');
    assert.equal(encoder.fail({ status: 500, message: 'x', errorType: 'server' }, summary()), '');
    assertSingleUsageChunkLast(frames(first));
  });

  it('writes nothing at start and nothing for parts without a chat frame', () => {
    const encoder = chatCompletionsDialect.streamEncoder(body, info);
    assert.equal(encoder.start(), '');
    assert.equal(encoder.part({ type: 'response-metadata', id: 'x' }), '');
    assert.equal(encoder.part({ type: 'usage', usage: summary().usage }), '');
    assert.equal(encoder.part({ type: 'tool-call-end', index: 0 }), '');
    assert.equal(encoder.part({ type: 'finish', reason: 'stop', nativeReason: null }), '');
  });
});
