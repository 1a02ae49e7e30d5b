import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createDemoAdapter,
  DEMO_EMBEDDING_DIMENSIONS,
  demoModels,
  SCRIPTED_TEXT,
} from '../../../src/gateway/providers/demo/demo-adapter.js';
import type { EmbedCall } from '../../../src/spec/embedding.js';
import type { AdapterCall } from '../../../src/spec/provider-adapter.js';
import { UpstreamError } from '../../../src/spec/upstream-error.js';
import { collect } from '../../helpers/fake-upstream.js';

const adapter = createDemoAdapter();
const call = (
  model: string,
  overrides: Partial<AdapterCall['request']> = {},
  signal = new AbortController().signal,
): AdapterCall => ({
  request: {
    model,
    input: [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'ping pong' }] }],
    ...overrides,
  },
  target: { baseUrl: 'demo:', apiKey: null },
  signal,
  timeouts: { headersMs: 1000, firstTokenMs: 100, idleMs: 1000 },
});

describe('demo provider', () => {
  it('echoes the last user message, with usage, deterministically', async () => {
    const first = await adapter.generate(call('echo'));
    const second = await adapter.generate(call('echo'));
    assert.equal(first.text, 'ping pong');
    assert.equal(first.finishReason, 'stop');
    assert.deepEqual(first, second);
    assert.deepEqual(first.usage, {
      inputTokens: 3,
      outputTokens: 3,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    });
  });

  it('streams the scripted sentence word by word, then usage and finish', async () => {
    const parts = await collect(adapter.stream(call('scripted')));
    const text = parts.flatMap((part) => (part.type === 'text-delta' ? [part.delta] : [])).join('');
    assert.equal(text, SCRIPTED_TEXT);
    assert.equal(parts.filter((part) => part.type === 'text-delta').length, 9);
    assert.deepEqual(
      parts.slice(-2).map((part) => part.type),
      ['usage', 'finish'],
    );
  });

  it('stops at max output tokens with finish reason length', async () => {
    const result = await adapter.generate(call('scripted', { maxOutputTokens: 2 }));
    assert.equal(result.text, SCRIPTED_TEXT.slice(0, 8));
    assert.equal(result.finishReason, 'length');
  });

  it('calls the first tool when tools are given', async () => {
    const parts = await collect(
      adapter.stream(
        call('scripted', { tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }] }),
      ),
    );
    assert.deepEqual(parts.slice(1, 4), [
      { type: 'tool-call-start', index: 0, callId: 'call_demo_0', name: 'lookup' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
      { type: 'tool-call-end', index: 0 },
    ]);
    assert.deepEqual(parts.at(-1), { type: 'finish', reason: 'tool-calls', nativeReason: 'tool_calls' });
  });

  it('fails on cue: 429 and 500 before output, a slow first token, a stream cut after output, an unknown model', async () => {
    const limited = await adapter.generate(call('fail-429')).catch((error: unknown) => error);
    assert.ok(
      limited instanceof UpstreamError &&
        limited.status === 429 &&
        limited.retryable &&
        limited.retryAfterSeconds === 1,
    );
    await assert.rejects(
      collect(adapter.stream(call('fail-500'))),
      (error: unknown) => error instanceof UpstreamError && error.status === 500,
    );
    await assert.rejects(
      collect(adapter.stream(call('slow-first-token'))),
      (error: unknown) => error instanceof UpstreamError && error.kind === 'timeout',
    );
    const cut = await collect(adapter.stream(call('cut-mid-stream')));
    assert.deepEqual(
      cut.map((part) => part.type),
      ['response-metadata', 'text-delta', 'text-delta', 'error'],
    );
    const unknown = await adapter.generate(call('nope')).catch((error: unknown) => error);
    assert.ok(unknown instanceof UpstreamError && unknown.status === 404 && !unknown.retryable);
  });
});

