// The official `@openrouter/sdk`, unmodified (only serverURL and apiKey set), against a real
// gateway: `chat.send` and `responses.send`, JSON and streamed, routing options passed through the
// SDK's own request fields, and its error classes. The SDK validates every answer with its zod
// schemas, so a missing or mistyped field the SDK requires fails these tests.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HTTPClient, OpenRouter } from '@openrouter/sdk';
import * as errors from '@openrouter/sdk/models/errors';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

const SENTENCE = 'The quick brown fox jumps over the lazy dog.';

async function rejection(promise: Promise<unknown>): Promise<errors.OpenRouterError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof errors.OpenRouterError, `expected an OpenRouterError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the call to fail');
}

describe('@openrouter/sdk against the demo provider', () => {
  let gateway: TestApp;
  let key: string;
  let client: OpenRouter;
  // The SDK retries 5XX with backoff for up to an hour by default; failures must show at once.
  const clientWith = (apiKey: string, options: { httpClient?: HTTPClient } = {}) =>
    new OpenRouter({
      serverURL: `${gateway.url}/api/v1`,
      apiKey,
      retryConfig: { strategy: 'none' },
      ...options,
    });
  before(async () => {
    gateway = await startTestApp({ demo: true });
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
    assert.equal(created.status, 200, created.text);
    key = created.body.key;
    client = clientWith(key);
  });
  after(() => gateway.close());

  it('chat.send: the parsed ChatResult with usage and cost', async () => {
    const result = await client.chat.send({
      chatRequest: {
        model: 'switchyard/echo',
        messages: [
          { role: 'system', content: 'Repeat after me.' },
          { role: 'user', content: 'hello from the sdk' },
        ],
      },
    });
    assert.ok(!(result instanceof ReadableStream));
    assert.equal(result.object, 'chat.completion');
    assert.match(result.id, /^gen-/);
    assert.equal(result.model, 'switchyard/echo');
    assert.equal(result.choices[0]?.message.content, 'hello from the sdk');
    assert.equal(result.choices[0]?.finishReason, 'stop');
    assert.ok(result.usage && result.usage.promptTokens > 0 && result.usage.completionTokens > 0);
    assert.equal(result.usage.cost, 0);
    assert.equal(result.usage.isByok, false);
  });

  it('chat.send({ stream: true }): chunks with the text and a final usage chunk', async () => {
    const stream = await client.chat.send({
      chatRequest: {
        model: 'switchyard/scripted',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
        streamOptions: { includeUsage: true },
      },
    });
    assert.ok(stream instanceof ReadableStream);
    let content = '';
    const finishes: string[] = [];
    let usage: any = null;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      const finish = chunk.choices[0]?.finishReason;
      if (finish) finishes.push(finish);
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(content, SENTENCE);
    assert.deepEqual(finishes, ['stop']);
    assert.ok(usage && usage.completionTokens > 0);
    assert.equal(usage.cost, 0);
  });

  it('chat.send with tools: tool calls, then the tool result sent back', async () => {
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'get_weather',
          description: 'Current weather in a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const first = await client.chat.send({
      chatRequest: {
        model: 'switchyard/scripted',
        messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
        tools,
      },
    });
    assert.ok(!(first instanceof ReadableStream));
    assert.equal(first.choices[0]?.finishReason, 'tool_calls');
    const call = first.choices[0]?.message.toolCalls?.[0];
    assert.ok(call, JSON.stringify(first.choices[0]?.message));
    assert.equal(call.function.name, 'get_weather');
    const second = await client.chat.send({
      chatRequest: {
        model: 'switchyard/scripted',
        messages: [
          { role: 'user', content: 'What is the weather in Paris?' },
          { role: 'assistant', content: null, toolCalls: [call] },
          { role: 'tool', toolCallId: call.id, content: '{"temperature_c":21}' },
        ],
      },
    });
    assert.ok(!(second instanceof ReadableStream));
    assert.equal(second.choices[0]?.message.content, SENTENCE);
  });

  it('responses.send: the parsed Response with output text and usage', async () => {
    const result = await client.responses.send({
      responsesRequest: { model: 'switchyard/echo', input: 'hello from the sdk' },
    });
    assert.ok(!(result instanceof ReadableStream));
    assert.equal(result.object, 'response');
    assert.equal(result.status, 'completed');
    assert.match(result.id, /^gen-/);
    assert.equal(result.outputText, 'hello from the sdk');
    const [message] = result.output;
    assert.equal(message?.type, 'message');
    assert.ok(result.usage && result.usage.inputTokens > 0 && result.usage.outputTokens > 0);
    assert.equal(result.usage.cost, 0);
  });

  it('responses.send({ stream: true }): events in order, ending with response.completed', async () => {
    const stream = await client.responses.send({
      responsesRequest: { model: 'switchyard/scripted', input: 'hi', stream: true },
    });
    assert.ok(stream instanceof ReadableStream);
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((event) => event.type);
    assert.deepEqual(types.slice(0, 4), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    assert.equal(types.at(-1), 'response.completed');
    const text = events
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta);
    assert.equal(text.join(''), SENTENCE);
    const completed = events.at(-1);
    assert.equal(completed.response.status, 'completed');
    assert.equal(completed.response.outputText, SENTENCE);
  });

  it('responses.send with function tools: a function_call item, JSON and streamed', async () => {
    const tools = [
      {
        type: 'function' as const,
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ];
    const result = await client.responses.send({
      responsesRequest: { model: 'switchyard/scripted', input: 'What is the weather in Paris?', tools },
    });
    assert.ok(!(result instanceof ReadableStream));
    const call = result.output.find((item) => item.type === 'function_call') as any;
    assert.ok(call, JSON.stringify(result.output));
    assert.equal(call.name, 'get_weather');
    assert.equal(call.arguments, '{}');

    const stream = await client.responses.send({
      responsesRequest: {
        model: 'switchyard/scripted',
        input: 'What is the weather in Paris?',
        tools,
        stream: true,
      },
    });
    assert.ok(stream instanceof ReadableStream);
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    assert.deepEqual(types, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  it('`models` fallback through the SDK: fail-500 first, answered by echo', async () => {
    const chat = await client.chat.send({
      chatRequest: {
        models: ['switchyard/fail-500', 'switchyard/echo'],
        messages: [{ role: 'user', content: 'fallback works' }],
      },
    });
    assert.ok(!(chat instanceof ReadableStream));
    assert.equal(chat.model, 'switchyard/echo');
    assert.equal(chat.choices[0]?.message.content, 'fallback works');

    const response = await client.responses.send({
      responsesRequest: { models: ['switchyard/fail-500', 'switchyard/echo'], input: 'fallback works' },
    });
    assert.ok(!(response instanceof ReadableStream));
    assert.equal(response.model, 'switchyard/echo');
    assert.equal(response.outputText, 'fallback works');
  });

  it('provider preferences through the SDK are applied', async () => {
    // Only a provider that does not serve the model: nothing is left to route to.
    const error = await rejection(
      client.chat.send({
        chatRequest: {
          model: 'switchyard/echo',
          messages: [{ role: 'user', content: 'hi' }],
          provider: { only: ['openai'] },
        },
      }),
    );
    assert.ok(error instanceof errors.NotFoundResponseError, error.constructor.name);
    assert.match(error.error.message, /provider\.only/);

    // The provider that serves it, with fallbacks off and a price ceiling it meets: answered.
    const result = await client.chat.send({
      chatRequest: {
        model: 'switchyard/echo',
        messages: [{ role: 'user', content: 'preferences pass' }],
        provider: {
          only: ['switchyard'],
          allowFallbacks: false,
          dataCollection: 'deny',
          sort: 'price',
          // The SDK types max_price members as decimal strings (as the reference's schema does).
          maxPrice: { prompt: '1', completion: '1' },
        },
      },
    });
    assert.ok(!(result instanceof ReadableStream));
    assert.equal(result.choices[0]?.message.content, 'preferences pass');
  });

  it('X-Switchyard-Metadata: enabled through the SDK header option reaches the response', async () => {
    // The SDK's own `xOpenRouterMetadata` sends X-OpenRouter-Metadata, which is not our header,
    // and its schemas drop unknown fields such as `switchyard_metadata`; per-request `headers` and
    // an HTTPClient response hook (both SDK options) show what the gateway answered.
    const bodies: string[] = [];
    const httpClient = new HTTPClient();
    httpClient.addHook('response', async (response) => {
      bodies.push(await response.clone().text());
    });
    const observed = clientWith(key, { httpClient });
    const result = await observed.chat.send(
      { chatRequest: { model: 'switchyard/echo', messages: [{ role: 'user', content: 'metadata' }] } },
      { headers: { 'X-Switchyard-Metadata': 'enabled' } },
    );
    assert.ok(!(result instanceof ReadableStream));
    assert.equal(result.choices[0]?.message.content, 'metadata');
    const raw = JSON.parse(bodies.at(-1) ?? '{}');
    assert.ok(raw.switchyard_metadata, bodies.at(-1));

    await observed.chat.send({
      chatRequest: { model: 'switchyard/echo', messages: [{ role: 'user', content: 'no metadata' }] },
    });
    assert.equal(JSON.parse(bodies.at(-1) ?? '{}').switchyard_metadata, undefined);
  });

  it('embeddings.generate: vectors of the model dimension', async () => {
    const result = await client.embeddings.generate({
      requestBody: { model: 'switchyard/embed', input: ['first', 'second'] },
    });
    assert.ok(typeof result === 'object' && result !== null && 'data' in result, JSON.stringify(result));
    assert.equal(result.data.length, 2);
    const embedding = result.data[0]?.embedding;
    assert.ok(Array.isArray(embedding));
    assert.equal(embedding.length, 16);
  });

  it('generations.getGeneration: the record of a chat.send', async () => {
    const chat = await client.chat.send({
      chatRequest: { model: 'switchyard/echo', messages: [{ role: 'user', content: 'recorded' }] },
    });
    assert.ok(!(chat instanceof ReadableStream));
    const record = await client.generations.getGeneration({ id: chat.id });
    assert.equal(record.data.id, chat.id);
    assert.equal(record.data.model, 'switchyard/echo');
  });

  it('errors: 400, 401, 403, 429 and 500 as the SDK classes', async () => {
    const chat = (model: string) => ({
      chatRequest: { model, messages: [{ role: 'user' as const, content: 'hi' }] },
    });
    const badRequest = await rejection(client.chat.send(chat('nobody/no-such-model')));
    assert.ok(badRequest instanceof errors.BadRequestResponseError, badRequest.constructor.name);
    assert.equal(badRequest.statusCode, 400);
    assert.match(badRequest.error.message, /no-such-model/);

    const unauthorized = await rejection(clientWith('sk-sy-v1-nope').chat.send(chat('switchyard/echo')));
    assert.ok(unauthorized instanceof errors.UnauthorizedResponseError, unauthorized.constructor.name);
    assert.equal(unauthorized.error.code, 401);

    const forbidden = await rejection(clientWith(gateway.managementKey).chat.send(chat('switchyard/echo')));
    assert.ok(forbidden instanceof errors.ForbiddenResponseError, forbidden.constructor.name);

    const limited = await rejection(
      client.responses.send({ responsesRequest: { model: 'switchyard/fail-429', input: 'hi' } }),
    );
    assert.ok(limited instanceof errors.TooManyRequestsResponseError, limited.constructor.name);
    assert.equal(limited.headers.get('retry-after'), '1');

    const failed = await rejection(client.chat.send(chat('switchyard/fail-500')));
    assert.ok(failed instanceof errors.InternalServerResponseError, failed.constructor.name);
    assert.equal(failed.error.metadata?.error_type, 'server');
  });

  it('a chat stream cut mid-way: the text so far, then a chunk carrying the error', async () => {
    const stream = await client.chat.send({
      chatRequest: {
        model: 'switchyard/cut-mid-stream',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      },
    });
    assert.ok(stream instanceof ReadableStream);
    let content = '';
    const finishes: string[] = [];
    let thrown: unknown = null;
    try {
      for await (const chunk of stream) {
        content += chunk.choices[0]?.delta.content ?? '';
        const finish = chunk.choices[0]?.finishReason;
        if (finish) finishes.push(finish);
      }
    } catch (error) {
      thrown = error;
    }
    assert.equal(content, 'The quick ');
    // The SDK does not throw on the error chunk: it ends the choice with finish_reason "error".
    assert.equal(thrown, null, String(thrown));
    assert.deepEqual(finishes, ['error']);
  });

  it('a responses stream cut mid-way: the text so far, then response.failed', async () => {
    const stream = await client.responses.send({
      responsesRequest: { model: 'switchyard/cut-mid-stream', input: 'hi', stream: true },
    });
    assert.ok(stream instanceof ReadableStream);
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    const text = events
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta);
    assert.equal(text.join(''), 'The quick ');
    const last = events.at(-1);
    assert.equal(last.type, 'response.failed');
    assert.equal(last.response.status, 'failed');
    assert.match(last.response.error?.message ?? '', /connection cut/i);
  });
});
