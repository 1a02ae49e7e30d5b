import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { GenerationRecordInput } from '../../src/billing/generation-log.js';
import { expectError, isolatedDatabase, startTestApp, type TestApp } from '../helpers/test-app.js';

interface CreatedKey {
  secret: string;
  hash: string;
  workspaceId: string;
}

function generation(key: CreatedKey, overrides: Partial<GenerationRecordInput> = {}): GenerationRecordInput {
  return {
    id: `gen-${Date.now()}-${randomBytes(8).toString('hex')}`,
    created_at: '2025-03-10T12:00:00.000Z',
    key_hash: key.hash,
    workspace_id: key.workspaceId,
    api_type: 'chat-completions',
    requested_model: 'openai/gpt-4o',
    model: 'openai/gpt-4o',
    provider_slug: 'openai',
    provider_name: 'OpenAI',
    endpoint_id: 'openai/gpt-4o:openai',
    upstream_id: 'chatcmpl-123',
    streamed: true,
    cancelled: false,
    is_byok: false,
    status: 'completed',
    http_status: 200,
    error_type: null,
    error_message: null,
    finish_reason: 'tool-calls',
    native_finish_reason: 'tool_calls',
    tokens_prompt: 10,
    tokens_completion: 25,
    tokens_cached: 3,
    tokens_cache_write: 2,
    tokens_reasoning: 5,
    cost_nanos: 1_500_000,
    input_cost_nanos: 500_000,
    output_cost_nanos: 1_000_000,
    latency_ms: 1250,
    first_token_ms: 300,
    generation_time_ms: 1200,
    user_id: 'user-123',
    session_id: 'session-1',
    metadata: { team: 'search' },
    trace: { trace_id: 't-1' },
    app_referer: 'https://app.example/',
    app_title: 'Example',
    attempts: [
      {
        provider: 'azure',
        provider_name: 'Azure',
        model: 'openai/gpt-4o',
        endpoint_id: 'openai/gpt-4o:azure',
        status: 503,
        error_type: 'provider_overloaded',
        latency_ms: 40,
      },
      {
        provider: 'openai',
        provider_name: 'OpenAI',
        model: 'openai/gpt-4o',
        endpoint_id: 'openai/gpt-4o:openai',
        status: 200,
        error_type: null,
        latency_ms: 1200,
      },
    ],
    ...overrides,
  };
}

