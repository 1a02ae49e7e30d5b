import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GenerationInfo, GenerationSummary } from '../../../src/gateway/dialects/dialect.js';
import { responsesDialect } from '../../../src/gateway/dialects/responses/responses-dialect.js';
import type { GenerationResult } from '../../../src/spec/stream-part.js';

const info: GenerationInfo = {
  id: 'gen-1730000000-abc',
  createdAt: 1730000000,
  model: 'openai/gpt-4o',
  providerSlug: 'openai',
  providerName: 'OpenAI',
};

const summary: GenerationSummary = {
  usage: { inputTokens: 10, outputTokens: 5, cachedInputTokens: 4, cacheWriteTokens: 1, reasoningTokens: 2 },
  cost: { totalNanos: 45_000, inputNanos: 25_000, outputNanos: 20_000 },
  isByok: false,
  metadata: null,
};

const result = (overrides: Partial<GenerationResult> = {}): GenerationResult => ({
  id: 'chatcmpl-1',
  model: 'gpt-4o-2024-08-06',
  text: 'Hello!',
  reasoning: '',
  toolCalls: [],
  usage: summary.usage,
  finishReason: 'stop',
  nativeFinishReason: 'stop',
  ...overrides,
});

const render = (body: Record<string, unknown>, generation: GenerationResult, done = summary) =>
  responsesDialect.renderResult(
    { model: 'openai/gpt-4o', input: 'hi', ...body } as any,
    info,
    generation,
    done,
  ) as any;

/** Spec 2.7: the fields every Response carries. */
const REQUIRED = [
  'id',
  'object',
  'created_at',
  'completed_at',
  'model',
  'status',
  'output',
  'error',
  'incomplete_details',
  'instructions',
  'metadata',
  'parallel_tool_calls',
  'tool_choice',
  'tools',
  'temperature',
  'top_p',
  'frequency_penalty',
  'presence_penalty',
];

