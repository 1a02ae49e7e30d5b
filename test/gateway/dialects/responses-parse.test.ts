import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyError } from 'fastify';
import { renderError } from '../../../src/errors/error-renderer.js';
import type { ParsedRequest } from '../../../src/gateway/dialects/dialect.js';
import { responsesDialect } from '../../../src/gateway/dialects/responses/responses-dialect.js';

// The body validator exactly as src/platform/validation.ts builds it for JSON bodies.
const ajv = new Ajv({
  allErrors: false,
  strict: false,
  useDefaults: true,
  removeAdditional: false,
  coerceTypes: false,
});
(addFormats as unknown as (ajv: Ajv) => Ajv)(ajv);
const validate = ajv.compile(responsesDialect.bodySchema as object);

type Outcome = { ok: true; parsed: ParsedRequest } | { ok: false; status: number; message: string };

/** What a client would get: the schema first (as Fastify runs it), then the dialect's own rules. */
function submit(body: unknown, headers: Record<string, string | string[] | undefined> = {}): Outcome {
  const copy = structuredClone(body);
  if (!validate(copy)) {
    const rendered = renderError({
      validation: validate.errors,
      validationContext: 'body',
    } as unknown as FastifyError);
    return { ok: false, status: rendered.status, message: rendered.body.error.message };
  }
  try {
    return { ok: true, parsed: responsesDialect.parse(copy as any, headers) };
  } catch (error) {
    const rendered = renderError(error);
    return { ok: false, status: rendered.status, message: rendered.body.error.message };
  }
}

function parsed(body: unknown, headers?: Record<string, string | string[] | undefined>): ParsedRequest {
  const outcome = submit(body, headers);
  if (!outcome.ok) assert.fail(`expected the body to be accepted, got ${outcome.status}: ${outcome.message}`);
  return outcome.parsed;
}

function refused(body: unknown, pattern: RegExp, headers?: Record<string, string | string[] | undefined>) {
  const outcome = submit(body, headers);
  assert.equal(outcome.ok, false, `expected a 400 matching ${pattern}`);
  if (outcome.ok) return;
  assert.equal(outcome.status, 400);
  assert.match(outcome.message, /^Invalid request parameters: /);
  assert.match(outcome.message, pattern);
}

const base = { model: 'openai/gpt-4o', input: 'Hello' };

