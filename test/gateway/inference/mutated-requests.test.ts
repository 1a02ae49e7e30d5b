import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeUpstream, writeSse } from '../../helpers/fake-upstream.js';
import { type ClientResponse, expectError, startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  ACME_COMPLETION_NANOS,
  ACME_MODEL,
  ACME_PROMPT_NANOS,
  acmeCatalog,
  chatCompletion,
  chatStreamFrames,
  createKey,
  promptBound,
  usageOf,
  usd,
} from './harness.js';

/**
 * Careless and hostile requests made by machine: valid requests of every surface with up to two
 * fields replaced by a value of the wrong kind (nulls, huge numbers, lone surrogates, NUL, prototype
 * keys, deep nesting, message parts and items of other surfaces, hundreds of messages), some cut
 * short or sent with another content type. Seeded, so a failure names a request that can be sent
 * again. None may answer with a 5xx (the upstream answers every call it gets), every refusal is the
 * surface's own error envelope, and none leaves a reservation behind: the limited key that sent them
 * still has room for the one request its limit was sized for.
 */

/** A small seeded generator (mulberry32, in 32-bit integer steps): the same cases on every run. */
function seeded(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { next, pick: <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)] as T };
}

const MODELS = [ACME_MODEL, 'switchyard/echo', 'switchyard/scripted', 'nobody/no-such-model'];

/** Values of every wrong kind a field can get. */
const ODD_VALUES: readonly unknown[] = [
  null,
  true,
  0,
  -1,
  1e308,
  2 ** 53 + 1,
  3.5,
  '',
  ' ',
  'x'.repeat(5_000),
  '\u0000',
  '\ud800',
  '😀'.repeat(100),
  '__proto__',
  'auto',
  'none',
  'required',
  {},
  [],
  [[]],
  [null],
  JSON.parse('{"__proto__": {"polluted": 1}}'),
  { constructor: { prototype: { polluted: 1 } } },
  { type: 'text' },
  { type: 'text', text: 5 },
  { type: 'function' },
  { type: 'function', function: {} },
  { type: 'function', name: 'f', parameters: 'x' },
  { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
  { type: 'image_url', image_url: { url: 'javascript:alert(1)' } },
  { type: 'input_image', image_url: 'http://127.0.0.1:1/x.png' },
  { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{' },
  { type: 'function_call_output', call_id: 'c1', output: {} },
  { type: 'reasoning', summary: [] },
  { role: 'tool', content: 'x' },
  { role: 'tool', tool_call_id: 5, content: null },
  { role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: 5 } }] },
  { role: 'assistant', tool_calls: [{}] },
  { role: 'system', content: [] },
  { role: 'developer', content: [{ type: 'text', text: 'x' }] },
  { type: 'tool_use', id: 't', name: 'f', input: 's' },
  { type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: {} }] },
  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: '!!' } },
  {
    type: 'json_schema',
    json_schema: { name: 'x', schema: { type: 'object', properties: { a: { $ref: '#' } } } },
  },
  { type: 'json_schema', name: 'x', schema: 5 },
  { effort: 'ultra' },
  { order: [5] },
  { max_price: { prompt: -1 } },
  { sort: { by: 'price', partition: 'nope' } },
  { only: 'acme' },
  Array.from({ length: 300 }, () => ({ role: 'user', content: 'a' })),
  { a: { b: { c: { d: { e: { f: { g: { h: { i: {} } } } } } } } } },
];

/** Where the odd values go: top-level fields of every surface and paths into their messages. */
const FIELDS = [
  'model',
  'models',
  'messages',
  'messages[0]',
  'messages[1]',
  'messages[0].role',
  'messages[0].content',
  'messages[0].content[0]',
  'messages[0].tool_calls',
  'input',
  'input[0]',
  'input[1]',
  'input[0].content',
  'input[0].content[0]',
  'instructions',
  'system',
  'system[0]',
  'tools',
  'tools[0]',
  'tools[0].function',
  'tools[0].function.parameters',
  'tool_choice',
  'tool_choice.function',
  'parallel_tool_calls',
  'provider',
  'provider.order',
  'provider.only',
  'provider.sort',
  'provider.max_price',
  'route',
  'metadata',
  'metadata.key',
  'max_tokens',
  'max_output_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'top_k',
  'stop',
  'seed',
  'n',
  'logit_bias',
  'response_format',
  'response_format.json_schema',
  'text',
  'text.format',
  'reasoning',
  'reasoning.effort',
  'user',
  'session_id',
  'trace',
  'stream',
  'stream_options',
  'stop_server_tools_when',
  'plugins',
  'modalities',
  'encoding_format',
  'dimensions',
];

