import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startFakeUpstream, writeSse } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';
import { ACME_MODEL, acmeCatalog, chatChunk, createKey, sseData, usageOf } from './harness.js';

/**
 * A tool call streamed by an OpenAI-compatible upstream whose function name comes after its id (in
 * a later delta, in pieces, the first piece perhaps with the id, or after the arguments) reaches every surface with its name: what a
 * chat-completions, a Responses and a Messages client read, frame by frame and through the
 * official SDKs' stream helpers.
 */
describe('streamed tool calls whose name comes late, through the whole gateway', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  const ARGUMENTS = '{"city":"Oslo"}';
  /** How upstreams have been seen to stream one call's name apart from its id. */
  const shapes: Record<string, Array<Record<string, unknown>>> = {
    'the name in the next delta': [
      { index: 0, id: 'call_late', type: 'function', function: { name: '', arguments: '' } },
      { index: 0, function: { name: 'get_weather' } },
      { index: 0, function: { arguments: '{"city":' } },
      { index: 0, function: { arguments: '"Oslo"}' } },
    ],
    'the name in pieces': [
      { index: 0, id: 'call_late', type: 'function', function: { arguments: '' } },
      { index: 0, function: { name: 'get_' } },
      { index: 0, function: { name: 'weather', arguments: '{"city":' } },
      { index: 0, function: { arguments: '"Oslo"}' } },
    ],
    'the first piece of the name with the id, the rest in later deltas': [
      { index: 0, id: 'call_late', type: 'function', function: { name: 'get_', arguments: '' } },
      { index: 0, function: { name: 'wea' } },
      { index: 0, function: { name: 'ther' } },
      { index: 0, function: { arguments: '{"city":' } },
      { index: 0, function: { arguments: '"Oslo"}' } },
    ],
    'the arguments before the name': [
      { index: 0, id: 'call_late', type: 'function', function: { arguments: ARGUMENTS } },
      { index: 0, function: { name: 'get_weather' } },
    ],
  };

  const serve = (toolCalls: Array<Record<string, unknown>>) =>
    upstream.handle((_request, response) =>
      writeSse(response, [
        chatChunk({ role: 'assistant', content: null }),
        ...toolCalls.map((toolCall) => chatChunk({ tool_calls: [toolCall] })),
        chatChunk({}, 'tool_calls'),
        JSON.stringify({ id: 'up-s', object: 'chat.completion.chunk', choices: [], usage: usageOf(10, 5) }),
        '[DONE]',
      ]),
    );

  const weatherTool = {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  };

  before(async () => {
    upstream = await startFakeUpstream();
    gateway = await startTestApp({
      config: {
        credits: { initial: 100 },
        catalog: acmeCatalog(`${upstream.url}/v1`),
        providers: { acme: { api_key: 'a' } },
      },
    });
    key = (await createKey(gateway)).key;
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  const post = (path: string, body: Record<string, unknown>) =>
    gateway.request('POST', `/api/v1${path}`, { key, body });

  it('chat completions: the first tool_calls chunk has the id and the name', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/api/v1`, apiKey: key, maxRetries: 0 });
    for (const [shape, toolCalls] of Object.entries(shapes)) {
      serve(toolCalls);
      const reply = await post('/chat/completions', {
        model: ACME_MODEL,
        messages: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: [weatherTool],
        stream: true,
      });
      assert.equal(reply.status, 200, reply.text);
      const deltas = sseData(reply.text)
        .filter((chunk) => chunk !== '[DONE]')
        .flatMap((chunk) => chunk.choices.flatMap((choice: any) => choice.delta.tool_calls ?? []));
      assert.deepEqual(
        deltas[0],
        {
          index: 0,
          id: 'call_late',
          type: 'function',
          function: { name: 'get_weather', arguments: '' },
        },
        shape,
      );
      // Only the first delta names the call: a client that joins names would double it.
      assert.deepEqual(
        deltas.slice(1).map((delta: any) => Object.keys(delta.function)),
        deltas.slice(1).map(() => ['arguments']),
        shape,
      );
      assert.equal(deltas.map((delta: any) => delta.function.arguments).join(''), ARGUMENTS, shape);

      const final = await client.chat.completions
        .stream({
          model: ACME_MODEL,
          messages: [{ role: 'user', content: 'Weather in Oslo?' }],
          tools: [weatherTool],
        })
        .finalChatCompletion();
      const message = final.choices[0]?.message;
      assert.deepEqual(
        message?.tool_calls?.map((call) => (call.type === 'function' ? [call.id, call.function] : [])),
        [['call_late', { name: 'get_weather', arguments: ARGUMENTS }]],
        shape,
      );
      assert.equal(final.choices[0]?.finish_reason, 'tool_calls');
    }
  });

  it('responses: the function_call item is added with its name and completed with its arguments', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/api/v1`, apiKey: key, maxRetries: 0 });
    const tool = { type: 'function' as const, name: 'get_weather', parameters: {}, strict: false };
    for (const [shape, toolCalls] of Object.entries(shapes)) {
      serve(toolCalls);
      const reply = await post('/responses', {
        model: ACME_MODEL,
        input: 'Weather in Oslo?',
        tools: [tool],
        stream: true,
      });
      assert.equal(reply.status, 200, reply.text);
      const events = sseData(reply.text).filter((event) => event !== '[DONE]');
      const added = events.find(
        (event) => event.type === 'response.output_item.added' && event.item.type === 'function_call',
      );
      assert.equal(added?.item.name, 'get_weather', shape);
      assert.equal(added?.item.call_id, 'call_late', shape);
      const done = events.find((event) => event.type === 'response.function_call_arguments.done');
      assert.equal(done?.name, 'get_weather', shape);
      assert.equal(done?.arguments, ARGUMENTS, shape);

      const final = await client.responses
        .stream({ model: ACME_MODEL, input: 'Weather in Oslo?', tools: [tool] })
        .finalResponse();
      assert.deepEqual(
        final.output
          .filter((item) => item.type === 'function_call')
          .map((item) => [item.call_id, item.name, item.arguments]),
        [['call_late', 'get_weather', ARGUMENTS]],
        shape,
      );
    }
  });

  it('messages: the tool_use block starts with its name', async () => {
    const client = new Anthropic({ baseURL: `${gateway.url}/api`, apiKey: key, maxRetries: 0 });
    const tool = { name: 'get_weather', input_schema: { type: 'object' as const, properties: {} } };
    for (const [shape, toolCalls] of Object.entries(shapes)) {
      serve(toolCalls);
      const reply = await post('/messages', {
        model: ACME_MODEL,
        max_tokens: 100,
        messages: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: [tool],
        stream: true,
      });
      assert.equal(reply.status, 200, reply.text);
      const events = sseData(reply.text);
      const start = events.find(
        (event) => event.type === 'content_block_start' && event.content_block.type === 'tool_use',
      );
      assert.deepEqual(
        start?.content_block,
        { type: 'tool_use', id: 'call_late', name: 'get_weather', input: {} },
        shape,
      );

      const final = await client.messages
        .stream({
          model: ACME_MODEL,
          max_tokens: 100,
          messages: [{ role: 'user', content: 'Weather in Oslo?' }],
          tools: [tool],
        })
        .finalMessage();
      assert.deepEqual(
        final.content.filter((block) => block.type === 'tool_use'),
        [{ type: 'tool_use', id: 'call_late', name: 'get_weather', input: { city: 'Oslo' } }],
        shape,
      );
      assert.equal(final.stop_reason, 'tool_use');
    }
  });
});
