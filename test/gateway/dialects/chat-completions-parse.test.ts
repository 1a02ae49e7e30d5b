import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { renderError } from '../../../src/errors/error-renderer.js';
import { chatCompletionsDialect } from '../../../src/gateway/dialects/chat-completions/chat-completions-dialect.js';
import type { ChatCompletionsBody } from '../../../src/gateway/dialects/chat-completions/chat-completions-schema.js';
import type { ParsedRequest } from '../../../src/gateway/dialects/dialect.js';

/**
 * The body goes through what the app does with it: the schema compiled by an Ajv configured as in
 * src/platform/validation.ts (no coercion, first error only), the service's error renderer, then
 * the dialect's parse. Each refusal asserts the 400 message a client would read.
 */
const ajv = new Ajv({
  allErrors: false,
  strict: false,
  useDefaults: true,
  removeAdditional: false,
  coerceTypes: false,
});
(addFormats as unknown as (instance: Ajv) => Ajv)(ajv);
const validate = ajv.compile<ChatCompletionsBody>(chatCompletionsDialect.bodySchema);

type Headers = Record<string, string | string[] | undefined>;

function accept(body: unknown, headers: Headers = {}): ParsedRequest {
  const copy = structuredClone(body);
  if (!validate(copy)) assert.fail(`schema refused: ${JSON.stringify(validate.errors?.[0])}`);
  return chatCompletionsDialect.parse(copy, headers);
}

/** The 400 message for a refused body, from whichever stage refuses it. */
function refusal(body: unknown, headers: Headers = {}): string {
  const copy = structuredClone(body);
  let rendered: ReturnType<typeof renderError>;
  if (!validate(copy)) {
    rendered = renderError({ validation: validate.errors, validationContext: 'body' });
  } else {
    try {
      chatCompletionsDialect.parse(copy, headers);
    } catch (error) {
      rendered = renderError(error);
      assert.equal(rendered.status, 400);
      return rendered.body.error.message;
    }
    assert.fail(`accepted: ${JSON.stringify(body).slice(0, 200)}`);
  }
  assert.equal(rendered.status, 400);
  return rendered.body.error.message;
}

const user = (content: unknown) => ({ role: 'user', content });
const minimal = { model: 'openai/gpt-4o', messages: [user('Hi')] };

