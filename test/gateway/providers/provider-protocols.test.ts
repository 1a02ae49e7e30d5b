import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../src/config/load-config.js';
import {
  createAdapters,
  protocolForAdapter,
  upstreamTargetFor,
} from '../../../src/gateway/providers/provider-protocols.js';
import { createUpstreamHttp } from '../../../src/gateway/providers/shared/upstream-http.js';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';

const endpoints: Array<{ adapter: string; provider_slug: string }> = JSON.parse(
  readFileSync(new URL('../../../catalog-data/endpoints.json', import.meta.url), 'utf8'),
);

describe('catalogue adapters to protocols', () => {
  it('maps native protocols, the OpenAI-compatible family, and refuses what needs cloud signing', () => {
    assert.equal(protocolForAdapter('AnthropicMessageAdapter'), 'anthropic-messages');
    assert.equal(protocolForAdapter('GoogleAIStudioGeminiAdapter'), 'gemini');
    assert.equal(protocolForAdapter('OpenAIResponsesAdapter'), 'openai-responses');
    assert.equal(protocolForAdapter('XAIResponsesAdapter'), 'openai-responses');
    for (const name of [
      'OpenAIAdapter',
      'DeepInfraAdapter',
      'TogetherAdapter',
      'VLLMOpenAIAdapter',
      'GroqAdapter',
    ]) {
      assert.equal(protocolForAdapter(name), 'openai-chat', name);
    }
    for (const name of [
      'GoogleVertexGeminiAdapter',
      'InternalStreamAmazonBedrockInvokeAnthropicAdapter',
      'AzureOpenAIAdapter',
      'OpenAIBatchAdapter',
      'OpenAIImageAdapter',
      'DeepgramSTTAdapter',
      'OpenAIEmbeddingsAdapter',
      'CohereV2Adapter',
    ]) {
      assert.equal(protocolForAdapter(name), null, name);
    }
    assert.equal(protocolForAdapter('not an adapter'), null);
  });

  it('reaches most of the snapshot: every endpoint either has a protocol or is knowingly unreachable', () => {
    const routable = endpoints.filter((endpoint) => protocolForAdapter(endpoint.adapter) !== null);
    // Measured on the 2026-08-08 snapshot: 1238 endpoints, 863 reachable with built-in protocols.
    assert.equal(endpoints.length, 1238);
    assert.equal(routable.length, 863);
  });

  it('resolves the target from config: base URL override and the credential, or null without one', () => {
    const config = loadConfig(
      { OPENAI_API_KEY: 'sk-openai' },
      { providers: { deepinfra: { base_url: 'http://127.0.0.1:9100/v1', api_key: 'di-key' } } },
    );
    assert.deepEqual(
      upstreamTargetFor({
        providerSlug: 'deepinfra/fp8',
        baseUrl: 'https://api.deepinfra.com/v1/openai',
        config,
      }),
      {
        baseUrl: 'http://127.0.0.1:9100/v1',
        apiKey: 'di-key',
      },
    );
    assert.deepEqual(
      upstreamTargetFor({ providerSlug: 'openai', baseUrl: 'https://api.openai.com/v1', config }),
      {
        baseUrl: 'https://api.openai.com/v1',
        apiKey: 'sk-openai',
      },
    );
    assert.equal(
      upstreamTargetFor({ providerSlug: 'together', baseUrl: 'https://api.together.xyz/v1', config }),
      null,
    );
  });
});

describe('adapters per protocol and provider', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  const http = createUpstreamHttp();
  before(async () => {
    upstream = await startFakeUpstream();
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'x',
          model: 'm',
          choices: [{ index: 0, message: { content: 'ok' }, finish_reason: 'stop' }],
        }),
      );
    });
  });
  after(async () => {
    await http.close();
    await upstream.close();
  });

  it("gives OpenAI's own endpoints max_completion_tokens and the rest of the family max_tokens", async () => {
    const adapters = createAdapters(http);
    const call = {
      request: { model: 'm', input: [], maxOutputTokens: 7, topK: 3 },
      target: { baseUrl: upstream.url, apiKey: 'k' },
      signal: new AbortController().signal,
      timeouts: { headersMs: 2000, firstTokenMs: 2000, idleMs: 2000 },
    };
    await adapters.adapterFor('openai-chat', 'openai').generate(call);
    await adapters.adapterFor('openai-chat', 'deepinfra/fp8').generate(call);
    const [openai, deepinfra] = upstream.requests.map((request) => request.body as Record<string, unknown>);
    assert.equal(openai?.max_completion_tokens, 7);
    assert.equal(openai?.max_tokens, undefined);
    assert.equal(openai?.top_k, undefined);
    assert.equal(deepinfra?.max_tokens, 7);
    assert.equal(deepinfra?.top_k, 3);
    assert.equal(adapters.adapterFor('anthropic-messages', 'anthropic').protocol, 'anthropic-messages');
    assert.equal(adapters.adapterFor('demo', 'switchyard').protocol, 'demo');
  });

  it("labels xAI's encrypted reasoning as xAI's and OpenAI's as OpenAI's", async () => {
    const adapters = createAdapters(http);
    const reasoningReply = {
      id: 'resp_1',
      status: 'completed',
      output: [{ id: 'rs_1', type: 'reasoning', summary: [], encrypted_content: 'opaque' }],
    };
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reasoningReply));
    });
    const call = {
      request: { model: 'm', input: [], reasoningModel: true },
      target: { baseUrl: upstream.url, apiKey: 'k' },
      signal: new AbortController().signal,
      timeouts: { headersMs: 2000, firstTokenMs: 2000, idleMs: 2000 },
    };
    const fromXai = await adapters.adapterFor('openai-responses', 'xai').generate(call);
    const fromOpenAi = await adapters.adapterFor('openai-responses', 'openai').generate(call);
    assert.equal(fromXai.reasoningBlocks?.[0]?.format, 'xai-responses-v1');
    assert.equal(fromOpenAi.reasoningBlocks?.[0]?.format, 'openai-responses-v1');
  });
});
