import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { structuredAnthropic } from '../../helpers/fake-anthropic-structured.js';
import { startFakeUpstream, writeSse } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  ACME_MODEL,
  acmeCatalog,
  CLAUDE_LIKE_MODEL,
  chatCompletion,
  chatStreamFrames,
  createKey,
  sseData,
  withClaudeLike,
} from './harness.js';

/** A catalogue model whose Anthropic endpoint lists `structured_outputs` (catalog-data/endpoints.json). */
const CLAUDE = 'anthropic/claude-sonnet-4.5';
const ANSWER = '{"name":"Ada Lovelace","age":36,"email":"ada@example.com","address":{"city":"London"}}';

/**
 * A schema as clients write it (zod, Pydantic, hand-written OpenAI strict schemas): bounds, string
 * lengths, a pattern, `oneOf`, `$defs`, objects left open. Anthropic refuses it as it is.
 */
const PERSON = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    email: { type: 'string', format: 'email', pattern: '^[^@]+@[^@]+$' },
    address: { $ref: '#/$defs/Address' },
    contact: { oneOf: [{ type: 'string' }, { type: 'null' }] },
    tags: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 5 },
  },
  required: ['name', 'age', 'email', 'address'],
  $defs: { Address: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

/**
 * A tree as OpenAI's strict mode takes it, each node's children nodes again: a recursive schema,
 * which Anthropic's grammar has no form for.
 */
const TREE = {
  type: 'object',
  properties: { root: { $ref: '#/$defs/node' } },
  required: ['root'],
  additionalProperties: false,
  $defs: {
    node: {
      type: 'object',
      properties: {
        value: { type: 'string' },
        children: { type: 'array', items: { $ref: '#/$defs/node' } },
      },
      required: ['value', 'children'],
      additionalProperties: false,
    },
  },
};

/** A linked list through the root itself (`$ref: "#"`). */
const LINKED_LIST = {
  type: 'object',
  properties: { value: { type: 'number' }, next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } },
  required: ['value', 'next'],
  additionalProperties: false,
};

/**
 * Structured output requested through the OpenAI-style surfaces and served by Anthropic, against a
 * fake Anthropic that refuses a malformed output format with a 400 as the real one does.
 */
