import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { expectError, isolatedDatabase, startTestApp, type TestApp } from '../helpers/test-app.js';
import {
  buildCatalogue,
  CATEGORIES,
  endpointProviderSlug,
  expectedEndpointRecord,
  expectedEndpointsOfSlug,
  expectedIds,
  expectedZdrEndpoints,
  expectedZdrRecord,
  type Query,
  queryString,
  readSnapshot,
  SNAPSHOT_DIR,
  type Snapshot,
} from './oracle.js';

const snapshot = readSnapshot();

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

const ollama = { slug: 'ollama', name: 'Ollama', base_url: 'http://127.0.0.1:11434/v1' };

const localLlama = {
  id: 'local/llama3.2',
  name: 'Local Llama 3.2',
  provider: 'ollama',
  provider_model_id: 'llama3.2',
  context_length: 8192,
  pricing: { prompt: '0', completion: '0' },
  description: 'A small model served on this machine.',
  input_modalities: ['text', 'image'],
  supported_parameters: ['temperature', 'max_tokens'],
  max_completion_tokens: 2048,
  tokenizer: 'Llama3',
  created: 1_780_000_000,
};

/** One config model per category, each described with one keyword of that category only. */
const categoryDescriptions: Record<string, string> = {
  programming: 'Helps with debugging.',
  roleplay: 'Good at storytelling.',
  marketing: 'Writes copywriting drafts.',
  'marketing/seo': 'An SEO assistant.',
  technology: 'Answers technical questions.',
  science: 'A physics tutor.',
  translation: 'Multilingual by design.',
  legal: 'Reviews contracts.',
  finance: 'Does accounting.',
  health: 'Summarises clinical notes.',
  trivia: 'Knows trivia.',
  academia: 'Made for students.',
};
const categoryModels = Object.entries(categoryDescriptions).map(([category, description], index) => ({
  id: `local/helper-${index + 1}`,
  name: `Helper ${index + 1}`,
  provider: 'ollama',
  provider_model_id: `helper-${index + 1}`,
  context_length: 4096,
  pricing: { prompt: '0.0000001', completion: '0.0000002' },
  description,
  category,
}));

/**
 * The snapshot as the oracle should see it once config models are added: each served by one
 * endpoint of its provider. Only what the tested queries read is filled in.
 */
function withConfigModels(base: Snapshot, models: any[], provider: { slug: string; name: string }): Snapshot {
  const extraModels = models.map((model) => ({
    id: model.id,
    canonical_slug: model.id,
    hugging_face_id: null,
    name: model.name,
    created: model.created ?? 0,
    description: model.description ?? '',
    context_length: model.context_length,
    architecture: {
      input_modalities: model.input_modalities ?? ['text'],
      output_modalities: model.output_modalities ?? ['text'],
      tokenizer: model.tokenizer ?? 'Other',
    },
    pricing: model.pricing,
    supported_parameters: model.supported_parameters ?? [],
  }));
  const extraEndpoints = models.map((model) => ({
    model: model.id,
    model_permaslug: model.id,
    provider_slug: provider.slug,
    provider_name: provider.name,
    // Config providers neither train nor retain prompts unless they say so (README).
    data_policy: { training: false, retains_prompts: false },
    provider_region: null,
    stats: null,
  }));
  return {
    ...base,
    models: [...base.models, ...extraModels],
    endpoints: [...base.endpoints, ...extraEndpoints],
  };
}

async function listIds(gateway: TestApp, query: Query): Promise<string[]> {
  const response = await gateway.request('GET', `/api/v1/models${queryString(query)}`, { key: null });
  assert.equal(response.status, 200, response.text.slice(0, 300));
  return response.body.data.map((model: { id: string }) => model.id);
}

