import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';

describe('Workspaces refuse bad input with a 4xx that names the field and the rule, and change nothing', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
    const created = await gateway.request('POST', '/api/v1/workspaces', {
      body: { name: 'Taken', slug: 'taken' },
    });
    assert.equal(created.status, 200);
    const other = await gateway.request('POST', '/api/v1/workspaces', {
      body: { name: 'Other', slug: 'other' },
    });
    assert.equal(other.status, 200);
  });
  after(() => gateway.close());

  async function snapshot() {
    return JSON.stringify(
      await gateway.services.storage.db.selectFrom('workspaces').selectAll().orderBy('id').execute(),
    );
  }

  const valid = { name: 'Fine', slug: 'fine' };
  const cases: Array<[string, unknown, RegExp]> = [
    ['missing name', { slug: 'x' }, /body\.name/],
    ['missing slug', { name: 'x' }, /body\.slug/],
    ['empty name', { ...valid, name: '' }, /body\.name must NOT have fewer than 1 characters/],
    ['101-character name', { ...valid, name: 'n'.repeat(101) }, /body\.name must NOT have more than 100/],
    ['NUL in name', { ...valid, name: 'a\u0000b' }, /body\.name must not contain NUL characters/],
    ['a blank name', { ...valid, name: '  ' }, /body\.name must not be blank \(whitespace only\)/],
    ['empty slug', { ...valid, slug: '' }, /body\.slug/],
    ['51-character slug', { ...valid, slug: 's'.repeat(51) }, /body\.slug must NOT have more than 50/],
    ['slug in upper case', { ...valid, slug: 'Prod' }, /body\.slug must match pattern/],
    ['slug with a double hyphen', { ...valid, slug: 'a--b' }, /body\.slug must match pattern/],
    ['slug with a trailing hyphen', { ...valid, slug: 'prod-' }, /body\.slug must match pattern/],
    ['slug with a space', { ...valid, slug: 'my prod' }, /body\.slug must match pattern/],
    [
      'slug shaped like a UUID',
      { ...valid, slug: '0df9e665-d932-4740-b2c7-b52af166bc11' },
      /body\.slug must not be shaped like a UUID/,
    ],
    ['501-character description', { ...valid, description: 'd'.repeat(501) }, /body\.description/],
    [
      'unknown default_provider_sort',
      { ...valid, default_provider_sort: 'cheapest' },
      /body\.default_provider_sort must be one of: price, throughput, latency, exacto/,
    ],
    [
      'sampling rate 0',
      { ...valid, io_logging_sampling_rate: 0 },
      /body\.io_logging_sampling_rate must be >= 0\.0001/,
    ],
    [
      'sampling rate above 1',
      { ...valid, io_logging_sampling_rate: 1.5 },
      /body\.io_logging_sampling_rate must be <= 1/,
    ],
    [
      'sampling rate as a string',
      { ...valid, io_logging_sampling_rate: '0.5' },
      /body\.io_logging_sampling_rate/,
    ],
    [
      'io_logging_api_key_ids not an array',
      { ...valid, io_logging_api_key_ids: 'all' },
      /body\.io_logging_api_key_ids/,
    ],
    [
      'io_logging_api_key_ids with a non-hash',
      { ...valid, io_logging_api_key_ids: [12] },
      /body\.io_logging_api_key_ids/,
    ],
    [
      'a boolean as a string',
      { ...valid, is_data_discount_logging_enabled: 'yes' },
      /body\.is_data_discount_logging_enabled/,
    ],
    [
      '201-character default model',
      { ...valid, default_text_model: 'm'.repeat(201) },
      /body\.default_text_model/,
    ],
    ['unknown field', { ...valid, budget: 5 }, /body\.budget is not a known field/],
  ];

  for (const [label, body, pattern] of cases) {
    it(`create: ${label}`, async () => {
      const before = await snapshot();
      const message = expectError(await gateway.request('POST', '/api/v1/workspaces', { body }), 400);
      assert.match(message, pattern);
      assert.equal(await snapshot(), before);
    });
  }

  it('a 500-character description is accepted (the boundary)', async () => {
    const created = await gateway.request('POST', '/api/v1/workspaces', {
      body: { name: 'Long', slug: 'long', description: 'd'.repeat(500), io_logging_sampling_rate: 0.0001 },
    });
    assert.equal(created.status, 200);
    assert.equal(created.body.data.description.length, 500);
  });

  it('a duplicate slug is a 409 on create and on update', async () => {
    const before = await snapshot();
    const message = expectError(
      await gateway.request('POST', '/api/v1/workspaces', { body: { name: 'Again', slug: 'taken' } }),
      409,
    );
    assert.match(message, /slug "taken" already exists/);
    const patched = expectError(
      await gateway.request('PATCH', '/api/v1/workspaces/other', { body: { slug: 'taken' } }),
      409,
    );
    assert.match(patched, /slug "taken" already exists/);
    assert.equal(await snapshot(), before);
  });

  it('update: the same rules, an empty body, and a malformed body', async () => {
    const before = await snapshot();
    const patch = (body: unknown) => gateway.request('PATCH', '/api/v1/workspaces/other', { body });
    assert.match(expectError(await patch({ slug: 'Not-Valid' }), 400), /body\.slug must match pattern/);
    assert.match(
      expectError(await patch({ slug: 'a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d' }), 400),
      /body\.slug must not be shaped like a UUID/,
    );
    assert.match(expectError(await patch({ description: 'x'.repeat(501) }), 400), /body\.description/);
    assert.match(expectError(await patch({ io_logging_sampling_rate: 0 }), 400), /io_logging_sampling_rate/);
    assert.match(expectError(await patch({ name: '' }), 400), /body\.name/);
    assert.match(expectError(await patch({ name: null }), 400), /body\.name/);
    assert.match(expectError(await patch({}), 400), /body must NOT have fewer than 1 properties/);
    assert.match(expectError(await patch({ id: 'x' }), 400), /body\.id is not a known field/);
    const malformed = await gateway.request('PATCH', '/api/v1/workspaces/other', {
      rawBody: '{"name":',
      headers: { 'content-type': 'application/json' },
    });
    expectError(malformed, 400);
    assert.equal(await snapshot(), before);
  });

  it('list parameters: limit 0 or 101, a negative offset, a non-integer limit', async () => {
    for (const query of ['limit=0', 'limit=101', 'offset=-1', 'limit=ten', 'limit=1.5', 'page=2']) {
      const message = expectError(await gateway.request('GET', `/api/v1/workspaces?${query}`), 400);
      assert.match(message, /querystring\.(limit|offset|page)/, query);
    }
    assert.equal((await gateway.request('GET', '/api/v1/workspaces?limit=100&offset=0')).status, 200);
    assert.equal((await gateway.request('GET', '/api/v1/workspaces?limit=1')).status, 200);
  });

  it('a NUL character in the path is a 400, not a database error', async () => {
    expectError(await gateway.request('GET', '/api/v1/workspaces/a%00b'), 400);
  });
});
