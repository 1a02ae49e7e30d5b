import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAiChatAdapter } from '../../../src/gateway/providers/openai-chat/openai-chat-adapter.js';
import { createUpstreamHttp } from '../../../src/gateway/providers/shared/upstream-http.js';
import type { EmbedCall } from '../../../src/spec/embedding.js';
import { UpstreamError } from '../../../src/spec/upstream-error.js';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';

// A reply in the shape OpenAI's /v1/embeddings sends.
const reply = (embeddings: number[][], extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    object: 'list',
    data: embeddings.map((embedding, index) => ({ object: 'embedding', index, embedding })),
    model: 'text-embedding-3-small',
    usage: { prompt_tokens: 7, total_tokens: 7 },
    ...extra,
  });

describe('OpenAI-compatible embeddings against a fake upstream', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  const http = createUpstreamHttp();
  const adapter = createOpenAiChatAdapter({ http });
  const call = (
    overrides: Partial<EmbedCall['request']> = {},
    timeouts?: EmbedCall['timeouts'],
  ): EmbedCall => ({
    request: { model: 'text-embedding-3-small', input: ['hello', 'world'], ...overrides },
    target: { baseUrl: `${upstream.url}/v1/`, apiKey: 'sk-upstream', headers: { 'x-title': 'Switchyard' } },
    signal: new AbortController().signal,
    timeouts: timeouts ?? { headersMs: 2000, firstTokenMs: 2000, idleMs: 2000 },
  });
  const embed = (embedCall: EmbedCall) => adapter.embed!(embedCall);
  const failure = (embedCall: EmbedCall) => embed(embedCall).catch((caught: unknown) => caught);

  before(async () => {
    upstream = await startFakeUpstream();
  });
  after(async () => {
    await http.close();
    await upstream.close();
  });

  it('posts the request to {baseUrl}/embeddings with the credential and reads the vectors and usage', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        reply([
          [0.1, -0.2, 0.3],
          [0.4, 0.5, -0.6],
        ]),
      );
    });
    const result = await embed(
      call({ dimensions: 3, user: 'user-1', inputType: 'search_query', encodingFormat: 'base64' }),
    );
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.method, 'POST');
    assert.equal(sent.url, '/v1/embeddings');
    assert.equal(sent.headers.authorization, 'Bearer sk-upstream');
    assert.equal(sent.headers['x-title'], 'Switchyard');
    assert.match(String(sent.headers['content-type']), /application\/json/);
    // Floats are always asked for (the default, so `encoding_format` is not sent); base64 is ingress's job.
    assert.deepEqual(sent.body, {
      model: 'text-embedding-3-small',
      input: ['hello', 'world'],
      dimensions: 3,
      user: 'user-1',
      input_type: 'search_query',
    });
    assert.deepEqual(result, {
      model: 'text-embedding-3-small',
      vectors: [
        [0.1, -0.2, 0.3],
        [0.4, 0.5, -0.6],
      ],
      usage: {
        inputTokens: 7,
        outputTokens: 0,
        cachedInputTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
      },
    });
  });

  it('sends token lists as they are, and leaves input_type out for servers that refuse it', async () => {
    const openAi = createOpenAiChatAdapter({ http, embeddingInputType: false });
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(reply([[1, 0]]));
    });
    await openAi.embed!({
      ...call(),
      request: { model: 'text-embedding-3-small', input: [[9906, 1917]], inputType: 'search_query' },
    });
    assert.deepEqual(upstream.requests.at(-1)!.body, {
      model: 'text-embedding-3-small',
      input: [[9906, 1917]],
    });
  });

  it('puts vectors back in input order by their index, and reads usage from total_tokens alone', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          data: [
            { index: 1, embedding: [2, 2] },
            { index: 0, embedding: [1, 1] },
          ],
          usage: { total_tokens: 4 },
        }),
      );
    });
    const result = await embed(call());
    assert.deepEqual(result.vectors, [
      [1, 1],
      [2, 2],
    ]);
    assert.equal(result.model, null);
    assert.equal(result.usage.inputTokens, 4);
  });

  it('reports a 429 with its message and Retry-After as a retryable error', async () => {
    upstream.handle((_request, response) => {
      response
        .writeHead(429, { 'content-type': 'application/json', 'retry-after': '12' })
        .end(JSON.stringify({ error: { message: 'Rate limit reached for text-embedding-3-small' } }));
    });
    const error = await failure(call());
    assert.ok(error instanceof UpstreamError);
    assert.equal(error.status, 429);
    assert.equal(error.kind, 'http');
    assert.equal(error.retryable, true);
    assert.equal(error.retryAfterSeconds, 12);
    assert.equal(error.message, 'Rate limit reached for text-embedding-3-small');
  });

  it('treats a 400 as final, an HTML 502, invalid JSON and an in-body error as upstream faults', async () => {
    upstream.handle((_request, response) => {
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end('{"error":{"message":"This model does not support specifying dimensions."}}');
    });
    const refused = await failure(call({ dimensions: 8 }));
    assert.ok(refused instanceof UpstreamError && refused.status === 400 && !refused.retryable);
    assert.equal(refused.message, 'This model does not support specifying dimensions.');

    upstream.handle((_request, response) => {
      response.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>');
    });
    const html = await failure(call());
    assert.ok(html instanceof UpstreamError && html.status === 502 && html.retryable);
    assert.equal(html.message, 'Upstream returned HTTP 502');
    assert.match(html.raw ?? '', /Bad Gateway/);

    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"data": [');
    });
    const garbled = await failure(call());
    assert.ok(garbled instanceof UpstreamError && garbled.kind === 'invalid-response' && garbled.retryable);

    upstream.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"error":{"message":"Model overloaded","code":503}}');
    });
    const inBody = await failure(call());
    assert.ok(inBody instanceof UpstreamError && inBody.status === 503 && inBody.retryable);
    assert.equal(inBody.message, 'Model overloaded');
  });

  it('refuses a reply whose vectors do not match the inputs', async () => {
    const replies: Array<[string, string, RegExp]> = [
      ['one vector for two inputs', reply([[1, 2]]), /1 embeddings for 2 inputs/],
      ['three vectors for two inputs', reply([[1], [2], [3]]), /3 embeddings for 2 inputs/],
      ['no data', JSON.stringify({ object: 'list', model: 'm' }), /no embeddings data/],
      [
        'the same index twice',
        JSON.stringify({
          data: [
            { index: 0, embedding: [1] },
            { index: 0, embedding: [2] },
          ],
        }),
        /embedding 0 twice/,
      ],
      [
        'an index out of range',
        JSON.stringify({
          data: [
            { index: 0, embedding: [1] },
            { index: 2, embedding: [2] },
          ],
        }),
        /invalid index/,
      ],
      [
        'a vector that is not numbers',
        JSON.stringify({
          data: [
            { index: 0, embedding: [1] },
            { index: 1, embedding: 'AACAPw==' },
          ],
        }),
        /embedding 1 is not a list of finite numbers/,
      ],
      [
        'an empty vector',
        JSON.stringify({
          data: [
            { index: 0, embedding: [1] },
            { index: 1, embedding: [] },
          ],
        }),
        /embedding 1 is not a list of finite numbers/,
      ],
    ];
    for (const [name, body, message] of replies) {
      upstream.handle((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(body);
      });
      const error = await failure(call());
      assert.ok(error instanceof UpstreamError, name);
      assert.equal(error.kind, 'invalid-response', name);
      assert.equal(error.retryable, true, name);
      assert.match(error.message, message, name);
    }
  });

  it('times out when the reply headers never come', async () => {
    upstream.handle(() => {
      // never answers
    });
    await assert.rejects(
      embed(call({}, { headersMs: 150, firstTokenMs: 2000, idleMs: 2000 })),
      (caught: unknown) => caught instanceof UpstreamError && caught.kind === 'timeout' && caught.retryable,
    );
  });
});