describe('GET /generation', () => {
  const database = isolatedDatabase();
  let gateway: TestApp;
  let owner: CreatedKey;
  let sibling: CreatedKey;

  async function createKey(name: string): Promise<CreatedKey> {
    const response = await gateway.request('POST', '/api/v1/keys', { body: { name } });
    assert.equal(response.status, 200);
    return {
      secret: response.body.key,
      hash: response.body.data.hash,
      workspaceId: response.body.data.workspace_id,
    };
  }

  const get = (id: string | null, key?: string | null) =>
    gateway.request(
      'GET',
      id === null ? '/api/v1/generation' : `/api/v1/generation?id=${encodeURIComponent(id)}`,
      {
        key,
      },
    );

  before(async () => {
    gateway = await startTestApp({ database });
    owner = await createKey('owner');
    sibling = await createKey('sibling');
  });
  after(async () => {
    await gateway.close();
    await database.drop();
  });

  it('shows the calling key its own generation in the reference shape, before and after it is written', async () => {
    // With the table away the record cannot be written, so the first answer comes from the queue.
    const { db } = gateway.services.storage;
    await sql`alter table generations rename to generations_away`.execute(db);
    const input = generation(owner);
    gateway.services.generations.record(input);
    await new Promise((resolve) => setTimeout(resolve, 80));
    const queued = await get(input.id, owner.secret);
    assert.equal(gateway.services.generations.pending(), 1);
    await sql`alter table generations_away rename to generations`.execute(db);
    assert.equal(queued.status, 200, queued.text);
    assert.deepEqual(queued.body, {
      data: {
        id: input.id,
        request_id: null,
        upstream_id: 'chatcmpl-123',
        total_cost: 0.0015,
        cache_discount: null,
        upstream_inference_cost: null,
        created_at: '2025-03-10T12:00:00.000Z',
        model: 'openai/gpt-4o',
        app_id: null,
        streamed: true,
        cancelled: false,
        provider_name: 'OpenAI',
        latency: 1250,
        moderation_latency: null,
        generation_time: 1200,
        finish_reason: 'tool_calls',
        native_finish_reason: 'tool_calls',
        service_tier: null,
        tokens_prompt: 10,
        tokens_completion: 25,
        native_tokens_prompt: 10,
        native_tokens_completion: 25,
        native_tokens_completion_images: 0,
        native_tokens_reasoning: 5,
        native_tokens_cached: 3,
        native_tokens_cache_write: 2,
        num_media_prompt: null,
        num_input_audio_prompt: null,
        num_media_completion: null,
        num_search_results: null,
        num_fetches: null,
        web_search_engine: null,
        origin: 'https://app.example/',
        usage: 0.0015,
        is_byok: false,
        external_user: 'user-123',
        api_type: 'completions',
        preset_id: null,
        router: null,
        provider_responses: [
          {
            provider_name: 'Azure',
            status: 503,
            latency: 40,
            endpoint_id: 'openai/gpt-4o:azure',
            model_permaslug: 'openai/gpt-4o',
            is_byok: false,
          },
          {
            provider_name: 'OpenAI',
            status: 200,
            latency: 1200,
            endpoint_id: 'openai/gpt-4o:openai',
            model_permaslug: 'openai/gpt-4o',
            is_byok: false,
          },
        ],
        user_agent: null,
        http_referer: 'https://app.example/',
        data_region: 'global',
        workspace_id: owner.workspaceId,
        response_cache_source_id: null,
        session_id: 'session-1',
        request_api: 'chat-completions',
        status: 'completed',
        http_status: 200,
        error_type: null,
        error_message: null,
        requested_model: 'openai/gpt-4o',
        provider_slug: 'openai',
        first_token_latency: 300,
        user: 'user-123',
        app_title: 'Example',
        metadata: { team: 'search' },
        trace: { trace_id: 't-1' },
        attempts: input.attempts,
        cost_details: {
          upstream_inference_cost: null,
          upstream_inference_prompt_cost: 0.0005,
          upstream_inference_completions_cost: 0.001,
        },
      },
    });

    await gateway.services.generations.flush();
    assert.equal(gateway.services.generations.pending(), 0);
    const stored = await get(input.id, owner.secret);
    assert.equal(stored.status, 200);
    assert.deepEqual(stored.body, queued.body);
  });

  it('shows a management key every generation of its workspace', async () => {
    const input = generation(owner);
    gateway.services.generations.record(input);
    const response = await get(input.id);
    assert.equal(response.status, 200);
    assert.equal(response.body.data.id, input.id);
  });

  it('answers 404, never 403, to another key of the same workspace', async () => {
    const input = generation(owner);
    gateway.services.generations.record(input);
    assert.equal(expectError(await get(input.id, sibling.secret), 404), 'Generation not found');
    await gateway.services.generations.flush();
    assert.equal(expectError(await get(input.id, sibling.secret), 404), 'Generation not found');
  });

  it('shows a finish reason no mapping knows as stop, as the answer did, with the native one beside it', async () => {
    const input = generation(owner, { finish_reason: 'other', native_finish_reason: 'banana' });
    gateway.services.generations.record(input);
    const { data } = (await get(input.id, owner.secret)).body;
    assert.equal(data.finish_reason, 'stop');
    assert.equal(data.native_finish_reason, 'banana');
  });

  it('answers 404 to an unknown id', async () => {
    assert.equal(expectError(await get('gen-0-unknown', owner.secret), 404), 'Generation not found');
    assert.equal(expectError(await get('x'.repeat(128), owner.secret), 404), 'Generation not found');
  });

  it('reports a BYOK generation as paid upstream, drawing nothing from credits', async () => {
    const input = generation(owner, {
      is_byok: true,
      api_type: 'embeddings',
      finish_reason: null,
      native_finish_reason: null,
      streamed: false,
      app_referer: null,
    });
    gateway.services.generations.record(input);
    const { data } = (await get(input.id, owner.secret)).body;
    assert.equal(data.total_cost, 0.0015);
    assert.equal(data.usage, 0);
    assert.equal(data.is_byok, true);
    assert.equal(data.upstream_inference_cost, 0.0015);
    assert.equal(data.cost_details.upstream_inference_cost, 0.0015);
    assert.equal(data.api_type, 'embeddings');
    assert.equal(data.request_api, 'embeddings');
    assert.equal(data.finish_reason, null);
    assert.equal(data.origin, '');
    assert.equal(data.http_referer, null);
    assert.equal(data.provider_responses[0].is_byok, true);
  });

  it('refuses a missing, empty or overlong id with a 400 naming the field', async () => {
    assert.match(
      expectError(await get(null, owner.secret), 400),
      /^Invalid request parameters: querystring\.id /,
    );
    assert.equal(
      expectError(await get('', owner.secret), 400),
      'Invalid request parameters: querystring.id must NOT have fewer than 1 characters',
    );
    assert.equal(
      expectError(await get('x'.repeat(129), owner.secret), 400),
      'Invalid request parameters: querystring.id must NOT have more than 128 characters',
    );
    assert.equal(
      expectError(await get('gen-\u0000', owner.secret), 400),
      'Invalid request parameters: querystring.id must not contain NUL characters or unpaired surrogates',
    );
  });

  it('needs a key', async () => {
    const input = generation(owner);
    gateway.services.generations.record(input);
    assert.equal(expectError(await get(input.id, null), 401), 'Missing Authentication header');
  });

  it('keeps generations recorded just before shutdown: closing the app writes them', async () => {
    const input = generation(owner);
    gateway.services.generations.record(input);
    await gateway.close();
    gateway = await startTestApp({ database });
    const response = await get(input.id, owner.secret);
    assert.equal(response.status, 200);
    assert.equal(response.body.data.id, input.id);
  });
});