/** A valid request of each surface, small enough that a few fit the key's limit at once. */
const VALID: Record<string, (random: ReturnType<typeof seeded>) => Record<string, unknown>> = {
  '/chat/completions': (random) => ({
    model: random.pick(MODELS),
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 16,
    ...(random.next() < 0.3 ? { stream: true } : {}),
  }),
  '/responses': (random) => ({
    model: random.pick(MODELS),
    input:
      random.next() < 0.5
        ? 'hello'
        : [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] }],
    max_output_tokens: 16,
    ...(random.next() < 0.3 ? { stream: true } : {}),
  }),
  '/messages': (random) => ({
    model: random.pick(MODELS),
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hello' }],
    ...(random.next() < 0.3 ? { stream: true } : {}),
  }),
  '/embeddings': (random) => ({ model: random.pick(MODELS), input: 'hello' }),
};

/**
 * Sets `path` (dots and [index]) in `target`, making the objects and arrays on the way. Callers give
 * it a copy of an odd value: a later change under the same path writes into what it finds there.
 */
function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  let node: Record<string, unknown> = target;
  for (let index = 0; index < parts.length - 1; index++) {
    const part = parts[index] as string;
    const child = node[part];
    if (child === null || typeof child !== 'object') {
      node[part] = /^\d+$/.test(parts[index + 1] as string) ? [] : {};
    }
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1) as string] = value;
}

interface Case {
  path: string;
  text: string;
  contentType: string;
  stream: boolean;
}

const caseOf = (path: string, body: Record<string, unknown>, contentType = 'application/json'): Case => ({
  path,
  text: JSON.stringify(body),
  contentType,
  stream: body.stream === true,
});

/**
 * Every odd value in every field once, each pair on one surface (the surfaces take turns), so no
 * field and value escape for want of luck.
 */
function everyFieldOnce(seed: number): Case[] {
  const random = seeded(seed);
  const paths = Object.keys(VALID);
  const cases: Case[] = [];
  FIELDS.forEach((field, fieldIndex) => {
    ODD_VALUES.forEach((value, valueIndex) => {
      const path = paths[(fieldIndex + valueIndex) % paths.length] as string;
      const body = (VALID[path] as (typeof VALID)[string])(random);
      setPath(body, field, structuredClone(value));
      cases.push(caseOf(path, body));
    });
  });
  return cases;
}

/** Random requests: up to two fields changed, some cut short or sent as another content type. */
function randomCases(seed: number, count: number): Case[] {
  const random = seeded(seed);
  const paths = Object.keys(VALID);
  return Array.from({ length: count }, () => {
    const path = random.pick(paths);
    const body = (VALID[path] as (typeof VALID)[string])(random);
    const changes = Math.floor(random.next() * 3);
    for (let change = 0; change < changes; change++) {
      setPath(body, random.pick(FIELDS), structuredClone(random.pick(ODD_VALUES)));
    }
    let text = JSON.stringify(body);
    if (random.next() < 0.05) text = text.slice(0, Math.floor(random.next() * text.length));
    const contentType = random.next() < 0.03 ? 'text/plain' : 'application/json';
    return { path, text, contentType, stream: body.stream === true };
  });
}

