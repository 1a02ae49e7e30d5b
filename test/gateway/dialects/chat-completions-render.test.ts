import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatCompletionsDialect } from '../../../src/gateway/dialects/chat-completions/chat-completions-dialect.js';
import { renderChatCompletion } from '../../../src/gateway/dialects/chat-completions/render-chat-completion.js';
import type {
  GenerationFailure,
  GenerationInfo,
  GenerationSummary,
} from '../../../src/gateway/dialects/dialect.js';
import type { GenerationResult } from '../../../src/spec/stream-part.js';

const body = { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'Hi' }] } as any;

const info: GenerationInfo = {
  id: 'gen-1730000000-abc',
  createdAt: 1730000000,
  model: 'openai/gpt-4o',
  providerSlug: 'openai',
  providerName: 'OpenAI',
};

const summary = (overrides: Partial<GenerationSummary> = {}): GenerationSummary => ({
  usage: { inputTokens: 10, outputTokens: 2, cachedInputTokens: 4, cacheWriteTokens: 1, reasoningTokens: 0 },
  cost: { totalNanos: 40_000, inputNanos: 25_000, outputNanos: 15_000 },
  isByok: false,
  metadata: null,
  ...overrides,
});

const result = (overrides: Partial<GenerationResult> = {}): GenerationResult => ({
  id: 'chatcmpl-upstream',
  model: 'gpt-4o-2024-08-06',
  text: 'Hello',
  reasoning: '',
  toolCalls: [],
  usage: summary().usage,
  finishReason: 'stop',
  nativeFinishReason: 'stop',
  ...overrides,
});

const render = (generation: GenerationResult, ended = summary(), requestBody = body) =>
  chatCompletionsDialect.renderResult(requestBody, info, generation, ended) as any;

