import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Clock } from '../../../src/platform/clock.js';
import type { ClientResponse, TestApp } from '../../helpers/test-app.js';

/**
 * Shared pieces of the end-to-end inference tests: the catalogue facts they rely on, upstream
 * reply builders in the OpenAI chat-completions wire format, SSE parsing, and polling helpers.
 */

/** A snapshot model served by several OpenAI-compatible providers (catalog-data/endpoints.json). */
export const DEEPSEEK = 'deepseek/deepseek-v4-pro';

/** Three of its endpoints, cheapest first: Baidu < Novita < GMICloud. */
export const BAIDU = {
  slug: 'baidu/fp8',
  name: 'Baidu Qianfan',
  endpointId: '48f7c1a9-3b0c-4f31-a55b-4650d37e35f3',
  upstreamModel: 'deepseek-v4-pro',
  /** Nano-dollars per token (already discounted: the catalogue lists discount 0.89 for display). */
  promptNanos: 185.9,
  completionNanos: 371.8,
  cacheReadNanos: 15.4,
  discount: 0.89,
} as const;

export const NOVITA = {
  slug: 'novita/fp8',
  name: 'NovitaAI',
  endpointId: '9b918aa8-bd4d-4489-b665-df3f6df60aec',
  upstreamModel: 'deepseek/deepseek-v4-pro',
} as const;

export const GMICLOUD = {
  slug: 'gmicloud/fp8',
  name: 'GMICloud',
  endpointId: '8e8586a6-1dbc-4ae9-8df1-158ae9934756',
} as const;

/**
 * A provider and model from config: one endpoint with round prices and no discount, so a cost is
 * easy to compute by hand ($1 per million prompt tokens, $2 per million completion tokens).
 */
export const ACME_MODEL = 'acme/widget-1';
export const ACME_PROMPT_NANOS = 1000;
export const ACME_COMPLETION_NANOS = 2000;
export function acmeCatalog(baseUrl: string) {
  return {
    providers: [{ slug: 'acme', name: 'Acme', base_url: baseUrl }],
    models: [
      {
        id: ACME_MODEL,
        name: 'Acme Widget 1',
        provider: 'acme',
        provider_model_id: 'widget-1',
        context_length: 100_000,
        max_completion_tokens: 4096,
        pricing: { prompt: '0.000001', completion: '0.000002' },
        supported_parameters: [
          'max_tokens',
          'temperature',
          'top_p',
          'top_k',
          'stop',
          'seed',
          'frequency_penalty',
          'presence_penalty',
          'tools',
          'tool_choice',
        ],
      },
    ],
  };
}

type TestCatalog = ReturnType<typeof acmeCatalog>;

/** A model like ACME_MODEL served through the real Anthropic Messages adapter. */
export const CLAUDE_LIKE_MODEL = 'claude-like/widget-3';
/** A model like ACME_MODEL served through the real Gemini adapter. */
export const GEM_MODEL = 'gem/widget-4';
/** An embeddings model of the acme provider. */
export const EMBED_MODEL = 'acme/embed-1';

/**
 * Adds a provider of another protocol (its catalogue `adapter`) with one model like ACME_MODEL, so
 * a test drives that adapter against a fake upstream at `baseUrl`. Give it a key in `providers`.
 */
function withProtocol(
  catalog: TestCatalog,
  provider: { slug: string; name: string; baseUrl: string; adapter: string },
  model: { id: string; name: string },
): TestCatalog {
  const { baseUrl, ...rest } = provider;
  catalog.providers.push({ ...rest, base_url: baseUrl } as never);
  catalog.models.push({
    ...(catalog.models[0] as TestCatalog['models'][number]),
    ...model,
    provider: provider.slug,
  });
  return catalog;
}

/** CLAUDE_LIKE_MODEL at `baseUrl` (the provider `claude-like`), speaking Anthropic Messages. */
export const withClaudeLike = (catalog: TestCatalog, baseUrl: string) =>
  withProtocol(
    catalog,
    { slug: 'claude-like', name: 'Claude-like', baseUrl, adapter: 'AnthropicMessageAdapter' },
    { id: CLAUDE_LIKE_MODEL, name: 'Claude-like Widget 3' },
  );

/** GEM_MODEL at `baseUrl` (the provider `gem`), speaking Gemini's generateContent. */
export const withGem = (catalog: TestCatalog, baseUrl: string) =>
  withProtocol(
    catalog,
    { slug: 'gem', name: 'Gem', baseUrl, adapter: 'GoogleAIStudioGeminiAdapter' },
    { id: GEM_MODEL, name: 'Gem Widget 4' },
  );

/** EMBED_MODEL, an embeddings model of the acme provider. */
export function withEmbeddings(catalog: TestCatalog): TestCatalog {
  const base = catalog.models[0] as TestCatalog['models'][number];
  catalog.models.push({
    ...base,
    id: EMBED_MODEL,
    name: 'Acme Embed 1',
    output_modalities: ['embeddings'],
  } as never);
  return catalog;
}