describe('responses dialect: input forms', () => {
  it('reads a string input as one user message, with instructions and defaults', () => {
    const request = parsed({ ...base, instructions: 'Be brief.' });
    assert.deepEqual(request, {
      generation: {
        instructions: 'Be brief.',
        input: [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
      },
      models: ['openai/gpt-4o'],
      provider: null,
      stream: false,
      sessionId: null,
      user: null,
      metadata: null,
      trace: null,
    });
  });

  it('reads messages of every role, with text, image, file and audio parts', () => {
    const request = parsed({
      model: 'm',
      input: [
        { role: 'system', content: 'sys' },
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'dev' }] },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'look' },
            { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'low' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'original' },
            { type: 'input_file', file_data: 'data:application/pdf;base64,JVBE', filename: 'a.pdf' },
            { type: 'input_file', file_data: 'aGVsbG8=', filename: 'notes.txt' },
            { type: 'input_file', file_url: 'https://example.com/doc.pdf' },
            { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
          ],
        },
        {
          type: 'message',
          id: 'msg_1',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'earlier answer', annotations: [] }],
        },
      ],
    });
    assert.deepEqual(request.generation.input, [
      { type: 'message', role: 'system', content: [{ type: 'text', text: 'sys' }] },
      { type: 'message', role: 'developer', content: [{ type: 'text', text: 'dev' }] },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', url: 'https://example.com/cat.png', detail: 'low' },
          { type: 'image', url: 'data:image/png;base64,AAAA', detail: 'high' },
          {
            type: 'file',
            url: 'data:application/pdf;base64,JVBE',
            mediaType: 'application/pdf',
            filename: 'a.pdf',
          },
          {
            type: 'file',
            url: 'data:text/plain;base64,aGVsbG8=',
            mediaType: 'text/plain',
            filename: 'notes.txt',
          },
          { type: 'file', url: 'https://example.com/doc.pdf' },
          { type: 'audio', data: 'UklGRg==', format: 'wav' },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'earlier answer' }] },
    ]);
  });

  it('reads function calls and their outputs, joins text parts of an output, and drops reasoning items', () => {
    const request = parsed({
      model: 'm',
      input: [
        { role: 'user', content: 'weather?' },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thinking' }] },
        {
          type: 'function_call',
          id: 'fc_1',
          call_id: 'call_1',
          name: 'weather',
          arguments: '{"city":"Paris"}',
        },
        { type: 'function_call_output', call_id: 'call_1', output: '{"temp":21}' },
        {
          type: 'function_call_output',
          call_id: 'call_2',
          output: [
            { type: 'input_text', text: 'part one, ' },
            { type: 'input_text', text: 'part two' },
          ],
        },
      ],
    });
    assert.deepEqual(request.generation.input, [
      { type: 'message', role: 'user', content: [{ type: 'text', text: 'weather?' }] },
      { type: 'function-call', callId: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' },
      { type: 'function-call-output', callId: 'call_1', output: '{"temp":21}' },
      { type: 'function-call-output', callId: 'call_2', output: 'part one, part two' },
    ]);
  });

  it('refuses empty input in every form, and a missing one', () => {
    refused({ ...base, input: '' }, /body\.input must not be empty/);
    refused({ ...base, input: [] }, /body\.input must not be empty/);
    refused(
      { ...base, input: [{ type: 'reasoning', summary: [] }] },
      /body\.input must contain at least one message/,
    );
    refused({ model: 'm' }, /body\.input must have required property 'input'/);
    refused({ model: 'm', input: 5 }, /body\.input must be string,array/);
    refused({ model: 'm', input: ['hi'] }, /body\.input\.0 must be object/);
  });

  it('refuses malformed items and parts by their path', () => {
    refused({ model: 'm', input: [{ content: 'hi' }] }, /body\.input\.0\.role is required/);
    refused(
      { model: 'm', input: [{ role: 'tool', content: 'hi' }] },
      /body\.input\.0\.role must be one of: user/,
    );
    refused(
      { model: 'm', input: [{ role: 'user', content: 7 }] },
      /body\.input\.0\.content must be a string or an array/,
    );
    refused(
      { model: 'm', input: [{ role: 'user', content: [{ type: 'input_text' }] }] },
      /body\.input\.0\.content\.0\.text is required/,
    );
    refused(
      { model: 'm', input: [{ role: 'user', content: [{ type: 'input_video', video_url: 'x' }] }] },
      /body\.input\.0\.content\.0\.type must be one of: input_text/,
    );
    refused(
      {
        model: 'm',
        input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1', detail: 'auto' }] }],
      },
      /body\.input\.0\.content\.0\.file_id is not supported/,
    );
    refused(
      { model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', detail: 'auto' }] }] },
      /body\.input\.0\.content\.0\.image_url is required/,
    );
    refused(
      {
        model: 'm',
        input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x', detail: 'max' }] }],
      },
      /body\.input\.0\.content\.0\.detail must be one of: auto, low, high, original/,
    );
    refused(
      { model: 'm', input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-1' }] }] },
      /body\.input\.0\.content\.0\.file_id is not supported/,
    );
    for (const url of [
      'ftp://x/a.png',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'DATA:image/png;base64,AA==',
    ]) {
      refused(
        { model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', image_url: url }] }] },
        /^Invalid request parameters: body\.input\.0\.content\.0\.image_url must be an http\(s\) or data: URL$/,
      );
      refused(
        { model: 'm', input: [{ role: 'user', content: [{ type: 'input_file', file_url: url }] }] },
        /^Invalid request parameters: body\.input\.0\.content\.0\.file_url must be an http\(s\) or data: URL$/,
      );
    }
    refused(
      { model: 'm', input: [{ type: 'function_call', name: 'f', arguments: '{}' }] },
      /body\.input\.0\.call_id is required/,
    );
    refused(
      { model: 'm', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: { a: 1 } }] },
      /body\.input\.0\.arguments must be string/,
    );
    refused(
      {
        model: 'm',
        input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image' }] }],
      },
      /body\.input\.0\.output\.0\.type is not supported in a function_call_output/,
    );
    refused(
      { model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] },
      /body\.input\.0\.type 'item_reference'/,
    );
    refused(
      { model: 'm', input: [{ type: 'web_search_call', id: 'ws' }] },
      /body\.input\.0\.type "web_search_call" is not supported/,
    );
  });
});

