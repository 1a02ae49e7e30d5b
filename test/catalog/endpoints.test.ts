import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';
import {
  buildCatalogue,
  expectedEndpointRecord,
  expectedEndpointsOfSlug,
  expectedZdrEndpoints,
  expectedZdrRecord,
  readSnapshot,
} from './oracle.js';

const snapshot = readSnapshot();
const catalogue = buildCatalogue(snapshot);

const ENDPOINT_FIELDS = [
  'name',
  'model_id',
  'model_name',
  'provider_name',
  'tag',
  'context_length',
  'max_completion_tokens',
  'max_prompt_tokens',
  'pricing',
  'quantization',
  'supported_parameters',
  'supports_implicit_caching',
  'status',
  'uptime_last_5m',
  'uptime_last_30m',
  'uptime_last_1d',
  'latency_last_30m',
  'throughput_last_30m',
].sort();

const PROVIDER_FIELDS = [
  'name',
  'slug',
  'privacy_policy_url',
  'terms_of_service_url',
  'status_page_url',
  'headquarters',
];

const isIntegerOrNull = (value: unknown) => value === null || Number.isInteger(value);

function assertPercentiles(value: any, label: string) {
  if (value === null) return;
  assert.deepEqual(Object.keys(value).sort(), ['p50', 'p75', 'p90', 'p99'], label);
  for (const key of ['p50', 'p75', 'p90', 'p99'])
    assert.equal(typeof value[key], 'number', `${label}.${key}`);
}

/** Types of an Endpoint record of docs/catalog.md. */
function assertEndpointTypes(record: any) {
  assert.deepEqual(Object.keys(record).sort(), ENDPOINT_FIELDS);
  for (const field of ['name', 'model_id', 'model_name', 'provider_name', 'tag'])
    assert.equal(typeof record[field], 'string', field);
  assert.equal(Number.isInteger(record.context_length), true);
  assert.ok(isIntegerOrNull(record.max_completion_tokens));
  assert.ok(isIntegerOrNull(record.max_prompt_tokens));
  assert.equal(typeof record.pricing.prompt, 'string');
  assert.equal(typeof record.pricing.completion, 'string');
  assert.equal(typeof record.pricing.image, 'string');
  assert.equal(typeof record.pricing.request, 'string');
  assert.equal(typeof record.pricing.discount, 'number');
  assert.ok(record.quantization === null || typeof record.quantization === 'string');
  assert.ok(Array.isArray(record.supported_parameters));
  assert.equal(typeof record.supports_implicit_caching, 'boolean');
  assert.equal(Number.isInteger(record.status), true);
  assertPercentiles(record.latency_last_30m, 'latency_last_30m');
  assertPercentiles(record.throughput_last_30m, 'throughput_last_30m');
}

describe('GET /models/{author}/{slug}/endpoints', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(() => gateway.close());

  const listing = (path: string) => gateway.request('GET', `/api/v1/models/${path}/endpoints`, {});

  /** Checks one answer against the oracle for a canonical slug. */
  function checkListing(body: any, canonicalSlug: string) {
    const sharing = catalogue.models.filter((model) => model.canonical_slug === canonicalSlug);
    assert.ok(sharing.length > 0);
    const data = body.data;
    assert.deepEqual(Object.keys(body), ['data']);
    assert.deepEqual(Object.keys(data).sort(), [
      'architecture',
      'created',
      'description',
      'endpoints',
      'id',
      'name',
    ]);
    assert.equal(data.id, canonicalSlug);
    // Which variant's name/description describe a shared slug is not fixed by the contract: one of them.
    const described = sharing.find((model) => model.name === data.name);
    assert.ok(described, `name ${data.name} is one of ${sharing.map((model) => model.name).join(', ')}`);
    assert.equal(data.created, described.created);
    assert.equal(data.description, described.description);
    assert.deepEqual(data.architecture, described.architecture);
    const rows = expectedEndpointsOfSlug(catalogue, canonicalSlug);
    assert.deepEqual(data.endpoints, rows.map(expectedEndpointRecord), canonicalSlug);
    for (const record of data.endpoints) assertEndpointTypes(record);
    return rows;
  }

  it('a model with a :free variant: by canonical slug, by id and by the :free id, all variants listed', async () => {
    const slug = 'poolside/laguna-s-2.1-20260720';
    for (const path of [slug, 'poolside/laguna-s-2.1', 'poolside/laguna-s-2.1:free']) {
      const response = await listing(path);
      assert.equal(response.status, 200, `${path}: ${response.text}`);
      const rows = checkListing(response.body, slug);
      assert.deepEqual(
        [...new Set(rows.map((row) => row.model))].sort(),
        ['poolside/laguna-s-2.1', 'poolside/laguna-s-2.1:free'],
        'both variants have endpoints',
      );
    }
  });

  it('endpoints without stats, with and without implicit caching, with an image price', async () => {
    const slug = 'google/gemini-3.5-flash-lite-20260721';
    const response = await listing(slug);
    assert.equal(response.status, 200, response.text);
    checkListing(response.body, slug);
    const endpoints = response.body.data.endpoints;
    assert.ok(endpoints.some((record: any) => record.latency_last_30m === null));
    assert.ok(endpoints.some((record: any) => record.throughput_last_30m !== null));
    assert.ok(endpoints.some((record: any) => record.supports_implicit_caching === true));
    assert.ok(endpoints.some((record: any) => record.supports_implicit_caching === false));
    for (const record of endpoints) {
      assert.equal(record.uptime_last_5m, null);
      assert.equal(record.uptime_last_30m, null);
      assert.equal(record.uptime_last_1d, null);
    }
  });

  it('degraded endpoints keep their integer status; null max_completion_tokens stays null', async () => {
    const slug = 'deepseek/deepseek-v4-flash-20260731';
    const response = await listing(slug);
    assert.equal(response.status, 200, response.text);
    checkListing(response.body, slug);
    const endpoints = response.body.data.endpoints;
    assert.ok(endpoints.some((record: any) => record.status < 0));
    assert.ok(endpoints.some((record: any) => record.max_completion_tokens === null));
    assert.ok(endpoints.every((record: any) => typeof record.pricing.request === 'string'));
  });

  it('an alias without endpoints is listed with an empty endpoint list', async () => {
    const response = await listing('~openai/gpt-latest');
    assert.equal(response.status, 200, response.text);
    checkListing(response.body, '~openai/gpt-latest');
    assert.deepEqual(response.body.data.endpoints, []);
  });

  it('every canonical slug of the catalogue lists exactly the oracle endpoints', async () => {
    const slugs = [...new Set(catalogue.models.map((model) => model.canonical_slug))];
    for (let start = 0; start < slugs.length; start += 20) {
      const batch = slugs.slice(start, start + 20);
      const answers = await Promise.all(batch.map((slug) => listing(slug)));
      answers.forEach((answer, index) => {
        assert.equal(answer.status, 200, `${batch[index]}: ${answer.text.slice(0, 200)}`);
        checkListing(answer.body, batch[index]!);
      });
    }
  });

  it('unknown model → 404 in the envelope; endpoints of models missing from models.json are not addressable', async () => {
    expectError(await listing('nobody/nothing'), 404);
    expectError(await listing('openai/gpt-4o-does-not-exist'), 404);
    const orphan = snapshot.endpoints.find(
      (row) =>
        !snapshot.models.some(
          (model) => model.id === row.model || model.canonical_slug === row.model_permaslug,
        ),
    );
    assert.ok(orphan, 'the snapshot has endpoints of hidden models');
    expectError(await listing(orphan.model_permaslug), 404);
  });

  it('needs a key: no key → 401 in the envelope', async () => {
    expectError(
      await gateway.request('GET', '/api/v1/models/poolside/laguna-s-2.1-20260720/endpoints', { key: null }),
      401,
    );
  });
});