describe('chat-completions dialect: parsing valid requests', () => {
  it('turns a minimal request into the canonical request and routing fields', () => {
    assert.deepEqual(accept(minimal), {
      generation: { input: [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'Hi' }] }] },
      models: ['openai/gpt-4o'],
      provider: null,
      stream: false,
      sessionId: null,
      user: null,
      metadata: null,
      trace: null,
    });
  });

  it('converts every message role and content form, in order', () => {
    const parsed = accept({
      model: 'm/a',
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'developer',
          content: [
            { type: 'text', text: 'Use ' },
            { type: 'text', text: 'JSON.' },
          ],
        },
        {
          role: 'user',
          name: 'ann',
          content: [
            { type: 'text', text: 'Look:' },
            { type: 'image_url', image_url: { url: 'https://x.test/a.png', detail: 'low' } },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'image_url', image_url: { url: 'https://x.test/b.png', detail: 'original' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBE', filename: 'a.pdf' } },
            { type: 'file', file: { file_data: 'https://x.test/b.pdf' } },
            { type: 'input_audio', input_audio: { data: 'UklG', format: 'wav' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Checking.',
          reasoning: 'I should call the tool.',
          refusal: null,
          annotations: [],
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
            { id: 'call_2', type: 'function', function: { name: 'time', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' },
        {
          role: 'tool',
          tool_call_id: 'call_2',
          content: [
            { type: 'text', text: '12:' },
            { type: 'text', text: '00' },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_3', function: { name: 'x', arguments: '' } }],
        },
        { role: 'tool', tool_call_id: 'call_3', content: '' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Done' },
            { type: 'refusal', refusal: ' (no more)' },
          ],
        },
        { role: 'assistant', content: '' },
        // A refusal sent back as the gateway answered it.
        { role: 'assistant', content: null, refusal: "I can't help with that." },
        user('Thanks'),
      ],
    });
    assert.deepEqual(parsed.generation.input, [
      { type: 'message', role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
      {
        type: 'message',
        role: 'developer',
        content: [
          { type: 'text', text: 'Use ' },
          { type: 'text', text: 'JSON.' },
        ],
      },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'text', text: 'Look:' },
          { type: 'image', url: 'https://x.test/a.png', detail: 'low' },
          { type: 'image', url: 'data:image/png;base64,AAAA' },
          { type: 'image', url: 'https://x.test/b.png', detail: 'high' },
          { type: 'file', url: 'data:application/pdf;base64,JVBE', filename: 'a.pdf' },
          { type: 'file', url: 'https://x.test/b.pdf' },
          { type: 'audio', data: 'UklG', format: 'wav' },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Checking.' }] },
      { type: 'function-call', callId: 'call_1', name: 'weather', arguments: '{"city":"Oslo"}' },
      { type: 'function-call', callId: 'call_2', name: 'time', arguments: '{}' },
      { type: 'function-call-output', callId: 'call_1', output: 'Sunny' },
      { type: 'function-call-output', callId: 'call_2', output: '12:00' },
      { type: 'function-call', callId: 'call_3', name: 'x', arguments: '' },
      { type: 'function-call-output', callId: 'call_3', output: '' },
      {
        type: 'message',
        role: 'assistant',
        content: [
          { type: 'text', text: 'Done' },
          { type: 'text', text: ' (no more)' },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'text', text: "I can't help with that." }] },
      { type: 'message', role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
    ]);
  });

  it('maps every generation parameter', () => {
    const parsed = accept({
      ...minimal,
      tools: [
        {
          type: 'function',
          function: {
            name: 'weather',
            description: 'Weather now',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
            strict: true,
          },
        },
        { type: 'function', function: { name: 'time' } },
      ],
      tool_choice: { type: 'function', function: { name: 'weather' } },
      parallel_tool_calls: false,
      max_tokens: 50,
      max_completion_tokens: 100,
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      frequency_penalty: -1,
      presence_penalty: 1.5,
      seed: 7,
      stop: 'END',
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'answer', schema: { type: 'object' }, strict: true, description: 'An answer' },
      },
      reasoning: { effort: 'high', max_tokens: 2000, exclude: true, enabled: true },
      user: 'user-1',
    });
    assert.deepEqual(parsed.generation, {
      input: [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
      tools: [
        {
          type: 'function',
          name: 'weather',
          description: 'Weather now',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
          strict: true,
        },
        { type: 'function', name: 'time', parameters: { type: 'object', properties: {} } },
      ],
      toolChoice: { type: 'function', name: 'weather' },
      parallelToolCalls: false,
      maxOutputTokens: 100,
      temperature: 0.5,
      topP: 0.9,
      topK: 40,
      frequencyPenalty: -1,
      presencePenalty: 1.5,
      seed: 7,
      stop: ['END'],
      responseFormat: {
        type: 'json_schema',
        name: 'answer',
        schema: { type: 'object' },
        strict: true,
        description: 'An answer',
      },
      reasoning: { effort: 'high', maxTokens: 2000, include: false, enabled: true },
      user: 'user-1',
    });
    assert.equal(parsed.user, 'user-1');
  });

  it('asks for reasoning back when a summary of it is asked for', () => {
    assert.deepEqual(
      accept({ ...minimal, reasoning: { effort: 'high', summary: 'detailed' } }).generation.reasoning,
      {
        effort: 'high',
        summary: 'detailed',
        include: true,
      },
    );
    assert.deepEqual(
      accept({ ...minimal, reasoning: { summary: 'concise', exclude: true } }).generation.reasoning,
      {
        include: false,
        summary: 'concise',
      },
    );
  });

  it('reads the simpler forms of each parameter', () => {
    const generation = (extra: object) => {
      const { input: _input, ...rest } = accept({ ...minimal, ...extra }).generation;
      return rest;
    };
    assert.deepEqual(generation({ max_tokens: 50 }), { maxOutputTokens: 50 });
    assert.deepEqual(generation({ stop: ['a', 'b', 'c', 'd'] }), { stop: ['a', 'b', 'c', 'd'] });
    assert.deepEqual(generation({ stop: [] }), {});
    assert.deepEqual(generation({ stop: null, temperature: null, max_tokens: null, seed: null }), {});
    assert.deepEqual(generation({ top_k: 0 }), {}, 'top_k 0 means disabled');
    assert.deepEqual(generation({ tool_choice: 'none' }), { toolChoice: 'none' });
    assert.deepEqual(generation({ tool_choice: 'auto' }), { toolChoice: 'auto' });
    assert.deepEqual(
      generation({ tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'required' })
        .toolChoice,
      'required',
    );
    // allowed_tools: the declared tools it lists, in their declared order, and its mode as the choice.
    const declared = ['a', 'b', 'c'].map((name) => ({ type: 'function', function: { name } }));
    for (const mode of ['auto', 'required'] as const) {
      const narrowed = generation({
        tools: declared,
        tool_choice: {
          type: 'allowed_tools',
          allowed_tools: {
            mode,
            tools: ['c', 'a', 'c'].map((name) => ({ type: 'function', function: { name } })),
          },
        },
      });
      assert.deepEqual(
        narrowed.tools?.map((tool) => tool.name),
        ['a', 'c'],
      );
      assert.equal(narrowed.toolChoice, mode);
    }
    assert.deepEqual(generation({ response_format: { type: 'json_object' } }), {
      responseFormat: { type: 'json_object' },
    });
    assert.deepEqual(generation({ response_format: { type: 'text' } }), { responseFormat: { type: 'text' } });
    assert.deepEqual(generation({ reasoning_effort: 'low' }), { reasoning: { effort: 'low' } });
    assert.deepEqual(generation({ reasoning_effort: 'low', reasoning: { effort: 'low' } }), {
      reasoning: { effort: 'low' },
    });
    assert.deepEqual(generation({ reasoning: { effort: null } }), {});
    assert.deepEqual(generation({ include_reasoning: false }), { reasoning: { include: false } });
    assert.deepEqual(generation({ reasoning: { enabled: true } }), { reasoning: { enabled: true } });
  });

  it('accepts and ignores what the OpenAI and OpenRouter SDKs may send but we do not act on', () => {
    const parsed = accept({
      ...minimal,
      stream: true,
      stream_options: { include_usage: true },
      usage: { include: true },
      n: 1,
      logprobs: false,
      top_logprobs: 0,
      logit_bias: { '50256': -100 },
      store: false,
      service_tier: 'auto',
      verbosity: 'low',
      prediction: { type: 'content', content: 'x' },
      plugins: [{ id: 'web' }],
      transforms: ['middle-out'],
      repetition_penalty: 1.1,
      min_p: 0.1,
      top_a: 0.2,
      prompt_cache_key: 'k',
      prompt_cache_retention: '24h',
      safety_identifier: 'hash',
      debug: { echo_upstream_body: true },
      cache_control: { type: 'ephemeral' },
      metadata: { app: 'test' },
      trace: { trace_id: 't1', custom: 1 },
      audio: null,
    });
    assert.equal(parsed.stream, true);
    assert.deepEqual(parsed.metadata, { app: 'test' });
    assert.deepEqual(parsed.trace, { trace_id: 't1', custom: 1 });
    assert.deepEqual(Object.keys(parsed.generation), ['input']);
  });

  it("reads an assistant turn's images, sent back as answered, as generated images after its text", () => {
    const url = 'data:image/png;base64,iVBORw0KGgo=';
    const image = { type: 'image_url', image_url: { url }, index: 0 };
    const parsed = accept({
      ...minimal,
      messages: [
        user('Draw a cat'),
        { role: 'assistant', content: 'Here.', images: [image] },
        { role: 'assistant', content: null, images: [image] },
        user('Make it blue'),
      ],
    });
    assert.deepEqual(parsed.generation.input.slice(1, 3), [
      {
        type: 'message',
        role: 'assistant',
        content: [
          { type: 'text', text: 'Here.' },
          { type: 'image', url, generated: true },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'image', url, generated: true }] },
    ]);
  });

  it('reads the output modalities and image options', () => {
    const generation = (extra: Record<string, unknown>) => {
      const { input: _input, ...rest } = accept({ ...minimal, ...extra }).generation;
      return rest;
    };
    assert.deepEqual(
      generation({ modalities: ['image', 'text'], image_config: { aspect_ratio: '16:9', image_size: '2K' } }),
      { outputModalities: ['text', 'image'], imageConfig: { aspectRatio: '16:9', imageSize: '2K' } },
    );
    // Each modality once; options only Gemini takes are sent, others (another provider's) are not.
    assert.deepEqual(generation({ modalities: ['image', 'image'], image_config: { quality: 'high' } }), {
      outputModalities: ['image'],
    });
    assert.deepEqual(generation({ modalities: ['text'] }), { outputModalities: ['text'] });
    assert.deepEqual(generation({ modalities: null }), {});
    assert.deepEqual(generation({ modalities: null, image_config: null }), {});
    // One body sent to many models carries its image options always: without modalities they
    // stand (an image model's default answer may hold images); for a text answer they are dropped.
    assert.deepEqual(generation({ image_config: { aspect_ratio: '1:1' } }), {
      imageConfig: { aspectRatio: '1:1' },
    });
    assert.deepEqual(generation({ image_config: {} }), {});
    // Another provider's keys take any JSON value and are not sent; null for a known key is not given.
    assert.deepEqual(
      generation({
        image_config: {
          enhance: true,
          seed: null,
          extra: { a: 1 },
          styles: ['ink'],
          quality: 'high',
          aspect_ratio: null,
          image_size: '2K',
        },
      }),
      { imageConfig: { imageSize: '2K' } },
    );
    assert.deepEqual(generation({ image_config: { aspect_ratio: null, image_size: null } }), {});
    assert.deepEqual(generation({ modalities: ['text'], image_config: { image_size: '4K' } }), {
      outputModalities: ['text'],
    });
  });

  it('accepts the body the @openrouter/sdk sends, with its explicit nulls', () => {
    const parsed = accept({
      messages: [user('Hi')],
      model: 'openai/gpt-4o',
      stream: false,
      provider: {
        order: null,
        only: ['openai'],
        ignore: null,
        allow_fallbacks: null,
        zdr: null,
        sort: null,
        quantizations: null,
        preferred_max_latency: null,
      },
      reasoning: { effort: null, summary: null },
      user: null,
      session_id: null,
      trace: null,
    });
    assert.deepEqual(parsed.provider, { only: ['openai'] });
    assert.equal(parsed.generation.reasoning, undefined);
    assert.equal(parsed.user, null);
    assert.equal(parsed.sessionId, null);
    assert.equal(parsed.trace, null);
    // Nulls inside the members of `provider` are "not set" too.
    const nested = accept({
      ...minimal,
      provider: {
        sort: { by: 'price', partition: null },
        preferred_min_throughput: { p50: null, p90: 20 },
        max_price: { prompt: null, completion: '3' },
      },
    });
    assert.deepEqual(nested.provider, {
      sort: { by: 'price' },
      preferred_min_throughput: { p90: 20 },
      max_price: { completion: 3 },
    });
  });

  it('lists models as model first, then models, without repeats', () => {
    assert.deepEqual(accept({ ...minimal, models: ['b/b', 'openai/gpt-4o', 'c/c'] }).models, [
      'openai/gpt-4o',
      'b/b',
      'c/c',
    ]);
    assert.deepEqual(accept({ messages: [user('x')], models: ['b/b', 'c/c', 'b/b'] }).models, ['b/b', 'c/c']);
  });

  it('reads provider preferences and folds route into the sort partition', () => {
    assert.deepEqual(
      accept({
        ...minimal,
        provider: {
          order: ['openai', 'azure'],
          allow_fallbacks: false,
          require_parameters: true,
          data_collection: 'deny',
          zdr: true,
          enforce_distillable_text: false,
          only: ['openai', 'azure'],
          ignore: ['deepinfra'],
          quantizations: ['fp8', 'bf16'],
          sort: 'throughput',
          preferred_min_throughput: { p90: 50, p99: null },
          preferred_max_latency: 2.5,
          max_price: { prompt: '1', completion: 2.5, request: '0.01', image: '0.05', audio: 0 },
        },
      }).provider,
      {
        order: ['openai', 'azure'],
        allow_fallbacks: false,
        require_parameters: true,
        data_collection: 'deny',
        zdr: true,
        enforce_distillable_text: false,
        only: ['openai', 'azure'],
        ignore: ['deepinfra'],
        quantizations: ['fp8', 'bf16'],
        sort: 'throughput',
        preferred_min_throughput: { p90: 50 },
        preferred_max_latency: 2.5,
        max_price: { prompt: 1, completion: 2.5, request: 0.01, image: 0.05, audio: 0 },
      },
    );
    const provider = (body: object) => accept({ ...minimal, ...body }).provider;
    assert.deepEqual(provider({ provider: { sort: 'price' }, route: 'fallback' }), {
      sort: { by: 'price', partition: 'model' },
    });
    assert.deepEqual(provider({ provider: { sort: { by: 'latency' } }, route: 'sort' }), {
      sort: { by: 'latency', partition: 'none' },
    });
    assert.deepEqual(
      provider({ provider: { sort: { by: 'latency', partition: 'model' } }, route: 'sort' }),
      { sort: { by: 'latency', partition: 'model' } },
      'an explicit partition wins over the deprecated alias',
    );
    assert.deepEqual(provider({ provider: { sort: { by: null, partition: 'none' } } }), {});
    assert.deepEqual(provider({ provider: { only: ['openai'] }, route: 'fallback' }), { only: ['openai'] });
    assert.equal(provider({ route: 'sort' }), null);
    assert.equal(provider({ provider: null }), null);
  });

  it('takes the session id from the body, else the x-session-id header', () => {
    assert.equal(accept({ ...minimal, session_id: 'body' }, { 'x-session-id': 'header' }).sessionId, 'body');
    assert.equal(accept(minimal, { 'x-session-id': 'header' }).sessionId, 'header');
    assert.equal(accept(minimal, { 'x-session-id': ['first', 'second'] }).sessionId, 'first');
    assert.equal(accept(minimal, { 'x-session-id': '' }).sessionId, null);
  });

  it('accepts the limits themselves', () => {
    const metadata = Object.fromEntries(
      Array.from({ length: 16 }, (_, index) => [
        `${'k'.repeat(62)}${String(index).padStart(2, '0')}`,
        'v'.repeat(512),
      ]),
    );
    const parsed = accept({
      ...minimal,
      models: ['a/a', 'b/b', 'c/c'],
      user: 'u'.repeat(256),
      session_id: 's'.repeat(256),
      metadata,
      temperature: 2,
      top_p: 0,
      frequency_penalty: -2,
      presence_penalty: 2,
    });
    assert.equal(parsed.models.length, 4);
    assert.equal(Object.keys(parsed.metadata ?? {}).length, 16);
  });
});

describe('chat-completions dialect: refusing bad requests with a 400 naming the field', () => {
  const longName = 'f'.repeat(65);
  const cases: Array<[string, unknown, string | RegExp, Headers?]> = [
    ['a body that is not an object', [minimal], 'Invalid request parameters: body must be object'],
    [
      'no messages',
      { model: 'a/b' },
      "Invalid request parameters: body.messages must have required property 'messages'",
    ],
    [
      'empty messages',
      { model: 'a/b', messages: [] },
      'Invalid request parameters: body.messages must NOT have fewer than 1 items',
    ],
    [
      'only an empty assistant turn',
      { model: 'a/b', messages: [{ role: 'assistant', content: null }] },
      'Invalid request parameters: body.messages must contain at least one message with content',
    ],
    [
      'messages not a list',
      { model: 'a/b', messages: 'Hi' },
      'Invalid request parameters: body.messages must be array',
    ],
    [
      'a message without role',
      { model: 'a/b', messages: [{ content: 'x' }] },
      /body\.messages\.0\.role must have required property 'role'/,
    ],
    [
      'the legacy function role',
      { model: 'a/b', messages: [{ role: 'function', name: 'f', content: 'x' }] },
      'Invalid request parameters: body.messages.0.role must be one of: system, developer, user, assistant, tool',
    ],
    [
      'numeric content',
      { model: 'a/b', messages: [user(42)] },
      'Invalid request parameters: body.messages.0.content must be string,array,null',
    ],
    [
      'user message without content',
      { model: 'a/b', messages: [{ role: 'user' }] },
      'Invalid request parameters: body.messages.0.content is required for user messages',
    ],
    [
      'user message with null content',
      { model: 'a/b', messages: [user(null)] },
      'Invalid request parameters: body.messages.0.content is required for user messages',
    ],
    [
      'an unknown content part',
      { model: 'a/b', messages: [user([{ type: 'video_url', video_url: { url: 'https://x' } }])] },
      'Invalid request parameters: body.messages.0.content.0.type must be one of: text, image_url, file, input_audio, refusal',
    ],
    [
      'a text part without text',
      { model: 'a/b', messages: [user([{ type: 'text' }])] },
      /body\.messages\.0\.content\.0\.text must have required property 'text'/,
    ],
    [
      'a text part with a number',
      { model: 'a/b', messages: [user([{ type: 'text', text: 1 }])] },
      'Invalid request parameters: body.messages.0.content.0.text must be string',
    ],
    [
      'an image without url',
      { model: 'a/b', messages: [user([{ type: 'image_url', image_url: {} }])] },
      /body\.messages\.0\.content\.0\.image_url\.url must have required property 'url'/,
    ],
    [
      'an image with a bad detail',
      {
        model: 'a/b',
        messages: [user([{ type: 'image_url', image_url: { url: 'https://x', detail: 'max' } }])],
      },
      'Invalid request parameters: body.messages.0.content.0.image_url.detail must be one of: auto, low, high, original',
    ],
    [
      'an image that is not a URL',
      { model: 'a/b', messages: [user([{ type: 'image_url', image_url: { url: 'ftp://x/a.png' } }])] },
      'Invalid request parameters: body.messages.0.content.0.image_url.url must be an http(s) or data: URL',
    ],
    [
      'a file by file_id',
      { model: 'a/b', messages: [user([{ type: 'file', file: { file_id: 'file-abc' } }])] },
      'Invalid request parameters: body.messages.0.content.0.file.file_id is not supported: send the file inline as file.file_data',
    ],
    [
      'a file with no data',
      { model: 'a/b', messages: [user([{ type: 'file', file: {} }])] },
      'Invalid request parameters: body.messages.0.content.0.file.file_data is required',
    ],
    [
      'a file that is bare base64',
      { model: 'a/b', messages: [user([{ type: 'file', file: { file_data: 'JVBERi0' } }])] },
      'Invalid request parameters: body.messages.0.content.0.file.file_data must be a data: URL or an http(s) URL',
    ],
    [
      'audio without format',
      { model: 'a/b', messages: [user([{ type: 'input_audio', input_audio: { data: 'UklG' } }])] },
      /body\.messages\.0\.content\.0\.input_audio\.format must have required property 'format'/,
    ],
    [
      'a refusal part from the user',
      { model: 'a/b', messages: [user([{ type: 'refusal', refusal: 'no' }])] },
      'Invalid request parameters: body.messages.0.content.0.type must be text, image_url, file or input_audio in user messages',
    ],
    [
      'an image in a system message',
      {
        model: 'a/b',
        messages: [
          { role: 'system', content: [{ type: 'image_url', image_url: { url: 'https://x' } }] },
          user('x'),
        ],
      },
      'Invalid request parameters: body.messages.0.content.0.type must be text in system messages',
    ],
    [
      'a tool message without tool_call_id',
      { model: 'a/b', messages: [user('x'), { role: 'tool', content: 'result' }] },
      'Invalid request parameters: body.messages.1.tool_call_id is required for tool messages',
    ],
    [
      'a tool message with an empty tool_call_id',
      { model: 'a/b', messages: [user('x'), { role: 'tool', tool_call_id: '', content: 'result' }] },
      'Invalid request parameters: body.messages.1.tool_call_id must NOT have fewer than 1 characters',
    ],
    [
      'a tool message with an image',
      {
        model: 'a/b',
        messages: [
          {
            role: 'tool',
            tool_call_id: 'c',
            content: [{ type: 'image_url', image_url: { url: 'https://x' } }],
          },
        ],
      },
      'Invalid request parameters: body.messages.0.content.0.type must be text in tool messages',
    ],
    [
      'a tool call without id',
      {
        model: 'a/b',
        messages: [
          { role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] },
        ],
      },
      /body\.messages\.0\.tool_calls\.0\.id must have required property 'id'/,
    ],
    [
      'tool call arguments as an object',
      {
        model: 'a/b',
        messages: [
          {
            role: 'assistant',
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }],
          },
        ],
      },
      'Invalid request parameters: body.messages.0.tool_calls.0.function.arguments must be string',
    ],
    [
      'no model',
      { messages: [user('x')] },
      'Invalid request parameters: body.model is required (or body.models)',
    ],
    [
      'an empty model',
      { model: '', messages: [user('x')] },
      'Invalid request parameters: body.model must NOT have fewer than 1 characters',
    ],
    [
      '4 fallback models',
      { ...minimal, models: ['a/a', 'b/b', 'c/c', 'd/d'] },
      'Invalid request parameters: body.models must have 3 items or fewer',
    ],
    [
      'models not a list',
      { ...minimal, models: 'a/a' },
      'Invalid request parameters: body.models must be array',
    ],
    [
      'n = 2',
      { ...minimal, n: 2 },
      'Invalid request parameters: body.n must be 1: multiple choices are not supported',
    ],
    ['n = 0', { ...minimal, n: 0 }, 'Invalid request parameters: body.n must be >= 1'],
    [
      'logprobs',
      { ...minimal, logprobs: true },
      'Invalid request parameters: body.logprobs is not supported',
    ],
    [
      'top_logprobs',
      { ...minimal, top_logprobs: 5 },
      'Invalid request parameters: body.top_logprobs is not supported',
    ],
    [
      'legacy functions',
      { ...minimal, functions: [{ name: 'f' }] },
      'Invalid request parameters: body.functions is not supported: use tools',
    ],
    [
      'legacy function_call',
      { ...minimal, function_call: 'auto' },
      'Invalid request parameters: body.function_call is not supported: use tool_choice',
    ],
    [
      'audio output',
      { ...minimal, audio: { voice: 'alloy', format: 'wav' } },
      'Invalid request parameters: body.audio is not supported',
    ],
    [
      'web search options',
      { ...minimal, web_search_options: {} },
      'Invalid request parameters: body.web_search_options is not supported',
    ],
    [
      'an unknown field',
      { ...minimal, max_token: 10 },
      'Invalid request parameters: body.max_token is not a known field',
    ],
    [
      'tools not a list',
      { ...minimal, tools: { type: 'function' } },
      'Invalid request parameters: body.tools must be array',
    ],
    [
      'a tool without function',
      { ...minimal, tools: [{ type: 'function' }] },
      /body\.tools\.0\.function must have required property 'function'/,
    ],
    [
      'a tool of another type',
      { ...minimal, tools: [{ type: 'web_search_preview', function: { name: 'f' } }] },
      'Invalid request parameters: body.tools.0.type must be one of: function',
    ],
    [
      'a function without name',
      { ...minimal, tools: [{ type: 'function', function: {} }] },
      /body\.tools\.0\.function\.name must have required property 'name'/,
    ],
    [
      'a function name over 64 characters',
      { ...minimal, tools: [{ type: 'function', function: { name: longName } }] },
      'Invalid request parameters: body.tools.0.function.name must NOT have more than 64 characters',
    ],
    [
      'a function name with characters providers refuse',
      { ...minimal, tools: [{ type: 'function', function: { name: 'bad name!' } }] },
      'Invalid request parameters: body.tools.0.function.name must match pattern "^[a-zA-Z0-9_-]+$"',
    ],
    [
      'parameters that are not an object',
      { ...minimal, tools: [{ type: 'function', function: { name: 'f', parameters: 'none' } }] },
      'Invalid request parameters: body.tools.0.function.parameters must be object',
    ],
    [
      'two tools with one name',
      {
        ...minimal,
        tools: [
          { type: 'function', function: { name: 'f' } },
          { type: 'function', function: { name: 'f' } },
        ],
      },
      "Invalid request parameters: body.tools.1.function.name repeats the tool name 'f'",
    ],
    [
      'an unknown tool_choice',
      { ...minimal, tool_choice: 'sometimes' },
      'Invalid request parameters: body.tool_choice must be one of: auto, none, required',
    ],
    [
      'a named tool_choice without function',
      { ...minimal, tool_choice: { type: 'function' } },
      /body\.tool_choice\.function must have required property 'function'/,
    ],
    [
      'a named tool_choice of another type',
      { ...minimal, tool_choice: { type: 'file_search', function: { name: 'f' } } },
      'Invalid request parameters: body.tool_choice.type must be one of: function, allowed_tools',
    ],
    [
      'a custom tool',
      {
        ...minimal,
        tools: [
          { type: 'function', function: { name: 'f' } },
          { type: 'custom', custom: { name: 'g' } },
        ],
      },
      'Invalid request parameters: body.tools.1.type "custom": custom tools are not supported (only function tools are)',
    ],
    [
      'a tool_choice naming a custom tool',
      { ...minimal, tool_choice: { type: 'custom', custom: { name: 'g' } } },
      'Invalid request parameters: body.tool_choice.type "custom": custom tools are not supported (only function tools are)',
    ],
    [
      'allowed_tools without its object',
      { ...minimal, tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } },
      "Invalid request parameters: body.tool_choice.allowed_tools must have required property 'allowed_tools'",
    ],
    [
      'allowed_tools listing no tool',
      { ...minimal, tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'auto', tools: [] } } },
      'Invalid request parameters: body.tool_choice.allowed_tools.tools must NOT have fewer than 1 items',
    ],
    [
      'allowed_tools of another mode',
      {
        ...minimal,
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: {
          type: 'allowed_tools',
          allowed_tools: { mode: 'none', tools: [{ type: 'function', function: { name: 'f' } }] },
        },
      },
      'Invalid request parameters: body.tool_choice.allowed_tools.mode must be one of: auto, required',
    ],
    [
      'allowed_tools naming no declared tool',
      {
        ...minimal,
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: {
          type: 'allowed_tools',
          allowed_tools: {
            mode: 'auto',
            tools: [
              { type: 'function', function: { name: 'f' } },
              { type: 'function', function: { name: 'g' } },
            ],
          },
        },
      },
      "Invalid request parameters: body.tool_choice.allowed_tools.tools.1.function.name names no tool of body.tools: 'g'",
    ],
    [
      'allowed_tools without tools',
      {
        ...minimal,
        tool_choice: {
          type: 'allowed_tools',
          allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'f' } }] },
        },
      },
      "Invalid request parameters: body.tool_choice.allowed_tools.tools.0.function.name names no tool of body.tools: 'f'",
    ],
    [
      'allowed_tools listing a tool without its name',
      {
        ...minimal,
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: {
          type: 'allowed_tools',
          allowed_tools: { mode: 'auto', tools: [{ type: 'function' }] },
        },
      },
      "Invalid request parameters: body.tool_choice.allowed_tools.tools.0.function must have required property 'function'",
    ],
    [
      'allowed_tools listing a custom tool',
      {
        ...minimal,
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: {
          type: 'allowed_tools',
          allowed_tools: { mode: 'auto', tools: [{ type: 'custom', custom: { name: 'f' } }] },
        },
      },
      'Invalid request parameters: body.tool_choice.allowed_tools.tools.0.type "custom": custom tools are not supported (only function tools are)',
    ],
    [
      'a tool_choice naming no tool',
      {
        ...minimal,
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: { type: 'function', function: { name: 'g' } },
      },
      "Invalid request parameters: body.tool_choice.function.name names no tool of body.tools: 'g'",
    ],
    [
      'required without tools',
      { ...minimal, tool_choice: 'required' },
      'Invalid request parameters: body.tool_choice required needs body.tools',
    ],
    [
      'max_tokens 0',
      { ...minimal, max_tokens: 0 },
      'Invalid request parameters: body.max_tokens must be >= 1',
    ],
    [
      'fractional max_completion_tokens',
      { ...minimal, max_completion_tokens: 1.5 },
      'Invalid request parameters: body.max_completion_tokens must be integer,null',
    ],
    [
      'max_tokens as a string',
      { ...minimal, max_tokens: '100' },
      'Invalid request parameters: body.max_tokens must be integer,null',
    ],
    [
      'temperature 3',
      { ...minimal, temperature: 3 },
      'Invalid request parameters: body.temperature must be <= 2',
    ],
    [
      'negative temperature',
      { ...minimal, temperature: -0.1 },
      'Invalid request parameters: body.temperature must be >= 0',
    ],
    ['top_p 1.5', { ...minimal, top_p: 1.5 }, 'Invalid request parameters: body.top_p must be <= 1'],
    [
      'frequency_penalty -3',
      { ...minimal, frequency_penalty: -3 },
      'Invalid request parameters: body.frequency_penalty must be >= -2',
    ],
    [
      'presence_penalty 2.5',
      { ...minimal, presence_penalty: 2.5 },
      'Invalid request parameters: body.presence_penalty must be <= 2',
    ],
    [
      'a fractional seed',
      { ...minimal, seed: 1.5 },
      'Invalid request parameters: body.seed must be integer,null',
    ],
    [
      'five stop sequences',
      { ...minimal, stop: ['a', 'b', 'c', 'd', 'e'] },
      'Invalid request parameters: body.stop must NOT have more than 4 items',
    ],
    [
      'a numeric stop',
      { ...minimal, stop: 5 },
      'Invalid request parameters: body.stop must be string,array,null',
    ],
    [
      'a numeric stop sequence',
      { ...minimal, stop: ['a', 5] },
      'Invalid request parameters: body.stop.1 must be string',
    ],
    [
      'json_schema without its schema object',
      { ...minimal, response_format: { type: 'json_schema' } },
      /body\.response_format\.json_schema must have required property 'json_schema'/,
    ],
    [
      'json_schema without a name',
      { ...minimal, response_format: { type: 'json_schema', json_schema: { schema: {} } } },
      /body\.response_format\.json_schema\.name must have required property 'name'/,
    ],
    [
      'a grammar response format',
      { ...minimal, response_format: { type: 'grammar', grammar: 'x' } },
      'Invalid request parameters: body.response_format.type must be one of: text, json_object, json_schema',
    ],
    [
      'an unknown reasoning effort',
      { ...minimal, reasoning: { effort: 'extreme' } },
      'Invalid request parameters: body.reasoning.effort must be one of: none, minimal, low, medium, high, xhigh, max, null',
    ],
    [
      'an unknown reasoning field',
      { ...minimal, reasoning: { budget: 10 } },
      'Invalid request parameters: body.reasoning.budget is not a known field',
    ],
    [
      'reasoning_effort contradicting reasoning.effort',
      { ...minimal, reasoning_effort: 'low', reasoning: { effort: 'high' } },
      'Invalid request parameters: body.reasoning_effort differs from body.reasoning.effort',
    ],
    ['stream as a string', { ...minimal, stream: 'yes' }, /body\.stream must be boolean/],
    [
      'a user of 257 characters',
      { ...minimal, user: 'u'.repeat(257) },
      'Invalid request parameters: body.user must NOT have more than 256 characters',
    ],
    [
      'a session_id of 257 characters',
      { ...minimal, session_id: 's'.repeat(257) },
      'Invalid request parameters: body.session_id must NOT have more than 256 characters',
    ],
    [
      'an x-session-id header of 257 characters',
      minimal,
      'Invalid request parameters: headers.x-session-id must NOT have more than 256 characters',
      { 'x-session-id': 's'.repeat(257) },
    ],
    [
      'NUL in user',
      { ...minimal, user: 'a\u0000b' },
      'Invalid request parameters: body.user must not contain NUL characters or unpaired surrogates',
    ],
    [
      '17 metadata pairs',
      {
        ...minimal,
        metadata: Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`k${index}`, 'v'])),
      },
      'Invalid request parameters: body.metadata must NOT have more than 16 properties',
    ],
    [
      'a metadata key of 65 characters',
      { ...minimal, metadata: { ['k'.repeat(65)]: 'v' } },
      `Invalid request parameters: body.metadata keys must have 64 characters or fewer: "${'k'.repeat(65)}"`,
    ],
    [
      'a metadata key with brackets',
      { ...minimal, metadata: { 'user[id]': 'v' } },
      'Invalid request parameters: body.metadata keys must not contain brackets: "user[id]"',
    ],
    [
      'a metadata value of 513 characters',
      { ...minimal, metadata: { key: 'v'.repeat(513) } },
      'Invalid request parameters: body.metadata.key must NOT have more than 512 characters',
    ],
    [
      'a numeric metadata value',
      { ...minimal, metadata: { key: 1 } },
      'Invalid request parameters: body.metadata.key must be string',
    ],
    [
      'an unknown provider field',
      { ...minimal, provider: { onyl: ['openai'] } },
      'Invalid request parameters: body.provider.onyl is not a known field',
    ],
    [
      'provider order as a string',
      { ...minimal, provider: { order: 'openai' } },
      'Invalid request parameters: body.provider.order must be array,null',
    ],
    [
      'an empty provider slug',
      { ...minimal, provider: { only: [''] } },
      'Invalid request parameters: body.provider.only.0 must NOT have fewer than 1 characters',
    ],
    [
      'allow_fallbacks as a string',
      { ...minimal, provider: { allow_fallbacks: 'no' } },
      'Invalid request parameters: body.provider.allow_fallbacks must be boolean,null',
    ],
    [
      'an unknown data_collection',
      { ...minimal, provider: { data_collection: 'maybe' } },
      'Invalid request parameters: body.provider.data_collection must be one of: allow, deny, null',
    ],
    [
      'an unknown sort',
      { ...minimal, provider: { sort: 'fastest' } },
      'Invalid request parameters: body.provider.sort must be one of: price, throughput, latency',
    ],
    [
      'an unknown sort.by',
      { ...minimal, provider: { sort: { by: 'cheap' } } },
      'Invalid request parameters: body.provider.sort.by must be one of: price, throughput, latency, null',
    ],
    [
      'an unknown sort.partition',
      { ...minimal, provider: { sort: { by: 'price', partition: 'all' } } },
      'Invalid request parameters: body.provider.sort.partition must be one of: model, none, null',
    ],
    [
      'an unknown quantization',
      { ...minimal, provider: { quantizations: ['fp99'] } },
      /body\.provider\.quantizations\.0 must be one of: int4, int8/,
    ],
    [
      'a worded max price',
      { ...minimal, provider: { max_price: { prompt: 'cheap' } } },
      /body\.provider\.max_price\.prompt must match pattern/,
    ],
    [
      'a negative max price',
      { ...minimal, provider: { max_price: { completion: -1 } } },
      'Invalid request parameters: body.provider.max_price.completion must be >= 0',
    ],
    [
      'an unknown max price',
      { ...minimal, provider: { max_price: { video: 1 } } },
      'Invalid request parameters: body.provider.max_price.video is not a known field',
    ],
    [
      'an unknown latency percentile',
      { ...minimal, provider: { preferred_max_latency: { p42: 1 } } },
      'Invalid request parameters: body.provider.preferred_max_latency.p42 is not a known field',
    ],
    [
      'a negative throughput',
      { ...minimal, provider: { preferred_min_throughput: -5 } },
      'Invalid request parameters: body.provider.preferred_min_throughput must be >= 0',
    ],
    [
      'an unknown route',
      { ...minimal, route: 'fastest' },
      'Invalid request parameters: body.route must be one of: fallback, sort, null',
    ],
    [
      // The reference's quality-first sort: nothing here measures it.
      'the exacto sort',
      { ...minimal, provider: { sort: 'exacto' } },
      'Invalid request parameters: body.provider.sort must be one of: price, throughput, latency',
    ],
    [
      'a numeric sort',
      { ...minimal, provider: { sort: 1 } },
      'Invalid request parameters: body.provider.sort must be string,object,null',
    ],
    [
      'audio output',
      { ...minimal, modalities: ['text', 'audio'] },
      'Invalid request parameters: body.modalities.1 "audio" is not supported: an answer holds text and images',
    ],
    [
      'empty modalities',
      { ...minimal, modalities: [] },
      'Invalid request parameters: body.modalities must list "text", "image" or both',
    ],
    [
      'an aspect ratio that is not one, for a text answer',
      { ...minimal, modalities: ['text'], image_config: { aspect_ratio: 'wide' } },
      'Invalid request parameters: body.image_config.aspect_ratio must be a width:height ratio such as "16:9"',
    ],
    [
      'an aspect ratio that is not one',
      { ...minimal, modalities: ['image'], image_config: { aspect_ratio: 'wide' } },
      'Invalid request parameters: body.image_config.aspect_ratio must be a width:height ratio such as "16:9"',
    ],
    [
      'a numeric image size',
      { ...minimal, modalities: ['image'], image_config: { image_size: 2 } },
      'Invalid request parameters: body.image_config.image_size must be a size such as "1K", "2K" or "4K"',
    ],
    [
      'an aspect ratio of another JSON type',
      { ...minimal, modalities: ['image'], image_config: { aspect_ratio: true } },
      'Invalid request parameters: body.image_config.aspect_ratio must be a width:height ratio such as "16:9"',
    ],
    [
      'an image sent back that is not a URL',
      {
        ...minimal,
        messages: [
          {
            role: 'assistant',
            content: 'Here.',
            images: [{ type: 'image_url', image_url: { url: 'cat.png' } }],
          },
        ],
      },
      'Invalid request parameters: body.messages.0.images.0.image_url.url must be an http(s) or data: URL',
    ],
    [
      'a numeric trace_id',
      { ...minimal, trace: { trace_id: 7 } },
      'Invalid request parameters: body.trace.trace_id must be string',
    ],
  ];

  for (const [name, body, expected, headers] of cases) {
    it(`refuses ${name}`, () => {
      const message = refusal(body, headers);
      if (typeof expected === 'string') assert.equal(message, expected);
      else assert.match(message, expected);
    });
  }
});