describe('responses dialect: models, routing and identity', () => {
  it('puts model first, then models, without repeats', () => {
    assert.deepEqual(parsed({ ...base, models: ['a/b', 'openai/gpt-4o', 'c/d'] }).models, [
      'openai/gpt-4o',
      'a/b',
      'c/d',
    ]);
    assert.deepEqual(parsed({ input: 'hi', models: ['a/b', 'c/d'] }).models, ['a/b', 'c/d']);
  });

  it('refuses more than 3 fallback models, and a request naming no model', () => {
    refused({ ...base, models: ['a', 'b', 'c', 'd'] }, /body\.models must have 3 items or fewer/);
    refused({ input: 'hi' }, /body\.model is required/);
    refused({ input: 'hi', models: [] }, /body\.model is required/);
    refused({ input: 'hi', model: '' }, /body\.model must NOT have fewer than 1 characters/);
  });

  it('folds the deprecated route into the sort partition', () => {
    assert.deepEqual(parsed({ ...base, route: 'fallback', provider: { sort: 'price' } }).provider, {
      sort: { by: 'price', partition: 'model' },
    });
    assert.deepEqual(parsed({ ...base, route: 'sort', provider: { sort: { by: 'latency' } } }).provider, {
      sort: { by: 'latency', partition: 'none' },
    });
    // An explicit partition wins over the deprecated alias.
    assert.deepEqual(
      parsed({ ...base, route: 'sort', provider: { sort: { by: 'latency', partition: 'model' } } }).provider,
      { sort: { by: 'latency', partition: 'model' } },
    );
    // Without a sort a partition orders nothing: the provider object stays as given.
    assert.deepEqual(parsed({ ...base, route: 'fallback', provider: { only: ['openai'] } }).provider, {
      only: ['openai'],
    });
    assert.equal(parsed({ ...base, route: 'fallback' }).provider, null);
  });

  it('reads every provider preference, dropping nulls and reading prices as numbers', () => {
    const provider = parsed({
      ...base,
      provider: {
        order: ['anthropic', 'openai'],
        allow_fallbacks: false,
        require_parameters: true,
        data_collection: 'deny',
        zdr: true,
        enforce_distillable_text: null,
        only: ['openai'],
        ignore: ['deepinfra'],
        quantizations: ['fp8', 'bf16'],
        sort: 'throughput',
        preferred_min_throughput: { p90: 50, p99: null },
        preferred_max_latency: 2.5,
        max_price: { prompt: 1, completion: '2.5', request: '0.01' },
      },
    }).provider;
    assert.deepEqual(provider, {
      order: ['anthropic', 'openai'],
      allow_fallbacks: false,
      require_parameters: true,
      data_collection: 'deny',
      zdr: true,
      only: ['openai'],
      ignore: ['deepinfra'],
      quantizations: ['fp8', 'bf16'],
      sort: 'throughput',
      preferred_min_throughput: { p90: 50 },
      preferred_max_latency: 2.5,
      max_price: { prompt: 1, completion: 2.5, request: 0.01 },
    });
  });

  it('refuses invalid provider fields by name', () => {
    refused(
      { ...base, provider: { sort: 'cheapest' } },
      /body\.provider\.sort must be one of: price, throughput, latency/,
    );
    refused(
      { ...base, provider: { sort: { by: 'fastest' } } },
      /body\.provider\.sort\.by must be one of: price/,
    );
    refused(
      { ...base, provider: { sort: { by: 'price', partition: 'all' } } },
      /body\.provider\.sort\.partition must be one of: model, none/,
    );
    refused(
      { ...base, provider: { data_collection: 'maybe' } },
      /body\.provider\.data_collection must be one of: allow, deny/,
    );
    refused(
      { ...base, provider: { quantizations: ['fp9'] } },
      /body\.provider\.quantizations\.0 must be one of: int4/,
    );
    refused({ ...base, provider: { ordr: ['openai'] } }, /body\.provider\.ordr is not a known field/);
    refused(
      { ...base, provider: { allow_fallbacks: 'yes' } },
      /body\.provider\.allow_fallbacks must be boolean,null/,
    );
    refused({ ...base, provider: { order: 'openai' } }, /body\.provider\.order must be array,null/);
    refused(
      { ...base, provider: { preferred_max_latency: -1 } },
      /body\.provider\.preferred_max_latency must be >= 0/,
    );
    refused(
      { ...base, provider: { preferred_min_throughput: { p95: 1 } } },
      /body\.provider\.preferred_min_throughput\.p95 is not a known field/,
    );
    refused(
      { ...base, provider: { max_price: { prompt: 'cheap' } } },
      /body\.provider\.max_price\.prompt must match pattern/,
    );
    refused(
      { ...base, provider: { max_price: { prompt: -1 } } },
      /body\.provider\.max_price\.prompt must be >= 0/,
    );
    refused({ ...base, route: 'random' }, /body\.route must be one of: fallback, sort, null/);
  });

  it('takes session_id from the body first, then from x-session-id, both up to 256 characters', () => {
    assert.equal(parsed({ ...base, session_id: 'body' }, { 'x-session-id': 'header' }).sessionId, 'body');
    assert.equal(parsed(base, { 'x-session-id': 'header' }).sessionId, 'header');
    assert.equal(parsed(base, { 'x-session-id': ['first', 'second'] }).sessionId, 'first');
    assert.equal(parsed(base).sessionId, null);
    refused(
      { ...base, session_id: 'x'.repeat(257) },
      /body\.session_id must NOT have more than 256 characters/,
    );
    refused(base, /headers\.x-session-id must NOT have more than 256 characters/, {
      'x-session-id': 'x'.repeat(257),
    });
    // The header is only read, and so only judged, when the body names no session.
    assert.equal(
      parsed({ ...base, session_id: 'body' }, { 'x-session-id': 'x'.repeat(257) }).sessionId,
      'body',
    );
  });

  it('reads user, metadata and trace, and limits each', () => {
    const request = parsed({
      ...base,
      user: 'u'.repeat(256),
      metadata: { run: '42', ['k'.repeat(64)]: 'v'.repeat(512) },
      trace: { trace_id: 't1', custom: { nested: true } },
    });
    assert.equal(request.user, 'u'.repeat(256));
    assert.equal(request.generation.user, 'u'.repeat(256));
    assert.deepEqual(request.metadata, { run: '42', ['k'.repeat(64)]: 'v'.repeat(512) });
    assert.deepEqual(request.trace, { trace_id: 't1', custom: { nested: true } });

    refused({ ...base, user: 'u'.repeat(257) }, /body\.user must NOT have more than 256 characters/);
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`k${index}`, 'v']));
    refused({ ...base, metadata: seventeen }, /body\.metadata must NOT have more than 16 properties/);
    refused(
      { ...base, metadata: { ['k'.repeat(65)]: 'v' } },
      /body\.metadata keys must have 64 characters or fewer/,
    );
    refused({ ...base, metadata: { 'a[b]': 'v' } }, /body\.metadata keys must not contain brackets/);
    refused(
      { ...base, metadata: { key: 'v'.repeat(513) } },
      /body\.metadata\.key must NOT have more than 512 characters/,
    );
    refused({ ...base, metadata: { key: 5 } }, /body\.metadata\.key must be string/);
    refused({ ...base, trace: { trace_id: 5 } }, /body\.trace\.trace_id must be string/);
  });
});