describe('demo provider embeddings', () => {
  const embedCall = (model: string, overrides: Partial<EmbedCall['request']> = {}): EmbedCall => ({
    request: { model, input: ['the quick brown fox', 'jumps over'], ...overrides },
    target: { baseUrl: 'demo:', apiKey: null },
    signal: new AbortController().signal,
    timeouts: { headersMs: 1000, firstTokenMs: 100, idleMs: 1000 },
  });
  const embed = (call: EmbedCall) => adapter.embed!(call);
  const norm = (vector: number[]) => Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));

  it('is listed among the demo models', () => {
    assert.equal(demoModels.embed, 'embed');
  });

  it('gives one deterministic unit-length vector per input, different for different inputs', async () => {
    const first = await embed(embedCall('embed'));
    const second = await embed(embedCall('embed'));
    assert.deepEqual(first, second);
    assert.equal(first.model, 'embed');
    assert.equal(first.vectors.length, 2);
    for (const vector of first.vectors) {
      assert.equal(vector.length, DEMO_EMBEDDING_DIMENSIONS);
      assert.ok(Math.abs(norm(vector) - 1) < 1e-9, `norm ${norm(vector)}`);
      assert.ok(vector.every((value) => Number.isFinite(value)));
    }
    assert.notDeepEqual(first.vectors[0], first.vectors[1]);
    // A vector depends on its input only, not on its neighbours or position.
    const alone = await embed(embedCall('embed', { input: ['jumps over'] }));
    assert.deepEqual(alone.vectors[0], first.vectors[1]);
    // The demo's rough count: ceil(19 / 4) + ceil(10 / 4).
    assert.deepEqual(first.usage, {
      inputTokens: 8,
      outputTokens: 0,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    });
  });

  it('honours dimensions, embeds token lists (a token per id), and refuses more dimensions than it has', async () => {
    const wide = await embed(embedCall('embed', { dimensions: 1000 }));
    for (const vector of wide.vectors) {
      assert.equal(vector.length, 1000);
      assert.ok(Math.abs(norm(vector) - 1) < 1e-9);
    }
    const narrow = await embed(embedCall('embed', { dimensions: 1 }));
    assert.deepEqual(
      narrow.vectors.map((vector) => Math.abs(vector[0]!)),
      [1, 1],
    );
    const tokens = await embed(embedCall('embed', { input: [[1, 2, 3], [4]] }));
    assert.equal(tokens.vectors.length, 2);
    assert.equal(tokens.usage.inputTokens, 4);
    // A text and a token list that print alike are different inputs.
    const text = await embed(embedCall('embed', { input: ['1,2,3'] }));
    assert.notDeepEqual(text.vectors[0], tokens.vectors[0]);

    const tooWide = await embed(embedCall('embed', { dimensions: 100_000 })).catch((error: unknown) => error);
    assert.ok(tooWide instanceof UpstreamError && tooWide.status === 400 && !tooWide.retryable);
    // Inputs × dimensions is bounded too: each alone is within its limit here, together they are not.
    const many = Array.from({ length: 2048 }, (_, index) => `x${index}`);
    const tooMany = await embed(embedCall('embed', { input: many, dimensions: 129 })).catch(
      (error: unknown) => error,
    );
    assert.ok(tooMany instanceof UpstreamError && tooMany.status === 400 && !tooMany.retryable);
    assert.match(
      tooMany.message,
      /inputs × dimensions must be at most 262144 \(2048 inputs × 129 dimensions/,
    );
    const most = await embed(embedCall('embed', { input: many, dimensions: 128 }));
    assert.equal(most.vectors.length, 2048);
  });

  it('fails on cue like the chat models, and keeps embedding and chat models apart', async () => {
    const limited = await embed(embedCall('fail-429')).catch((error: unknown) => error);
    assert.ok(limited instanceof UpstreamError && limited.status === 429 && limited.retryAfterSeconds === 1);
    const broken = await embed(embedCall('fail-500')).catch((error: unknown) => error);
    assert.ok(broken instanceof UpstreamError && broken.status === 500 && broken.retryable);
    const chatModel = await embed(embedCall('echo')).catch((error: unknown) => error);
    assert.ok(chatModel instanceof UpstreamError && chatModel.status === 404);
    const unknown = await embed(embedCall('nope')).catch((error: unknown) => error);
    assert.ok(unknown instanceof UpstreamError && unknown.status === 404);
    const chatOnEmbed = await adapter.generate(call('embed')).catch((error: unknown) => error);
    assert.ok(chatOnEmbed instanceof UpstreamError && chatOnEmbed.status === 404);
    await assert.rejects(
      collect(adapter.stream(call('embed'))),
      (error: unknown) => error instanceof UpstreamError && error.status === 404,
    );
  });
});