describe('catalogue config: providers and models added in config', () => {
  let gateway: TestApp;
  let startedAt: number;
  let readyAt: number;
  const configModels = [localLlama, ...categoryModels.map(({ category: _category, ...model }) => model)];
  const extended = buildCatalogue(withConfigModels(snapshot, configModels, ollama));

  before(async () => {
    startedAt = Date.now();
    gateway = await startTestApp({ config: { catalog: { providers: [ollama], models: configModels } } });
    readyAt = Date.now();
  });
  after(() => gateway.close());

  it('config models come last, in config order, with their fields', async () => {
    const response = await gateway.request('GET', '/api/v1/models', { key: null });
    assert.equal(response.status, 200);
    const data = response.body.data;
    assert.deepEqual(
      data.map((model: { id: string }) => model.id),
      [...snapshot.models.map((model) => model.id), ...configModels.map((model) => model.id)],
    );
    const element = data.find((model: { id: string }) => model.id === 'local/llama3.2');
    assert.deepEqual(Object.keys(element), MODEL_FIELDS);
    assert.equal(element.name, 'Local Llama 3.2');
    assert.equal(element.description, localLlama.description);
    assert.equal(element.created, localLlama.created);
    assert.equal(element.context_length, 8192);
    assert.deepEqual(element.architecture.input_modalities, ['text', 'image']);
    assert.deepEqual(element.architecture.output_modalities, ['text']);
    assert.equal(element.architecture.tokenizer, 'Llama3');
    assert.deepEqual(Object.keys(element.pricing).slice(0, 4), ['prompt', 'completion', 'image', 'request']);
    assert.deepEqual(element.pricing, { prompt: '0', completion: '0', image: '0', request: '0' });
    assert.deepEqual(element.supported_parameters, ['temperature', 'max_tokens']);
    assert.equal(typeof element.canonical_slug, 'string');
    assert.equal(element.links.details, `/api/v1/models/${element.canonical_slug}/endpoints`);

    // Without `created`, a config model is created at load time.
    const helper = data.find((model: { id: string }) => model.id === 'local/helper-1');
    assert.equal(Number.isInteger(helper.created), true);
    assert.ok(helper.created >= Math.floor(startedAt / 1000) && helper.created <= Math.ceil(readyAt / 1000));
    assert.deepEqual(helper.architecture.output_modalities, ['text']);
  });

  it('GET /models/count includes the config models', async () => {
    const count = await gateway.request('GET', '/api/v1/models/count', { key: null });
    assert.equal(count.body.data.count, snapshot.models.length + configModels.length);
  });

  it('/providers lists the config provider after those of providers.json', async () => {
    const response = await gateway.request('GET', '/api/v1/providers', {});
    assert.equal(response.status, 200, response.text.slice(0, 300));
    const slugs = response.body.data.map((provider: { slug: string }) => provider.slug);
    assert.deepEqual(slugs, [...snapshot.providers.map((provider) => provider.slug), 'ollama']);
    const added = response.body.data.at(-1);
    assert.equal(added.name, 'Ollama');
    assert.deepEqual(Object.keys(added).sort(), [
      'headquarters',
      'name',
      'privacy_policy_url',
      'slug',
      'status_page_url',
      'terms_of_service_url',
    ]);
  });

  it('the endpoints listing of a config model shows its provider', async () => {
    const list = await gateway.request('GET', '/api/v1/models', { key: null });
    const element = list.body.data.find((model: { id: string }) => model.id === 'local/llama3.2');
    for (const path of [element.links.details, '/api/v1/models/local/llama3.2/endpoints']) {
      const response = await gateway.request('GET', path, {});
      assert.equal(response.status, 200, `${path}: ${response.text}`);
      const data = response.body.data;
      assert.equal(data.id, element.canonical_slug);
      assert.equal(data.name, 'Local Llama 3.2');
      assert.equal(data.created, localLlama.created);
      assert.equal(data.endpoints.length, 1);
      const endpoint = data.endpoints[0];
      assert.equal(endpoint.provider_name, 'Ollama');
      assert.equal(endpointProviderSlug({ provider_slug: endpoint.tag }), 'ollama');
      assert.equal(endpoint.model_id, element.canonical_slug);
      assert.equal(endpoint.model_name, 'Local Llama 3.2');
      assert.equal(endpoint.name, `Ollama | ${element.canonical_slug}`);
      assert.equal(endpoint.context_length, 8192);
      assert.equal(endpoint.max_completion_tokens, 2048);
      assert.equal(endpoint.pricing.prompt, '0');
      assert.equal(endpoint.pricing.completion, '0');
      assert.equal(endpoint.pricing.image, '0');
      assert.equal(endpoint.pricing.request, '0');
      assert.deepEqual(endpoint.supported_parameters, ['temperature', 'max_tokens']);
      assert.equal(endpoint.latency_last_30m, null);
      assert.equal(endpoint.uptime_last_1d, null);
    }
  });

  it('the filters see config models: providers, model_authors, q, prices', async () => {
    const configIds = configModels.map((model) => model.id);
    assert.deepEqual(await listIds(gateway, { providers: 'ollama' }), configIds);
    assert.deepEqual(await listIds(gateway, { providers: 'Ollama' }), configIds);
    assert.deepEqual(await listIds(gateway, { model_authors: 'local' }), configIds);
    assert.deepEqual(await listIds(gateway, { q: 'local llama' }), ['local/llama3.2']);
    const query = { min_price: '0.1', max_price: '0.1' };
    const ids = await listIds(gateway, query);
    assert.deepEqual(ids, expectedIds(extended, query));
    for (const model of categoryModels) assert.ok(ids.includes(model.id), model.id);
  });

  it('newest places config models by their created time', async () => {
    // The helpers are created at load time (newer than every snapshot model); local/llama3.2 in May 2026.
    const response = await gateway.request('GET', '/api/v1/models', { key: null });
    const created = new Map<string, number>(
      response.body.data.map((model: { id: string; created: number }) => [model.id, model.created]),
    );
    const dated = buildCatalogue(
      withConfigModels(
        snapshot,
        configModels.map((model) => ({ ...model, created: created.get(model.id) })),
        ollama,
      ),
    );
    const expected = expectedIds(dated, { sort: 'newest' });
    assert.deepEqual(
      expected.slice(0, categoryModels.length),
      categoryModels.map((model) => model.id),
    );
    assert.notEqual(expected.at(-1), 'local/llama3.2');
    assert.deepEqual(await listIds(gateway, { sort: 'newest' }), expected);
  });

  it('config endpoints are zero-data-retention by default: /endpoints/zdr and zdr=true include them', async () => {
    const response = await gateway.request('GET', '/api/v1/endpoints/zdr', { key: null });
    assert.equal(response.status, 200);
    const snapshotRows = expectedZdrEndpoints(buildCatalogue(snapshot));
    const records = response.body.data;
    assert.deepEqual(records.slice(0, snapshotRows.length), snapshotRows.map(expectedZdrRecord));
    const added = records.slice(snapshotRows.length);
    assert.deepEqual(
      added.map((record: { model_name: string }) => record.model_name),
      configModels.map((model) => model.name),
    );
    for (const record of added) {
      assert.equal(record.provider_name, 'Ollama');
      assert.equal(typeof record.status, 'string');
      assert.equal(typeof record.quantization, 'string');
      assert.deepEqual(Object.keys(record.pricing).sort(), ['completion', 'image', 'prompt', 'request']);
    }
    const zdr = await listIds(gateway, { zdr: 'true' });
    assert.deepEqual(zdr, expectedIds(extended, { zdr: 'true' }));
    assert.ok(zdr.includes('local/llama3.2'));
  });

  it('every one of the twelve categories has models once config adds them', async () => {
    for (const category of Object.keys(CATEGORIES)) {
      const ids = await listIds(gateway, { category });
      const expected = expectedIds(extended, { category });
      const own = categoryModels.filter((model) => model.category === category).map((model) => model.id);
      assert.ok(
        own.every((id) => expected.includes(id)),
        `the oracle puts the ${category} helper there`,
      );
      assert.deepEqual(ids, expected, category);
      assert.ok(ids.length > 0, category);
    }
  });
});

