import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type RecordedRequest, startFakeUpstream } from '../../helpers/fake-upstream.js';
import { expectError, startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  ACME_MODEL,
  acmeCatalog,
  anthropicMessage,
  CLAUDE_LIKE_MODEL,
  chatCompletion,
  createKey,
  GEM_MODEL,
  withClaudeLike,
  withGem,
} from './harness.js';

/** A snapshot model served over OpenAI Responses (the `openai` provider, pointed at the fake). */
const OPENAI_RESPONSES_MODEL = 'openai/gpt-4.1-mini';

const GEMINI_ANSWER = JSON.stringify({
  candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }],
  usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
});
const RESPONSES_ANSWER = JSON.stringify({
  id: 'resp_up',
  object: 'response',
  status: 'completed',
  model: 'gpt-4.1-mini',
  output: [
    {
      type: 'message',
      id: 'msg_up',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'ok', annotations: [] }],
    },
  ],
  usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 },
});

/**
 * `tool_choice` of type `allowed_tools` on `/chat/completions`, through a real gateway to each
 * upstream protocol: the provider is sent only the listed tools (in their declared order) with the
 * mode as its own tool choice, and a choice listing a tool that was not declared, none at all or
 * another mode is a 400 naming the field, before anything is sent. `/responses` takes `auto` alone
 * (spec 4.6). Custom (freeform) tools are a 400 that says they are not supported.
 */
