import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDemoAdapter, SCRIPTED_TEXT } from '../../../src/gateway/providers/demo/demo-adapter.js';
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
