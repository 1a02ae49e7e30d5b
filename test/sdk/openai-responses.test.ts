// The official `openai` SDK, unmodified (only baseURL and apiKey set), against a real gateway:
// `client.responses.create` (JSON and stream), the `responses.stream()` helper, and function tools.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startFakeUpstream } from '../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

const SENTENCE = 'The quick brown fox jumps over the lazy dog.';

const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Current weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
};

async function inferenceKey(gateway: TestApp): Promise<string> {
  const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
  assert.equal(created.status, 200, created.text);
  return created.body.key;
}

describe('openai SDK: responses against the demo provider', () => {
  let gateway: TestApp;
  let client: OpenAI;
  before(async () => {
    gateway = await startTestApp({ demo: true });
    client = new OpenAI({
      baseURL: `${gateway.url}/api/v1`,
      apiKey: await inferenceKey(gateway),
      maxRetries: 0,
    });
  });
  after(() => gateway.close());

  it('create: output_text, id, usage with cost as an extra field', async () => {
    const { data: response, response: raw } = await client.responses
      .create({ model: 'switchyard/echo', input: 'hello from the sdk' })
      .withResponse();
    assert.equal(response.object, 'response');
    assert.equal(response.status, 'completed');
    assert.match(response.id, /^gen-/);
    assert.equal(raw.headers.get('x-generation-id'), response.id);
    assert.equal(response.model, 'switchyard/echo');
    assert.equal(response.output_text, 'hello from the sdk');
    const [message] = response.output;
    assert.equal(message?.type, 'message');
    assert.ok(response.usage);
    assert.ok(response.usage.input_tokens > 0);
    assert.ok(response.usage.output_tokens > 0);
    assert.equal(response.usage.total_tokens, response.usage.input_tokens + response.usage.output_tokens);
    assert.equal((response.usage as any).cost, 0);
    assert.equal(typeof (response.usage as any).is_byok, 'boolean');
  });

  it('create with instructions and a message list', async () => {
    const response = await client.responses.create({
      model: 'switchyard/echo',
      instructions: 'Repeat after me.',
      input: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: [{ type: 'input_text', text: 'second' }] },
      ],
    });
    assert.equal(response.output_text, 'second');
    assert.equal(response.instructions, 'Repeat after me.');
  });

  it('create({ stream: true }): events in order, ending with response.completed', async () => {
    const stream = await client.responses.create({ model: 'switchyard/scripted', input: 'hi', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((event) => event.type);
    const deltas = types.filter((type) => type === 'response.output_text.delta').length;
    assert.equal(deltas, SENTENCE.split(' ').length);
    assert.deepEqual(types, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array(deltas).fill('response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    assert.deepEqual(
      events.map((event) => event.sequence_number),
      events.map((_, index) => index),
    );
    const text = events.flatMap((event) =>
      event.type === 'response.output_text.delta' ? [event.delta] : [],
    );
    assert.equal(text.join(''), SENTENCE);
    const last = events.at(-1);
    assert.ok(last?.type === 'response.completed');
    assert.equal(last.response.status, 'completed');
    assert.equal(last.response.output_text, SENTENCE);
    assert.equal((last.response.usage as any)?.cost, 0);
    const created = events[0];
    assert.ok(created?.type === 'response.created');
    assert.equal(created.response.id, last.response.id);
    assert.equal(created.response.status, 'in_progress');
  });

  it('responses.stream() helper: text events and finalResponse()', async () => {
    const stream = client.responses.stream({ model: 'switchyard/scripted', input: 'hi' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    assert.equal(deltas.join(''), SENTENCE);
    assert.equal(final.status, 'completed');
    assert.equal(final.output_text, SENTENCE);
    assert.match(final.id, /^gen-/);
    assert.ok(final.usage && final.usage.output_tokens > 0);
  });

  it('function tools: a function_call item, then function_call_output sent back', async () => {
    const first = await client.responses.create({
      model: 'switchyard/scripted',
      input: 'What is the weather in Paris?',
      tools: [weatherTool],
    });
    assert.equal(first.status, 'completed');
    const call = first.output.find((item) => item.type === 'function_call');
    assert.ok(call?.type === 'function_call', JSON.stringify(first.output));
    assert.equal(call.name, 'get_weather');
    assert.equal(typeof call.call_id, 'string');
    assert.deepEqual(JSON.parse(call.arguments), {});
    assert.equal(first.output_text, '');

    // The pattern the OpenAI docs show: the previous output items go back in as input.
    const second = await client.responses.create({
      model: 'switchyard/scripted',
      input: [
        { role: 'user', content: 'What is the weather in Paris?' },
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { type: 'function_call_output', call_id: call.call_id, output: '{"temperature_c":21}' },
      ],
    });
    assert.equal(second.status, 'completed');
    assert.equal(second.output_text, SENTENCE);
  });

  it('function tools streamed through the helper: arguments events and the final item', async () => {
    const stream = client.responses.stream({
      model: 'switchyard/scripted',
      input: 'What is the weather in Paris?',
      tools: [weatherTool],
    });
    const types: string[] = [];
    stream.on('event', (event) => types.push(event.type));
    const final = await stream.finalResponse();
    assert.ok(types.includes('response.function_call_arguments.delta'), types.join());
    assert.ok(types.includes('response.function_call_arguments.done'), types.join());
    const call = final.output.find((item) => item.type === 'function_call');
    assert.ok(call?.type === 'function_call');
    assert.equal(call.name, 'get_weather');
    assert.equal(call.arguments, '{}');
  });

  it('max_output_tokens cut: status incomplete with the reason', async () => {
    const response = await client.responses.create({
      model: 'switchyard/echo',
      input: 'x'.repeat(100),
      max_output_tokens: 16,
    });
    // The demo counts four characters a token: 16 tokens are 64 of the 100 characters echoed.
    assert.equal(response.status, 'incomplete');
    assert.equal(response.incomplete_details?.reason, 'max_output_tokens');
    assert.equal(response.output_text, 'x'.repeat(64));
  });
});

describe('openai SDK: responses with a priced model behind an OpenAI-compatible upstream', () => {
  let gateway: TestApp;
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let client: OpenAI;
  before(async () => {
    upstream = await startFakeUpstream();
    upstream.handle((request, response) => {
      const body = request.body as { stream?: boolean };
      const usage = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 };
      const base = { id: 'chatcmpl-1', created: 1_786_000_000, model: 'priced-1' };
      if (!body.stream) {
        response.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            ...base,
            object: 'chat.completion',
            choices: [
              { index: 0, message: { role: 'assistant', content: 'priced answer' }, finish_reason: 'stop' },
            ],
            usage,
          }),
        );
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (extra: Record<string, unknown>) =>
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', ...extra })}\n\n`;
      response.write(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'priced ' } }] }));
      response.write(chunk({ choices: [{ index: 0, delta: { content: 'answer' }, finish_reason: 'stop' }] }));
      response.write(chunk({ choices: [], usage }));
      response.end('data: [DONE]\n\n');
    });
    gateway = await startTestApp({
      config: {
        credits: { initial: 10 },
        catalog: {
          providers: [{ slug: 'fakeai', name: 'Fake AI', base_url: `${upstream.url}/v1` }],
          models: [
            {
              id: 'fakeai/priced',
              name: 'Priced',
              provider: 'fakeai',
              provider_model_id: 'priced-1',
              context_length: 8192,
              // $1 per million prompt tokens, $2 per million completion tokens.
              pricing: { prompt: '0.000001', completion: '0.000002' },
              supported_parameters: ['max_tokens', 'temperature', 'tools'],
            },
          ],
        },
        providers: { fakeai: { api_key: 'sk-upstream' } },
      },
    });
    client = new OpenAI({
      baseURL: `${gateway.url}/api/v1`,
      apiKey: await inferenceKey(gateway),
      maxRetries: 0,
    });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('usage.cost is the priced cost of the upstream usage', async () => {
    const response = await client.responses.create({ model: 'fakeai/priced', input: 'hi' });
    assert.equal(response.output_text, 'priced answer');
    assert.equal(response.usage?.input_tokens, 1000);
    assert.equal(response.usage?.output_tokens, 500);
    // 1000 × $0.000001 + 500 × $0.000002
    assert.equal((response.usage as any).cost, 0.002);
    assert.equal(upstream.requests.at(-1)?.headers.authorization, 'Bearer sk-upstream');
  });

  it('the stream helper ends with the same cost', async () => {
    const final = await client.responses.stream({ model: 'fakeai/priced', input: 'hi' }).finalResponse();
    assert.equal(final.output_text, 'priced answer');
    assert.equal((final.usage as any).cost, 0.002);
  });
});
