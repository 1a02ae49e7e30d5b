import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildCatalog } from '../../../src/catalog/catalog.js';
import { createEndpointHealth } from '../../../src/catalog/endpoint-health.js';
import { loadConfig } from '../../../src/config/load-config.js';
import { AppError } from '../../../src/errors/app-error.js';
import { createAttemptPlanner, type PlanInput } from '../../../src/gateway/pipeline/plan-attempts.js';

const MODEL = 'deepseek/deepseek-v4-pro';
// Of this model's endpoints: baidu/fp8 $0.1859+$0.3718 (fp8, retains prompts), novita/fp8
// $0.59952+$1.19904 (fp8, ZDR), deepinfra/fp4 $1.3+$2.6 (fp4, ZDR, max output 16384).
const credentials = {
  baidu: { api_key: 'b' },
  novita: { api_key: 'n' },
  deepinfra: { api_key: 'd' },
  switchyard: { enabled: false },
};

function planner(options: { random?: () => number; providers?: Record<string, unknown> } = {}) {
  const config = loadConfig({}, { providers: options.providers ?? credentials });
  const now = { value: Date.parse('2026-11-22T12:00:00Z') };
  const health = createEndpointHealth({ now: () => now.value });
  const catalog = buildCatalog({ config, now: new Date(now.value) });
  return {
    health,
    now,
    catalog,
    planner: createAttemptPlanner({ catalog, config, health, random: options.random ?? (() => 0.5) }),
  };
}

const input = (overrides: Partial<PlanInput> = {}): PlanInput => ({
  models: [MODEL],
  provider: null,
  request: { input: [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'hi' }] }] },
  outputKind: 'text',
  stickyEndpointId: null,
  ...overrides,
});

const slugs = (plan: { candidates: Array<{ endpoint: { provider_slug: string } }> }) =>
  plan.candidates.map((candidate) => candidate.endpoint.provider_slug);

function expectAppError(run: () => unknown, status: number, pattern: RegExp) {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof AppError, String(error));
    assert.equal(error.status, status);
    assert.match(error.message, pattern);
    return true;
  });
}

