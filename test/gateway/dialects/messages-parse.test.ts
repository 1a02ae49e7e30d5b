import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { AppError } from '../../../src/errors/app-error.js';
import { renderError } from '../../../src/errors/error-renderer.js';
import type { ParsedRequest } from '../../../src/gateway/dialects/dialect.js';
import type { MessagesBody } from '../../../src/gateway/dialects/messages/messages-body-schema.js';
import { messagesDialect } from '../../../src/gateway/dialects/messages/messages-dialect.js';

/**
 * The body validator the app installs for JSON bodies (src/platform/validation.ts: Ajv, first
 * error only, no coercion, unknown fields kept for the schema to judge), then the dialect's parse,
 * so each case asserts the status and message a client would receive.
 */
const ajv = new Ajv({
  allErrors: false,
  strict: false,
  useDefaults: true,
  removeAdditional: false,
  coerceTypes: false,
});
(addFormats as unknown as (ajv: Ajv) => Ajv)(ajv);
const validate = ajv.compile(messagesDialect.bodySchema as object);

type Outcome = { ok: true; parsed: ParsedRequest } | { ok: false; status: number; message: string };

function submit(body: unknown, headers: Record<string, string> = {}): Outcome {
  const copy = JSON.parse(JSON.stringify(body));
  if (!validate(copy)) {
    const rendered = renderError({ validation: validate.errors, validationContext: 'body' });
    return { ok: false, status: rendered.status, message: rendered.body.error.message };
  }
  try {
    return { ok: true, parsed: messagesDialect.parse(copy as MessagesBody, headers) };
  } catch (error) {
    if (error instanceof AppError) return { ok: false, status: error.status, message: error.message };
    throw error;
  }
}

function parse(body: unknown, headers: Record<string, string> = {}): ParsedRequest {
  const outcome = submit(body, headers);
  if (!outcome.ok) assert.fail(`refused: ${outcome.message}`);
  return outcome.parsed;
}

function refused(body: unknown, message: string) {
  const outcome = submit(body);
  assert.deepEqual(outcome, { ok: false, status: 400, message: `Invalid request parameters: ${message}` });
}

const base = { model: 'anthropic/claude-sonnet-4', max_tokens: 1024 };
const user = (content: unknown) => ({ ...base, messages: [{ role: 'user', content }] });

