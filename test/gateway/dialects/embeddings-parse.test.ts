import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { installErrorRenderer } from '../../../src/errors/error-renderer.js';
import {
  type EmbeddingsBody,
  embeddingsBodySchema,
  MAX_EMBEDDING_INPUTS,
} from '../../../src/gateway/dialects/embeddings/embeddings-body-schema.js';
import { parseEmbeddingsRequest } from '../../../src/gateway/dialects/embeddings/parse-embeddings-request.js';
import { installValidators } from '../../../src/platform/validation.js';

/**
 * A listening server with the app's own body validator (Ajv, no coercion) and error renderer in
 * front of the dialect's parser, so each case asserts the status and message a client receives.
 * The route answers with what the parser extracted.
 */
async function startParser(): Promise<{ app: FastifyInstance; url: string }> {
  const app = Fastify();
  installValidators(app);
  installErrorRenderer(app);
  app.post('/embeddings', { schema: { body: embeddingsBodySchema } }, async (request) =>
    parseEmbeddingsRequest(request.body as EmbeddingsBody, request.headers),
  );
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url };
}

describe('embeddings dialect: parsing a request', () => {
  let server: Awaited<ReturnType<typeof startParser>>;
  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${server.url}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const refused = async (body: unknown, message: string, headers: Record<string, string> = {}) => {
    const response = await post(body, headers);
    assert.equal(response.status, 400, JSON.stringify(body).slice(0, 200));
    assert.deepEqual(response.body, { error: { code: 400, message } });
  };

  before(async () => {
    server = await startParser();
  });
  after(async () => {
    await server.app.close();
  });

  it('reads every input form as one entry per vector', async () => {
    const forms: Array<[unknown, unknown]> = [
      ['The quick brown fox', ['The quick brown fox']],
      [
        ['first', 'second'],
        ['first', 'second'],
      ],
      // A flat list of integers is one token list, not three inputs (OpenAI's reading).
      [[9906, 1917, 0], [[9906, 1917, 0]]],
      [
        [[1, 2], [3]],
        [[1, 2], [3]],
      ],
    ];
    for (const [input, entries] of forms) {
      const response = await post({ model: 'openai/text-embedding-3-small', input });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.deepEqual(response.body, {
        request: { input: entries },
        models: ['openai/text-embedding-3-small'],
        provider: null,
        sessionId: null,
        user: null,
      });
    }
  });

  it('maps the options to the canonical request, and routing fields to the parse result', async () => {
    const response = await post(
      {
        model: 'openai/text-embedding-3-small',
        models: ['openai/text-embedding-3-small', 'mistralai/mistral-embed', 'demo/embed'],
        input: ['a'],
        dimensions: 256,
        encoding_format: 'base64',
        user: 'user-42',
        input_type: 'search_document',
        session_id: 'session-body',
        provider: {
          order: ['openai'],
          allow_fallbacks: false,
          zdr: null,
          data_collection: 'deny',
          sort: { by: 'price', partition: null },
          preferred_max_latency: { p90: 2, p99: null },
          max_price: { prompt: '0.02', request: 0.001 },
        },
      },
      { 'x-session-id': 'session-header' },
    );
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.deepEqual(response.body, {
      request: {
        input: ['a'],
        dimensions: 256,
        encodingFormat: 'base64',
        user: 'user-42',
        inputType: 'search_document',
      },
      // `model` first, then `models`, each once.
      models: ['openai/text-embedding-3-small', 'mistralai/mistral-embed', 'demo/embed'],
      // Nulls mean "not set"; price strings become numbers.
      provider: {
        order: ['openai'],
        allow_fallbacks: false,
        data_collection: 'deny',
        sort: { by: 'price' },
        preferred_max_latency: { p90: 2 },
        max_price: { prompt: 0.02, request: 0.001 },
      },
      sessionId: 'session-body',
      user: 'user-42',
    });
  });

  it('takes models without model, and the session from x-session-id when the body has none', async () => {
    const response = await post(
      { models: ['demo/embed', 'openai/text-embedding-3-small'], input: 'x' },
      { 'x-session-id': 'session-header' },
    );
    assert.equal(response.status, 200);
    assert.deepEqual(response.body.models, ['demo/embed', 'openai/text-embedding-3-small']);
    assert.equal(response.body.sessionId, 'session-header');
  });

  it('reads explicit nulls as "not set", and judges the header only when it is the session used', async () => {
    const response = await post(
      {
        model: 'demo/embed',
        input: 'x',
        user: null,
        session_id: 'session-body',
        provider: { sort: { by: null }, max_price: { prompt: null, completion: 1 } },
      },
      { 'x-session-id': 's'.repeat(257) },
    );
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.deepEqual(response.body.provider, { max_price: { completion: 1 } });
    assert.equal(response.body.user, null);
    assert.equal(response.body.sessionId, 'session-body');
  });

  it('refuses empty and malformed inputs with a 400 naming the field and the rule', async () => {
    const model = 'demo/embed';
    await refused({ model }, "Invalid request parameters: body.input must have required property 'input'");
    await refused(
      { model, input: '' },
      'Invalid request parameters: body.input must NOT have fewer than 1 characters',
    );
    await refused(
      { model, input: [] },
      'Invalid request parameters: body.input must NOT have fewer than 1 items',
    );
    await refused(
      { model, input: ['a', ''] },
      'Invalid request parameters: body.input.1 must NOT have fewer than 1 characters',
    );
    await refused(
      { model, input: [[]] },
      'Invalid request parameters: body.input.0 must NOT have fewer than 1 items',
    );
    await refused({ model, input: 42 }, 'Invalid request parameters: body.input must be string,array');
    await refused({ model, input: null }, 'Invalid request parameters: body.input must be string,array');
    await refused(
      { model, input: [{ content: [{ type: 'text', text: 'hi' }] }] },
      'Invalid request parameters: body.input.0 must be string,integer,array',
    );
    await refused(
      { model, input: [1.5] },
      'Invalid request parameters: body.input.0 must be string,integer,array',
    );
    await refused({ model, input: [-1] }, 'Invalid request parameters: body.input.0 must be >= 0');
    await refused({ model, input: [[1, 'a']] }, 'Invalid request parameters: body.input.0.1 must be integer');
    await refused(
      { model, input: Array.from({ length: MAX_EMBEDDING_INPUTS + 1 }, () => 'a') },
      `Invalid request parameters: body.input must NOT have more than ${MAX_EMBEDDING_INPUTS} items`,
    );
    const mixed =
      'Invalid request parameters: body.input must be a string, a list of strings, a token list or a list of token lists, not a mix';
    await refused({ model, input: ['a', [1]] }, mixed);
    await refused({ model, input: [1, [2]] }, mixed);
    await refused({ model, input: ['a', 1] }, mixed);
  });

  it('refuses bad options with a 400 naming the field and the rule', async () => {
    const input = 'a';
    await refused({ input }, 'Invalid request parameters: body.model is required (or body.models)');
    await refused(
      { input, models: [] },
      'Invalid request parameters: body.model is required (or body.models)',
    );
    // The reference's own wording of the limit ("'models' array must have 3 items or fewer").
    await refused(
      { input, model: 'a/b', models: ['c/d', 'e/f', 'g/h', 'i/j'] },
      'Invalid request parameters: body.models must have 3 items or fewer',
    );
    await refused(
      { input, model: '' },
      'Invalid request parameters: body.model must NOT have fewer than 1 characters',
    );
    await refused(
      { input, model: 'a/b', encoding_format: 'int8' },
      'Invalid request parameters: body.encoding_format must be one of: float, base64',
    );
    await refused(
      { input, model: 'a/b', dimensions: 0 },
      'Invalid request parameters: body.dimensions must be >= 1',
    );
    await refused(
      { input, model: 'a/b', dimensions: 1.5 },
      'Invalid request parameters: body.dimensions must be integer',
    );
    // Bodies are not coerced: a numeric string is not a number.
    await refused(
      { input, model: 'a/b', dimensions: '8' },
      'Invalid request parameters: body.dimensions must be integer',
    );
    await refused(
      { input, model: 'a/b', user: 'u'.repeat(257) },
      'Invalid request parameters: body.user must NOT have more than 256 characters',
    );
    await refused(
      { input, model: 'a/b', session_id: 's'.repeat(257) },
      'Invalid request parameters: body.session_id must NOT have more than 256 characters',
    );
    await refused(
      { input, model: 'a/b' },
      'Invalid request parameters: headers.x-session-id must NOT have more than 256 characters',
      { 'x-session-id': 's'.repeat(257) },
    );
    await refused(
      { input, model: 'a/b', stream: true },
      'Invalid request parameters: body.stream is not a known field',
    );
    await refused(
      { input, model: 'a/b', provider: { sort: 'fastest' } },
      'Invalid request parameters: body.provider.sort must be one of: price, throughput, latency',
    );
    await refused(
      { input, model: 'a/b', provider: { allow_fallbacks: 'no' } },
      'Invalid request parameters: body.provider.allow_fallbacks must be boolean,null',
    );
    await refused(
      { input, model: 'a/b', provider: { prefer: ['openai'] } },
      'Invalid request parameters: body.provider.prefer is not a known field',
    );
  });
});
