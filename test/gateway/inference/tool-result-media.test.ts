import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';

/**
 * A `/messages` tool result that holds an image or a document (Claude Code's Read on a screenshot),
 * or that says the tool failed (`is_error`): Anthropic gets the result as it was sent; a provider
 * whose results hold text only gets the image in a user message after the turn's results.
 */
describe('tool results with images, documents and errors', () => {
  let anthropic: Awaited<ReturnType<typeof startFakeUpstream>>;
  let openai: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gemini: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;
  const PNG = 'iVBORw0KGgo=';

  before(async () => {
    [anthropic, openai, gemini] = await Promise.all([
      startFakeUpstream(),
      startFakeUpstream(),
      startFakeUpstream(),
    ]);
    anthropic.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5-20250929',
          content: [{ type: 'text', text: 'A cat.' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 2 },
        }),
      );
    });
    openai.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          model: 'gpt-4o',
          choices: [{ index: 0, message: { role: 'assistant', content: 'A cat.' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
        }),
      );
    });
    gemini.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          candidates: [
            { content: { role: 'model', parts: [{ text: 'A cat.' }] }, finishReason: 'STOP', index: 0 },
          ],
          usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 2 },
        }),
      );
    });
    gateway = await startTestApp({
      config: {
        credits: { initial: 10 },
        providers: {
          anthropic: { api_key: 'sk-ant-test', base_url: `${anthropic.url}/v1` },
          openai: { api_key: 'sk-openai-test', base_url: `${openai.url}/v1` },
          'google-ai-studio': { api_key: 'goog-test', base_url: `${gemini.url}/v1beta` },
        },
      },
    });
    key = (await gateway.request('POST', '/api/v1/keys', { body: { name: 'app' } })).body.key;
  });
  after(async () => {
    await gateway.close();
    await Promise.all([anthropic.close(), openai.close(), gemini.close()]);
  });

  const conversation = (model: string) => ({
    model,
    max_tokens: 100,
    tools: [{ name: 'Read', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }],
    messages: [
      { role: 'user', content: 'What is in cat.png, and in missing.png?' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'cat.png' } },
          { type: 'tool_use', id: 'toolu_2', name: 'Read', input: { path: 'missing.png' } },
        ],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_1',
            content: [
              { type: 'text', text: 'cat.png:' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            ],
          },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'No such file', is_error: true },
        ],
      },
    ],
  });
  const post = (body: unknown) =>
    gateway.request('POST', '/api/v1/messages', { headers: { authorization: `Bearer ${key}` }, body });

  it('reach Anthropic as they were sent: the image inside the result, is_error kept', async () => {
    const answer = await post(conversation('anthropic/claude-sonnet-4.5'));
    assert.equal(answer.status, 200, answer.text);
    const results = (anthropic.requests.at(-1)!.body as any).messages[2].content;
    assert.deepEqual(results, [
      {
        type: 'tool_result',
        tool_use_id: 'toolu_1',
        content: [
          { type: 'text', text: 'cat.png:' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ],
      },
      { type: 'tool_result', tool_use_id: 'toolu_2', content: 'No such file', is_error: true },
    ]);
  });

  it('reach an OpenAI chat upstream as text results, the image in a user message after them', async () => {
    const answer = await post(conversation('openai/gpt-4o'));
    assert.equal(answer.status, 200, answer.text);
    const messages = (openai.requests.at(-1)!.body as any).messages;
    assert.deepEqual(
      messages.map((message: { role: string }) => message.role),
      ['user', 'assistant', 'tool', 'tool', 'user'],
    );
    assert.equal(messages[2].content, 'cat.png:');
    assert.deepEqual(messages[4].content, [
      { type: 'text', text: 'The result of tool call toolu_1 came with:' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
    ]);
  });

  it('reach Gemini with the failed result as an error, the image after the results', async () => {
    const answer = await post(conversation('google/gemini-2.5-flash'));
    assert.equal(answer.status, 200, answer.text);
    const contents = (gemini.requests.at(-1)!.body as any).contents;
    const results = contents[2].parts;
    assert.deepEqual(results[1].functionResponse.response, { error: 'No such file' });
    assert.deepEqual(results.at(-1), { inlineData: { mimeType: 'image/png', data: PNG } });
  });

  it('refuses a tool result block of another type, naming it', async () => {
    const body = conversation('anthropic/claude-sonnet-4.5');
    (body.messages[2]!.content as any[])[0].content.push({ type: 'tool_use', id: 'x', name: 'y', input: {} });
    const answer = await post(body);
    assert.equal(answer.status, 400, answer.text);
    assert.match(answer.text, /body\.messages\.2\.content\.0\.content\.2\.type/);
  });
});