describe('messages dialect: parsing a request', () => {
  it('reads the minimal Anthropic request', () => {
    const parsed = parse({ ...base, messages: [{ role: 'user', content: 'Hello' }] });
    assert.deepEqual(parsed, {
      generation: {
        input: [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
        maxOutputTokens: 1024,
      },
      models: ['anthropic/claude-sonnet-4'],
      provider: null,
      stream: false,
      sessionId: null,
      user: null,
      metadata: null,
      trace: null,
    });
  });

  it('joins the system prompt, given as a string or as text blocks, keeping sections with a cache breakpoint', () => {
    assert.equal(parse({ ...user('Hi'), system: 'Be brief.' }).generation.instructions, 'Be brief.');
    const blocks = parse({
      ...user('Hi'),
      system: [
        { type: 'text', text: 'You are a helper.' },
        { type: 'text', text: 'Answer in French.', cache_control: { type: 'ephemeral', ttl: '1h' } },
      ],
    });
    assert.equal(blocks.generation.instructions, 'You are a helper.\n\nAnswer in French.');
    // The sections are kept for Anthropic's prompt caching, the breakpoint where the client put it.
    assert.deepEqual(blocks.generation.instructionSections, [
      { text: 'You are a helper.' },
      { text: 'Answer in French.', cacheControl: { type: 'ephemeral', ttl: '1h' } },
    ]);
    assert.equal(
      parse({ ...user('Hi'), system: [{ type: 'text', text: 'x' }] }).generation.instructionSections,
      undefined,
    );
    assert.deepEqual(parse({ ...user('Hi'), cache_control: { type: 'ephemeral' } }).generation.cacheControl, {
      type: 'ephemeral',
    });
    assert.equal(parse({ ...user('Hi'), system: '' }).generation.instructions, undefined);
  });

  it('turns text, image and document blocks into message parts', () => {
    const parsed = parse(
      user([
        { type: 'text', text: 'What is in these?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
        {
          type: 'document',
          source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' },
          title: 'report.pdf',
          cache_control: { type: 'ephemeral' },
        },
        { type: 'document', source: { type: 'url', url: 'https://example.com/paper.pdf' } },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Plain notes é' } },
      ]),
    );
    assert.deepEqual(parsed.generation.input, [
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' },
          { type: 'image', url: 'https://example.com/cat.jpg' },
          {
            type: 'file',
            url: 'data:application/pdf;base64,JVBERi0x',
            mediaType: 'application/pdf',
            filename: 'report.pdf',
            cacheControl: { type: 'ephemeral' },
          },
          { type: 'file', url: 'https://example.com/paper.pdf', mediaType: 'application/pdf' },
          {
            type: 'file',
            url: `data:text/plain;base64,${Buffer.from('Plain notes é').toString('base64')}`,
            mediaType: 'text/plain',
          },
        ],
      },
    ]);
  });

  it('splits tool use and tool results out of turns, in order, thinking kept with what follows it', () => {
    const parsed = parse({
      ...base,
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Two cities, two calls.', signature: 'EqQBCgIYAhIM' },
            { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3p' },
            { type: 'text', text: 'Checking both.' },
            { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_02', name: 'get_weather', input: { city: 'Rome', unit: 'c' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_01', content: '18°C, clear' },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_02',
              content: [
                { type: 'text', text: 'Service unavailable' },
                { type: 'text', text: 'retry later' },
              ],
              is_error: true,
            },
            { type: 'text', text: 'Summarize please.' },
          ],
        },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_03', name: 'noop', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_03' }] },
      ],
    });
    assert.deepEqual(parsed.generation.input, [
      { type: 'message', role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
      {
        type: 'message',
        role: 'assistant',
        content: [{ type: 'text', text: 'Checking both.' }],
        // Signatures and redacted data unchanged: Anthropic checks them when they come back.
        reasoning: [
          { text: 'Two cities, two calls.', signature: 'EqQBCgIYAhIM', format: 'anthropic-claude-v1' },
          { text: '', redactedData: 'EmwKAhgBEgy3va3p', format: 'anthropic-claude-v1' },
        ],
      },
      { type: 'function-call', callId: 'toolu_01', name: 'get_weather', arguments: '{"city":"Paris"}' },
      {
        type: 'function-call',
        callId: 'toolu_02',
        name: 'get_weather',
        arguments: '{"city":"Rome","unit":"c"}',
      },
      { type: 'function-call-output', callId: 'toolu_01', output: '18°C, clear' },
      {
        type: 'function-call-output',
        callId: 'toolu_02',
        output: 'Service unavailable\nretry later',
        isError: true,
      },
      { type: 'message', role: 'user', content: [{ type: 'text', text: 'Summarize please.' }] },
      { type: 'function-call', callId: 'toolu_03', name: 'noop', arguments: '{}' },
      { type: 'function-call-output', callId: 'toolu_03', output: '' },
    ]);
  });

  it('reads custom tools and every tool_choice form', () => {
    const weather = {
      name: 'get_weather',
      description: 'Current weather',
      input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      cache_control: { type: 'ephemeral' },
    };
    const withChoice = (toolChoice: unknown) =>
      parse({
        ...user('Hi'),
        tools: [weather, { type: 'custom', name: 'noop', input_schema: { type: 'object' } }],
        tool_choice: toolChoice,
      }).generation;
    const generation = withChoice({ type: 'auto' });
    assert.deepEqual(generation.tools, [
      {
        type: 'function',
        name: 'get_weather',
        description: 'Current weather',
        parameters: weather.input_schema,
        cacheControl: { type: 'ephemeral' },
      },
      { type: 'function', name: 'noop', parameters: { type: 'object' } },
    ]);
    assert.equal(generation.toolChoice, 'auto');
    assert.equal(generation.parallelToolCalls, undefined);
    assert.equal(withChoice({ type: 'any' }).toolChoice, 'required');
    assert.equal(withChoice({ type: 'none' }).toolChoice, 'none');
    const forced = withChoice({ type: 'tool', name: 'get_weather', disable_parallel_tool_use: true });
    assert.deepEqual(forced.toolChoice, { type: 'function', name: 'get_weather' });
    assert.equal(forced.parallelToolCalls, false);
    assert.equal(withChoice({ type: 'auto', disable_parallel_tool_use: false }).parallelToolCalls, undefined);
  });

  it('maps thinking, effort and the structured-output format to reasoning and response format', () => {
    const reasoning = (extra: Record<string, unknown>) =>
      parse({ ...user('Hi'), ...extra }).generation.reasoning;
    assert.deepEqual(reasoning({ thinking: { type: 'enabled', budget_tokens: 2048 } }), {
      enabled: true,
      maxTokens: 2048,
      include: true,
    });
    assert.deepEqual(reasoning({ thinking: { type: 'enabled', budget_tokens: 4096, display: 'omitted' } }), {
      enabled: true,
      maxTokens: 4096,
      include: false,
    });
    assert.deepEqual(reasoning({ thinking: { type: 'adaptive' } }), { enabled: true, include: true });
    assert.deepEqual(reasoning({ thinking: { type: 'disabled' } }), { enabled: false });
    // Anthropic's effort alone governs the answer's spend and asks for no thinking; beside thinking
    // it is the thinking's level.
    assert.deepEqual(reasoning({ output_config: { effort: 'high' } }), {
      effort: 'high',
      effortAsksReasoning: false,
    });
    assert.deepEqual(reasoning({ thinking: { type: 'disabled' }, output_config: { effort: 'low' } }), {
      enabled: false,
      effort: 'low',
      effortAsksReasoning: false,
    });
    assert.deepEqual(reasoning({ thinking: { type: 'adaptive' }, output_config: { effort: 'low' } }), {
      enabled: true,
      include: true,
      effort: 'low',
    });
    assert.equal(reasoning({}), undefined);
    const schema = { type: 'object', properties: { answer: { type: 'string' } } };
    assert.deepEqual(
      parse({ ...user('Hi'), output_config: { format: { type: 'json_schema', schema } } }).generation
        .responseFormat,
      { type: 'json_schema', name: 'output', schema },
    );
  });

  it("reads the beta's top-level output_format as output_config.format, by the same rules, and refuses both", () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } } };
    const format = { type: 'json_schema', schema };
    assert.deepEqual(parse({ ...user('Hi'), output_format: format }).generation.responseFormat, {
      type: 'json_schema',
      name: 'output',
      schema,
    });
    assert.equal(parse({ ...user('Hi'), output_format: null }).generation.responseFormat, undefined);
    const nullWithConfig = parse({ ...user('Hi'), output_format: null, output_config: { format } });
    assert.deepEqual(nullWithConfig.generation.responseFormat, {
      type: 'json_schema',
      name: 'output',
      schema,
    });
    // Null for output_config.format is not given either (the SDK types it nullable).
    assert.equal(
      parse({ ...user('Hi'), output_config: { format: null } }).generation.responseFormat,
      undefined,
    );
    const nullConfig = parse({ ...user('Hi'), output_format: format, output_config: { format: null } });
    assert.deepEqual(nullConfig.generation.responseFormat, { type: 'json_schema', name: 'output', schema });
    refused(
      { ...user('Hi'), output_format: format, output_config: { format } },
      'body.output_format cannot be combined with body.output_config.format; send only output_config.format (output_format is deprecated)',
    );
    // The effort beside the deprecated format is no conflict.
    const withEffort = parse({ ...user('Hi'), output_format: format, output_config: { effort: 'low' } });
    assert.deepEqual(withEffort.generation.responseFormat, { type: 'json_schema', name: 'output', schema });
    for (const [bad, message] of [
      ['json', 'body.output_format must be object'],
      [{ type: 'json_object' }, 'body.output_format.type must be one of: json_schema'],
      [{ type: 'json_schema' }, "body.output_format.schema must have required property 'schema'"],
      [{ type: 'json_schema', schema: 'x' }, 'body.output_format.schema must be object'],
      [{ type: 'json_schema', schema, name: 'x' }, 'body.output_format.name is not a known field'],
    ] as const) {
      const config = submit({ ...user('Hi'), output_config: { format: bad } });
      const deprecated = submit({ ...user('Hi'), output_format: bad });
      assert.equal(deprecated.ok, false, JSON.stringify(bad));
      assert.equal(config.ok, false, JSON.stringify(bad));
      if (deprecated.ok || config.ok) continue;
      assert.equal(deprecated.status, 400);
      assert.equal(deprecated.message.replace('output_format', 'output_config.format'), config.message);
      assert.match(deprecated.message, new RegExp(message.replaceAll('.', '\\.')), JSON.stringify(bad));
    }
  });

  it('maps sampling fields, stop sequences and the end user', () => {
    const parsed = parse({
      ...user('Hi'),
      max_tokens: 300,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ['\n\nHuman:'],
      metadata: { user_id: 'user-42' },
      service_tier: 'auto',
      cache_control: { type: 'ephemeral' },
    });
    assert.equal(parsed.generation.maxOutputTokens, 300);
    assert.equal(parsed.generation.temperature, 0.2);
    assert.equal(parsed.generation.topP, 0.9);
    assert.equal(parsed.generation.topK, 40);
    assert.deepEqual(parsed.generation.stop, ['\n\nHuman:']);
    assert.equal(parsed.user, 'user-42');
    assert.equal(parsed.generation.user, 'user-42');
    const both = parse({ ...user('Hi'), metadata: { user_id: 'anthropic-id' }, user: 'gateway-id' });
    assert.equal(both.user, 'gateway-id');
    assert.equal(parse({ ...user('Hi'), stop_sequences: [] }).generation.stop, undefined);
  });

  it('lists the models in fallback order from models or fallbacks, without repeats', () => {
    assert.deepEqual(
      parse({ ...user('Hi'), models: ['openai/gpt-4o', 'anthropic/claude-sonnet-4', 'x/y'] }).models,
      ['anthropic/claude-sonnet-4', 'openai/gpt-4o', 'x/y'],
    );
    assert.deepEqual(
      parse({ ...user('Hi'), fallbacks: [{ model: 'openai/gpt-4o' }, { model: 'google/gemini-2.5-pro' }] })
        .models,
      ['anthropic/claude-sonnet-4', 'openai/gpt-4o', 'google/gemini-2.5-pro'],
    );
    assert.deepEqual(parse({ ...user('Hi'), fallbacks: null }).models, ['anthropic/claude-sonnet-4']);
  });

  it('takes the session id from the body, else the x-session-id header', () => {
    assert.equal(
      parse({ ...user('Hi'), session_id: 'body-session' }, { 'x-session-id': 'header' }).sessionId,
      'body-session',
    );
    assert.equal(parse(user('Hi'), { 'x-session-id': 'header-session' }).sessionId, 'header-session');
    const outcome = submit(user('Hi'), { 'x-session-id': 'x'.repeat(257) });
    assert.deepEqual(outcome, {
      ok: false,
      status: 400,
      message: 'Invalid request parameters: headers.x-session-id must NOT have more than 256 characters',
    });
    // The header is only read, and so only judged, when the body names no session.
    assert.equal(
      parse({ ...user('Hi'), session_id: 'body-session' }, { 'x-session-id': 'x'.repeat(257) }).sessionId,
      'body-session',
    );
    const nulls = parse({ ...user('Hi'), session_id: null, user: null, trace: null, fallbacks: null });
    assert.equal(nulls.sessionId, null);
    assert.equal(nulls.user, null);
    assert.equal(nulls.trace, null);
  });

  it('normalizes provider preferences and folds the deprecated route into the partition', () => {
    const parsed = parse({
      ...user('Hi'),
      stream: true,
      trace: { trace_id: 't-1', custom: 'kept' },
      route: 'sort',
      provider: {
        order: ['anthropic', 'amazon-bedrock'],
        allow_fallbacks: false,
        data_collection: 'deny',
        zdr: null,
        only: null,
        sort: 'throughput',
        preferred_max_latency: { p90: 2.5, p50: null },
        preferred_min_throughput: 40,
        max_price: { prompt: '1.5', completion: 4 },
      },
    });
    assert.equal(parsed.stream, true);
    assert.deepEqual(parsed.trace, { trace_id: 't-1', custom: 'kept' });
    assert.deepEqual(parsed.provider, {
      order: ['anthropic', 'amazon-bedrock'],
      allow_fallbacks: false,
      data_collection: 'deny',
      sort: { by: 'throughput', partition: 'none' },
      preferred_max_latency: { p90: 2.5 },
      preferred_min_throughput: 40,
      max_price: { prompt: 1.5, completion: 4 },
    });
    assert.deepEqual(
      parse({ ...user('Hi'), route: 'sort', provider: { sort: { by: 'price', partition: 'model' } } })
        .provider,
      { sort: { by: 'price', partition: 'model' } },
    );
    // Explicit nulls anywhere inside `provider` mean "not set", as the @openrouter/sdk sends them.
    assert.deepEqual(
      parse({
        ...user('Hi'),
        provider: {
          sort: { by: null, partition: 'none' },
          preferred_min_throughput: { p50: null },
          max_price: { prompt: null, completion: '2' },
        },
      }).provider,
      { preferred_min_throughput: {}, max_price: { completion: 2 } },
    );
    assert.equal(parse({ ...user('Hi'), provider: null }).provider, null);
  });

  it('accepts what an Anthropic SDK agent sends, echoed assistant content included', () => {
    const parsed = parse({
      model: 'anthropic/claude-sonnet-4',
      max_tokens: 32000,
      stream: true,
      system: [{ type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } }],
      metadata: { user_id: 'user_abc_account_def_session_123' },
      thinking: { type: 'enabled', budget_tokens: 31999 },
      tools: [
        {
          name: 'Bash',
          description: 'Run a command',
          input_schema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: { command: { type: 'string' } },
            required: ['command'],
            additionalProperties: false,
          },
        },
      ],
      messages: [
        {
          role: 'user',
          content: [{ type: 'text', text: 'List files', cache_control: { type: 'ephemeral' } }],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Use ls.', signature: '' },
            { type: 'text', text: 'Running ls.', citations: null },
            { type: 'tool_use', id: 'toolu_9', name: 'Bash', input: { command: 'ls' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_9', content: 'a.txt\nb.txt', is_error: false },
          ],
        },
      ],
    });
    assert.equal(parsed.stream, true);
    assert.deepEqual(
      parsed.generation.input.map((item) => item.type),
      ['message', 'message', 'function-call', 'function-call-output'],
    );
    assert.deepEqual(parsed.generation.reasoning, { enabled: true, maxTokens: 31999, include: true });
    assert.equal(parsed.user, 'user_abc_account_def_session_123');
    assert.equal(parsed.generation.tools?.[0]?.name, 'Bash');
  });
});

