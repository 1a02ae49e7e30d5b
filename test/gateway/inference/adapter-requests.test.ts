import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type RecordedRequest, startFakeUpstream, writeSse } from '../../helpers/fake-upstream.js';
import { expectError, startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  ACME_MODEL,
  acmeCatalog,
  anthropicMessage,
  CLAUDE_LIKE_MODEL,
  chatCompletion,
  createKey,
  EMBED_MODEL,
  GEM_MODEL,
  withClaudeLike,
  withEmbeddings,
  withGem,
} from './harness.js';

const ANTHROPIC_ANSWER = anthropicMessage('ok');
const GEMINI_ANSWER = JSON.stringify({
  candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }],
  usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
});

/**
 * Requests each upstream protocol would refuse, found by fuzzing through fake upstreams: the
 * gateway sends them in a form the provider accepts, or refuses them itself with a 400 naming the
 * field or the rule, rather than passing on whatever the provider answers. Upstream answers that
 * carry nothing at all are bad answers (502), not completed empty replies.
 */
describe('requests the upstream protocols would refuse', () => {
  let fake: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;
  /** Streams answered with these frames, when set; otherwise every protocol answers "ok". */
  let streamFrames: string[] | null = null;

  before(async () => {
    fake = await startFakeUpstream();
    const catalog = withEmbeddings(
      withGem(withClaudeLike(acmeCatalog(`${fake.url}/v1`), `${fake.url}/v1`), `${fake.url}/v1beta`),
    );
    gateway = await startTestApp({
      config: {
        credits: { initial: 100 },
        catalog,
        providers: { acme: { api_key: 'a' }, 'claude-like': { api_key: 'c' }, gem: { api_key: 'g' } },
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
    const stream = (request.body as { stream?: boolean }).stream === true || request.url.includes('stream');
    if (stream && streamFrames) {
      void writeSse(response, streamFrames);
      return;
    }
    const json = (body: string) => response.writeHead(200, { 'content-type': 'application/json' }).end(body);
    if (request.url.includes('/messages')) json(ANTHROPIC_ANSWER);
    else if (request.url.includes('/v1beta/')) json(GEMINI_ANSWER);
    else if (request.url.includes('/embeddings'))
      json(
        JSON.stringify({
          data: [{ index: 0, embedding: [0.5] }],
          usage: { prompt_tokens: 1, total_tokens: 1 },
        }),
      );
    else json(chatCompletion('ok'));
  }

  const post = (path: string, body: Record<string, unknown>) => gateway.request('POST', path, { key, body });
  const chat = (model: string, extra: Record<string, unknown> = {}) =>
    post('/api/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }], ...extra });
  /** The body the upstream received for the last request. */
  const sent = () => fake.requests.at(-1)?.body as Record<string, any>;
  const tool = (parameters?: Record<string, unknown>) => ({
    type: 'function',
    function: { name: 'get_weather', ...(parameters ? { parameters } : {}) },
  });

  it('tool call ids Anthropic refuses are rewritten the same way in the call and in its result', async () => {
    const conversation = (ids: string[]) => [
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: ids.map((id) => ({
          id,
          type: 'function',
          function: { name: 'get_weather', arguments: '{}' },
        })),
      },
      ...ids.map((id) => ({ role: 'tool', tool_call_id: id, content: 'sunny' })),
    ];
    const ids = ['functions.get_weather:0', 'functions.get_weather_0', 'call_ok-1'];
    const reply = await chat(CLAUDE_LIKE_MODEL, { messages: conversation(ids), tools: [tool()] });
    assert.equal(reply.status, 200, reply.text);
    const [, assistant, results] = sent().messages;
    const uses = assistant.content.map((block: { id: string }) => block.id);
    const answered = results.content.map((block: { tool_use_id: string }) => block.tool_use_id);
    for (const id of uses) assert.match(id, /^[a-zA-Z0-9_-]+$/);
    assert.deepEqual(answered, uses, 'each result names its call');
    assert.equal(new Set(uses).size, 3, 'ids that differ only in refused characters stay apart');
    assert.equal(uses[2], 'call_ok-1', 'a valid id travels as it is');
    assert.notEqual(uses[0], 'functions_get_weather_0');
  });

  it("a tool schema without a type becomes Anthropic's object schema; another type is a 400", async () => {
    const reply = await chat(CLAUDE_LIKE_MODEL, { tools: [tool({})] });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(sent().tools[0].input_schema, { type: 'object' });
    const described = await chat(CLAUDE_LIKE_MODEL, {
      tools: [tool({ properties: { city: { type: 'string' } } })],
    });
    assert.equal(described.status, 200, described.text);
    assert.deepEqual(sent().tools[0].input_schema, {
      type: 'object',
      properties: { city: { type: 'string' } },
    });

    const count = fake.requests.length;
    const refused = await chat(CLAUDE_LIKE_MODEL, { tools: [tool({ type: 'string' })] });
    assert.match(expectError(refused, 400), /tool "get_weather"'s parameters to be an object schema/);
    assert.equal(fake.requests.length, count, 'nothing was sent');
  });

  it('Anthropic images: a PDF becomes a document, a type Anthropic cannot show is a 400', async () => {
    const image = (url: string) => ({
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }],
    });
    const pdf = await chat(CLAUDE_LIKE_MODEL, image('data:application/pdf;base64,JVBERi0='));
    assert.equal(pdf.status, 200, pdf.text);
    assert.deepEqual(sent().messages[0].content[0], {
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' },
    });
    const png = await chat(CLAUDE_LIKE_MODEL, image('data:IMAGE/PNG;base64,iVBORw0K'));
    assert.equal(png.status, 200, png.text);
    assert.equal(sent().messages[0].content[0].source.media_type, 'image/png');

    const upperPdf = await chat(CLAUDE_LIKE_MODEL, image('data:Application/PDF;base64,JVBERi0='));
    assert.equal(upperPdf.status, 200, upperPdf.text);
    assert.equal(sent().messages[0].content[0].source.media_type, 'application/pdf');
    const jpg = await chat(CLAUDE_LIKE_MODEL, image('data:image/jpg;base64,/9j/'));
    assert.equal(jpg.status, 200, jpg.text);
    assert.equal(sent().messages[0].content[0].source.media_type, 'image/jpeg');
    // An image sent as a file is an image block, not a document Anthropic would refuse.
    const file = (data: string) => ({
      messages: [{ role: 'user', content: [{ type: 'file', file: { filename: 'x', file_data: data } }] }],
    });
    const imageFile = await chat(CLAUDE_LIKE_MODEL, file('data:image/png;base64,iVBORw0K'));
    assert.equal(imageFile.status, 200, imageFile.text);
    assert.deepEqual(sent().messages[0].content[0], {
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' },
    });
    const zip = await chat(CLAUDE_LIKE_MODEL, file('data:application/zip;base64,UEsDBA=='));
    assert.match(
      expectError(zip, 400),
      /Anthropic accepts inline files as images, PDF or plain text, not application\/zip/,
    );

    const svg = await chat(CLAUDE_LIKE_MODEL, image('data:image/svg+xml;base64,PHN2Zz4='));
    assert.match(
      expectError(svg, 400),
      /image\/jpeg, image\/png, image\/gif or image\/webp, not image\/svg\+xml/,
    );
  });

  it('a temperature above 1 is refused for Anthropic with its range, and taken by other protocols', async () => {
    const refused = await chat(CLAUDE_LIKE_MODEL, { temperature: 1.5 });
    assert.match(expectError(refused, 400), /Anthropic accepts a temperature from 0 to 1, not 1.5/);
    const one = await chat(CLAUDE_LIKE_MODEL, { temperature: 1 });
    assert.equal(one.status, 200, one.text);
    assert.equal(sent().temperature, 1);
    // With a fallback that takes it, routing moves on instead of refusing.
    const fallback = await chat(CLAUDE_LIKE_MODEL, { temperature: 1.5, models: [ACME_MODEL] });
    assert.equal(fallback.status, 200, fallback.text);
    assert.equal(sent().temperature, 1.5);
    assert.equal(sent().model, 'widget-1');
  });

  it('a conversation with only a system prompt is a 400 for Anthropic and Gemini', async () => {
    for (const model of [CLAUDE_LIKE_MODEL, GEM_MODEL]) {
      const count = fake.requests.length;
      const reply = await chat(model, {
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: [] },
        ],
      });
      assert.match(
        expectError(reply, 400),
        /The conversation has no user or (assistant|model) content/,
        model,
      );
      assert.equal(fake.requests.length, count, `${model}: nothing was sent`);
    }
  });

  it('tool_choice and parallel_tool_calls without tools are left out rather than sent to be refused', async () => {
    const extra = { tool_choice: 'none', parallel_tool_calls: false };
    assert.equal((await chat(ACME_MODEL, extra)).status, 200);
    assert.equal(sent().tool_choice, undefined);
    assert.equal(sent().parallel_tool_calls, undefined);
    assert.equal((await chat(GEM_MODEL, extra)).status, 200);
    assert.equal(sent().toolConfig, undefined);
    // With tools they travel.
    assert.equal((await chat(ACME_MODEL, { ...extra, tools: [tool()] })).status, 200);
    assert.equal(sent().tool_choice, 'none');
    assert.equal(sent().parallel_tool_calls, false);
    assert.equal((await chat(GEM_MODEL, { ...extra, tools: [tool()] })).status, 200);
    assert.deepEqual(sent().toolConfig, { functionCallingConfig: { mode: 'NONE' } });
  });

  it('a tool choice that demands a tool without tools is a 400 naming tool_choice', async () => {
    const count = fake.requests.length;
    const chatRequired = await chat(ACME_MODEL, { tools: [], tool_choice: 'required' });
    assert.equal(chatRequired.status, 400, chatRequired.text);
    assert.match(chatRequired.text, /body\.tool_choice/);
    const messagesAny = await post('/api/v1/messages', {
      model: CLAUDE_LIKE_MODEL,
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
      tool_choice: { type: 'any' },
    });
    assert.equal(messagesAny.status, 400, messagesAny.text);
    assert.match(messagesAny.text, /body\.tool_choice/);
    assert.equal(fake.requests.length, count, 'nothing was sent');
  });

  it('integers past what providers read (1e308) are a 400 naming the field', async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['/api/v1/chat/completions', { seed: 1e308 }, 'body.seed'],
      ['/api/v1/chat/completions', { seed: -1e20 }, 'body.seed'],
      ['/api/v1/chat/completions', { top_k: 1e308 }, 'body.top_k'],
      ['/api/v1/responses', { top_k: 2 ** 31 }, 'body.top_k'],
      ['/api/v1/messages', { top_k: 1e308 }, 'body.top_k'],
      ['/api/v1/embeddings', { dimensions: 1e308 }, 'body.dimensions'],
    ];
    const bodies: Record<string, Record<string, unknown>> = {
      '/api/v1/chat/completions': { model: ACME_MODEL, messages: [{ role: 'user', content: 'hi' }] },
      '/api/v1/responses': { model: ACME_MODEL, input: 'hi' },
      '/api/v1/messages': {
        model: CLAUDE_LIKE_MODEL,
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
      },
      '/api/v1/embeddings': { model: EMBED_MODEL, input: 'hi' },
    };
    const count = fake.requests.length;
    for (const [path, extra, field] of cases) {
      const reply = await post(path, { ...bodies[path], ...extra });
      assert.equal(reply.status, 400, `${path} ${JSON.stringify(extra)}: ${reply.text}`);
      assert.ok(reply.text.includes(field), `${path}: ${reply.text}`);
    }
    assert.equal(fake.requests.length, count, 'nothing was sent');
    // A parameter the endpoint does not list is left out for it, as the reference's gateway ignores
    // it; with require_parameters such an endpoint is not tried.
    const reasoned = await chat(ACME_MODEL, { reasoning_effort: 'high', temperature: 0.4 });
    assert.equal(reasoned.status, 200, reasoned.text);
    assert.equal(sent().reasoning_effort, undefined);
    assert.equal(sent().temperature, 0.4);
    const strict = await chat(ACME_MODEL, {
      reasoning_effort: 'high',
      provider: { require_parameters: true },
    });
    assert.notEqual(strict.status, 200, strict.text);
    // The largest accepted values still go through.
    const largest = await chat(ACME_MODEL, { seed: Number.MAX_SAFE_INTEGER, top_k: 2 ** 31 - 1 });
    assert.equal(largest.status, 200, largest.text);
    assert.equal(sent().seed, Number.MAX_SAFE_INTEGER);
    // Gemini reads a 32-bit seed: a larger one is refused for it, and its bounds go through.
    const gemini = await chat(GEM_MODEL, { seed: 2 ** 31 });
    assert.match(expectError(gemini, 400), /Gemini takes a 32-bit seed, not 2147483648/);
    for (const seed of [2 ** 31 - 1, -(2 ** 31)]) {
      const fits = await chat(GEM_MODEL, { seed });
      assert.equal(fits.status, 200, fits.text);
      assert.equal(sent().generationConfig.seed, seed);
    }
  });

  it('base64 data that is not base64 is a 400 naming the field, on every surface', async () => {
    const bad = 'data:image/png;base64,not base64!';
    const cases: Array<[string, Record<string, unknown>, string]> = [
      [
        '/api/v1/chat/completions',
        {
          model: ACME_MODEL,
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: bad } }] }],
        },
        'body.messages.0.content.0.image_url.url',
      ],
      [
        '/api/v1/chat/completions',
        {
          model: ACME_MODEL,
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,' } }] },
          ],
        },
        'body.messages.0.content.0.image_url.url',
      ],
      [
        '/api/v1/chat/completions',
        {
          model: ACME_MODEL,
          messages: [
            {
              role: 'user',
              content: [{ type: 'file', file: { file_data: 'data:application/pdf;base64,%%%' } }],
            },
          ],
        },
        'body.messages.0.content.0.file.file_data',
      ],
      [
        '/api/v1/responses',
        {
          model: ACME_MODEL,
          input: [{ role: 'user', content: [{ type: 'input_image', image_url: bad }] }],
        },
        'image_url',
      ],
      [
        '/api/v1/responses',
        {
          model: ACME_MODEL,
          input: [
            {
              role: 'user',
              content: [{ type: 'input_file', filename: 'a.pdf', file_data: '<<not base64>>' }],
            },
          ],
        },
        'file_data',
      ],
      [
        '/api/v1/messages',
        {
          model: CLAUDE_LIKE_MODEL,
          max_tokens: 10,
          messages: [
            {
              role: 'user',
              content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: '@@@' } }],
            },
          ],
        },
        'body.messages.0.content.0.source.data',
      ],
    ];
    const count = fake.requests.length;
    for (const [path, body, field] of cases) {
      const reply = await post(path, body);
      assert.equal(reply.status, 400, `${path}: ${reply.text}`);
      assert.ok(reply.text.includes(field), `${field} in ${reply.text}`);
      assert.match(reply.text, /base64/);
    }
    const audio = await chat(ACME_MODEL, {
      messages: [
        { role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'no!', format: 'wav' } }] },
      ],
    });
    assert.equal(audio.status, 400, audio.text);
    assert.match(audio.text, /body\.messages\.0\.content\.0\.input_audio\.data must be base64 data/);
    // Two megabytes of line breaks ending in a character that is not base64: refused in one pass
    // (a pattern with line breaks in two repeated groups took 12 s for 100,000 of them).
    const flood = await chat(ACME_MODEL, {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `data:image/png;base64,${'\n'.repeat(1_500_000)}!` } },
          ],
        },
      ],
    });
    assert.equal(flood.status, 400, flood.text.slice(0, 200));
    const blank = await chat(ACME_MODEL, {
      messages: [
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,\n\n' } }] },
      ],
    });
    assert.equal(blank.status, 400, blank.text);
    assert.equal(fake.requests.length, count, 'nothing was sent');
    // The URL-safe alphabet and line breaks are base64 too; Anthropic and Gemini get it standard.
    const urlSafe = 'data:image/png;base64,iVBO\r\nRw0K-_8=';
    const anthropic = await chat(CLAUDE_LIKE_MODEL, {
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: urlSafe } }] }],
    });
    assert.equal(anthropic.status, 200, anthropic.text);
    assert.equal(sent().messages[0].content[0].source.data, 'iVBORw0K+/8=');
    const gemini = await chat(GEM_MODEL, {
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: urlSafe } }] }],
    });
    assert.equal(gemini.status, 200, gemini.text);
    assert.equal(sent().contents[0].parts[0].inlineData.data, 'iVBORw0K+/8=');
    // Line breaks (MIME encoders wrap lines) and padding are base64 too.
    const wrapped = await chat(ACME_MODEL, {
      messages: [
        {
          role: 'user',
          content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBO\r\nRw0K\nGgo=' } }],
        },
      ],
    });
    assert.equal(wrapped.status, 200, wrapped.text);
  });

  it('a JSON body declared in another charset than UTF-8 is a 415, not read as UTF-8', async () => {
    const body = JSON.stringify({ model: ACME_MODEL, messages: [{ role: 'user', content: 'café' }] });
    const send = (contentType: string) =>
      gateway.request('POST', '/api/v1/chat/completions', {
        key,
        rawBody: body,
        headers: { 'content-type': contentType },
      });
    const count = fake.requests.length;
    for (const contentType of [
      'application/json; charset=utf-16',
      'application/json;charset="ISO-8859-1"',
      'application/json; Charset=UTF-16',
    ]) {
      const reply = await send(contentType);
      assert.equal(reply.status, 415, `${contentType}: ${reply.text}`);
      assert.match(reply.body.error.message, /charset .* is not supported: send the JSON body as UTF-8/);
    }
    assert.equal(fake.requests.length, count, 'nothing was sent');
    for (const contentType of [
      'application/json; charset=UTF-8',
      'application/json; charset="utf8"',
      'application/json',
    ]) {
      const reply = await send(contentType);
      assert.equal(reply.status, 200, `${contentType}: ${reply.text}`);
      assert.equal(sent().messages[0].content, 'café');
    }
  });

  it('a stream that ends before its first chunk or message_start is a 502, not an empty answer', async () => {
    try {
      streamFrames = ['[DONE]'];
      const empty = await chat(ACME_MODEL, { stream: true });
      assert.equal(empty.status, 502, empty.text);
      assert.match(empty.body.error.message, /\[DONE\] before any chunk/);
      // A fallback serves the request instead.
      streamFrames = null;
      fake.handle((request, response) => {
        void writeSse(response, request.url.includes('/v1beta/') ? [GEMINI_ANSWER] : ['[DONE]']);
      });
      const fallback = await chat(ACME_MODEL, { stream: true, models: [GEM_MODEL] });
      fake.handle((request, response) => answer(request, response));
      assert.equal(fallback.status, 200, fallback.text);
      assert.match(fallback.text, /"content":"ok"/);

      streamFrames = [JSON.stringify({ type: 'message_stop' })];
      const stopped = await chat(CLAUDE_LIKE_MODEL, { stream: true });
      assert.equal(stopped.status, 502, stopped.text);
      assert.match(stopped.body.error.message, /message_stop before message_start/);
      // An upstream that leaves out message_start but streams content still answers.
      streamFrames = [
        JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
        JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } }),
        JSON.stringify({ type: 'message_stop' }),
      ];
      const headless = await chat(CLAUDE_LIKE_MODEL, { stream: true });
      assert.equal(headless.status, 200, headless.text);
      assert.match(headless.text, /"content":"hi"/);
      assert.doesNotMatch(headless.text, /error/);
    } finally {
      streamFrames = null;
      fake.handle((request, response) => answer(request, response));
    }
  });
});
