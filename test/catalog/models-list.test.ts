import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fixedClock } from '../../src/platform/clock.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import {
  buildCatalogue,
  CATEGORIES,
  expectedIds,
  perMillionText,
  type Query,
  queryString,
  readSnapshot,
} from './oracle.js';

const NOW = new Date('2026-11-01T00:00:00Z');
const snapshot = readSnapshot();
const catalogue = buildCatalogue(snapshot);
const allIds = snapshot.models.map((model) => model.id);

/** The top-level fields of spec 2.2, in the order docs/catalog.md fixes. */
const MODEL_FIELDS = [
  'id',
  'canonical_slug',
  'name',
  'description',
  'created',
  'context_length',
  'architecture',
  'pricing',
  'top_provider',
  'per_request_limits',
  'supported_parameters',
  'supported_voices',
  'default_parameters',
  'knowledge_cutoff',
  'expiration_date',
  'links',
];

/** The list element docs/catalog.md describes for one snapshot model. */
function expectedElement(model: any) {
  const pricing: Record<string, string> = {
    prompt: model.pricing.prompt ?? '0',
    completion: model.pricing.completion ?? '0',
    image: model.pricing.image ?? '0',
    request: model.pricing.request ?? '0',
  };
  for (const [key, value] of Object.entries(model.pricing)) {
    if (!(key in pricing) && typeof value === 'string') pricing[key] = value;
  }
  return {
    id: model.id,
    canonical_slug: model.canonical_slug,
    name: model.name,
    description: model.description,
    created: model.created,
    context_length: model.context_length,
    architecture: {
      input_modalities: model.architecture.input_modalities,
      output_modalities: model.architecture.output_modalities,
      modality: model.architecture.modality,
      tokenizer: model.architecture.tokenizer,
      instruct_type: model.architecture.instruct_type,
    },
    pricing,
    top_provider: model.top_provider,
    per_request_limits: model.per_request_limits,
    supported_parameters: model.supported_parameters,
    supported_voices: model.supported_voices,
    default_parameters: model.default_parameters,
    knowledge_cutoff: model.knowledge_cutoff,
    expiration_date: model.expiration_date,
    links: { details: `/api/v1/models/${model.canonical_slug}/endpoints` },
  };
}