describe('structured outputs served by Anthropic', () => {
  let fake: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  before(async () => {
    fake = await startFakeUpstream();
    fake.handle(structuredAnthropic(ANSWER));
    gateway = await startTestApp({
      config: {
        credits: { initial: 100 },
        catalog: withClaudeLike(acmeCatalog(`${fake.url}/v1`), `${fake.url}/v1`),
        providers: {
          anthropic: { api_key: 'sk-ant-test', base_url: `${fake.url}/v1` },
          'claude-like': { api_key: 'c' },
        },
      },
    });
    key = (await createKey(gateway)).key;
  });
  after(async () => {
    await gateway.close();
    await fake.close();
  });

  const post = (path: string, body: Record<string, unknown>) => gateway.request('POST', path, { key, body });
  /** The body the fake Anthropic received last. */
  const sent = () => fake.requests.at(-1)?.body as Record<string, any>;
  const personFormat = { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: PERSON } };
  const messages = [
    { role: 'system', content: 'Extract the person.' },
    { role: 'user', content: 'Ada Lovelace, 36, ada@example.com, of London.' },
  ];

  it('the fake refuses the output formats Anthropic refuses', async () => {
    const ask = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
      const response = await fetch(`${fake.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({
          model: 'claude-sonnet-4-5',
          max_tokens: 100,
          messages: [{ role: 'user', content: 'hi' }],
          ...body,
        }),
      });
      const text = await response.text();
      return { status: response.status, message: response.ok ? '' : JSON.parse(text).error.message };
    };
    const raw = await ask({ output_config: { format: { type: 'json_schema', schema: PERSON } } });
    assert.equal(raw.status, 400);
    assert.match(raw.message, /'additionalProperties' must be explicitly set to false/);
    const closed = { ...PERSON, additionalProperties: false };
    assert.match(
      (await ask({ output_config: { format: { type: 'json_schema', schema: closed } } })).message,
      /properties\.name: For 'string' type, property 'minLength' is not supported/,
    );
    const fine = { type: 'object', properties: { a: { type: 'integer' } }, additionalProperties: false };
    assert.match(
      (await ask({ output_config: { format: { type: 'json_schema', name: 'x', schema: fine } } })).message,
      /output_config\.format\.name: Extra inputs are not permitted/,
    );
    assert.equal(
      (await ask({ output_config: { format: { type: 'json_schema', schema: fine } } })).status,
      200,
    );
    assert.equal((await ask({ output_format: { type: 'json_schema', schema: fine } })).status, 400);
    const beta = { 'anthropic-beta': 'structured-outputs-2025-11-13' };
    assert.equal((await ask({ output_format: { type: 'json_schema', schema: fine } }, beta)).status, 200);
    const prefill = await ask({
      output_config: { format: { type: 'json_schema', schema: fine } },
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: '{' },
      ],
    });
    assert.equal(prefill.status, 400);

    // Recursion, whichever way the $ref leads back, and a $ref to nothing.
    const format = (schema: Record<string, unknown>) => ({
      output_config: { format: { type: 'json_schema', schema } },
    });
    for (const schema of [TREE, LINKED_LIST]) {
      const recursive = await ask(format(schema));
      assert.equal(recursive.status, 400);
      assert.match(recursive.message, /Too many recursive definitions in schema/);
    }
    const dangling = { ...fine, properties: { a: { $ref: '#/$defs/missing' } } };
    assert.match((await ask(format(dangling))).message, /Reference to non-existent definition/);
    // Any type at the root of the format, as at any node, but a type there must be.
    const list = { type: 'array', items: fine };
    assert.equal((await ask(format(list))).status, 200);
    assert.match((await ask(format({ description: 'x' }))).message, /Schema type is missing/);

    // Tools: an object at the root of every one; a strict one's schema compiled like the format's.
    const tool = (input_schema: Record<string, unknown>, strict?: boolean) => ({
      tools: [{ name: 't', input_schema, ...(strict ? { strict } : {}) }],
    });
    assert.equal((await ask(tool(fine, true))).status, 200);
    assert.match(
      (await ask(tool({ $ref: '#/$defs/a', $defs: { a: fine } }, true))).message,
      /^tools\.0\.custom\.input_schema\.type: Input should be 'object'$/,
    );
    assert.match((await ask(tool(list))).message, /input_schema\.type: Input should be 'object'/);
    assert.match(
      (await ask(tool({ type: 'object', anyOf: [fine] }))).message,
      /does not support oneOf, allOf, or anyOf at the top level/,
    );
    assert.match((await ask(tool(TREE, true))).message, /Too many recursive definitions in schema/);
    assert.equal((await ask(tool(TREE))).status, 200, 'a schema that is not strict compiles to no grammar');
  });

  it('chat completions: a json_schema format reaches Anthropic as output_config.format and comes back as JSON', async () => {
    const reply = await post('/api/v1/chat/completions', {
      model: CLAUDE,
      messages,
      response_format: personFormat,
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.choices[0].message.content, ANSWER);
    assert.deepEqual(JSON.parse(reply.body.choices[0].message.content).address, { city: 'London' });
    const body = sent();
    assert.deepEqual(Object.keys(body.output_config.format), ['type', 'schema']);
    const schema = body.output_config.format.schema;
    assert.equal(schema.additionalProperties, false);
    assert.equal(schema.$defs.Address.additionalProperties, false);
    assert.deepEqual(schema.properties.age, { type: 'integer', description: '{minimum: 0, maximum: 150}' });
    assert.deepEqual(schema.properties.contact, { anyOf: [{ type: 'string' }, { type: 'null' }] });
    assert.equal(body.system, 'Extract the person.', 'no instruction beside the grammar');
    assert.equal(fake.requests.at(-1)?.headers['anthropic-beta'], undefined);
  });

  it('chat completions, streamed: the JSON arrives in deltas', async () => {
    const reply = await post('/api/v1/chat/completions', {
      model: CLAUDE,
      messages,
      response_format: personFormat,
      stream: true,
    });
    assert.equal(reply.status, 200, reply.text);
    const chunks = sseData(reply.text).filter((chunk) => chunk !== '[DONE]');
    const content = chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? '').join('');
    assert.equal(content, ANSWER);
    assert.equal(chunks.find((chunk) => chunk.choices?.[0]?.finish_reason)?.choices[0].finish_reason, 'stop');
    assert.equal(sent().stream, true);
    assert.equal(sent().output_config.format.type, 'json_schema');
  });

  it('responses: text.format json_schema, whole and streamed, with reasoning on', async () => {
    const format = { type: 'json_schema', name: 'person', strict: true, schema: PERSON };
    const input = 'Ada Lovelace, 36, ada@example.com, of London.';
    const whole = await post('/api/v1/responses', { model: CLAUDE, input, text: { format } });
    assert.equal(whole.status, 200, whole.text);
    const message = whole.body.output.find((item: { type: string }) => item.type === 'message');
    assert.equal(message.content[0].text, ANSWER);
    assert.equal(sent().output_config.format.schema.properties.tags.minItems, undefined);
    assert.match(sent().output_config.format.schema.properties.tags.description, /minItems: 2, maxItems: 5/);

    // Thinking and a JSON output format together: Anthropic's grammar holds the answer only.
    const streamed = await post('/api/v1/responses', {
      model: CLAUDE,
      input,
      text: { format },
      reasoning: { effort: 'low' },
      stream: true,
    });
    assert.equal(streamed.status, 200, streamed.text);
    assert.deepEqual(sent().thinking, { type: 'enabled', budget_tokens: 4096 });
    assert.equal(sent().output_config.format.type, 'json_schema');
    const events = sseData(streamed.text);
    const text = events
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta)
      .join('');
    assert.equal(text, ANSWER);
    const completed = events.find((event) => event.type === 'response.completed');
    assert.deepEqual(
      completed.response.output.map((item: { type: string }) => item.type),
      ['reasoning', 'message'],
    );
  });

  it("messages: a client's output_config.format reaches Anthropic too, reshaped", async () => {
    const reply = await post('/api/v1/messages', {
      model: CLAUDE,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Ada?' }],
      output_config: { format: { type: 'json_schema', schema: PERSON } },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.content[0].text, ANSWER);
    assert.equal(
      sent().output_config.format.schema.properties.name.description,
      '{minLength: 1, maxLength: 100}',
    );
  });

  it("messages: the beta's top-level output_format reaches Anthropic as output_config.format, whole and streamed", async () => {
    // Older clients send the beta's spelling with its header; the fake, like Anthropic, takes
    // output_format only with that header, so what it receives must be the GA field.
    const headers = { 'anthropic-beta': 'structured-outputs-2025-11-13' };
    const body = {
      model: CLAUDE,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Ada?' }],
      output_format: { type: 'json_schema', schema: PERSON },
    };
    const whole = await gateway.request('POST', '/api/v1/messages', { key, body, headers });
    assert.equal(whole.status, 200, whole.text);
    assert.equal(whole.body.content[0].text, ANSWER);
    assert.equal(sent().output_format, undefined);
    assert.deepEqual(Object.keys(sent().output_config.format), ['type', 'schema']);
    assert.equal(sent().output_config.format.schema.additionalProperties, false);
    assert.equal(
      sent().output_config.format.schema.properties.name.description,
      '{minLength: 1, maxLength: 100}',
    );
    assert.equal(fake.requests.at(-1)?.headers['anthropic-beta'], undefined);

    const streamed = await post('/api/v1/messages', { ...body, stream: true });
    assert.equal(streamed.status, 200, streamed.text);
    const text = sseData(streamed.text)
      .filter((event) => event.type === 'content_block_delta' && event.delta.type === 'text_delta')
      .map((event) => event.delta.text)
      .join('');
    assert.equal(text, ANSWER);
    assert.equal(sent().stream, true);
    assert.equal(sent().output_format, undefined);
    assert.equal(sent().output_config.format.schema.$defs.Address.additionalProperties, false);
  });

  it('messages: output_format and output_config.format together are a 400 naming both, before any call', async () => {
    const calls = fake.requests.length;
    for (const stream of [false, true]) {
      const reply = await post('/api/v1/messages', {
        model: CLAUDE,
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Ada?' }],
        output_format: { type: 'json_schema', schema: PERSON },
        output_config: { format: { type: 'json_schema', schema: PERSON } },
        stream,
      });
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.body.type, 'error');
      assert.equal(
        reply.body.error.message,
        'Invalid request parameters: body.output_format cannot be combined with body.output_config.format; send only output_config.format (output_format is deprecated)',
      );
      const bad = await post('/api/v1/messages', {
        model: CLAUDE,
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Ada?' }],
        output_format: { type: 'json_schema', schema: PERSON, strict: true },
        stream,
      });
      assert.equal(bad.status, 400, bad.text);
      assert.equal(
        bad.body.error.message,
        'Invalid request parameters: body.output_format.strict is not a known field',
      );
    }
    assert.equal(fake.requests.length, calls);
  });

  it('messages: output_config.format null is not given, as the SDK types it: no format is sent, and output_format beside it is no conflict', async () => {
    const ask = { model: CLAUDE, max_tokens: 200, messages: [{ role: 'user', content: 'Ada?' }] };
    const reply = await post('/api/v1/messages', { ...ask, output_config: { format: null } });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(sent().output_config, undefined);
    const beside = await gateway.request('POST', '/api/v1/messages', {
      key,
      headers: { 'anthropic-beta': 'structured-outputs-2025-11-13' },
      body: {
        ...ask,
        output_config: { format: null },
        output_format: { type: 'json_schema', schema: PERSON },
      },
    });
    assert.equal(beside.status, 200, beside.text);
    assert.deepEqual(Object.keys(sent().output_config), ['format']);
    assert.equal(sent().output_config.format.type, 'json_schema');
  });

  it('json_object: Anthropic has no JSON mode, so the system prompt asks for one JSON object', async () => {
    const reply = await post('/api/v1/chat/completions', {
      model: CLAUDE,
      messages,
      response_format: { type: 'json_object' },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.choices[0].message.content, ANSWER);
    assert.equal(sent().output_config, undefined);
    assert.match(sent().system, /^Extract the person\.\n\nRespond with one JSON object and nothing else/);
    const responses = await post('/api/v1/responses', {
      model: CLAUDE,
      input: 'Ada?',
      text: { format: { type: 'json_object' } },
      stream: true,
    });
    assert.equal(responses.status, 200, responses.text);
    assert.equal(sent().output_config, undefined);
    assert.match(sent().system, /^Respond with one JSON object/);
  });

  it('a model listed without structured outputs gets the schema as an instruction, not a format it would refuse', async () => {
    // CLAUDE_LIKE_MODEL's record lists its parameters, structured_outputs not among them.
    const reply = await post('/api/v1/chat/completions', {
      model: CLAUDE_LIKE_MODEL,
      messages,
      response_format: personFormat,
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.choices[0].message.content, ANSWER);
    assert.equal(sent().output_config, undefined);
    assert.ok(
      sent().system.endsWith(`It must conform to this JSON Schema, "person": ${JSON.stringify(PERSON)}`),
      sent().system,
    );
  });

  it('a schema the grammar cannot express (a map) is asked for in the instructions, not refused', async () => {
    const reply = await post('/api/v1/chat/completions', {
      model: CLAUDE,
      messages,
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'scores',
          schema: {
            type: 'object',
            properties: { scores: { type: 'object', additionalProperties: { type: 'number' } } },
          },
        },
      },
    });
    assert.equal(reply.status, 200, reply.text);
    const sent = fake.requests.at(-1)!.body as { output_config?: unknown; system?: unknown };
    assert.equal(sent.output_config, undefined);
    assert.match(String(sent.system), /It must conform to this JSON Schema, "scores"/);
  });

  it('a recursive schema is asked for in the instructions, whichever surface sends it and however it recurses', async () => {
    const chat = await post('/api/v1/chat/completions', {
      model: CLAUDE,
      messages,
      response_format: { type: 'json_schema', json_schema: { name: 'tree', strict: true, schema: TREE } },
    });
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.body.choices[0].message.content, ANSWER);
    assert.equal(sent().output_config, undefined);
    assert.ok(
      sent().system.endsWith(`It must conform to this JSON Schema, "tree": ${JSON.stringify(TREE)}`),
      sent().system,
    );

    const responses = await post('/api/v1/responses', {
      model: CLAUDE,
      input: 'A list?',
      text: { format: { type: 'json_schema', name: 'list', strict: true, schema: LINKED_LIST } },
      stream: true,
    });
    assert.equal(responses.status, 200, responses.text);
    assert.equal(sent().output_config, undefined);
    assert.ok(sent().system.endsWith(`"list": ${JSON.stringify(LINKED_LIST)}`), sent().system);

    // A person in a team of persons, as zod-to-json-schema writes it (draft-07 definitions).
    const organisation = {
      type: 'object',
      properties: { head: { $ref: '#/definitions/Person' } },
      required: ['head'],
      definitions: {
        Person: {
          type: 'object',
          properties: { name: { type: 'string' }, team: { $ref: '#/definitions/Team' } },
        },
        Team: {
          type: 'object',
          properties: { members: { type: 'array', items: { $ref: '#/definitions/Person' } } },
        },
      },
    };
    const reply = await post('/api/v1/messages', {
      model: CLAUDE,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Who?' }],
      output_config: { format: { type: 'json_schema', schema: organisation } },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.content[0].text, ANSWER);
    assert.equal(sent().output_config, undefined);
    assert.ok(sent().system.endsWith(JSON.stringify(organisation)), sent().system);
  });

  it('a strict tool with a recursive schema goes without strict, as the client wrote it; the others stay strict', async () => {
    const lookup = { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] };
    const reply = await post('/api/v1/chat/completions', {
      model: CLAUDE,
      messages,
      tools: [
        { type: 'function', function: { name: 'save_tree', parameters: TREE, strict: true } },
        { type: 'function', function: { name: 'lookup', parameters: lookup, strict: true } },
      ],
    });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(sent().tools, [
      { name: 'save_tree', input_schema: TREE },
      { name: 'lookup', input_schema: { ...lookup, additionalProperties: false }, strict: true },
    ]);
  });

  it('a strict tool whose reshaped schema would have no object at its root goes without strict, as the client wrote it', async () => {
    // zod 4's schema registered with an id: a root $ref beside its definition, and no type, which the
    // adapter adds. Reshaped, only the $ref and the definitions would be left: no type "object".
    const search = {
      $ref: '#/$defs/Search',
      $defs: {
        Search: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      },
    };
    const reply = await post('/api/v1/chat/completions', {
      model: CLAUDE,
      messages,
      tools: [{ type: 'function', function: { name: 'search', parameters: search, strict: true } }],
    });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(sent().tools, [{ name: 'search', input_schema: { type: 'object', ...search } }]);
  });

  it('a tool with anyOf, oneOf or allOf at its root (a zod union, many MCP servers) is merged into an object root Anthropic takes', async () => {
    // Anthropic refuses these at the root of any tool ("input_schema does not support oneOf, allOf,
    // or anyOf at the top level"), and one such tool fails every request that lists it.
    const run = {
      type: 'object',
      description: 'Run a flow.',
      properties: { yaml: { type: 'string' }, files: { type: 'array', items: { type: 'string' } } },
      oneOf: [{ required: ['yaml'] }, { required: ['files'] }],
    };
    const union = {
      anyOf: [
        {
          type: 'object',
          properties: { id: { type: 'string' }, verbose: { type: 'boolean' } },
          required: ['id', 'verbose'],
        },
        {
          type: 'object',
          properties: { path: { type: 'string' }, verbose: { type: 'boolean' } },
          required: ['path', 'verbose'],
        },
      ],
    };
    for (const strict of [false, true]) {
      const reply = await post('/api/v1/chat/completions', {
        model: CLAUDE,
        messages,
        tools: [
          { type: 'function', function: { name: 'run', parameters: run, strict } },
          { type: 'function', function: { name: 'get', parameters: union, strict } },
        ],
      });
      assert.equal(reply.status, 200, reply.text);
      // Strict or not, they go without strict: the merge is looser than what strict guarantees.
      assert.deepEqual(sent().tools, [
        {
          name: 'run',
          input_schema: {
            type: 'object',
            description: 'Run a flow.\n\nExactly one of these forms: yaml; files.',
            properties: run.properties,
          },
        },
        {
          name: 'get',
          input_schema: {
            type: 'object',
            properties: { id: { type: 'string' }, verbose: { type: 'boolean' }, path: { type: 'string' } },
            required: ['verbose'],
            description: 'At least one of these forms: id + verbose; path + verbose.',
          },
        },
      ]);
    }
  });
});

/** `/messages` structured output served by an OpenAI-compatible upstream, which gets `response_format`. */
describe('structured outputs from /messages served by an OpenAI-compatible upstream', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  before(async () => {
    upstream = await startFakeUpstream();
    upstream.handle((request, response) => {
      if ((request.body as { stream?: boolean }).stream) {
        void writeSse(response, chatStreamFrames([ANSWER.slice(0, 30), ANSWER.slice(30)]));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion(ANSWER));
    });
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

  const sent = () => upstream.requests.at(-1)?.body as Record<string, any>;

  it('output_format and output_config.format both go as a json_schema response_format, whole and streamed', async () => {
    for (const field of ['output_format', 'output_config'] as const) {
      const format = { type: 'json_schema', schema: PERSON };
      const body = {
        model: ACME_MODEL,
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Ada?' }],
        ...(field === 'output_format' ? { output_format: format } : { output_config: { format } }),
      };
      const whole = await gateway.request('POST', '/api/v1/messages', { key, body });
      assert.equal(whole.status, 200, whole.text);
      assert.equal(whole.body.content[0].text, ANSWER, field);
      assert.deepEqual(
        sent().response_format,
        { type: 'json_schema', json_schema: { name: 'output', schema: PERSON } },
        field,
      );
      assert.equal(sent().output_format, undefined, field);

      const streamed = await gateway.request('POST', '/api/v1/messages', {
        key,
        body: { ...body, stream: true },
      });
      assert.equal(streamed.status, 200, streamed.text);
      const text = sseData(streamed.text)
        .filter((event) => event.type === 'content_block_delta' && event.delta.type === 'text_delta')
        .map((event) => event.delta.text)
        .join('');
      assert.equal(text, ANSWER, field);
      assert.equal(sent().stream, true);
      assert.equal(sent().response_format?.json_schema?.name, 'output', field);
    }
  });
});
