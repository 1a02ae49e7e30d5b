import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { buildCatalogue, expectedIds, type Query, queryString, readSnapshot } from './oracle.js';

const snapshot = readSnapshot();
const catalogue = buildCatalogue(snapshot);
const modelsById = new Map<string, any>(snapshot.models.map((model) => [model.id, model]));

const RFC822 =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} (GMT|UT|[+-]\d{4})$/;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  parseTagValue: false,
  parseAttributeValue: false,
  isArray: (name) => name === 'item' || name === 'channel' || name === 'rss',
});

/** A raw GET through node:http, which (unlike fetch) leaves the body compressed. */
function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks),
          }),
        );
        response.on('error', reject);
      })
      .on('error', reject);
  });
}

describe('GET /models/count', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(() => gateway.close());

  const cases: Array<[label: string, query: Query]> = [
    ['default', {}],
    ['image', { output_modalities: 'image' }],
    ['audio', { output_modalities: 'audio' }],
    ['all', { output_modalities: 'all' }],
    ['text,image', { output_modalities: 'text,image' }],
    ['embeddings', { output_modalities: 'embeddings' }],
  ];
  for (const [label, query] of cases) {
    it(`${label}: equals the list length and the oracle, no key needed`, async () => {
      const count = await gateway.request('GET', `/api/v1/models/count${queryString(query)}`, { key: null });
      assert.equal(count.status, 200, count.text);
      assert.deepEqual(Object.keys(count.body), ['data']);
      assert.deepEqual(Object.keys(count.body.data), ['count']);
      const list = await gateway.request('GET', `/api/v1/models${queryString(query)}`, { key: null });
      assert.equal(count.body.data.count, list.body.data.length);
      assert.equal(count.body.data.count, expectedIds(catalogue, query).length);
    });
  }

  it('reads only output_modalities: other list filters do not change the count', async () => {
    const count = await gateway.request(
      'GET',
      '/api/v1/models/count?output_modalities=image&category=programming',
      {
        key: null,
      },
    );
    assert.equal(count.status, 200, count.text);
    assert.equal(count.body.data.count, expectedIds(catalogue, { output_modalities: 'image' }).length);
  });
});