describe('attempt planning', () => {
  it('offers an endpoint the snapshot lists twice once, as the later capture', () => {
    // anthropic/claude-haiku-4.5 lists each of its 7 endpoints twice under one id.
    const { planner: p, catalog } = planner({
      providers: { anthropic: { api_key: 'a' }, switchyard: { enabled: false } },
    });
    const model = catalog.models.find((entry) => entry.id === 'anthropic/claude-haiku-4.5');
    assert.ok(model);
    const anthropic = model.endpoints.filter((endpoint) => endpoint.provider_slug === 'anthropic');
    assert.equal(anthropic.length, 2, 'the snapshot lists the anthropic endpoint twice');
    assert.equal(anthropic[0]?.id, anthropic[1]?.id);
    const plan = p.plan(input({ models: ['anthropic/claude-haiku-4.5'] }));
    assert.deepEqual(slugs(plan), ['anthropic']);
    assert.equal(plan.candidates[0]?.endpoint, anthropic[1], 'the later capture');
  });

  it('offers only endpoints whose provider has credentials', () => {
    const { planner: p } = planner();
    assert.deepEqual(slugs(p.plan(input())).sort(), ['baidu/fp8', 'deepinfra/fp4', 'novita/fp8']);
  });

  it('orders by the inverse square of price by default', () => {
    const { planner: p } = planner({ random: Math.random });
    const firsts = new Map<string, number>();
    for (let run = 0; run < 2000; run += 1) {
      const first = slugs(p.plan(input()))[0]!;
      firsts.set(first, (firsts.get(first) ?? 0) + 1);
    }
    // Weights 1/p²: baidu 3.21, novita 0.309, deepinfra 0.066 (per 1e12) → baidu first ~89% of the time.
    const share = (firsts.get('baidu/fp8') ?? 0) / 2000;
    assert.ok(share > 0.85 && share < 0.93, `baidu first in ${share}`);
    assert.ok((firsts.get('novita/fp8') ?? 0) > (firsts.get('deepinfra/fp4') ?? 0));
  });

  it('applies only, ignore, order, sort and allow_fallbacks', () => {
    const { planner: p } = planner();
    assert.deepEqual(slugs(p.plan(input({ provider: { only: ['novita', 'DeepInfra'] } }))).sort(), [
      'deepinfra/fp4',
      'novita/fp8',
    ]);
    assert.deepEqual(slugs(p.plan(input({ provider: { ignore: ['baidu'] } }))).sort(), [
      'deepinfra/fp4',
      'novita/fp8',
    ]);
    assert.deepEqual(slugs(p.plan(input({ provider: { sort: 'price' } }))), [
      'baidu/fp8',
      'novita/fp8',
      'deepinfra/fp4',
    ]);
    assert.deepEqual(slugs(p.plan(input({ provider: { order: ['deepinfra', 'novita'], sort: 'price' } }))), [
      'deepinfra/fp4',
      'novita/fp8',
      'baidu/fp8',
    ]);
    assert.deepEqual(
      slugs(p.plan(input({ provider: { order: ['deepinfra', 'novita'], allow_fallbacks: false } }))),
      ['deepinfra/fp4', 'novita/fp8'],
    );
    assert.equal(p.plan(input({ provider: { allow_fallbacks: false } })).candidates.length, 1);
  });

  it('filters by data policy, quantization, max output and required parameters', () => {
    const { planner: p } = planner();
    assert.deepEqual(slugs(p.plan(input({ provider: { data_collection: 'deny', sort: 'price' } }))), [
      'novita/fp8',
      'deepinfra/fp4',
    ]);
    assert.deepEqual(slugs(p.plan(input({ provider: { zdr: true, sort: 'price' } }))), [
      'novita/fp8',
      'deepinfra/fp4',
    ]);
    assert.deepEqual(slugs(p.plan(input({ provider: { quantizations: ['fp4'] } }))), ['deepinfra/fp4']);
    const long = input({
      request: { ...input().request!, maxOutputTokens: 20_000 },
      provider: { sort: 'price' },
    });
    assert.deepEqual(slugs(p.plan(long)), ['baidu/fp8', 'novita/fp8']);
    const seeded = input({
      request: { ...input().request!, seed: 7 },
      provider: { require_parameters: true },
    });
    for (const candidate of p.plan(seeded).candidates) {
      assert.ok(candidate.endpoint.supported_parameters.includes('seed'));
    }
  });

  it('treats max_price as a hard filter and says why nothing is left', () => {
    const { planner: p } = planner();
    assert.deepEqual(slugs(p.plan(input({ provider: { max_price: { prompt: 0.5 } } }))), ['baidu/fp8']);
    expectAppError(
      () => p.plan(input({ provider: { max_price: { prompt: 0.01 } } })),
      404,
      /No endpoints available for deepseek\/deepseek-v4-pro: 3 excluded by provider\.max_price/,
    );
  });

  it('refuses unknown models and says which field named them', () => {
    const { planner: p } = planner();
    expectAppError(
      () => p.plan(input({ models: ['nobody/nothing'] })),
      400,
      /body\.model names an unknown model/,
    );
    expectAppError(() => p.plan(input({ models: [MODEL, 'nobody/nothing'] })), 400, /body\.models\[0\]/);
  });

  it('explains a model whose providers have no credentials', () => {
    const { planner: p } = planner({ providers: { switchyard: { enabled: false } } });
    expectAppError(() => p.plan(input()), 404, /no credentials are configured/);
  });

  it('keeps fallback models as fallbacks unless the partition is none', () => {
    const { planner: p } = planner({ providers: { ...credentials, streamlake: { api_key: 's' } } });
    // Both models on baidu and streamlake; every z-ai/glm-5.2 endpoint is dearer than deepseek's.
    const models = ['z-ai/glm-5.2', MODEL];
    const only = ['baidu', 'streamlake'];
    const ids = (plan: { candidates: Array<{ model: { id: string } }> }) =>
      plan.candidates.map((c) => c.model.id);
    const byModel = p.plan(input({ models, provider: { only, sort: 'price' } }));
    assert.equal(byModel.strategy, 'fallback');
    assert.deepEqual(ids(byModel), ['z-ai/glm-5.2', 'z-ai/glm-5.2', MODEL, MODEL]);
    const global = p.plan(input({ models, provider: { only, sort: { by: 'price', partition: 'none' } } }));
    assert.deepEqual(ids(global), [MODEL, MODEL, 'z-ai/glm-5.2', 'z-ai/glm-5.2']);
  });

  it('moves cooling-down endpoints behind healthy ones and the session endpoint ahead', () => {
    const { planner: p, health, now } = planner();
    const baidu = p.plan(input({ provider: { sort: 'price' } })).candidates[0]!.endpoint;
    health.record(baidu.id, { ok: false, endpointFault: true, retryAfterSeconds: null });
    assert.deepEqual(slugs(p.plan(input({ provider: { sort: 'price' } }))), [
      'novita/fp8',
      'deepinfra/fp4',
      'baidu/fp8',
    ]);
    assert.equal(slugs(p.plan(input()))[2], 'baidu/fp8');
    now.value += 31_000;
    assert.equal(slugs(p.plan(input({ provider: { sort: 'price' } })))[0], 'baidu/fp8');
    const deepinfra = p.plan(input({ provider: { quantizations: ['fp4'] } })).candidates[0]!.endpoint;
    assert.equal(slugs(p.plan(input({ stickyEndpointId: deepinfra.id })))[0], 'deepinfra/fp4');
  });

  it('sends a request for images only to models that make them, and names modalities when one does not', () => {
    const { planner: p } = planner({
      providers: { 'google-ai-studio': { api_key: 'g' }, ...credentials },
    });
    const asking = (outputModalities: Array<'text' | 'image'>, models: string[]) =>
      input({
        models,
        request: { ...input().request!, outputModalities },
      });
    expectAppError(
      () => p.plan(asking(['text', 'image'], [MODEL])),
      400,
      /^Invalid request parameters: body\.modalities asks for image output, which model "deepseek\/deepseek-v4-pro" does not produce$/,
    );
    // Every model of a fallback list must make them, as every one must make text otherwise.
    expectAppError(
      () => p.plan(asking(['image'], ['google/gemini-2.5-flash-image', MODEL])),
      400,
      /body\.modalities asks for image output, which model "deepseek\/deepseek-v4-pro"/,
    );
    assert.deepEqual(slugs(p.plan(asking(['image'], ['google/gemini-2.5-flash-image']))), [
      'google-ai-studio',
    ]);
    // An image model still answers text.
    assert.deepEqual(slugs(p.plan(asking(['text'], ['google/gemini-2.5-flash-image']))), [
      'google-ai-studio',
    ]);
  });

  it('refuses a text request for an embeddings model', () => {
    const { planner: p } = planner({ providers: {} });
    expectAppError(() => p.plan(input({ models: ['switchyard/embed'] })), 400, /does not produce text/);
    assert.equal(
      slugs(p.plan(input({ models: ['switchyard/embed'], outputKind: 'embeddings' })))[0],
      'switchyard',
    );
  });
});