describe('responses dialect: generation settings', () => {
  it('maps sampling, limits, tools, text format and reasoning to the canonical request', () => {
    const request = parsed({
      ...base,
      stream: true,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      frequency_penalty: 0.5,
      presence_penalty: -0.5,
      max_output_tokens: 256,
      parallel_tool_calls: false,
      tool_choice: 'auto',
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: 'Weather by city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
          strict: true,
        },
        { type: 'function', name: 'no_args' },
      ],
      text: {
        format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true },
        verbosity: 'low',
      },
      reasoning: { effort: 'high', summary: 'auto', max_tokens: 2000 },
    });
    assert.equal(request.stream, true);
    const { input: _input, ...generation } = request.generation;
    assert.deepEqual(generation, {
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: 'Weather by city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
          strict: true,
        },
        { type: 'function', name: 'no_args', parameters: { type: 'object', properties: {} } },
      ],
      toolChoice: 'auto',
      parallelToolCalls: false,
      maxOutputTokens: 256,
      temperature: 0.2,
      topP: 0.9,
      topK: 40,
      frequencyPenalty: 0.5,
      presencePenalty: -0.5,
      responseFormat: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true },
      reasoning: { effort: 'high', maxTokens: 2000, include: true, summary: 'auto' },
    });
    assert.deepEqual(
      parsed({ ...base, text: { format: { type: 'json_object' } } }).generation.responseFormat,
      {
        type: 'json_object',
      },
    );
    assert.deepEqual(parsed({ ...base, reasoning: { enabled: true, exclude: true } }).generation.reasoning, {
      enabled: true,
      include: false,
    });
    assert.equal(
      parsed({ ...base, reasoning: null, text: { verbosity: 'high' } }).generation.reasoning,
      undefined,
    );
    // The @openrouter/sdk sends every unset member as null: none of them sets anything.
    assert.equal(
      parsed({
        ...base,
        reasoning: { effort: null, summary: null, enabled: null, max_tokens: null, exclude: null },
      }).generation.reasoning,
      undefined,
    );
  });

  it('accepts the fields it only validates, and null for the nullable ones', () => {
    const request = parsed({
      ...base,
      stream: null,
      store: false,
      background: null,
      previous_response_id: null,
      instructions: null,
      include: ['reasoning.encrypted_content'],
      service_tier: 'fast',
      truncation: 'auto',
      prompt_cache_key: 'k',
      prompt_cache_options: { mode: 'explicit', ttl: '30m' },
      prompt_cache_retention: '24h',
      safety_identifier: 'user-hash',
      cache_control: { type: 'ephemeral', ttl: '1h' },
      debug: { echo_upstream_body: true },
      plugins: [{ id: 'web', max_results: 3 }],
      stop_server_tools_when: [
        { type: 'step_count_is', step_count: 5 },
        { type: 'max_cost', max_cost_in_dollars: 0.5 },
        { type: 'has_tool_call', tool_name: 'finalize' },
        { type: 'max_tokens_used', max_tokens: 10000 },
        { type: 'finish_reason_is', reason: 'length' },
      ],
      max_tool_calls: 10,
      top_logprobs: 2,
      stream_options: { include_obfuscation: false },
      temperature: null,
      tool_choice: null,
    });
    assert.equal(request.stream, false);
    assert.equal(request.generation.instructions, undefined);
  });

  it('reads the output modalities and image options', () => {
    const request = parsed({
      ...base,
      modalities: ['text', 'image'],
      image_config: { aspect_ratio: '16:9', image_size: '4K', quality: 'high' },
    });
    assert.deepEqual(request.generation.outputModalities, ['text', 'image']);
    assert.deepEqual(request.generation.imageConfig, { aspectRatio: '16:9', imageSize: '4K' });
    // Image options go with any modalities: kept without modalities, dropped for a text answer.
    assert.deepEqual(parsed({ ...base, image_config: { image_size: '2K' } }).generation.imageConfig, {
      imageSize: '2K',
    });
    // Null for either is not given, as on /chat/completions.
    const nulls = parsed({ ...base, modalities: null, image_config: null }).generation;
    assert.equal(nulls.outputModalities, undefined);
    assert.equal(nulls.imageConfig, undefined);
    assert.deepEqual(
      parsed({ ...base, modalities: null, image_config: { image_size: '2K' } }).generation.imageConfig,
      {
        imageSize: '2K',
      },
    );
    const text = parsed({ ...base, modalities: ['text'], image_config: { aspect_ratio: '16:9' } });
    assert.deepEqual(text.generation.outputModalities, ['text']);
    assert.equal(text.generation.imageConfig, undefined);
    refused(
      { ...base, modalities: ['text'], image_config: { image_size: 'huge' } },
      /body\.image_config\.image_size must be a size such as "1K", "2K" or "4K"/,
    );
    refused(
      { ...base, modalities: ['image'], image_config: { image_size: 'huge' } },
      /body\.image_config\.image_size must be a size such as "1K", "2K" or "4K"/,
    );
  });

  it('reads image_generation_call items sent back as assistant turns holding a generated image', () => {
    const png = 'iVBORw0KGgoAAAANSUhEUg==';
    const jpeg = '/9j/4AAQSkZJRg==';
    const request = parsed({
      ...base,
      input: [
        { role: 'user', content: 'Draw a cat' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Here.' }] },
        { type: 'image_generation_call', id: 'ig_1', status: 'completed', result: png },
        { type: 'image_generation_call', id: 'ig_2', status: 'completed', result: jpeg },
        // Still in progress when the client kept it: no image to send back.
        { type: 'image_generation_call', id: 'ig_3', status: 'in_progress', result: null },
        { role: 'user', content: 'Make it blue' },
      ],
    });
    const generated = (url: string) => ({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'image', url, generated: true }],
    });
    assert.deepEqual(request.generation.input.slice(2), [
      generated(`data:image/png;base64,${png}`),
      generated(`data:image/jpeg;base64,${jpeg}`),
      { type: 'message', role: 'user', content: [{ type: 'text', text: 'Make it blue' }] },
    ]);
    refused(
      { ...base, input: [{ type: 'image_generation_call', id: 'ig_1', result: 'not base64!' }] },
      /body\.input\.0\.result must be base64 data/,
    );
  });

  it('refuses what the stateless API cannot do', () => {
    refused({ ...base, store: true }, /body\.store must be false/);
    refused({ ...base, background: true }, /body\.background is not supported/);
    refused(
      { ...base, previous_response_id: 'resp_1' },
      /body\.previous_response_id .*send the full history in input/,
    );
    refused({ ...base, conversation: 'conv_1' }, /body\.conversation is not supported/);
    refused({ ...base, prompt: { id: 'pmpt_1' } }, /body\.prompt is not supported/);
  });

  it('only accepts tool_choice "auto" (spec 4.6), and function tools', () => {
    const only = /body\.tool_choice only "auto" is supported/;
    refused({ ...base, tool_choice: 'required' }, only);
    refused(
      {
        ...base,
        tools: [{ type: 'function', name: 'f' }],
        tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'f' }] },
      },
      only,
    );
    refused({ ...base, tool_choice: 'none' }, only);
    refused({ ...base, tool_choice: { type: 'function', name: 'f' } }, only);
    refused(
      {
        ...base,
        tools: [
          { type: 'function', name: 'f' },
          { type: 'custom', name: 'g' },
        ],
      },
      /body\.tools\.1\.type "custom": custom tools are not supported \(only function tools are\)$/,
    );
    refused(
      { ...base, tools: [{ type: 'web_search_preview' }] },
      /body\.tools\.0\.type "web_search_preview" is not supported yet/,
    );
    refused(
      { ...base, tools: [{ type: 'function' }] },
      /body\.tools\.0\.name must have required property 'name'/,
    );
    refused(
      { ...base, tools: [{ type: 'function', name: 'has space' }] },
      /body\.tools\.0\.name must match pattern/,
    );
    refused(
      { ...base, tools: [{ type: 'function', name: 'x'.repeat(65) }] },
      /body\.tools\.0\.name must NOT have more than 64 characters/,
    );
    refused(
      { ...base, tools: [{ type: 'function', name: 'f', parameters: 'none' }] },
      /body\.tools\.0\.parameters must be object,null/,
    );
    refused({ ...base, tools: [{ name: 'f' }] }, /body\.tools\.0\.type must have required property 'type'/);
    refused(
      {
        ...base,
        tools: [
          { type: 'function', name: 'f' },
          { type: 'function', name: 'f' },
        ],
      },
      /body\.tools\.1\.name "f" is already defined/,
    );
  });

  it('refuses out-of-range settings and unknown fields by name', () => {
    refused({ ...base, max_output_tokens: 0 }, /body\.max_output_tokens must be >= 1/);
    refused({ ...base, max_output_tokens: 1.5 }, /body\.max_output_tokens must be integer,null/);
    refused({ ...base, temperature: 3 }, /body\.temperature must be <= 2/);
    refused({ ...base, top_p: '0.5' }, /body\.top_p must be number,null/);
    refused({ ...base, stream: 'true' }, /body\.stream must be boolean,null/);
    refused({ ...base, max_tokens: 100 }, /body\.max_tokens is not a known field/);
    refused(
      { ...base, text: { format: { type: 'json_schema', schema: {} } } },
      /body\.text\.format\.name must have required property 'name'/,
    );
    refused(
      { ...base, text: { format: { type: 'yaml' } } },
      /body\.text\.format\.type must be one of: text, json_object, json_schema/,
    );
    // Each format takes its own fields only.
    refused(
      { ...base, text: { format: { type: 'text', name: 'answer' } } },
      /body\.text\.format\.name is not a known field/,
    );
    refused({ ...base, text: { verbosity: 'loud' } }, /body\.text\.verbosity must be one of: low/);
    refused({ ...base, reasoning: { effort: 'extreme' } }, /body\.reasoning\.effort must be one of: none/);
    refused({ ...base, reasoning: { budget: 5 } }, /body\.reasoning\.budget is not a known field/);
    refused(
      { ...base, include: ['everything'] },
      /body\.include\.0 must be one of: file_search_call\.results/,
    );
    refused({ ...base, modalities: ['audio'] }, /body\.modalities\.0 must be one of: text, image/);
    refused({ ...base, service_tier: 'gold' }, /body\.service_tier must be one of: auto/);
    refused({ ...base, truncation: 'middle' }, /body\.truncation must be one of: auto, disabled, null/);
    refused(
      { ...base, stop_server_tools_when: [] },
      /body\.stop_server_tools_when must NOT have fewer than 1 items/,
    );
    refused(
      { ...base, stop_server_tools_when: [{ type: 'forever' }] },
      /body\.stop_server_tools_when\.0\.type must be one of: step_count_is/,
    );
    refused(
      { ...base, stop_server_tools_when: [{ type: 'step_count_is' }] },
      /body\.stop_server_tools_when\.0\.step_count must have required property 'step_count'/,
    );
    refused(
      { ...base, stop_server_tools_when: [{ type: 'max_cost', max_cost_in_dollars: 'one' }] },
      /body\.stop_server_tools_when\.0\.max_cost_in_dollars must be number/,
    );
    refused(
      { ...base, plugins: [{ max_results: 3 }] },
      /body\.plugins\.0\.id must have required property 'id'/,
    );
    refused(
      { ...base, cache_control: { type: 'persistent' } },
      /body\.cache_control\.type must be one of: ephemeral/,
    );
  });
});