describe('catalogue config: hidden providers', () => {
  const hidden = ['mistral', 'amazon-bedrock'];
  const full = buildCatalogue(snapshot);
  const catalogue = buildCatalogue(snapshot, hidden);
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp({ config: { catalog: { hidden_providers: hidden } } });
  });
  after(() => gateway.close());

  it('drops the models only hidden providers served; keeps models that never had endpoints', async () => {
    const dropped = full.models.filter((model) => !catalogue.models.includes(model)).map((model) => model.id);
    assert.ok(dropped.length > 0, 'some models were served by hidden providers only');
    const ids = await listIds(gateway, {});
    assert.deepEqual(ids, expectedIds(catalogue, {}));
    for (const id of dropped) assert.equal(ids.includes(id), false, id);
    assert.ok(ids.includes('~openai/gpt-latest'));
    assert.ok(ids.includes('openrouter/auto'));
    const count = await gateway.request('GET', '/api/v1/models/count', { key: null });
    assert.equal(count.body.data.count, ids.length);
  });

  it('removes the hidden providers from /providers', async () => {
    const response = await gateway.request('GET', '/api/v1/providers', {});
    assert.equal(response.status, 200);
    assert.deepEqual(
      response.body.data.map((provider: { slug: string }) => provider.slug),
      snapshot.providers
        .filter((provider) => !hidden.includes(provider.slug))
        .map((provider) => provider.slug),
    );
  });

  it('removes their endpoints from /endpoints/zdr', async () => {
    const response = await gateway.request('GET', '/api/v1/endpoints/zdr', { key: null });
    assert.equal(response.status, 200);
    const rows = expectedZdrEndpoints(catalogue);
    assert.ok(rows.length < expectedZdrEndpoints(full).length);
    assert.deepEqual(response.body.data, rows.map(expectedZdrRecord));
  });

  it('removes their endpoints from the listings; a dropped model is not found', async () => {
    const mixed = catalogue.models.find((model) =>
      snapshot.endpoints.some((row) => row.model === model.id && hidden.includes(endpointProviderSlug(row))),
    );
    assert.ok(mixed, 'a listed model also had endpoints at a hidden provider');
    const response = await gateway.request('GET', `/api/v1/models/${mixed.canonical_slug}/endpoints`, {});
    assert.equal(response.status, 200, response.text);
    const rows = expectedEndpointsOfSlug(catalogue, mixed.canonical_slug);
    assert.ok(rows.length > 0);
    assert.deepEqual(response.body.data.endpoints, rows.map(expectedEndpointRecord));

    const dropped = full.models.find(
      (model) =>
        !catalogue.models.includes(model) &&
        !catalogue.models.some((other) => other.canonical_slug === model.canonical_slug),
    );
    expectError(await gateway.request('GET', `/api/v1/models/${dropped.canonical_slug}/endpoints`, {}), 404);
  });

  it('endpoint-derived filters and sorts ignore hidden endpoints', async () => {
    const queries: Query[] = [
      { region: 'eu' },
      { zdr: 'true' },
      { providers: 'mistral,amazon-bedrock' },
      { providers: 'Amazon Bedrock (EU)' },
      { sort: 'throughput-high-to-low' },
      { sort: 'latency-low-to-high' },
    ];
    assert.ok(expectedIds(catalogue, { region: 'eu' }).length < expectedIds(full, { region: 'eu' }).length);
    for (const query of queries)
      assert.deepEqual(await listIds(gateway, query), expectedIds(catalogue, query));
    assert.deepEqual(await listIds(gateway, { providers: 'mistral,amazon-bedrock' }), []);
  });
});

