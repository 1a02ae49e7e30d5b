import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GenerationInfo, GenerationSummary } from '../../../src/gateway/dialects/dialect.js';
import { renderEmbeddings } from '../../../src/gateway/dialects/embeddings/render-embeddings.js';
import { createDemoAdapter } from '../../../src/gateway/providers/demo/demo-adapter.js';
import type { EmbeddingResult } from '../../../src/spec/embedding.js';

const info: GenerationInfo = {
  id: 'gen-embed-1',
  createdAt: 1_786_000_000,
  model: 'openai/text-embedding-3-small',
  providerSlug: 'openai',
  providerName: 'OpenAI',
};
const usage = {
  inputTokens: 9,
  outputTokens: 0,
  cachedInputTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};
const summary: GenerationSummary = {
  usage,
  cost: { totalNanos: 180, inputNanos: 180, outputNanos: 0 },
  isByok: false,
  metadata: null,
};
const result: EmbeddingResult = {
  model: 'text-embedding-3-small',
  vectors: [
    [1, -2, 0.5],
    [0.1, 0.2, -0.3],
  ],
  usage,
};

/** What a client does with a base64 embedding: bytes → little-endian float32 values. */
function decodeFloat32(base64: string): number[] {
  const bytes = Buffer.from(base64, 'base64');
  assert.equal(bytes.length % 4, 0);
  return Array.from({ length: bytes.length / 4 }, (_, index) => bytes.readFloatLE(index * 4));
}

describe('embeddings dialect: rendering a result', () => {
  it('renders floats as an OpenAI list with the answering model, provider, usage and cost', () => {
    assert.deepEqual(JSON.parse(JSON.stringify(renderEmbeddings(info, result, summary, 'float'))), {
      id: 'gen-embed-1',
      object: 'list',
      data: [
        { object: 'embedding', embedding: [1, -2, 0.5], index: 0 },
        { object: 'embedding', embedding: [0.1, 0.2, -0.3], index: 1 },
      ],
      model: 'openai/text-embedding-3-small',
      provider: 'OpenAI',
      usage: { prompt_tokens: 9, total_tokens: 9, cost: 0.00000018, is_byok: false },
    });
    // Floats are the default format.
    assert.deepEqual(
      renderEmbeddings(info, result, summary),
      renderEmbeddings(info, result, summary, 'float'),
    );
  });

  it('renders base64 as little-endian float32 bytes that decode back to the vectors', () => {
    const rendered = renderEmbeddings(info, result, summary, 'base64');
    // 1.0f, -2.0f, 0.5f little-endian: 00 00 80 3f | 00 00 00 c0 | 00 00 00 3f.
    assert.equal(rendered.data[0]!.embedding, 'AACAPwAAAMAAAAA/');
    for (const [index, item] of rendered.data.entries()) {
      assert.equal(typeof item.embedding, 'string');
      assert.equal(item.index, index);
      assert.deepEqual(
        decodeFloat32(item.embedding as string),
        result.vectors[index]!.map((value) => Math.fround(value)),
      );
    }
    assert.equal(rendered.usage.prompt_tokens, 9);
  });

  it('round-trips the demo model’s vectors through base64 within float32 precision', async () => {
    const embedded = await createDemoAdapter().embed!({
      request: { model: 'embed', input: ['alpha', 'beta', 'gamma'], dimensions: 64 },
      target: { baseUrl: 'demo:', apiKey: null },
      signal: new AbortController().signal,
      timeouts: { headersMs: 1000, firstTokenMs: 1000, idleMs: 1000 },
    });
    const rendered = renderEmbeddings(info, embedded, { ...summary, usage: embedded.usage }, 'base64');
    assert.equal(rendered.data.length, 3);
    for (const item of rendered.data) {
      const decoded = decodeFloat32(item.embedding as string);
      const original = embedded.vectors[item.index]!;
      assert.equal(decoded.length, 64);
      for (const [position, value] of decoded.entries()) {
        assert.ok(Math.abs(value - original[position]!) < 1e-7, `${value} vs ${original[position]}`);
      }
    }
  });

  it('adds switchyard_metadata when the summary carries it, and reports BYOK', () => {
    const rendered = renderEmbeddings(
      info,
      result,
      { ...summary, isByok: true, metadata: { attempts: 2 } },
      'float',
    ) as Record<string, any>;
    assert.deepEqual(rendered.switchyard_metadata, { attempts: 2 });
    assert.equal(rendered.usage.is_byok, true);
    assert.equal('switchyard_metadata' in renderEmbeddings(info, result, summary), false);
  });
});
