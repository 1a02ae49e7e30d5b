import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { buildCatalogue, expectedIds, type Query, queryString, readSnapshot, SORTS } from './oracle.js';

const snapshot = readSnapshot();
const catalogue = buildCatalogue(snapshot);
const allIds = snapshot.models.map((model) => model.id);

/** Filters paired with the sorts: one narrows by capability, one widens the modality default. */
const FILTERS: Query[] = [
  { supported_parameters: 'tools', zdr: 'true' },
  { output_modalities: 'all', q: 'gemini' },
];

describe('GET /models?sort=…, against the oracle', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(() => gateway.close());

  async function listIds(query: Query): Promise<string[]> {
    const response = await gateway.request('GET', `/api/v1/models${queryString(query)}`, { key: null });
    assert.equal(response.status, 200, response.text);
    return response.body.data.map((model: { id: string }) => model.id);
  }

  for (const sort of SORTS) {
    describe(sort, () => {
      it('unfiltered: the whole catalogue in the oracle order', async () => {
        const expected = expectedIds(catalogue, { sort });
        assert.equal(expected.length, allIds.length);
        // models.json is already newest first, so `newest` keeps the catalogue order here
        // (catalog-config.test.ts sorts config models with other dates).
        if (sort === 'newest') assert.deepEqual(expected, allIds);
        else assert.notDeepEqual(expected, allIds, 'the sort changes the catalogue order');
        assert.deepEqual(await listIds({ sort }), expected);
      });

      for (const filter of FILTERS) {
        it(`with ${queryString(filter)}`, async () => {
          const query = { ...filter, sort };
          const expected = expectedIds(catalogue, query);
          assert.ok(expected.length > 1);
          assert.deepEqual(await listIds(query), expected);
        });
      }
    });
  }

  it('the data exercises ties and missing keys', () => {
    // Models without a price (routers, -1) come last for both price orders, in catalogue order.
    const low = expectedIds(catalogue, { sort: 'pricing-low-to-high' });
    const high = expectedIds(catalogue, { sort: 'pricing-high-to-low' });
    const unpriced = snapshot.models
      .filter((model) => model.pricing.prompt.startsWith('-') || model.pricing.completion.startsWith('-'))
      .map((model) => model.id);
    assert.ok(unpriced.length > 1);
    assert.deepEqual(low.slice(-unpriced.length), unpriced);
    assert.deepEqual(high.slice(-unpriced.length), unpriced);
    // Free models tie at 0 and keep catalogue order at the head of pricing-low-to-high.
    const free = snapshot.models
      .filter((model) => model.pricing.prompt === '0' && model.pricing.completion === '0')
      .map((model) => model.id);
    assert.ok(free.length > 1);
    assert.deepEqual(low.slice(0, free.length), free);
    // Models without an intelligence index trail in catalogue order.
    const noIndex = snapshot.models
      .filter((model) => typeof model.benchmarks?.artificial_analysis?.intelligence_index !== 'number')
      .map((model) => model.id);
    assert.deepEqual(
      expectedIds(catalogue, { sort: 'intelligence-high-to-low' }).slice(-noIndex.length),
      noIndex,
    );
  });

  it('sort is read case-insensitively', async () => {
    assert.deepEqual(await listIds({ sort: 'Newest' }), expectedIds(catalogue, { sort: 'newest' }));
  });
});