describe('responses dialect: result', () => {
  it('renders a text answer as a completed Response with every required field', () => {
    const before = Math.floor(Date.now() / 1000);
    const response = render({}, result());
    for (const field of REQUIRED) assert.ok(field in response, `missing ${field}`);
    assert.equal(response.id, 'gen-1730000000-abc');
    assert.equal(response.object, 'response');
    assert.equal(response.created_at, 1730000000);
    assert.ok(Number.isInteger(response.completed_at) && response.completed_at >= before);
    assert.equal(response.model, 'openai/gpt-4o');
    assert.equal(response.status, 'completed');
    assert.deepEqual(response.output, [
      {
        type: 'message',
        id: 'msg_1730000000-abc',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Hello!', annotations: [] }],
      },
    ]);
    assert.equal(response.output_text, 'Hello!');
    assert.equal(response.error, null);
    assert.equal(response.incomplete_details, null);
    assert.equal(response.store, false);
    assert.equal(response.tool_choice, 'auto');
    assert.deepEqual(response.tools, []);
    assert.equal(response.parallel_tool_calls, true);
    assert.equal(response.truncation, null);
    assert.equal('switchyard_metadata' in response, false);
    assert.equal('error_type' in response, false);
  });

  it('reports usage with cost in dollars from nano-dollars', () => {
    assert.deepEqual(render({}, result()).usage, {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 4, cache_write_tokens: 1 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 2 },
      total_tokens: 15,
      cost: 0.000045,
      is_byok: false,
      cost_details: {
        upstream_inference_cost: null,
        upstream_inference_input_cost: 0.000025,
        upstream_inference_output_cost: 0.00002,
      },
    });
  });

  it('echoes the request settings', () => {
    const tools = [{ type: 'function', name: 'f', parameters: { type: 'object' } }];
    const response = render(
      {
        instructions: 'Be brief.',
        metadata: { run: '1' },
        tools,
        tool_choice: 'auto',
        parallel_tool_calls: false,
        temperature: 0.3,
        top_p: 0.8,
        presence_penalty: 0.1,
        frequency_penalty: 0.2,
        max_output_tokens: 100,
        reasoning: { effort: 'low' },
        text: { format: { type: 'json_object' } },
        user: 'user-1',
        service_tier: 'flex',
        truncation: 'auto',
      },
      result(),
    );
    assert.equal(response.instructions, 'Be brief.');
    assert.deepEqual(response.metadata, { run: '1' });
    assert.deepEqual(response.tools, tools);
    assert.equal(response.parallel_tool_calls, false);
    assert.equal(response.temperature, 0.3);
    assert.equal(response.top_p, 0.8);
    assert.equal(response.presence_penalty, 0.1);
    assert.equal(response.frequency_penalty, 0.2);
    assert.equal(response.max_output_tokens, 100);
    assert.deepEqual(response.reasoning, { effort: 'low' });
    assert.deepEqual(response.text, { format: { type: 'json_object' } });
    assert.equal(response.user, 'user-1');
    assert.equal(response.service_tier, 'flex');
    assert.equal(response.truncation, 'auto');
  });

  it('renders tool calls as function_call items after the message', () => {
    const response = render(
      {},
      result({
        text: 'Checking.',
        toolCalls: [
          { callId: 'call_a', name: 'weather', arguments: '{"city":"Paris"}' },
          { callId: 'call_b', name: 'time', arguments: '{}' },
        ],
        finishReason: 'tool-calls',
      }),
    );
    assert.equal(response.status, 'completed');
    assert.deepEqual(
      response.output.map((item: any) => item.type),
      ['message', 'function_call', 'function_call'],
    );
    assert.deepEqual(response.output[1], {
      type: 'function_call',
      id: 'fc_1730000000-abc_0',
      call_id: 'call_a',
      name: 'weather',
      arguments: '{"city":"Paris"}',
      status: 'completed',
    });
    assert.equal(response.output[2].id, 'fc_1730000000-abc_1');
    const toolsOnly = render(
      {},
      result({ text: '', toolCalls: [{ callId: 'c', name: 'f', arguments: '{}' }] }),
    );
    assert.deepEqual(
      toolsOnly.output.map((item: any) => item.type),
      ['function_call'],
    );
    assert.equal(toolsOnly.output_text, '');
  });

  it('puts a reasoning item first when there was reasoning', () => {
    const response = render({}, result({ reasoning: 'Let me think.' }));
    assert.deepEqual(response.output[0], {
      type: 'reasoning',
      id: 'rs_1730000000-abc',
      status: 'completed',
      summary: [],
      content: [{ type: 'reasoning_text', text: 'Let me think.' }],
    });
    assert.equal(response.output[1].type, 'message');
  });

  it('renders signed blocks as reasoning items in their places, thinking after the last call last', () => {
    const A = 'anthropic-claude-v1' as const;
    const response = render(
      {},
      result({
        text: '',
        reasoning: 'One. Two. Three.',
        reasoningBlocks: [
          { text: 'One.', signature: 's1', format: A },
          { text: 'Two.', signature: 's2', format: A, beforeToolCall: 1 },
          { text: 'Three.', signature: 's3', format: A, beforeToolCall: 2 },
        ],
        toolCalls: [
          { callId: 'c0', name: 'f', arguments: '{}' },
          { callId: 'c1', name: 'f', arguments: '{}' },
        ],
        finishReason: 'tool-calls',
      }),
    );
    assert.deepEqual(
      response.output.map((item: any) => (item.type === 'reasoning' ? item.signature : item.call_id)),
      ['s1', 'c0', 's2', 'c1', 's3'],
    );
    // Gemini's signature holds no text: its thought text is an item of its own, first.
    const gemini = render(
      {},
      result({
        text: '',
        reasoning: 'Thinking.',
        reasoningBlocks: [{ text: '', signature: 'g', format: 'google-gemini-v1', beforeToolCall: 0 }],
        toolCalls: [{ callId: 'c0', name: 'f', arguments: '{}' }],
        finishReason: 'tool-calls',
      }),
    );
    assert.deepEqual(
      gemini.output.map((item: any) =>
        item.type === 'reasoning' ? (item.encrypted_content ?? item.content[0].text) : item.call_id,
      ),
      ['Thinking.', 'google-gemini-v1:g', 'c0'],
    );
  });

  it('is incomplete when the output hit the token limit or a content filter', () => {
    const cut = render({ max_output_tokens: 5 }, result({ finishReason: 'length' }));
    assert.equal(cut.status, 'incomplete');
    assert.deepEqual(cut.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(cut.output[0].status, 'incomplete');
    assert.equal(cut.error, null);
    const filtered = render({}, result({ finishReason: 'content-filter' }));
    assert.equal(filtered.status, 'incomplete');
    assert.deepEqual(filtered.incomplete_details, { reason: 'content_filter' });
  });

  it('adds switchyard_metadata only when the summary carries it', () => {
    const metadata = { requested: 'openai/gpt-4o', strategy: 'direct', attempt: 1 };
    assert.deepEqual(render({}, result(), { ...summary, metadata }).switchyard_metadata, metadata);
    assert.equal(render({}, result(), { ...summary, isByok: true }).usage.is_byok, true);
  });
});

describe('responses dialect: failure before output', () => {
  it('renders the error envelope with error_type and the failure metadata', () => {
    const body = responsesDialect.renderFailure(
      {
        status: 429,
        message: 'Provider returned error',
        errorType: 'rate_limit_exceeded',
        metadata: { provider_name: 'OpenAI', raw: 'slow down' },
        headers: { 'retry-after': '5' },
      },
      'gen-1',
    );
    assert.deepEqual(body, {
      error: {
        code: 429,
        message: 'Provider returned error',
        metadata: { error_type: 'rate_limit_exceeded', provider_name: 'OpenAI', raw: 'slow down' },
      },
    });
  });
});
