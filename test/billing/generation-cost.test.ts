import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generationCost, worstCaseCost } from '../../src/billing/generation-cost.js';

const usage = (overrides: Partial<Parameters<typeof generationCost>[1]> = {}) => ({
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  ...overrides,
});

describe('generation cost in nano-dollars', () => {
  it('prices input and output tokens exactly, where floats would drift', () => {
    // gpt-4o-mini: $0.15 / $0.60 per million tokens.
    const cost = generationCost(
      { prompt: '0.00000015', completion: '0.0000006' },
      usage({ inputTokens: 1000, outputTokens: 500 }),
    );
    assert.deepEqual(cost, { totalNanos: 450_000, inputNanos: 150_000, outputNanos: 300_000 });
    // 3 × 0.1 micro-dollars is 0.30000000000000004 in floats, exactly 300 nano-dollars here.
    assert.equal(
      generationCost({ prompt: '0.0000001', completion: '0' }, usage({ inputTokens: 3 })).totalNanos,
      300,
    );
  });

  it('charges cache reads, cache writes and reasoning at their own prices when the endpoint has them', () => {
    const pricing = {
      prompt: '0.000003',
      completion: '0.000015',
      input_cache_read: '0.0000003',
      input_cache_write: '0.00000375',
      internal_reasoning: '0.00001',
    };
    const cost = generationCost(
      pricing,
      usage({
        inputTokens: 10_000,
        cachedInputTokens: 6_000,
        cacheWriteTokens: 2_000,
        outputTokens: 1_000,
        reasoningTokens: 400,
      }),
    );
    // 2,000 uncached × 3000 + 6,000 × 300 + 2,000 × 3750 (nano per token) = 6,000,000 + 1,800,000 + 7,500,000
    assert.equal(cost.inputNanos, 15_300_000);
    // 600 × 15,000 + 400 × 10,000
    assert.equal(cost.outputNanos, 13_000_000);
    assert.equal(cost.totalNanos, 28_300_000);
    // Without their own prices, cached tokens cost as input and reasoning as completion.
    const plain = generationCost(
      { prompt: '0.000003', completion: '0.000015' },
      usage({ inputTokens: 10, cachedInputTokens: 4, outputTokens: 10, reasoningTokens: 5 }),
    );
    assert.deepEqual(plain, { totalNanos: 180_000, inputNanos: 30_000, outputNanos: 150_000 });
  });

  it('adds the per-request price once, ignores the display-only discount, and rounds once', () => {
    // Catalogue prices are already discounted (streamlake: $1.74/M × (1 − 0.8982) = $0.177132/M).
    const cost = generationCost(
      { prompt: '0.0000000125', completion: '0', request: '0.001', discount: 0.2 },
      usage({ inputTokens: 3 }),
    );
    // 3 × 12.5 + 1,000,000 = 1,000,037.5 → 1,000,038 nano-dollars
    assert.equal(cost.totalNanos, 1_000_038);
    assert.equal(
      generationCost({ prompt: '0.0000000125', completion: '0' }, usage({ inputTokens: 1 })).totalNanos,
      13,
    );
  });

  it('caps an absurd reported usage at the largest exact amount', () => {
    const cost = generationCost({ prompt: '1000', completion: '1000' }, usage({ inputTokens: 1e15 }));
    assert.equal(cost.totalNanos, Number.MAX_SAFE_INTEGER);
  });

  it('never counts more cached or reasoning tokens than tokens', () => {
    const cost = generationCost(
      { prompt: '0.000001', completion: '0.000002', input_cache_read: '0' },
      usage({ inputTokens: 5, cachedInputTokens: 50, outputTokens: 5, reasoningTokens: 50 }),
    );
    assert.deepEqual(cost, { totalNanos: 10_000, inputNanos: 0, outputNanos: 10_000 });
  });

  it('reserves the worst case: dearest input and output prices, rounded up', () => {
    const pricing = {
      prompt: '0.000003',
      completion: '0.000015',
      input_cache_write: '0.00000375',
      internal_reasoning: '0.00002',
      request: '0.0000000001',
    };
    // 100 × 3750 + 10 × 20,000 + 0.1, rounded up
    assert.equal(worstCaseCost(pricing, { promptTokens: 100, maxOutputTokens: 10 }), 575_001);
    const real = generationCost(
      pricing,
      usage({ inputTokens: 100, cacheWriteTokens: 100, outputTokens: 10, reasoningTokens: 10 }),
    );
    assert.ok(real.totalNanos <= worstCaseCost(pricing, { promptTokens: 100, maxOutputTokens: 10 }));
  });

  it('bills image output tokens at the image_output price, the rest of the answer at completion', () => {
    // google/gemini-2.5-flash-image on Google AI Studio: $2.50/M completion, $30/M image output.
    const pricing = { prompt: '0.0000003', completion: '0.0000025', image_output: '0.00003' };
    const cost = generationCost(
      pricing,
      usage({ inputTokens: 10, outputTokens: 1300, imageOutputTokens: 1290 }),
    );
    // 10 × 300 in; 10 text tokens × 2,500 + 1,290 image tokens × 30,000 out
    assert.deepEqual(cost, { totalNanos: 38_728_000, inputNanos: 3_000, outputNanos: 38_725_000 });
    // Without its own price an image token costs as completion; image tokens never exceed what
    // reasoning leaves of the output.
    assert.equal(
      generationCost(
        { prompt: '0', completion: '0.0000025' },
        usage({ outputTokens: 100, imageOutputTokens: 90 }),
      ).outputNanos,
      250_000,
    );
    assert.equal(
      generationCost(pricing, usage({ outputTokens: 100, reasoningTokens: 60, imageOutputTokens: 90 }))
        .outputNanos,
      // 60 reasoning × 2,500 + 40 image × 30,000
      1_350_000,
    );
  });

  it('reserves image output at its price when the answer may hold images and the price is higher', () => {
    const pricing = { prompt: '0.0000003', completion: '0.0000025', image_output: '0.00003' };
    const bounds = { promptTokens: 100, maxOutputTokens: 1000 };
    // 100 × 300 + 1,000 × 2,500
    assert.equal(worstCaseCost(pricing, bounds), 2_530_000);
    // 100 × 300 + 1,000 × 30,000
    assert.equal(worstCaseCost(pricing, { ...bounds, mayOutputImages: true }), 30_030_000);
    const real = generationCost(
      pricing,
      usage({ inputTokens: 100, outputTokens: 1000, imageOutputTokens: 1000 }),
    );
    assert.ok(real.totalNanos <= worstCaseCost(pricing, { ...bounds, mayOutputImages: true }));
    // A lower image price leaves the dearest output price as it was.
    assert.equal(
      worstCaseCost({ ...pricing, image_output: '0.000001' }, { ...bounds, mayOutputImages: true }),
      2_530_000,
    );
  });
});