describe('messages dialect: refusing a request', () => {
  it('requires max_tokens, as Anthropic does', () => {
    refused(
      { model: 'a/b', messages: [{ role: 'user', content: 'Hi' }] },
      "body.max_tokens must have required property 'max_tokens'",
    );
    refused({ ...user('Hi'), max_tokens: 0 }, 'body.max_tokens must be >= 1');
    refused({ ...user('Hi'), max_tokens: 1.5 }, 'body.max_tokens must be integer');
  });

  it('requires at least one message with a user or assistant role', () => {
    refused({ ...base, messages: [] }, 'body.messages must NOT have fewer than 1 items');
    refused({ ...base }, "body.messages must have required property 'messages'");
    refused(
      { ...base, messages: [{ role: 'system', content: 'Be brief.' }] },
      'body.messages.0.role must be one of: user, assistant',
    );
  });

  it('refuses models with fallbacks, and more than three fallbacks', () => {
    refused(
      { ...user('Hi'), models: ['a/b'], fallbacks: [{ model: 'c/d' }] },
      'body.fallbacks cannot be combined with body.models; send one of them',
    );
    refused(
      { ...user('Hi'), fallbacks: [{ model: 'a/1' }, { model: 'a/2' }, { model: 'a/3' }, { model: 'a/4' }] },
      'body.fallbacks must have 3 items or fewer',
    );
    refused(
      { ...user('Hi'), models: ['a/1', 'a/2', 'a/3', 'a/4'] },
      'body.models must have 3 items or fewer',
    );
    refused(
      { ...user('Hi'), fallbacks: [{ model: 'a/1', temperature: 0 }] },
      'body.fallbacks.0.temperature is not a known field',
    );
  });

  it('names the broken field inside content blocks', () => {
    refused(
      user([{ type: 'tool_result', content: 'orphan' }]),
      "body.messages.0.content.0.tool_use_id must have required property 'tool_use_id'",
    );
    refused(
      user([{ type: 'image', source: { type: 'base64', media_type: 'image/png' } }]),
      "body.messages.0.content.0.source.data must have required property 'data'",
    );
    refused(
      user([{ type: 'image', source: { type: 'base64', media_type: 'image/tiff', data: 'AA==' } }]),
      'body.messages.0.content.0.source.media_type must be one of: image/jpeg, image/png, image/gif, image/webp',
    );
    refused(
      user([{ type: 'document', source: { type: 'file', file_id: 'file_1' } }]),
      'body.messages.0.content.0.source.type must be one of: base64, url, text',
    );
    for (const url of ['ftp://x/a.png', 'file:///etc/passwd', 'data:image/png;base64,AA==']) {
      refused(
        user([{ type: 'image', source: { type: 'url', url } }]),
        'body.messages.0.content.0.source.url must match pattern "^https?://"',
      );
      refused(
        user([{ type: 'document', source: { type: 'url', url } }]),
        'body.messages.0.content.0.source.url must match pattern "^https?://"',
      );
    }
    refused(
      user([{ type: 'audio', data: 'AA==' }]),
      'body.messages.0.content.0.type must be one of: text, image, document, tool_use, tool_result, thinking, redacted_thinking',
    );
    refused(
      user([{ type: 'text', text: 'Hi', colour: 'red' }]),
      'body.messages.0.content.0.colour is not a known field',
    );
    refused(
      user([
        {
          type: 'tool_result',
          tool_use_id: 't',
          content: [{ type: 'image', source: { type: 'url', url: 'u' } }],
        },
      ]),
      'body.messages.0.content.0.content.0.source.url must match pattern "^https?://"',
    );
    refused(
      user([
        {
          type: 'tool_result',
          tool_use_id: 't',
          content: [{ type: 'tool_use', id: 'x', name: 'y', input: {} }],
        },
      ]),
      'body.messages.0.content.0.content.0.type must be one of: text, image, document',
    );
    refused({ ...user('Hi'), system: [{ type: 'image' }] }, 'body.system.0.type must be one of: text');
    refused(user(42), 'body.messages.0.content must be string,array');
  });

  it('refuses tool blocks in the wrong turn', () => {
    refused(
      user([{ type: 'tool_use', id: 'toolu_1', name: 'x', input: {} }]),
      'body.messages.0.content.0.type tool_use is only allowed in assistant messages',
    );
    refused(
      { ...base, messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 't' }] }] },
      'body.messages.0.content.0.type tool_result is only allowed in user messages',
    );
  });

  it('refuses malformed tools, server tools and a tool_choice naming no tool', () => {
    refused(
      { ...user('Hi'), tools: [{ name: 'x' }] },
      "body.tools.0.input_schema must have required property 'input_schema'",
    );
    refused(
      { ...user('Hi'), tools: [{ name: 'x', input_schema: { type: 'string' } }] },
      'body.tools.0.input_schema.type must be one of: object',
    );
    refused(
      { ...user('Hi'), tools: [{ name: 'x', input_schema: { type: 'object' }, parameters: {} }] },
      'body.tools.0.parameters is not a known field',
    );
    refused(
      { ...user('Hi'), tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] },
      'body.tools.0.type web_search_20250305 is not supported: only custom tools (name, description, input_schema) are',
    );
    const tool = { name: 'x', input_schema: { type: 'object' } };
    refused({ ...user('Hi'), tools: [tool, tool] }, 'body.tools.1.name x is declared twice');
    refused(
      { ...user('Hi'), tools: [tool], tool_choice: { type: 'tool', name: 'y' } },
      'body.tool_choice.name y does not name a tool in body.tools',
    );
    refused(
      { ...user('Hi'), tool_choice: { type: 'tool' } },
      "body.tool_choice.name must have required property 'name'",
    );
    refused(
      { ...user('Hi'), tool_choice: { type: 'required' } },
      'body.tool_choice.type must be one of: auto, any, tool, none',
    );
  });

  it('refuses invalid provider preferences, naming the field', () => {
    refused(
      { ...user('Hi'), provider: { sort: 'fastest' } },
      'body.provider.sort must be one of: price, throughput, latency',
    );
    refused(
      { ...user('Hi'), provider: { sort: { by: 'speed' } } },
      'body.provider.sort.by must be one of: price, throughput, latency, null',
    );
    // The reference's quality-first sort is not offered: nothing here measures it.
    refused(
      { ...user('Hi'), provider: { sort: 'exacto' } },
      'body.provider.sort must be one of: price, throughput, latency',
    );
    refused({ ...user('Hi'), provider: { onyl: ['openai'] } }, 'body.provider.onyl is not a known field');
    refused({ ...user('Hi'), provider: { order: 'openai' } }, 'body.provider.order must be array,null');
    refused(
      { ...user('Hi'), provider: { max_price: { prompt: 'cheap' } } },
      'body.provider.max_price.prompt must match pattern "^\\d+(\\.\\d+)?$"',
    );
    refused(
      { ...user('Hi'), provider: { preferred_min_throughput: { p50: 'fast' } } },
      'body.provider.preferred_min_throughput.p50 must be number,null',
    );
    refused({ ...user('Hi'), route: 'fastest' }, 'body.route must be one of: fallback, sort, null');
  });

  it('refuses unknown top-level fields and out-of-range values', () => {
    refused({ ...user('Hi'), mcp_servers: [] }, 'body.mcp_servers is not a known field');
    refused({ ...user('Hi'), temperature: 1.5 }, 'body.temperature must be <= 1');
    refused(
      { ...user('Hi'), thinking: { type: 'enabled', budget_tokens: 512 } },
      'body.thinking.budget_tokens must be >= 1024',
    );
    refused(
      { ...user('Hi'), thinking: { type: 'enabled' } },
      "body.thinking.budget_tokens must have required property 'budget_tokens'",
    );
    refused(
      { ...user('Hi'), session_id: 's'.repeat(257) },
      'body.session_id must NOT have more than 256 characters',
    );
    refused({ ...user('Hi'), user: 'u'.repeat(257) }, 'body.user must NOT have more than 256 characters');
    // PostgreSQL cannot store NUL, so the identifiers that are recorded refuse it.
    refused(
      { ...user('Hi'), session_id: 'a\u0000b' },
      'body.session_id must not contain NUL characters or unpaired surrogates',
    );
    refused(
      { ...user('Hi'), metadata: { user_id: 'u', tags: [] } },
      'body.metadata.tags is not a known field',
    );
  });
});