describe('GET /endpoints/zdr', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(() => gateway.close());

  it('no key needed: exactly the ZDR endpoints of listed models, in file order, as spec 2.12 records', async () => {
    const response = await gateway.request('GET', '/api/v1/endpoints/zdr', { key: null });
    assert.equal(response.status, 200, response.text.slice(0, 300));
    assert.deepEqual(Object.keys(response.body), ['data']);
    const rows = expectedZdrEndpoints(catalogue);
    assert.ok(rows.length > 0);
    // Hidden models' endpoints are not part of it even when they are ZDR.
    assert.ok(
      snapshot.endpoints.some(
        (row) =>
          !catalogue.models.some((model) => model.id === row.model) &&
          row.data_policy.training === false &&
          row.data_policy.retains_prompts === false,
      ),
    );
    assert.equal(response.body.data.length, rows.length);
    response.body.data.forEach((record: any, index: number) => {
      const row = rows[index];
      assert.deepEqual(record, expectedZdrRecord(row), `${row.id} (${row.model} @ ${row.provider_slug})`);
      assert.deepEqual(Object.keys(record).sort(), ENDPOINT_FIELDS);
      for (const field of [
        'name',
        'model_id',
        'model_name',
        'provider_name',
        'tag',
        'quantization',
        'status',
      ])
        assert.equal(typeof record[field], 'string', field);
      assert.deepEqual(Object.keys(record.pricing).sort(), ['completion', 'image', 'prompt', 'request']);
      for (const value of Object.values(record.pricing)) assert.equal(typeof value, 'string');
      assert.equal(Number.isInteger(record.context_length), true);
      // Spec 2.12: integers, never null, in the ZDR record.
      assert.equal(Number.isInteger(record.max_completion_tokens), true);
      assert.equal(Number.isInteger(record.max_prompt_tokens), true);
      assert.ok(Array.isArray(record.supported_parameters));
      assert.equal(typeof record.supports_implicit_caching, 'boolean');
      assertPercentiles(record.latency_last_30m, 'latency_last_30m');
      assertPercentiles(record.throughput_last_30m, 'throughput_last_30m');
    });
    // Degraded endpoints show their status as a string.
    assert.ok(response.body.data.some((record: any) => record.status !== '0'));
  });
});

describe('GET /providers', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(() => gateway.close());

  it('the providers of providers.json, in file order, with the documented fields', async () => {
    const response = await gateway.request('GET', '/api/v1/providers', {});
    assert.equal(response.status, 200, response.text.slice(0, 300));
    assert.deepEqual(Object.keys(response.body), ['data']);
    assert.equal(response.body.data.length, snapshot.providers.length);
    response.body.data.forEach((record: any, index: number) => {
      const provider = snapshot.providers[index];
      assert.deepEqual(Object.keys(record).sort(), [...PROVIDER_FIELDS].sort());
      assert.deepEqual(
        record,
        Object.fromEntries(PROVIDER_FIELDS.map((field) => [field, provider[field]])),
        provider.slug,
      );
    });
  });

  it('needs a key: no key → 401', async () => {
    expectError(await gateway.request('GET', '/api/v1/providers', { key: null }), 401);
  });
});