/** How each surface's stream ends, and how it reports a failure after it started. */
const STREAM_ENDS: Record<string, [RegExp, RegExp]> = {
  '/chat/completions': [/data: \[DONE\]\n\n$/, /^data: \{"error":/m],
  '/responses': [
    /"type":"response\.(completed|incomplete)"[\s\S]*data: \[DONE\]\n\n$/,
    /"type":"response\.failed"/,
  ],
  '/messages': [/event: message_stop\n/, /^event: error$/m],
};

/** What a client may get: never a 5xx; a refusal in the surface's envelope; JSON or SSE otherwise. */
function checkAnswer(sent: Case, response: ClientResponse): void {
  const where = `POST ${sent.path} ${sent.text.slice(0, 600)} -> ${response.status} ${response.text.slice(0, 400)}`;
  assert.ok(response.status < 500, `a 5xx: ${where}`);
  assert.ok(!/\n\s+at /.test(response.text), `a stack trace leaked: ${where}`);
  if (response.status >= 400) {
    if (sent.path !== '/messages') {
      try {
        expectError(response, response.status);
      } catch (error) {
        assert.fail(`${(error as Error).message}; sent ${where}`);
      }
      return;
    }
    const error = response.body?.error;
    assert.equal(response.body.type, 'error', `not Anthropic's envelope: ${where}`);
    assert.equal(typeof error?.message, 'string', `no error message: ${where}`);
    assert.ok(error.message.length > 0, `an empty error message: ${where}`);
    return;
  }
  assert.equal(response.status, 200, where);
  const contentType = response.headers.get('content-type') ?? '';
  if (contentType.startsWith('text/event-stream')) {
    assert.ok(sent.stream, `a stream for a request that did not ask for one: ${where}`);
    // The upstream answers every call: a stream ends the surface's way, with no failure in it.
    const [ending, failure] = STREAM_ENDS[sent.path] as [RegExp, RegExp];
    assert.match(response.text, ending, `a stream that did not end: ${where}`);
    assert.doesNotMatch(response.text, failure, `a stream that failed: ${where}`);
  } else {
    assert.match(contentType, /^application\/json/, where);
    assert.equal(typeof response.body, 'object', `not JSON: ${where}`);
  }
}

describe('machine-made bad requests on the inference surfaces', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;
  // The request the key's limit is sized for, sent last.
  const last = { model: ACME_MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 };
  const limitNanos = Math.ceil(promptBound(['hi']) * ACME_PROMPT_NANOS + 100 * ACME_COMPLETION_NANOS);

  before(async () => {
    upstream = await startFakeUpstream();
    // Every call is answered, and free (no tokens counted, nothing written): what is left of the
    // key's limit at the end is what the gateway gave back.
    upstream.handle((request, response) => {
      const body = request.body as { stream?: unknown };
      if (body?.stream === true) return writeSse(response, chatStreamFrames([''], usageOf(0, 0)));
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(chatCompletion('', usageOf(0, 0)));
    });
    gateway = await startTestApp({
      demo: true,
      config: {
        credits: { initial: 100 },
        // Above the 600 requests a minute a key may make by default: the last request must not be
        // refused for its rate.
        limits: { rate_limit: { requests: 10_000, window_seconds: 60 } },
        providers: { acme: { api_key: 'k' } },
        catalog: acmeCatalog(`${upstream.url}/v1`),
      },
    });
    key = (await createKey(gateway, { name: 'limited', limit: usd(limitNanos) })).key;
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('answers every one without a 5xx, each refusal in its envelope, and keeps no reservation', async () => {
    const cases = [...everyFieldOnce(1), ...randomCases(20_261_125, 600)];
    let next = 0;
    const statuses = new Map<number, number>();
    // Eight at a time, as clients of one gateway send them.
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < cases.length) {
          const sent = cases[next++] as Case;
          const response = await gateway.request('POST', `/api/v1${sent.path}`, {
            key,
            rawBody: sent.text,
            headers: { 'content-type': sent.contentType },
          });
          checkAnswer(sent, response);
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        }
      }),
    );
    // The mix covers answers and refusals alike, so the cases reach past the schema.
    assert.ok((statuses.get(200) ?? 0) >= 60, `few answers: ${JSON.stringify([...statuses])}`);
    assert.ok((statuses.get(400) ?? 0) >= 300, `few refusals: ${JSON.stringify([...statuses])}`);

    const final = await gateway.request('POST', '/api/v1/chat/completions', { key, body: last });
    assert.equal(final.status, 200, `a reservation was left behind: ${final.text}`);
  });
});
