import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { BodyCache, EncodedBody } from '../../src/catalog/encoded-body.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

describe('prepared bodies', () => {
  it('bounds the cache by the bytes it holds, compressed forms included', async () => {
    const cache = new BodyCache(100_000);
    const bodies: EncodedBody[] = [];
    for (let index = 0; index < 10; index += 1) {
      const body = cache.get(
        `key-${index}`,
        (onGrow) => new EncodedBody(Buffer.alloc(30_000, index), 'text/plain', onGrow),
      );
      bodies.push(body);
      await body.get('gzip');
      assert.ok(cache.heldBytes() <= 100_000, `held ${cache.heldBytes()}`);
    }
    // The most recent entry is still served from the cache; the oldest was evicted.
    assert.equal(
      cache.get('key-9', () => new EncodedBody(Buffer.alloc(1), 'text/plain')),
      bodies[9],
    );
    assert.notEqual(
      cache.get('key-0', () => new EncodedBody(Buffer.alloc(1), 'text/plain')),
      bodies[0],
    );
  });
});

describe('catalogue answers that share a cache', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp({
      config: {
        catalog: {
          providers: [{ slug: 'local', name: 'Local', base_url: 'http://127.0.0.1:9/v1' }],
          models: [
            {
              id: 'local/embedder',
              name: 'Local embedder',
              provider: 'local',
              provider_model_id: 'embed',
              context_length: 512,
              pricing: { prompt: '0', completion: '0' },
              output_modalities: ['embeddings'],
            },
          ],
        },
      },
    });
  });
  after(() => gateway.close());

  it('reads an empty output_modalities as the default, in the list and the count, whatever came first', async () => {
    const emptyFirst = await gateway.request('GET', '/api/v1/models/count?output_modalities=', { key: null });
    const absent = await gateway.request('GET', '/api/v1/models/count', { key: null });
    const list = await gateway.request('GET', '/api/v1/models', { key: null });
    const emptyList = await gateway.request('GET', '/api/v1/models?output_modalities=', { key: null });
    assert.equal(list.body.data.length, 400);
    assert.deepEqual(emptyFirst.body, { data: { count: 400 } });
    assert.deepEqual(absent.body, { data: { count: 400 } });
    assert.equal(emptyList.body.data.length, 400);
    const all = await gateway.request('GET', '/api/v1/models/count?output_modalities=all', { key: null });
    assert.deepEqual(all.body, { data: { count: 401 } });
    const embeddings = await gateway.request('GET', '/api/v1/models/count?output_modalities=EMBEDDINGS', {
      key: null,
    });
    assert.deepEqual(embeddings.body, { data: { count: 1 } });
  });

  it('takes use_rss as supplied when true, 1 or empty, and reads enumerated values case-insensitively', async () => {
    for (const value of ['true', '1', '', 'TRUE']) {
      const response = await gateway.request('GET', `/api/v1/models?use_rss=${value}&q=claude`, {
        key: null,
      });
      assert.equal(response.status, 200, value);
      assert.match(response.headers.get('content-type') ?? '', /application\/rss\+xml/, value);
    }
    const json = await gateway.request('GET', '/api/v1/models?use_rss=0&q=claude', { key: null });
    assert.match(json.headers.get('content-type') ?? '', /application\/json/);
    const zdr = await gateway.request('GET', '/api/v1/models?zdr=TRUE&region=EU', { key: null });
    const lower = await gateway.request('GET', '/api/v1/models?zdr=true&region=eu', { key: null });
    assert.equal(zdr.status, 200);
    assert.deepEqual(zdr.body, lower.body);
  });

  it('builds RSS links from the listening address, never from the Host header', async () => {
    const text = await new Promise<string>((resolve, reject) => {
      const url = new URL(`${gateway.url}/api/v1/models?use_rss=true&q=claude-opus-5`);
      const request = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: `${url.pathname}${url.search}`,
          headers: { host: 'evil.example' },
        },
        (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            body += chunk;
          });
          response.on('end', () => resolve(body));
        },
      );
      request.on('error', reject);
      request.end();
    });
    assert.equal(text.includes('evil.example'), false);
    assert.ok(text.includes(`<link>${gateway.url}/api/v1/models</link>`));
  });
});
