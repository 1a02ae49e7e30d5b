import { providerBase } from '../../catalog/provider-base.js';
import type { Config } from '../../config/config-schema.js';
import type { ProviderAdapter, UpstreamTarget } from '../../spec/provider-adapter.js';
import { createAnthropicMessagesAdapter } from './anthropic/anthropic-messages-adapter.js';
import { createDemoAdapter } from './demo/demo-adapter.js';
import { createGeminiAdapter } from './gemini/gemini-adapter.js';
import { createOpenAiChatAdapter } from './openai-chat/openai-chat-adapter.js';
import { createOpenAiResponsesAdapter } from './openai-responses/openai-responses-adapter.js';
import type { UpstreamHttp } from './shared/upstream-http.js';

export type Protocol = 'openai-chat' | 'openai-responses' | 'anthropic-messages' | 'gemini' | 'demo';

/** Catalogue adapters that speak a protocol other than OpenAI chat completions. */
const nativeProtocols: Record<string, Protocol> = {
  AnthropicMessageAdapter: 'anthropic-messages',
  GoogleAIStudioGeminiAdapter: 'gemini',
  OpenAIResponsesAdapter: 'openai-responses',
  XAIResponsesAdapter: 'openai-responses',
  DemoAdapter: 'demo',
};

/**
 * Catalogue adapters no built-in protocol can reach: clouds with their own signing or token
 * exchange (Vertex, Bedrock, Azure deployments), the reference gateway's internal stream relays,
 * batch queues, and media or speech APIs that are not chat. Their endpoints are not routable.
 */
const unreachable =
  /Vertex|Bedrock|ClaudeOnAws|Azure|InternalStream|Batch|Image|Video|Veo|Seedance|Seedream|Kling|Wan|Runway|TTS|STT|Embeddings|CohereV2|Recraft|Krea|BlackForestLabs|Sourceful/;

/**
 * The wire protocol behind a catalogue endpoint's `adapter`. Everything not native and not
 * unreachable belongs to the OpenAI-compatible family (DeepInfra, Together, Groq, vLLM…): one
 * adapter plus small per-provider options, as STYLE.md asks.
 */
export function protocolForAdapter(adapter: string): Protocol | null {
  let protocol = protocols.get(adapter);
  if (protocol === undefined) {
    protocol = classifyAdapter(adapter);
    protocols.set(adapter, protocol);
  }
  return protocol;
}

/** Adapter names are a small closed set (one per provider); routing asks about them on every request. */
const protocols = new Map<string, Protocol | null>();

function classifyAdapter(adapter: string): Protocol | null {
  const native = nativeProtocols[adapter];
  if (native) return native;
  if (unreachable.test(adapter)) return null;
  return adapter.endsWith('Adapter') ? 'openai-chat' : null;
}

/**
 * Per-provider options of the OpenAI-compatible family. OpenAI itself wants
 * `max_completion_tokens` (its reasoning models refuse `max_tokens`) and rejects `top_k`.
 */
const openAiChatOptions: Record<string, { maxTokensField: 'max_completion_tokens'; supportsTopK: false }> = {
  openai: { maxTokensField: 'max_completion_tokens', supportsTopK: false },
};

/** The adapters, one per protocol (and per option set), sharing the upstream HTTP client. */
export function createAdapters(http: UpstreamHttp) {
  const byProtocol = new Map<Protocol, ProviderAdapter>([
    ['openai-chat', createOpenAiChatAdapter({ http })],
    ['openai-responses', createOpenAiResponsesAdapter({ http })],
    ['anthropic-messages', createAnthropicMessagesAdapter({ http })],
    ['gemini', createGeminiAdapter({ http })],
    ['demo', createDemoAdapter()],
  ]);
  const byProvider = new Map(
    Object.entries(openAiChatOptions).map(([slug, options]) => [
      slug,
      createOpenAiChatAdapter({ http, ...options }),
    ]),
  );
  // xAI's Responses API encrypts reasoning with its own keys: its blocks are labelled as xAI's, so
  // that they never reach OpenAI (which would refuse them) and OpenAI's never reach xAI.
  const responsesByProvider = new Map([
    ['xai', createOpenAiResponsesAdapter({ http, reasoningFormat: 'xai-responses-v1' })],
  ]);
  return {
    adapterFor(protocol: Protocol, providerSlug: string): ProviderAdapter {
      const special =
        protocol === 'openai-chat'
          ? byProvider.get(providerBase(providerSlug))
          : protocol === 'openai-responses'
            ? responsesByProvider.get(providerBase(providerSlug))
            : undefined;
      return special ?? (byProtocol.get(protocol) as ProviderAdapter);
    },
  };
}

/**
 * Where an endpoint's requests go and with which credential: the provider's base URL (the config
 * may override it) and `providers.<slug>.api_key` (which `<PROVIDER>_API_KEY` fills). Null when
 * there is no credential: such endpoints are not candidates for routing.
 */
export function upstreamTargetFor(options: {
  providerSlug: string;
  baseUrl: string;
  config: Config;
}): UpstreamTarget | null {
  const base = providerBase(options.providerSlug);
  const settings = options.config.providers[base];
  const apiKey = settings?.api_key;
  if (!apiKey) return null;
  return { baseUrl: settings?.base_url ?? options.baseUrl, apiKey };
}