describe('chat-completions dialect: the non-streamed result', () => {
  it('renders a text answer as a chat.completion with usage and cost in dollars', () => {
    assert.deepEqual(render(result()), {
      id: 'gen-1730000000-abc',
      object: 'chat.completion',
      created: 1730000000,
      model: 'openai/gpt-4o',
      provider: 'OpenAI',
      system_fingerprint: null,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello', refusal: null, reasoning: null },
          finish_reason: 'stop',
          native_finish_reason: 'stop',
          logprobs: null,
        },
      ],
      usage: {
        prompt_tokens: 10,
        completion_tokens: 2,
        total_tokens: 12,
        prompt_tokens_details: { cached_tokens: 4, cache_write_tokens: 1 },
        completion_tokens_details: { reasoning_tokens: 0 },
        cost: 0.00004,
        is_byok: false,
        cost_details: {
          upstream_inference_cost: null,
          upstream_inference_prompt_cost: 0.000025,
          upstream_inference_completions_cost: 0.000015,
        },
      },
    });
  });

  it('renders tool calls with null content and the tool_calls finish reason', () => {
    const rendered = render(
      result({
        text: '',
        toolCalls: [
          { callId: 'call_1', name: 'weather', arguments: '{"city":"Oslo"}' },
          { callId: 'call_2', name: 'time', arguments: '{}' },
        ],
        finishReason: 'tool-calls',
        nativeFinishReason: 'tool_use',
      }),
    );
    assert.deepEqual(rendered.choices[0], {
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        reasoning: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
          { id: 'call_2', type: 'function', function: { name: 'time', arguments: '{}' } },
        ],
      },
      finish_reason: 'tool_calls',
      native_finish_reason: 'tool_use',
      logprobs: null,
    });
  });

  it('keeps text next to tool calls, and an empty answer as an empty string', () => {
    const withText = render(result({ toolCalls: [{ callId: 'c', name: 'f', arguments: '' }] }));
    assert.equal(withText.choices[0].message.content, 'Hello');
    assert.equal(render(result({ text: '' })).choices[0].message.content, '');
    assert.equal('tool_calls' in render(result()).choices[0].message, false);
  });

  it('returns reasoning text and reasoning tokens, unless the caller excluded it', () => {
    const reasoned = result({
      reasoning: 'Think first.',
      usage: { ...summary().usage, reasoningTokens: 5 },
    });
    const ended = summary({
      usage: {
        inputTokens: 10,
        outputTokens: 7,
        cachedInputTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 5,
      },
    });
    const rendered = render(reasoned, ended);
    assert.equal(rendered.choices[0].message.reasoning, 'Think first.');
    assert.deepEqual(rendered.usage.completion_tokens_details, { reasoning_tokens: 5 });
    assert.equal(rendered.usage.total_tokens, 17);
    const excluded = render(reasoned, ended, { ...body, reasoning: { exclude: true } });
    assert.equal(excluded.choices[0].message.reasoning, null);
    assert.equal(
      render(reasoned, ended, { ...body, include_reasoning: false }).choices[0].message.reasoning,
      null,
    );
  });

  it('maps every canonical finish reason onto the chat enum, keeping the native one', () => {
    const reasons = [
      ['stop', 'stop'],
      ['length', 'length'],
      ['tool-calls', 'tool_calls'],
      ['content-filter', 'content_filter'],
      ['error', 'error'],
      ['other', 'stop'],
    ] as const;
    for (const [canonical, chat] of reasons) {
      const choice = render(result({ finishReason: canonical, nativeFinishReason: `native-${canonical}` }))
        .choices[0];
      assert.equal(choice.finish_reason, chat, canonical);
      assert.equal(choice.native_finish_reason, `native-${canonical}`);
    }
    assert.equal(
      render(result({ finishReason: 'length', nativeFinishReason: null })).choices[0].native_finish_reason,
      null,
    );
  });

  it('adds switchyard_metadata and the BYOK flag when the summary has them', () => {
    const metadata = { requested: 'openai/gpt-4o', strategy: 'direct', attempt: 1 };
    const rendered = render(result(), summary({ metadata, isByok: true }));
    assert.deepEqual(rendered.switchyard_metadata, metadata);
    assert.equal(rendered.usage.is_byok, true);
    assert.equal('switchyard_metadata' in render(result()), false);
  });

  it('shows a failure after partial output as choices[0].error next to the partial message', () => {
    const failure: GenerationFailure = {
      status: 502,
      message: 'Provider returned error',
      errorType: 'provider_unavailable',
      metadata: { provider_name: 'OpenAI' },
    };
    const rendered = renderChatCompletion(body, info, result({ text: 'Hel' }), summary(), failure) as any;
    assert.equal(rendered.choices[0].message.content, 'Hel');
    assert.equal(rendered.choices[0].finish_reason, 'error');
    assert.deepEqual(rendered.choices[0].error, {
      code: 502,
      message: 'Provider returned error',
      metadata: { error_type: 'provider_unavailable', provider_name: 'OpenAI' },
    });
    assert.equal(rendered.usage.completion_tokens, 2, 'what was produced is billed');
  });

  it('lists signed reasoning as reasoning_details; with reasoning left out, only Gemini signatures', () => {
    const signed = result({
      text: '',
      reasoning: 'Paris first.',
      reasoningBlocks: [
        { text: 'Paris first.', signature: 'sig-1', format: 'anthropic-claude-v1' },
        { text: '', redactedData: 'opaque', format: 'anthropic-claude-v1', beforeToolCall: 1 },
        { text: '', signature: 'g-sig', format: 'google-gemini-v1', beforeToolCall: 1 },
        { text: 'unsigned', format: 'anthropic-claude-v1' },
      ],
      toolCalls: [
        { callId: 'c0', name: 'weather', arguments: '{}' },
        { callId: 'c1', name: 'weather', arguments: '{}' },
      ],
    });
    assert.deepEqual(render(signed).choices[0].message.reasoning_details, [
      {
        type: 'reasoning.text',
        text: 'Paris first.',
        signature: 'sig-1',
        format: 'anthropic-claude-v1',
        index: 0,
      },
      // Thinking between two calls goes back with the second.
      { type: 'reasoning.encrypted', data: 'opaque', id: 'c1', format: 'anthropic-claude-v1', index: 1 },
      { type: 'reasoning.encrypted', data: 'g-sig', id: 'c1', format: 'google-gemini-v1', index: 2 },
    ]);
    const excluded = render(signed, summary(), { ...body, reasoning: { exclude: true } }).choices[0].message;
    assert.equal(excluded.reasoning, null);
    assert.deepEqual(excluded.reasoning_details, [
      { type: 'reasoning.encrypted', data: 'g-sig', id: 'c1', format: 'google-gemini-v1', index: 0 },
    ]);
    // Plain reasoning text (an OpenAI-compatible model's) lists nothing: it has nothing to carry back.
    assert.equal(render(result({ reasoning: 'hmm' })).choices[0].message.reasoning_details, undefined);
  });
});

describe('chat-completions dialect: the error body before any output', () => {
  it('is the service envelope with the typed error_type in metadata', () => {
    const failure: GenerationFailure = {
      status: 429,
      message: 'Rate limit exceeded',
      errorType: 'rate_limit_exceeded',
      metadata: { provider_name: 'OpenAI', raw: '{"error":"slow down"}' },
      headers: { 'retry-after': '7' },
    };
    assert.deepEqual(chatCompletionsDialect.renderFailure(failure, 'gen-1'), {
      error: {
        code: 429,
        message: 'Rate limit exceeded',
        metadata: {
          error_type: 'rate_limit_exceeded',
          provider_name: 'OpenAI',
          raw: '{"error":"slow down"}',
        },
      },
    });
    assert.deepEqual(
      chatCompletionsDialect.renderFailure(
        {
          status: 400,
          message: 'Invalid request parameters: body.n must be 1',
          errorType: 'invalid_request',
        },
        null,
      ),
      {
        error: {
          code: 400,
          message: 'Invalid request parameters: body.n must be 1',
          metadata: { error_type: 'invalid_request' },
        },
      },
    );
  });
});