describe('GET /models?use_rss=true', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(() => gateway.close());

  async function feed(query: Query) {
    const response = await gateway.request('GET', `/api/v1/models${queryString(query)}`, { key: null });
    assert.equal(response.status, 200, response.text.slice(0, 300));
    assert.match(response.headers.get('content-type') ?? '', /^application\/rss\+xml; charset=utf-8$/i);
    assert.equal(XMLValidator.validate(response.text), true, 'the document is well-formed XML');
    const document = parser.parse(response.text);
    assert.equal(document.rss.length, 1, 'one root rss element');
    const rss = document.rss[0];
    assert.equal(rss['@_version'], '2.0');
    assert.equal(rss.channel.length, 1, 'exactly one channel');
    const channel = rss.channel[0];
    for (const field of ['title', 'link', 'description']) {
      assert.equal(typeof channel[field], 'string', field);
      assert.ok(channel[field].length > 0, `channel ${field} is not empty`);
    }
    assert.match(channel.lastBuildDate, RFC822);
    return { channel, items: (channel.item ?? []) as any[] };
  }

  function checkItems(items: any[], ids: string[], link: (model: any) => string) {
    assert.deepEqual(
      items.map((item) => item.guid['#text']),
      ids,
    );
    items.forEach((item, index) => {
      const model = modelsById.get(ids[index]!);
      assert.equal(item.title, model.name.trim());
      assert.equal(item.link, link(model));
      assert.equal(item.guid['@_isPermaLink'], 'false');
      assert.equal(item.description, model.description.trim());
      assert.match(item.pubDate, RFC822);
      assert.equal(Date.parse(item.pubDate), model.created * 1000, `pubDate of ${model.id}`);
      const author = model.id.split('/')[0].replace(/^~/, '');
      assert.equal(item.category, author);
    });
  }

  it('the unfiltered feed: RSS 2.0, items in list order, links to the endpoints listing', async () => {
    const { items } = await feed({ use_rss: 'true' });
    const ids = expectedIds(catalogue, {});
    assert.equal(items.length, ids.length);
    checkItems(items, ids, (model) => `${gateway.url}/api/v1/models/${model.canonical_slug}/endpoints`);
  });

  it('filters and sort apply: the same selection and order as the JSON list', async () => {
    const query = { supported_parameters: 'tools', zdr: 'true', sort: 'newest' };
    const json = await gateway.request('GET', `/api/v1/models${queryString(query)}`, { key: null });
    const jsonIds = json.body.data.map((model: { id: string }) => model.id);
    const { items } = await feed({ ...query, use_rss: 'true' });
    const expected = expectedIds(catalogue, query);
    assert.ok(expected.length > 1);
    assert.deepEqual(jsonIds, expected);
    checkItems(items, expected, (model) => `${gateway.url}/api/v1/models/${model.canonical_slug}/endpoints`);
  });

  it('use_rss_chat_links=true links to <origin>/chat?models=<id>', async () => {
    const query = { q: 'laguna', use_rss: 'true', use_rss_chat_links: 'true' };
    const { items } = await feed(query);
    const ids = expectedIds(catalogue, { q: 'laguna' });
    assert.ok(
      ids.some((id) => id.includes(':')),
      'a variant id (with ":") is among them',
    );
    // docs/catalog.md writes the link as `<origin>/chat?models=<id>`: the id as it is.
    checkItems(items, ids, (model) => `${gateway.url}/chat?models=${model.id}`);
  });

  it('use_rss=false is the JSON list', async () => {
    const response = await gateway.request('GET', '/api/v1/models?use_rss=false', { key: null });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(response.body.data.length, snapshot.models.length);
  });

  it('XML special characters in names and descriptions are escaped', async () => {
    // morph/morph-v3-fast's description holds "<instruction>…</instruction> <update>…" (and unclosed
    // tags once truncated); meta-llama/llama-3.1-8b-instruct's holds "&".
    const tagged = modelsById.get('morph/morph-v3-fast');
    const ampersand = modelsById.get('meta-llama/llama-3.1-8b-instruct');
    assert.match(tagged.description, /<update>/);
    assert.match(ampersand.description, / & /);
    const { items } = await feed({ model_authors: 'morph,meta-llama', use_rss: 'true' });
    const byId = new Map(items.map((item) => [item.guid['#text'], item]));
    assert.equal(byId.get('morph/morph-v3-fast').description, tagged.description.trim());
    assert.equal(byId.get('meta-llama/llama-3.1-8b-instruct').description, ampersand.description.trim());
  });

  it('an empty selection is still a valid feed with one channel and no item', async () => {
    const { items } = await feed({ output_modalities: 'embeddings', use_rss: 'true' });
    assert.deepEqual(items, []);
  });
});

describe('GET /models: response compression', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(() => gateway.close());

  async function compare(path: string) {
    const identity = await rawGet(`${gateway.url}${path}`, { 'accept-encoding': 'identity' });
    assert.equal(identity.status, 200);
    assert.equal(identity.headers['content-encoding'] ?? 'identity', 'identity');
    const plain = identity.body.toString('utf8');

    const brotli = await rawGet(`${gateway.url}${path}`, { 'accept-encoding': 'br' });
    assert.equal(brotli.status, 200);
    assert.equal(brotli.headers['content-encoding'], 'br');
    assert.equal(brotliDecompressSync(brotli.body).toString('utf8'), plain);
    assert.ok(brotli.body.length < identity.body.length);

    const gzip = await rawGet(`${gateway.url}${path}`, { 'accept-encoding': 'gzip' });
    assert.equal(gzip.status, 200);
    assert.equal(gzip.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(gzip.body).toString('utf8'), plain);
    return plain;
  }

  it('the unfiltered list honours accept-encoding br and gzip', async () => {
    const plain = await compare('/api/v1/models');
    assert.equal(JSON.parse(plain).data.length, snapshot.models.length);
  });

  it('a filtered query honours accept-encoding too', async () => {
    const query = { supported_parameters: 'tools', sort: 'context-high-to-low' };
    const plain = await compare(`/api/v1/models${queryString(query)}`);
    assert.deepEqual(
      JSON.parse(plain).data.map((model: { id: string }) => model.id),
      expectedIds(catalogue, query),
    );
  });

  it('the RSS feed honours accept-encoding', async () => {
    const plain = await compare('/api/v1/models?use_rss=true');
    assert.equal(XMLValidator.validate(plain), true);
  });
});