describe('catalogue config: providers.<slug>.enabled: false hides a provider too', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp({ config: { providers: { mistral: { enabled: false } } } });
  });
  after(() => gateway.close());

  it('the same catalogue as hidden_providers: [mistral]', async () => {
    const catalogue = buildCatalogue(snapshot, ['mistral']);
    assert.ok(catalogue.models.length < snapshot.models.length);
    assert.deepEqual(await listIds(gateway, {}), expectedIds(catalogue, {}));
    const providers = await gateway.request('GET', '/api/v1/providers', {});
    assert.equal(
      providers.body.data.some((provider: { slug: string }) => provider.slug === 'mistral'),
      false,
    );
  });
});

describe('catalogue config: snapshot_dir with tool-call usage', () => {
  let directory: string;
  let modified: Snapshot;
  let gateway: TestApp;
  // Four models of the catalogue get tool-call rows: rates 0.9, 1 (over two rows), 0 and 0.5.
  const [a, b, c, d] = [
    'openai/gpt-4o',
    'anthropic/claude-opus-5',
    'google/gemini-2.5-flash',
    'openai/gpt-4o-mini',
  ];

  before(async () => {
    directory = mkdtempSync(join(tmpdir(), 'switchyard-catalog-'));
    for (const name of ['models.json', 'endpoints.json', 'providers.json'])
      copyFileSync(join(SNAPSHOT_DIR, name), join(directory, name));
    const row = (model: string, date: string, count: number, calls: number, errors: number) => {
      const found = snapshot.models.find((candidate) => candidate.id === model);
      assert.ok(found, model);
      return {
        date: `${date} 00:00:00`,
        model_permaslug: found.canonical_slug,
        variant: 'standard',
        count,
        total_prompt_tokens: 1000,
        total_completion_tokens: 500,
        total_tool_calls: calls,
        requests_with_tool_call_errors: errors,
      };
    };
    const usage = [
      ...snapshot.usage,
      row(a, '2026-07-10', 10, 100, 10),
      row(b, '2026-07-10', 10, 30, 0),
      row(b, '2026-07-11', 10, 20, 0),
      // c becomes by far the most popular model.
      row(c, '2026-07-12', 1_000_000_000_000, 40, 40),
      row(d, '2026-07-12', 10, 10, 5),
    ];
    writeFileSync(join(directory, 'usage-daily.json'), JSON.stringify(usage));
    modified = readSnapshot(directory);
    gateway = await startTestApp({ config: { catalog: { snapshot_dir: directory } } });
  });
  after(async () => {
    await gateway?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('tool success rate bounds reflect the usage rows', async () => {
    const catalogue = buildCatalogue(modified);
    const cases: Array<[Query, string[]]> = [
      [{ min_tool_success_rate: '0.5' }, [a, b, d]],
      [{ max_tool_success_rate: '0.9' }, [a, c, d]],
      [{ min_tool_success_rate: '0.9', max_tool_success_rate: '0.9' }, [a]],
      [{ min_tool_success_rate: '0', max_tool_success_rate: '0' }, [c]],
      [{ min_tool_success_rate: '0.95' }, [b]],
    ];
    const order = (ids: string[]) =>
      snapshot.models.map((model) => model.id).filter((id) => ids.includes(id));
    for (const [query, ids] of cases) {
      const expected = expectedIds(catalogue, query);
      assert.deepEqual(expected, order(ids), `oracle for ${queryString(query)}`);
      assert.deepEqual(await listIds(gateway, query), expected, queryString(query));
    }
  });

  it('most-popular and top-weekly reflect the usage file', async () => {
    const catalogue = buildCatalogue(modified);
    const popular = expectedIds(catalogue, { sort: 'most-popular' });
    assert.equal(popular[0], c);
    assert.deepEqual(await listIds(gateway, { sort: 'most-popular' }), popular);
    assert.deepEqual(
      await listIds(gateway, { sort: 'top-weekly' }),
      expectedIds(catalogue, { sort: 'top-weekly' }),
    );
  });
});

describe('catalogue config: invalid catalogue config stops the start', () => {
  async function startFails(catalog: Record<string, unknown>): Promise<string> {
    const database = isolatedDatabase();
    try {
      let message = '';
      await assert.rejects(
        async () => {
          const gateway = await startTestApp({ config: { catalog }, database });
          await gateway.close();
        },
        (error: Error) => {
          message = error.message;
          return true;
        },
      );
      return message;
    } finally {
      await database.drop();
    }
  }

  it('a model whose provider is unknown', async () => {
    const message = await startFails({
      providers: [ollama],
      models: [{ ...localLlama, provider: 'nowhere' }],
    });
    assert.match(message, /provider/);
    assert.match(message, /nowhere/);
  });

  it('a duplicate model id among config models', async () => {
    const message = await startFails({
      providers: [ollama],
      models: [localLlama, { ...localLlama, name: 'Again' }],
    });
    assert.match(message, /\bid\b/);
    assert.match(message, /local\/llama3\.2/);
  });

  it('a config model id that the snapshot already has', async () => {
    const message = await startFails({
      providers: [ollama],
      models: [{ ...localLlama, id: 'openai/gpt-4o' }],
    });
    assert.match(message, /\bid\b/);
    assert.match(message, /openai\/gpt-4o/);
  });
});