describe('GET /generation timings', () => {
  let gateway: TestApp;
  let key: string;
  before(async () => {
    // The demo's slow-first-token model sends nothing until this timeout passes; then the request
    // falls back to the next model.
    gateway = await startTestApp({
      demo: true,
      config: { providers: { switchyard: { first_token_timeout_ms: 600, timeout_ms: 600 } } },
    });
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'timed' } });
    assert.equal(created.status, 200, created.text);
    key = created.body.key;
  });
  after(async () => {
    await gateway.close();
  });

  for (const stream of [false, true]) {
    it(`times the first token from the request's start, a failed fallback included (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const answered = await gateway.request('POST', '/api/v1/chat/completions', {
        key,
        body: {
          model: 'switchyard/slow-first-token',
          models: ['switchyard/echo'],
          stream,
          messages: [{ role: 'user', content: 'hello' }],
        },
      });
      assert.equal(answered.status, 200, answered.text);
      const id = answered.headers.get('x-generation-id');
      assert.ok(id, 'the answer names its generation');
      await gateway.services.generations.flush();
      const found = await gateway.request('GET', `/api/v1/generation?id=${encodeURIComponent(id)}`, { key });
      assert.equal(found.status, 200, found.text);
      const { latency, first_token_latency: firstToken, generation_time: generationTime } = found.body.data;
      assert.equal(found.body.data.model, 'switchyard/echo');
      // The client waited out the first model's 600 ms before any output.
      assert.ok(firstToken >= 550, `first token after ${firstToken} ms`);
      assert.ok(firstToken <= latency, `first token ${firstToken} ms, latency ${latency} ms`);
      // The answering model's own call, from its dispatch: well under the whole request.
      assert.ok(generationTime < latency - 400, `generation ${generationTime} ms, latency ${latency} ms`);
    });
  }
});
