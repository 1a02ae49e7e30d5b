import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';

/**
 * Anthropic's prompt caching through the gateway: the `cache_control` breakpoints a client puts on
 * system blocks, tools, content blocks and tool results (on /messages), or on text parts (on chat
 * completions, as OpenRouter takes them), reach an Anthropic upstream where they were put, and the
 * cache reads it reports are billed at their price. Without a breakpoint the system stays one text.
 */
describe('prompt caching breakpoints reach Anthropic', () => {
  let anthropic: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;
  const ephemeral = { type: 'ephemeral' as const };

  before(async () => {
    anthropic = await startFakeUpstream();
    anthropic.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_cached',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5-20250929',
          content: [{ type: 'text', text: 'Done.' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: {
            input_tokens: 10,
            output_tokens: 2,
            cache_read_input_tokens: 4000,
            cache_creation_input_tokens: 0,
          },
        }),
      );
    });
    gateway = await startTestApp({
      config: {
        credits: { initial: 10 },
        providers: { anthropic: { api_key: 'sk-ant-test', base_url: `${anthropic.url}/v1` } },
      },
    });
    key = (await gateway.request('POST', '/api/v1/keys', { body: { name: 'app' } })).body.key;
  });
  after(async () => {
    await gateway.close();
    await anthropic.close();
  });

  const post = (path: string, body: unknown) =>
    gateway.request('POST', `/api/v1${path}`, { headers: { authorization: `Bearer ${key}` }, body });
  const sent = () => anthropic.requests.at(-1)!.body as Record<string, any>;

  it('/messages: system, tool, content and tool-result breakpoints stay in place', async () => {
    const answer = await post('/messages', {
      model: 'anthropic/claude-sonnet-4.5',
      max_tokens: 100,
      system: [
        { type: 'text', text: 'You are Claude Code.' },
        { type: 'text', text: 'Project rules: …', cache_control: { type: 'ephemeral', ttl: '1h' } },
      ],
      tools: [
        {
          name: 'Read',
          description: 'Read a file',
          input_schema: { type: 'object', properties: { path: { type: 'string' } } },
          cache_control: ephemeral,
        },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Read a.txt', cache_control: ephemeral }] },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.txt' } },
            { type: 'tool_use', id: 'toolu_2', name: 'Read', input: { path: 'b.txt' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello', cache_control: ephemeral },
            // A breakpoint on the text inside a result goes on the result, which that text ends.
            {
              type: 'tool_result',
              tool_use_id: 'toolu_2',
              content: [{ type: 'text', text: 'world', cache_control: ephemeral }],
            },
          ],
        },
      ],
    });
    assert.equal(answer.status, 200, answer.text);
    const body = sent();
    assert.deepEqual(body.system, [
      { type: 'text', text: 'You are Claude Code.' },
      { type: 'text', text: 'Project rules: …', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
    assert.deepEqual(body.tools[0].cache_control, ephemeral);
    assert.deepEqual(body.messages[0].content[0], {
      type: 'text',
      text: 'Read a.txt',
      cache_control: ephemeral,
    });
    assert.equal(body.messages[1].content[0].cache_control, undefined);
    assert.deepEqual(body.messages[2].content, [
      { type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello', cache_control: ephemeral },
      { type: 'tool_result', tool_use_id: 'toolu_2', content: 'world', cache_control: ephemeral },
    ]);
    // Cache reads are reported and billed (at the endpoint's cache-read price, below its input price).
    assert.equal(answer.body.usage.cache_read_input_tokens, 4000);
  });

  it('/messages: a top-level cache_control passes on; no breakpoint keeps the system one text', async () => {
    const automatic = await post('/messages', {
      model: 'anthropic/claude-sonnet-4.5',
      max_tokens: 100,
      cache_control: ephemeral,
      system: [
        { type: 'text', text: 'One.' },
        { type: 'text', text: 'Two.' },
      ],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    assert.equal(automatic.status, 200, automatic.text);
    assert.deepEqual(sent().cache_control, ephemeral);
    assert.equal(sent().system, 'One.\n\nTwo.');
  });

  it('chat completions: text parts with cache_control become breakpoints, the system one included', async () => {
    const answer = await post('/chat/completions', {
      model: 'anthropic/claude-sonnet-4.5',
      messages: [
        {
          role: 'system',
          content: [{ type: 'text', text: 'A long, stable system prompt.', cache_control: ephemeral }],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'A large document…', cache_control: { type: 'ephemeral', ttl: '1h' } },
            {
              type: 'image_url',
              image_url: { url: 'https://example.com/chart.png' },
              cache_control: ephemeral,
            },
            { type: 'text', text: 'What does it say?' },
          ],
        },
      ],
    });
    assert.equal(answer.status, 200, answer.text);
    const body = sent();
    assert.deepEqual(body.system, [
      { type: 'text', text: 'A long, stable system prompt.', cache_control: ephemeral },
    ]);
    assert.deepEqual(body.messages[0].content, [
      { type: 'text', text: 'A large document…', cache_control: { type: 'ephemeral', ttl: '1h' } },
      {
        type: 'image',
        source: { type: 'url', url: 'https://example.com/chart.png' },
        cache_control: ephemeral,
      },
      { type: 'text', text: 'What does it say?' },
    ]);
    assert.equal(answer.body.usage.prompt_tokens_details.cached_tokens, 4000);
    // A breakpoint of the wrong shape is refused, naming it.
    const bad = await post('/chat/completions', {
      model: 'anthropic/claude-sonnet-4.5',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'forever' } }] },
      ],
    });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.body.error.message, /body\.messages\.0\.content\.0\.cache_control\.type/);
  });
});
