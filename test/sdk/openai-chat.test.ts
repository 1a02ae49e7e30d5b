// The official `openai` SDK, unmodified (only baseURL and apiKey set), against a real gateway:
// `client.chat.completions.create` (JSON and stream), chat tool calls, and `client.embeddings.create`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

const SENTENCE = 'The quick brown fox jumps over the lazy dog.';

const weatherTool: OpenAI.Chat.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('openai SDK: chat completions and embeddings against the demo provider', () => {
  let gateway: TestApp;
  let client: OpenAI;
  before(async () => {
    gateway = await startTestApp({ demo: true });
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
    assert.equal(created.status, 200, created.text);
    client = new OpenAI({ baseURL: `${gateway.url}/api/v1`, apiKey: created.body.key, maxRetries: 0 });
  });
  after(() => gateway.close());

  it('create: the message, finish_reason, usage with cost, and the generation id', async () => {
    const { data: completion, response } = await client.chat.completions
      .create({
        model: 'switchyard/echo',
        messages: [
          { role: 'system', content: 'Repeat after me.' },
          { role: 'user', content: 'hello from the sdk' },
        ],
      })
      .withResponse();
    assert.equal(completion.object, 'chat.completion');
    assert.match(completion.id, /^gen-/);
    assert.equal(response.headers.get('x-generation-id'), completion.id);
    assert.equal(completion.model, 'switchyard/echo');
    assert.equal(typeof completion.created, 'number');
    assert.equal(completion.choices.length, 1);
    const [choice] = completion.choices;
    assert.equal(choice?.index, 0);
    assert.equal(choice?.message.role, 'assistant');
    assert.equal(choice?.message.content, 'hello from the sdk');
    assert.equal(choice?.finish_reason, 'stop');
    assert.ok(completion.usage);
    assert.ok(completion.usage.prompt_tokens > 0);
    assert.ok(completion.usage.completion_tokens > 0);
    assert.equal(
      completion.usage.total_tokens,
      completion.usage.prompt_tokens + completion.usage.completion_tokens,
    );
    assert.equal((completion.usage as any).cost, 0);
  });

  it('max_tokens cut: finish_reason length', async () => {
    const completion = await client.chat.completions.create({
      model: 'switchyard/echo',
      messages: [{ role: 'user', content: 'x'.repeat(100) }],
      max_tokens: 4,
    });
    assert.equal(completion.choices[0]?.finish_reason, 'length');
    assert.equal(completion.choices[0]?.message.content, 'x'.repeat(16));
  });

  it('create({ stream: true, stream_options: { include_usage: true } }): content and a final usage chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'switchyard/scripted',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.ok(chunks.every((chunk) => chunk.object === 'chat.completion.chunk'));
    assert.equal(new Set(chunks.map((chunk) => chunk.id)).size, 1);
    assert.match(chunks[0]?.id ?? '', /^gen-/);
    const content = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    assert.equal(content, SENTENCE);
    const finishes = chunks.flatMap((chunk) =>
      chunk.choices[0]?.finish_reason ? [chunk.choices[0].finish_reason] : [],
    );
    assert.deepEqual(finishes, ['stop']);
    const last = chunks.at(-1);
    assert.deepEqual(last?.choices, []);
    assert.ok(last?.usage && last.usage.completion_tokens > 0);
    assert.equal((last.usage as any).cost, 0);
    // Usage only on that last chunk.
    assert.ok(chunks.slice(0, -1).every((chunk) => !chunk.usage));
  });

  it('a stream without stream_options still ends cleanly with the text', async () => {
    const stream = await client.chat.completions.create({
      model: 'switchyard/echo',
      messages: [{ role: 'user', content: 'plain stream' }],
      stream: true,
    });
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    assert.equal(content, 'plain stream');
  });

  it('chat.completions.stream() helper: content events and finalChatCompletion()', async () => {
    const stream = client.chat.completions.stream({
      model: 'switchyard/scripted',
      messages: [{ role: 'user', content: 'hi' }],
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    stream.on('content', (delta) => deltas.push(delta));
    const final = await stream.finalChatCompletion();
    assert.equal(deltas.join(''), SENTENCE);
    assert.equal(final.choices[0]?.message.content, SENTENCE);
    assert.equal(final.choices[0]?.finish_reason, 'stop');
    assert.ok(final.usage && final.usage.total_tokens > 0);
  });

  it('tool calls: tool_calls in the message, then the tool result sent back', async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'What is the weather in Paris?' },
    ];
    const first = await client.chat.completions.create({
      model: 'switchyard/scripted',
      messages,
      tools: [weatherTool],
      tool_choice: 'auto',
    });
    const [choice] = first.choices;
    assert.equal(choice?.finish_reason, 'tool_calls');
    const call = choice?.message.tool_calls?.[0];
    assert.ok(call?.type === 'function', JSON.stringify(choice?.message));
    assert.equal(call.function.name, 'get_weather');
    assert.equal(call.function.arguments, '{}');
    assert.equal(typeof call.id, 'string');

    messages.push(choice!.message, { role: 'tool', tool_call_id: call.id, content: '{"temperature_c":21}' });
    const second = await client.chat.completions.create({ model: 'switchyard/scripted', messages });
    assert.equal(second.choices[0]?.message.content, SENTENCE);
    assert.equal(second.choices[0]?.finish_reason, 'stop');
  });

  it('streamed tool calls assemble in the stream helper', async () => {
    const final = await client.chat.completions
      .stream({
        model: 'switchyard/scripted',
        messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
        tools: [weatherTool],
      })
      .finalChatCompletion();
    assert.equal(final.choices[0]?.finish_reason, 'tool_calls');
    const call = final.choices[0]?.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.equal(call.function.arguments, '{}');
  });

  it('routing fields the OpenAI types lack (`models`, `provider`) pass through the SDK untouched', async () => {
    const completion = await client.chat.completions.create({
      model: 'switchyard/fail-500',
      models: ['switchyard/echo'],
      provider: { allow_fallbacks: true, sort: 'price' },
      messages: [{ role: 'user', content: 'answered by the fallback' }],
    } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    assert.equal(completion.model, 'switchyard/echo');
    assert.equal(completion.choices[0]?.message.content, 'answered by the fallback');
  });

  it('X-Switchyard-Metadata: enabled as a per-request header: switchyard_metadata in the result and the last chunk', async () => {
    const headers = { 'X-Switchyard-Metadata': 'enabled' };
    const completion = await client.chat.completions.create(
      { model: 'switchyard/echo', messages: [{ role: 'user', content: 'metadata' }] },
      { headers },
    );
    assert.equal(typeof (completion as any).switchyard_metadata, 'object');
    assert.ok((completion as any).switchyard_metadata);
    const plain = await client.chat.completions.create({
      model: 'switchyard/echo',
      messages: [{ role: 'user', content: 'no metadata' }],
    });
    assert.equal((plain as any).switchyard_metadata, undefined);

    const stream = await client.chat.completions.create(
      { model: 'switchyard/echo', messages: [{ role: 'user', content: 'metadata' }], stream: true },
      { headers },
    );
    let last: any = null;
    for await (const chunk of stream) last = chunk;
    assert.ok(last?.switchyard_metadata, JSON.stringify(last));
  });

  it('embeddings.create: the SDK default (base64) decodes to floats of the model dimension', async () => {
    const { data: result, response } = await client.embeddings
      .create({ model: 'switchyard/embed', input: ['first text', 'second text'] })
      .withResponse();
    assert.equal(result.object, 'list');
    assert.equal(result.model, 'switchyard/embed');
    assert.match(response.headers.get('x-generation-id') ?? '', /^gen-/);
    assert.equal(result.data.length, 2);
    for (const [index, item] of result.data.entries()) {
      assert.equal(item.index, index);
      assert.ok(Array.isArray(item.embedding), 'decoded to a number array');
      assert.equal(item.embedding.length, 16);
      assert.ok(item.embedding.every((value) => typeof value === 'number' && Number.isFinite(value)));
      // The demo's vectors have unit length; float32 rounding leaves it within 1e-6.
      assert.ok(Math.abs(Math.hypot(...item.embedding) - 1) < 1e-5);
    }
    assert.notDeepEqual(result.data[0]?.embedding, result.data[1]?.embedding);
    assert.ok(result.usage.prompt_tokens > 0);
    assert.equal((result.usage as any).cost, 0);

    // The explicit float format carries the same vectors (up to float32 precision).
    const floats = await client.embeddings.create({
      model: 'switchyard/embed',
      input: ['first text', 'second text'],
      encoding_format: 'float',
    });
    for (const [index, item] of floats.data.entries()) {
      const decoded = result.data[index]!.embedding;
      assert.ok(item.embedding.every((value, at) => Math.abs(value - decoded[at]!) < 1e-6));
    }
  });

  it('embeddings.create with dimensions', async () => {
    const result = await client.embeddings.create({
      model: 'switchyard/embed',
      input: 'one text',
      dimensions: 64,
    });
    assert.equal(result.data.length, 1);
    assert.equal(result.data[0]?.embedding.length, 64);
  });
});