/**
 * The gateway's bound on prompt tokens for plain text messages (generation-service.ts
 * `promptTokenBound`): UTF-8 bytes of each text part + 4, + 16, with `instructions` counted whole.
 */
export function promptBound(texts: string[], instructions = ''): number {
  return texts.reduce((sum, text) => sum + Buffer.byteLength(text) + 4, Buffer.byteLength(instructions)) + 16;
}

export interface OpenAiUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
}

export const usageOf = (prompt: number, completion: number): OpenAiUsage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
});

/** A non-streamed OpenAI chat completion. */
export function chatCompletion(text: string, usage: OpenAiUsage = usageOf(10, 5), id = 'up-1') {
  return JSON.stringify({
    id,
    object: 'chat.completion',
    created: 1,
    model: 'upstream-model',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage,
  });
}

/** A non-streamed Anthropic Messages answer (what `withClaudeLike`'s endpoint answers with). */
export function anthropicMessage(text: string, usage = { input_tokens: 3, output_tokens: 1 }, id = 'msg_1') {
  return JSON.stringify({
    id,
    type: 'message',
    role: 'assistant',
    model: 'widget-3',
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    usage,
  });
}

/** One `chat.completion.chunk` as SSE data (without the `data: ` prefix). */
export function chatChunk(delta: Record<string, unknown>, finishReason: string | null = null, id = 'up-s') {
  return JSON.stringify({
    id,
    object: 'chat.completion.chunk',
    created: 1,
    model: 'upstream-model',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
}

/** The frames of a whole successful upstream stream of `words`, with a usage chunk and [DONE]. */
export function chatStreamFrames(words: string[], usage: OpenAiUsage = usageOf(10, words.length)): string[] {
  return [
    chatChunk({ role: 'assistant', content: '' }),
    ...words.map((word) => chatChunk({ content: word })),
    chatChunk({}, 'stop'),
    JSON.stringify({ id: 'up-s', object: 'chat.completion.chunk', choices: [], usage }),
    '[DONE]',
  ];
}

export interface SseFrame {
  event: string | null;
  data: string;
}

/** Splits an SSE body into frames (`event:` when present, `data:` joined). */
export function parseSse(text: string): SseFrame[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim().length > 0)
    .map((block) => {
      let event: string | null = null;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
        else if (line.startsWith('data:')) data.push(line.slice(5));
      }
      return { event, data: data.join('\n') };
    });
}

/** The JSON payloads of an SSE body, `[DONE]` kept as the string. */
export const sseData = (text: string): any[] =>
  parseSse(text).map((frame) => (frame.data === '[DONE]' ? '[DONE]' : JSON.parse(frame.data)));

/** Polls `probe` until it returns something truthy; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * A URL where connections are refused. Port 1 (tcpmux) is unused and below the ephemeral range,
 * so no other test's server can take it meanwhile, as could happen to a port just closed.
 */
export const REFUSED_URL = 'http://127.0.0.1:1';

/** Real time plus an offset the test can move forward (to let cool-downs pass). */
export function offsetClock(): Clock & { advance(ms: number): void } {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance: (ms) => {
      offset += ms;
    },
  };
}

/** Creates an inference key (with the management key) and returns its secret and hash. */
export async function createKey(
  gateway: TestApp,
  body: Record<string, unknown> = { name: 'app' },
): Promise<{ key: string; hash: string }> {
  const response = await gateway.request('POST', '/api/v1/keys', { body });
  assert.equal(response.status, 200, response.text);
  return { key: response.body.key, hash: response.body.data.hash };
}

/** The stored generation record, as `GET /generation?id=` shows it to `key`. */
export async function generationRecord(gateway: TestApp, key: string, id: string | null): Promise<any> {
  assert.ok(id, 'the reply has an X-Generation-Id');
  const response = await gateway.request('GET', `/api/v1/generation?id=${encodeURIComponent(id)}`, { key });
  assert.equal(response.status, 200, response.text);
  return response.body.data;
}

/** `GET /key` for the calling key. */
export async function keyInfo(gateway: TestApp, key: string): Promise<any> {
  const response = await gateway.request('GET', '/api/v1/key', { key });
  assert.equal(response.status, 200, response.text);
  return response.body.data;
}

export const generationId = (response: ClientResponse): string | null =>
  response.headers.get('x-generation-id');

/** USD as the API shows it, from nano-dollars. */
export const usd = (nanos: number): number => Number((nanos / 1e9).toFixed(9));

/**
 * A client that goes away: POSTs `body` on a connection of its own (node:http, no keep-alive pool,
 * so nothing lingers after it) and returns controls to read the reply's first chunk and to hang up.
 */
export function disconnectingClient(url: string, key: string, body: unknown) {
  const request = httpRequest(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    agent: false,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  });
  request.on('error', () => {});
  const response = new Promise<IncomingMessage>((resolve) => request.on('response', resolve));
  request.end(JSON.stringify(body));
  return {
    response,
    /** The reply's first body chunk, as text. */
    async firstChunk(): Promise<string> {
      const reply = await response;
      return new Promise((resolve) => reply.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8'))));
    },
    hangUp() {
      request.destroy();
    },
  };
}