describe('tool_choice allowed_tools through the whole gateway', () => {
  let fake: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  before(async () => {
    fake = await startFakeUpstream();
    const catalog = withGem(
      withClaudeLike(acmeCatalog(`${fake.url}/v1`), `${fake.url}/v1`),
      `${fake.url}/v1beta`,
    );
    gateway = await startTestApp({
      config: {
        credits: { initial: 100 },
        catalog,
        providers: {
          acme: { api_key: 'a' },
          'claude-like': { api_key: 'c' },
          gem: { api_key: 'g' },
          openai: { api_key: 'o', base_url: `${fake.url}/v1` },
        },
      },
    });
    key = (await createKey(gateway)).key;
    fake.handle((request, response) => answer(request, response));
  });
  after(async () => {
    await gateway.close();
    await fake.close();
  });

  function answer(request: RecordedRequest, response: ServerResponse): void {
    const json = (body: string) => response.writeHead(200, { 'content-type': 'application/json' }).end(body);
    if (request.url.includes('/messages')) json(anthropicMessage('ok'));
    else if (request.url.includes('/v1beta/')) json(GEMINI_ANSWER);
    else if (request.url.endsWith('/responses')) json(RESPONSES_ANSWER);
    else json(chatCompletion('ok'));
  }

  const post = (path: string, body: Record<string, unknown>) =>
    gateway.request('POST', `/api/v1${path}`, { key, body });
  /** The body the upstream received for the last request. */
  const sent = () => fake.requests.at(-1)?.body as Record<string, any>;

  const NAMES = ['get_weather', 'get_time', 'send_email'];
  const parameters = { type: 'object', properties: {} };
  const chatTools = NAMES.map((name) => ({ type: 'function', function: { name, parameters } }));
  const responsesTools = NAMES.map((name) => ({ type: 'function', name, parameters }));
  /** Listed in another order than declared, one twice. */
  const LISTED = ['send_email', 'get_weather', 'send_email'];
  const chatChoice = (mode: unknown, names: string[] = LISTED) => ({
    type: 'allowed_tools',
    allowed_tools: { mode, tools: names.map((name) => ({ type: 'function', function: { name } })) },
  });
  const responsesChoice = (mode: unknown, names: string[] = LISTED) => ({
    type: 'allowed_tools',
    mode,
    tools: names.map((name) => ({ type: 'function', name })),
  });

  /** The tool names and the tool choice an upstream was sent, in its own protocol's terms. */
  function upstreamTools(model: string): { names: string[]; choice: unknown } {
    const body = sent();
    switch (model) {
      case CLAUDE_LIKE_MODEL:
        return { names: body.tools.map((tool: any) => tool.name), choice: body.tool_choice };
      case GEM_MODEL:
        return {
          names: body.tools.flatMap((tool: any) => tool.functionDeclarations.map((fn: any) => fn.name)),
          choice: body.toolConfig,
        };
      case OPENAI_RESPONSES_MODEL:
        return { names: body.tools.map((tool: any) => tool.name), choice: body.tool_choice };
      default:
        return { names: body.tools.map((tool: any) => tool.function.name), choice: body.tool_choice };
    }
  }
  const expectedChoice = (model: string, mode: 'auto' | 'required') => {
    switch (model) {
      case CLAUDE_LIKE_MODEL:
        return { type: mode === 'auto' ? 'auto' : 'any' };
      case GEM_MODEL:
        return { functionCallingConfig: { mode: mode === 'auto' ? 'AUTO' : 'ANY' } };
      default:
        return mode;
    }
  };
  const MODELS = [ACME_MODEL, CLAUDE_LIKE_MODEL, GEM_MODEL, OPENAI_RESPONSES_MODEL];

  it('chat completions: each protocol is sent only the listed tools, with the mode as its tool choice', async () => {
    for (const model of MODELS) {
      for (const mode of ['auto', 'required'] as const) {
        const reply = await post('/chat/completions', {
          model,
          messages: [{ role: 'user', content: 'hi' }],
          tools: chatTools,
          tool_choice: chatChoice(mode),
        });
        assert.equal(reply.status, 200, `${model} ${mode}: ${reply.text}`);
        assert.deepEqual(
          upstreamTools(model),
          { names: ['get_weather', 'send_email'], choice: expectedChoice(model, mode) },
          `${model} ${mode}`,
        );
      }
    }
  });

  it('a choice naming an undeclared tool, naming none, or of another mode is a 400 naming the field; /responses takes none', async () => {
    const count = fake.requests.length;
    const chat = (extra: Record<string, unknown>) =>
      post('/chat/completions', {
        model: ACME_MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        tools: chatTools,
        ...extra,
      });
    const responses = (extra: Record<string, unknown>) =>
      post('/responses', { model: ACME_MODEL, input: 'hi', tools: responsesTools, ...extra });
    const cases: Array<[string, Promise<any>, string]> = [
      [
        'chat: an undeclared name',
        chat({ tool_choice: chatChoice('auto', ['get_weather', 'get_stock']) }),
        "body.tool_choice.allowed_tools.tools.1.function.name names no tool of body.tools: 'get_stock'",
      ],
      [
        'chat: no tools declared',
        chat({ tools: undefined, tool_choice: chatChoice('required', ['get_weather']) }),
        "body.tool_choice.allowed_tools.tools.0.function.name names no tool of body.tools: 'get_weather'",
      ],
      [
        'chat: an empty list',
        chat({ tool_choice: chatChoice('auto', []) }),
        'body.tool_choice.allowed_tools.tools must NOT have fewer than 1 items',
      ],
      [
        'chat: another mode',
        chat({ tool_choice: chatChoice('none') }),
        'body.tool_choice.allowed_tools.mode must be one of: auto, required',
      ],
      [
        'chat: the Responses shape',
        chat({ tool_choice: responsesChoice('auto') }),
        "body.tool_choice.allowed_tools must have required property 'allowed_tools'",
      ],
      [
        // Spec 4.6: /responses takes tool_choice "auto" alone.
        'responses: an allowed_tools choice',
        responses({ tool_choice: responsesChoice('auto', ['get_weather']) }),
        'body.tool_choice only "auto" is supported',
      ],
    ];
    for (const [what, reply, message] of cases) {
      assert.equal(expectError(await reply, 400), `Invalid request parameters: ${message}`, what);
    }
    assert.equal(fake.requests.length, count, 'nothing was sent');
  });

  it('custom tools are a 400 that says they are not supported, naming the field', async () => {
    const count = fake.requests.length;
    const unsupported = '"custom": custom tools are not supported (only function tools are)';
    const custom = { type: 'custom', custom: { name: 'run_sql', format: { type: 'text' } } };
    const cases: Array<[string, Promise<any>, string]> = [
      [
        'chat: a custom tool',
        post('/chat/completions', {
          model: ACME_MODEL,
          messages: [{ role: 'user', content: 'hi' }],
          tools: [...chatTools, custom],
        }),
        `body.tools.3.type ${unsupported}`,
      ],
      [
        'chat: a choice of a custom tool',
        post('/chat/completions', {
          model: ACME_MODEL,
          messages: [{ role: 'user', content: 'hi' }],
          tools: chatTools,
          tool_choice: { type: 'custom', custom: { name: 'run_sql' } },
        }),
        `body.tool_choice.type ${unsupported}`,
      ],
      [
        'responses: a custom tool',
        post('/responses', {
          model: ACME_MODEL,
          input: 'hi',
          tools: [...responsesTools, { type: 'custom', name: 'run_sql' }],
        }),
        `body.tools.3.type ${unsupported}`,
      ],
    ];
    for (const [what, reply, message] of cases) {
      assert.equal(expectError(await reply, 400), `Invalid request parameters: ${message}`, what);
    }
    assert.equal(fake.requests.length, count, 'nothing was sent');
  });
});