describe('GET /models: the list and its filters, against the oracle', () => {
  const clock = fixedClock(NOW);
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp({ clock });
  });
  after(() => gateway.close());

  async function listIds(query: Query): Promise<string[]> {
    const response = await gateway.request('GET', `/api/v1/models${queryString(query)}`, { key: null });
    assert.equal(response.status, 200, response.text);
    assert.ok(Array.isArray(response.body.data), response.text.slice(0, 200));
    return response.body.data.map((model: { id: string }) => model.id);
  }

  /**
   * The answer equals the oracle's ids in the same order. `nonEmpty` demands that the oracle finds
   * something (so the test can fail), `narrows` that the filter drops at least one model.
   */
  async function check(query: Query, options: { nonEmpty?: boolean; narrows?: boolean } = {}) {
    const expected = expectedIds(catalogue, query, NOW);
    if (options.nonEmpty ?? true)
      assert.ok(expected.length > 0, `the oracle finds models for ${queryString(query)}`);
    if (options.narrows ?? true) assert.ok(expected.length < allIds.length, 'the filter drops some models');
    assert.deepEqual(await listIds(query), expected, queryString(query));
    return expected;
  }

  it('unfiltered: every model of models.json, in file order, no key needed', async () => {
    const response = await gateway.request('GET', '/api/v1/models', { key: null });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(Object.keys(response.body), ['data']);
    assert.deepEqual(
      response.body.data.map((model: { id: string }) => model.id),
      allIds,
    );
    // The oracle agrees: the default output_modalities=text keeps every model (all have text output).
    assert.deepEqual(expectedIds(catalogue, {}, NOW), allIds);
  });

  it('each element has exactly the fields of spec 2.2, in the documented order, with the snapshot values', async () => {
    const response = await gateway.request('GET', '/api/v1/models', { key: null });
    assert.equal(response.body.data.length, snapshot.models.length);
    snapshot.models.forEach((model, index) => {
      const element = response.body.data[index];
      const expected = expectedElement(model);
      assert.deepEqual(Object.keys(element), MODEL_FIELDS, model.id);
      assert.deepEqual(element, expected, model.id);
      assert.deepEqual(
        Object.keys(element.pricing),
        Object.keys(expected.pricing),
        `${model.id} pricing order`,
      );
      assert.deepEqual(Object.keys(element.architecture).sort(), Object.keys(expected.architecture).sort());
      assert.equal('overrides' in element.pricing, false);
      assert.equal(typeof element.created, 'number');
      assert.equal(Number.isInteger(element.created), true);
      for (const value of Object.values(element.pricing)) assert.equal(typeof value, 'string');
    });
    // Models without image/request prices get "0"; at least one such model exists.
    assert.ok(snapshot.models.some((model) => model.pricing.image === undefined));
    assert.ok(snapshot.models.some((model) => model.pricing.overrides !== undefined));
  });

  it('links.details of every model answers 200 with a key', async () => {
    const response = await gateway.request('GET', '/api/v1/models', { key: null });
    const details: string[] = response.body.data.map((model: any) => model.links.details);
    for (let start = 0; start < details.length; start += 20) {
      const batch = details.slice(start, start + 20);
      const answers = await Promise.all(batch.map((path) => gateway.request('GET', path, {})));
      answers.forEach((answer, index) => {
        assert.equal(answer.status, 200, `${batch[index]}: ${answer.text.slice(0, 200)}`);
        assert.ok(Array.isArray(answer.body.data.endpoints), batch[index]);
      });
    }
  });

  it('every category is non-empty; EU and ZDR are non-empty', () => {
    // Five categories (marketing, marketing/seo, legal, finance, health) match no keyword of the
    // bundled snapshot: their models come from the strong-generalist rule of docs/catalog.md.
    for (const category of Object.keys(CATEGORIES)) {
      assert.ok(expectedIds(catalogue, { category }, NOW).length > 0, category);
    }
    const keywords =
      /marketing|copywriting|advertising|brand|\bseo\b|search engine|legal|\blaw\b|contract|compliance|financ|accounting|trading|banking|health|medical|clinical/i;
    assert.equal(
      snapshot.models.some((model) => keywords.test(`${model.name} ${model.description}`)),
      false,
    );
    assert.ok(expectedIds(catalogue, { region: 'eu' }, NOW).length > 0);
    assert.ok(expectedIds(catalogue, { zdr: 'true' }, NOW).length > 0);
  });

  describe('category', () => {
    for (const category of Object.keys(CATEGORIES)) {
      it(`category=${category}`, async () => {
        await check({ category });
      });
    }
    it('category is case-insensitive', async () => {
      await check({ category: 'Programming' });
    });
  });

  it('supported_parameters with one name', async () => {
    await check({ supported_parameters: 'tools' });
  });

  it('supported_parameters with two names (every one must be supported)', async () => {
    const both = await check({ supported_parameters: 'tools,structured_outputs' });
    const one = expectedIds(catalogue, { supported_parameters: 'tools' }, NOW);
    assert.ok(both.length < one.length);
  });

  it('comma lists are trimmed and lowercased, empty items dropped', async () => {
    const outputs = await check({ output_modalities: 'IMAGE, ' });
    assert.deepEqual(outputs, expectedIds(catalogue, { output_modalities: 'image' }, NOW));
    const inputs = await check({ input_modalities: 'Image , FILE' });
    assert.deepEqual(inputs, expectedIds(catalogue, { input_modalities: 'image,file' }, NOW));
    const messy = await check({ supported_parameters: ' Tools ,, STRUCTURED_OUTPUTS ,' });
    assert.deepEqual(
      messy,
      expectedIds(catalogue, { supported_parameters: 'tools,structured_outputs' }, NOW),
    );
  });

  describe('output_modalities', () => {
    it('image', async () => {
      await check({ output_modalities: 'image' });
    });
    it('audio', async () => {
      await check({ output_modalities: 'audio' });
    });
    it('text,image (any listed modality)', async () => {
      await check({ output_modalities: 'text,image' }, { narrows: false });
    });
    it('all', async () => {
      const ids = await check({ output_modalities: 'all' }, { narrows: false });
      assert.deepEqual(ids, allIds);
    });
    it('embeddings (no model of the snapshot outputs embeddings)', async () => {
      const ids = await check({ output_modalities: 'embeddings' }, { nonEmpty: false });
      assert.deepEqual(ids, []);
    });
  });

  it('input_modalities=image,file (every listed modality)', async () => {
    const both = await check({ input_modalities: 'image,file' });
    assert.ok(both.length < expectedIds(catalogue, { input_modalities: 'image' }, NOW).length);
  });

  describe('q', () => {
    it('a substring of the name', async () => {
      await check({ q: 'Llama' });
    });
    it('trimmed and case-insensitive', async () => {
      const ids = await check({ q: '  CLAUDE ' });
      assert.deepEqual(ids, expectedIds(catalogue, { q: 'claude' }, NOW));
    });
    it('a substring of the canonical slug only', async () => {
      const ids = await check({ q: '20260721' });
      for (const id of ids) {
        const model = snapshot.models.find((candidate) => candidate.id === id);
        assert.ok(model.canonical_slug.includes('20260721'));
      }
    });
    it('an empty q is no filter', async () => {
      await check({ q: '  ' }, { narrows: false });
    });
  });

  it('context (minimum context length, inclusive)', async () => {
    const ids = await check({ context: '1000000' });
    assert.ok(
      ids.some((id) => snapshot.models.find((model) => model.id === id).context_length === 1_000_000),
      'a model with exactly the bound is kept',
    );
  });

  it('min_price/max_price: exact decimal bounds, inclusive, on the prompt price per million', async () => {
    // 0.00000045/token is 0.45/M exactly, but 0.45e-6 * 1e6 is 0.44999… in floats; 1.027/M becomes
    // 1.0270000000000001: a float computation would drop the models sitting on either bound.
    const ids = await check({ min_price: '0.45', max_price: '1.027' });
    const prices = ids.map((id) =>
      perMillionText(snapshot.models.find((model) => model.id === id).pricing.prompt),
    );
    assert.ok(prices.includes('0.45'), 'a model priced exactly at min_price is kept');
    assert.ok(prices.includes('1.027'), 'a model priced exactly at max_price is kept');
  });

  it('min_price=0 drops the models without a price (-1); max_price=0 keeps the free ones', async () => {
    const priced = await check({ min_price: '0' });
    assert.equal(priced.includes('openrouter/auto'), false);
    const free = await check({ max_price: '0' });
    assert.ok(free.some((id) => id.endsWith(':free')));
    assert.equal(free.includes('openrouter/auto'), false);
  });

  it('min_output_price/max_output_price on the completion price per million', async () => {
    const ids = await check({ min_output_price: '0.9', max_output_price: '2.55' });
    const prices = ids.map((id) =>
      perMillionText(snapshot.models.find((model) => model.id === id).pricing.completion),
    );
    assert.ok(prices.includes('0.9'));
    assert.ok(prices.includes('2.55'));
  });

  it('arch=Llama matches Llama2/3/4', async () => {
    const ids = await check({ arch: 'Llama' });
    const tokenizers = new Set(
      ids.map((id) => snapshot.models.find((model) => model.id === id).architecture.tokenizer),
    );
    assert.deepEqual([...tokenizers].sort(), ['Llama2', 'Llama3', 'Llama4']);
  });

  it('arch=gpt (case-insensitive)', async () => {
    await check({ arch: 'gpt' });
  });

  it('model_authors with two authors (case-insensitive, ~ aliases count for their author)', async () => {
    const ids = await check({ model_authors: 'anthropic,Meta-Llama' });
    assert.ok(ids.some((id) => id.startsWith('anthropic/')));
    assert.ok(ids.some((id) => id.startsWith('meta-llama/')));
    assert.ok(ids.some((id) => id.startsWith('~anthropic/')));
  });

  it('providers with a provider name and a provider slug', async () => {
    const ids = await check({ providers: 'Amazon Bedrock (EU),groq' });
    const byName = expectedIds(catalogue, { providers: 'Amazon Bedrock (EU)' }, NOW);
    const bySlug = expectedIds(catalogue, { providers: 'groq' }, NOW);
    assert.ok(byName.length > 0 && bySlug.length > 0);
    assert.ok(ids.length > byName.length && ids.length > bySlug.length);
    await check({ providers: 'Amazon Bedrock (EU)' });
    await check({ providers: 'GROQ' });
  });

  it('providers matches the slug part before "/" (google-vertex/europe → google-vertex)', async () => {
    await check({ providers: 'google-vertex' });
  });

  it('distillable=true', async () => {
    await check({ distillable: 'true' });
  });

  it('distillable=false', async () => {
    const ids = await check({ distillable: 'false' });
    assert.equal(ids.length + expectedIds(catalogue, { distillable: 'true' }, NOW).length, allIds.length);
  });

  it('zdr=true', async () => {
    await check({ zdr: 'true' });
  });

  it('region=eu', async () => {
    await check({ region: 'eu' });
  });

  describe('age (fixed clock 2026-11-01)', () => {
    it('min_age_days and max_age_days together', async () => {
      await check({ min_age_days: '90', max_age_days: '100' });
    });
    it('min_age_days alone', async () => {
      await check({ min_age_days: '365' });
    });
    it('max_age_days alone', async () => {
      await check({ max_age_days: '100' });
    });
    it('ages follow the clock: the same query a month later answers for the new day', async () => {
      const query = { max_age_days: '100' };
      const later = new Date(NOW.getTime() + 30 * 86_400_000);
      const today = await check(query);
      const aMonthLater = expectedIds(catalogue, query, later);
      assert.ok(aMonthLater.length < today.length, 'the oracle drops models that aged past the bound');
      clock.set(later);
      try {
        assert.deepEqual(await listIds(query), aMonthLater);
      } finally {
        clock.set(NOW);
      }
      assert.deepEqual(await listIds(query), today);
    });
    it('a bound equal to a model age is inclusive', async () => {
      const model = snapshot.models[0];
      const age = Math.floor((NOW.getTime() - model.created * 1000) / 86_400_000);
      const ids = await check({ min_age_days: String(age), max_age_days: String(age) });
      assert.ok(ids.includes(model.id));
    });
  });

  describe('benchmark index bounds', () => {
    it('min_intelligence_index/max_intelligence_index', async () => {
      await check({ min_intelligence_index: '40', max_intelligence_index: '60' });
    });
    it('min_coding_index/max_coding_index', async () => {
      await check({ min_coding_index: '30', max_coding_index: '50' });
    });
    it('min_agentic_index/max_agentic_index', async () => {
      await check({ min_agentic_index: '20', max_agentic_index: '40' });
    });
    it('a single bound drops the models without the index', async () => {
      const ids = await check({ min_intelligence_index: '0' });
      assert.ok(ids.length < allIds.length);
    });
  });

  it('tool success rate bounds (no model of the snapshot has tool calls: nothing passes)', async () => {
    await check({ min_tool_success_rate: '0', max_tool_success_rate: '1' }, { nonEmpty: false });
    await check({ min_tool_success_rate: '0.5' }, { nonEmpty: false });
    await check({ max_tool_success_rate: '1' }, { nonEmpty: false });
  });

  it('five filters combined', async () => {
    const query = {
      category: 'programming',
      supported_parameters: 'tools',
      zdr: 'true',
      max_price: '1',
      context: '100000',
    };
    const ids = await check(query);
    for (const single of Object.entries(query)) {
      assert.ok(ids.length < expectedIds(catalogue, Object.fromEntries([single]), NOW).length, single[0]);
    }
  });

  it('filters and a sort combined', async () => {
    await check({ output_modalities: 'all', input_modalities: 'image', sort: 'pricing-low-to-high' });
  });
});
