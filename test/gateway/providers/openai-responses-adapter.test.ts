import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createOpenAiResponsesAdapter } from '../../../src/gateway/providers/openai-responses/openai-responses-adapter.js';
import { createUpstreamHttp } from '../../../src/gateway/providers/shared/upstream-http.js';
import type { AdapterCall } from '../../../src/spec/provider-adapter.js';
import { UnsupportedRequestError, UpstreamError } from '../../../src/spec/upstream-error.js';
import { collect, startFakeUpstream } from '../../helpers/fake-upstream.js';

// The Responses stream names every SSE frame (`event: <type>`), repeats the type inside the data
// and numbers the events; the shared helper writes bare `data:` frames, so frames are written here.
type ResponsesEvent = { type: string } & Record<string, unknown>;
const frame = (event: ResponsesEvent, sequenceNumber: number) =>
  `event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number: sequenceNumber })}\n\n`;

async function writeEvents(response: ServerResponse, events: ResponsesEvent[]): Promise<void> {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  });
  for (const [position, event] of events.entries()) response.write(frame(event, position));
  response.end();
}

// Shapes as https://platform.openai.com/docs/api-reference/responses/object and
// https://platform.openai.com/docs/api-reference/responses-streaming show them.
const responseObject = (fields: Record<string, unknown>) => ({
  id: 'resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b',
  object: 'response',
  created_at: 1_756_315_696,
  status: 'in_progress',
  background: false,
  error: null,
  incomplete_details: null,
  instructions: 'Be brief.',
  max_output_tokens: 100,
  model: 'gpt-5-mini-2025-08-07',
  output: [],
  parallel_tool_calls: false,
  previous_response_id: null,
  reasoning: { effort: 'low', summary: 'auto' },
  store: false,
  temperature: 1,
  text: { format: { type: 'text' }, verbosity: 'medium' },
  tool_choice: 'auto',
  tools: [],
  top_p: 1,
  truncation: 'disabled',
  usage: null,
  user: null,
  metadata: {},
  ...fields,
});
const reasoningItem = {
  id: 'rs_68af4031276c8193b1d1e2cd3c0de05e',
  type: 'reasoning',
  summary: [
    { type: 'summary_text', text: '**Checking the weather**' },
    { type: 'summary_text', text: 'Oslo needs a lookup.' },
  ],
};
const messageItem = {
  id: 'msg_68af40336e2c8193a0f4cf3d9a7c9f3c',
  type: 'message',
  status: 'completed',
  role: 'assistant',
  content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'Sunny, 21°C. Checking Oslo.' }],
};
const functionCallItem = {
  id: 'fc_68af4034d1e08193b0b6f0d1a5e3c4b2',
  type: 'function_call',
  status: 'completed',
  arguments: '{"city":"Oslo"}',
  call_id: 'call_Xy9z8KqW2mF3',
  name: 'weather',
};
const usage = {
  input_tokens: 1500,
  input_tokens_details: { cached_tokens: 1024 },
  output_tokens: 300,
  output_tokens_details: { reasoning_tokens: 192 },
  total_tokens: 1800,
};
const canonicalUsage = {
  inputTokens: 1500,
  outputTokens: 300,
  cachedInputTokens: 1024,
  cacheWriteTokens: 0,
  reasoningTokens: 192,
};

const created: ResponsesEvent = { type: 'response.created', response: responseObject({}) };
const inProgress: ResponsesEvent = { type: 'response.in_progress', response: responseObject({}) };
const textDelta = (delta: string): ResponsesEvent => ({
  type: 'response.output_text.delta',
  item_id: messageItem.id,
  output_index: 1,
  content_index: 0,
  delta,
  logprobs: [],
});
const messageStart: ResponsesEvent[] = [
  {
    type: 'response.output_item.added',
    output_index: 1,
    item: { ...messageItem, status: 'in_progress', content: [] },
  },
  {
    type: 'response.content_part.added',
    item_id: messageItem.id,
    output_index: 1,
    content_index: 0,
    part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
  },
];
const failed = (message: string, code = 'server_error'): ResponsesEvent => ({
  type: 'response.failed',
  response: responseObject({ status: 'failed', error: { code, message } }),
});

describe('OpenAI Responses adapter against a fake upstream', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  const http = createUpstreamHttp();
  const adapter = createOpenAiResponsesAdapter({ http });
  const call = (overrides: Partial<AdapterCall> = {}): AdapterCall => ({
    request: {
      model: 'gpt-5-mini',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in Paris?' },
            { type: 'image', url: 'https://example.com/paris.jpg', detail: 'low' },
            { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' },
            { type: 'file', url: 'data:application/pdf;base64,JVBERi0x', filename: 'forecast.pdf' },
            { type: 'file', url: 'https://example.com/report.pdf' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Let me check.' }] },
        { type: 'function-call', callId: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' },
        { type: 'function-call-output', callId: 'call_1', output: '{"temp":21}' },
      ],
      tools: [
        {
          type: 'function',
          name: 'weather',
          description: 'Current weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      toolChoice: { type: 'function', name: 'weather' },
      parallelToolCalls: false,
      maxOutputTokens: 100,
      temperature: 0.2,
      topP: 0.9,
      topK: 5,
      frequencyPenalty: 0.5,
      presencePenalty: 0.5,
      stop: ['END'],
      seed: 7,
      responseFormat: {
        type: 'json_schema',
        name: 'forecast',
        schema: { type: 'object', properties: { summary: { type: 'string' } } },
        strict: true,
      },
      reasoning: { effort: 'low', include: true },
      user: 'user-42',
    },
    target: { baseUrl: `${upstream.url}/v1/`, apiKey: 'sk-upstream' },
    signal: new AbortController().signal,
    timeouts: { headersMs: 2000, firstTokenMs: 2000, idleMs: 2000 },
    ...overrides,
  });

  before(async () => {
    upstream = await startFakeUpstream();
  });
  after(async () => {
    await http.close();
    await upstream.close();
  });

  it('sends the canonical request in the Responses wire format and reads every output item', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify(
          responseObject({
            status: 'completed',
            output: [reasoningItem, messageItem, functionCallItem],
            usage,
          }),
        ),
      );
    });
    const result = await adapter.generate(call());
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.url, '/v1/responses');
    assert.equal(sent.headers.authorization, 'Bearer sk-upstream');
    assert.match(String(sent.headers['content-type']), /application\/json/);
    assert.deepEqual(sent.body, {
      model: 'gpt-5-mini',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Answer in English.' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather in Paris?' },
            { type: 'input_image', image_url: 'https://example.com/paris.jpg', detail: 'low' },
            { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
            {
              type: 'input_file',
              file_data: 'data:application/pdf;base64,JVBERi0x',
              filename: 'forecast.pdf',
            },
            { type: 'input_file', file_url: 'https://example.com/report.pdf' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.' }] },
        { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_1', output: '{"temp":21}' },
      ],
      store: false,
      tools: [
        {
          type: 'function',
          name: 'weather',
          description: 'Current weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
          strict: false,
        },
      ],
      tool_choice: { type: 'function', name: 'weather' },
      parallel_tool_calls: false,
      max_output_tokens: 100,
      temperature: 0.2,
      top_p: 0.9,
      text: {
        format: {
          type: 'json_schema',
          name: 'forecast',
          schema: { type: 'object', properties: { summary: { type: 'string' } } },
          strict: true,
        },
      },
      reasoning: { effort: 'low', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      user: 'user-42',
    });
    assert.deepEqual(result, {
      id: 'resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b',
      model: 'gpt-5-mini-2025-08-07',
      text: 'Sunny, 21°C. Checking Oslo.',
      reasoning: '**Checking the weather**\n\nOslo needs a lookup.',
      toolCalls: [{ callId: 'call_Xy9z8KqW2mF3', name: 'weather', arguments: '{"city":"Oslo"}' }],
      usage: canonicalUsage,
      finishReason: 'tool-calls',
      nativeFinishReason: 'completed',
    });
  });

  it('maps tool choices, response formats and reasoning levels', async () => {
    upstream.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(responseObject({ status: 'completed', output: [messageItem], usage })));
    });
    const base = call().request;
    const send = async (request: Partial<AdapterCall['request']>) => {
      const result = await adapter.generate(call({ request: { ...base, ...request } }));
      return { result, body: upstream.requests.at(-1)!.body as any };
    };

    const plain = await send({ toolChoice: 'required', responseFormat: { type: 'json_object' } });
    assert.equal(plain.body.tool_choice, 'required');
    assert.deepEqual(plain.body.text, { format: { type: 'json_object' } });
    assert.equal(plain.result.finishReason, 'stop');
    assert.equal((await send({ toolChoice: 'none' })).body.tool_choice, 'none');

    assert.deepEqual((await send({ reasoning: { effort: 'max' } })).body.reasoning, { effort: 'xhigh' });
    assert.equal((await send({ reasoning: { effort: 'none' } })).body.reasoning, undefined);
    assert.deepEqual((await send({ reasoning: { include: true } })).body.reasoning, { summary: 'auto' });
    assert.deepEqual((await send({ reasoning: { include: true, summary: 'detailed' } })).body.reasoning, {
      summary: 'detailed',
    });
    // OpenAI refuses a cap below 16 tokens: it is raised to 16.
    assert.equal((await send({ maxOutputTokens: 5 })).body.max_output_tokens, 16);
    assert.equal((await send({ maxOutputTokens: 300 })).body.max_output_tokens, 300);

    const bare = (
      await send({
        instructions: undefined,
        tools: undefined,
        toolChoice: undefined,
        parallelToolCalls: undefined,
        responseFormat: undefined,
        reasoning: undefined,
        user: undefined,
        maxOutputTokens: undefined,
        temperature: undefined,
        topP: undefined,
      })
    ).body;
    assert.deepEqual(Object.keys(bare), ['model', 'input', 'store']);
  });

  it('refuses audio input with an UnsupportedRequestError before any request is sent', async () => {
    const before = upstream.requests.length;
    const withAudio = call();
    withAudio.request.input = [
      { type: 'message', role: 'user', content: [{ type: 'audio', data: 'UklGRg==', format: 'wav' }] },
    ];
    await assert.rejects(
      adapter.generate(withAudio),
      (caught: unknown) => caught instanceof UnsupportedRequestError && /audio/.test(caught.message),
    );
    await assert.rejects(
      collect(adapter.stream(withAudio)),
      (caught: unknown) => caught instanceof UnsupportedRequestError,
    );
    assert.equal(upstream.requests.length, before, 'nothing was sent');
  });

  it('streams reasoning summaries, text, a function call, usage and finish as typed parts', async () => {
    upstream.handle((_request, response) =>
      writeEvents(response, [
        created,
        inProgress,
        { type: 'response.output_item.added', output_index: 0, item: { ...reasoningItem, summary: [] } },
        {
          type: 'response.reasoning_summary_part.added',
          item_id: reasoningItem.id,
          output_index: 0,
          summary_index: 0,
          part: { type: 'summary_text', text: '' },
        },
        ...['**Checking', ' the weather**'].map((delta) => ({
          type: 'response.reasoning_summary_text.delta',
          item_id: reasoningItem.id,
          output_index: 0,
          summary_index: 0,
          delta,
        })),
        {
          type: 'response.reasoning_summary_text.done',
          item_id: reasoningItem.id,
          output_index: 0,
          summary_index: 0,
          text: '**Checking the weather**',
        },
        {
          type: 'response.reasoning_summary_text.delta',
          item_id: reasoningItem.id,
          output_index: 0,
          summary_index: 1,
          delta: 'Oslo needs a lookup.',
        },
        { type: 'response.output_item.done', output_index: 0, item: reasoningItem },
        ...messageStart,
        textDelta('Sunny, '),
        textDelta('21°C.'),
        {
          type: 'response.output_text.done',
          item_id: messageItem.id,
          output_index: 1,
          content_index: 0,
          text: 'Sunny, 21°C.',
          logprobs: [],
        },
        { type: 'response.output_item.done', output_index: 1, item: messageItem },
        {
          type: 'response.output_item.added',
          output_index: 2,
          item: { ...functionCallItem, status: 'in_progress', arguments: '' },
        },
        ...['{"city":', '"Oslo"}'].map((delta) => ({
          type: 'response.function_call_arguments.delta',
          item_id: functionCallItem.id,
          output_index: 2,
          delta,
        })),
        {
          type: 'response.function_call_arguments.done',
          item_id: functionCallItem.id,
          output_index: 2,
          arguments: '{"city":"Oslo"}',
        },
        { type: 'response.output_item.done', output_index: 2, item: functionCallItem },
        {
          type: 'response.completed',
          response: responseObject({
            status: 'completed',
            output: [reasoningItem, messageItem, functionCallItem],
            usage,
          }),
        },
      ]),
    );
    const parts = await collect(adapter.stream(call()));
    const sent = upstream.requests.at(-1)!.body as any;
    assert.equal(sent.stream, true);
    assert.equal(sent.store, false);
    assert.deepEqual(parts, [
      {
        type: 'response-metadata',
        id: 'resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b',
        model: 'gpt-5-mini-2025-08-07',
      },
      { type: 'reasoning-delta', delta: '**Checking' },
      { type: 'reasoning-delta', delta: ' the weather**' },
      { type: 'reasoning-delta', delta: '\n\nOslo needs a lookup.' },
      { type: 'text-delta', delta: 'Sunny, ' },
      { type: 'text-delta', delta: '21°C.' },
      { type: 'tool-call-start', index: 0, callId: 'call_Xy9z8KqW2mF3', name: 'weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '"Oslo"}' },
      { type: 'tool-call-end', index: 0 },
      { type: 'usage', usage: canonicalUsage },
      { type: 'finish', reason: 'tool-calls', nativeReason: 'completed' },
    ]);
  });

  it('finishes a response.incomplete for max_output_tokens with length', async () => {
    upstream.handle((_request, response) =>
      writeEvents(response, [
        created,
        ...messageStart,
        textDelta('Sunny, 21'),
        {
          type: 'response.incomplete',
          response: responseObject({
            status: 'incomplete',
            incomplete_details: { reason: 'max_output_tokens' },
            output: [{ ...messageItem, status: 'incomplete' }],
            usage,
          }),
        },
      ]),
    );
    const parts = await collect(adapter.stream(call()));
    assert.deepEqual(parts.slice(-3), [
      { type: 'text-delta', delta: 'Sunny, 21' },
      { type: 'usage', usage: canonicalUsage },
      { type: 'finish', reason: 'length', nativeReason: 'max_output_tokens' },
    ]);
  });

  it('throws a response.failed or error event before output, retryable by its code', async () => {
    upstream.handle((_request, response) =>
      writeEvents(response, [
        created,
        inProgress,
        failed('The server had an error processing your request.'),
      ]),
    );
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) =>
        caught instanceof UpstreamError &&
        caught.status === 500 &&
        caught.retryable &&
        caught.message === 'The server had an error processing your request.',
    );

    upstream.handle((_request, response) =>
      writeEvents(response, [
        created,
        { type: 'error', code: 'invalid_prompt', message: 'Invalid prompt.', param: null },
      ]),
    );
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) => caught instanceof UpstreamError && caught.status === 400 && !caught.retryable,
    );

    // As OpenAI sends it, the fields nested under `error`.
    upstream.handle((_request, response) =>
      writeEvents(response, [
        created,
        {
          type: 'error',
          error: { type: 'tokens', code: 'rate_limit_exceeded', message: 'Rate limit reached.', param: null },
          sequence_number: 2,
        },
      ]),
    );
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) =>
        caught instanceof UpstreamError &&
        caught.status === 429 &&
        caught.retryable &&
        caught.message === 'Rate limit reached.',
    );
  });

  it('yields a response.failed that arrives after output as an error part', async () => {
    upstream.handle((_request, response) =>
      writeEvents(response, [
        created,
        ...messageStart,
        textDelta('partial'),
        failed('Rate limited', 'rate_limit_exceeded'),
      ]),
    );
    const parts = await collect(adapter.stream(call()));
    assert.deepEqual(
      parts.map((part) => part.type),
      ['response-metadata', 'text-delta', 'error'],
    );
    const last = parts.at(-1)!;
    assert.ok(last.type === 'error' && last.error.status === 429 && last.error.retryable);
    assert.equal(last.type === 'error' && last.error.message, 'Rate limited');
  });

  it('reports a 429 with its message and Retry-After as a retryable error', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '17' }).end(
        JSON.stringify({
          error: {
            message: 'Rate limit reached for gpt-5-mini',
            type: 'requests',
            param: null,
            code: 'rate_limit_exceeded',
          },
        }),
      );
    });
    const error = await adapter.generate(call()).catch((caught: unknown) => caught);
    assert.ok(error instanceof UpstreamError);
    assert.equal(error.status, 429);
    assert.equal(error.retryable, true);
    assert.equal(error.retryAfterSeconds, 17);
    assert.equal(error.message, 'Rate limit reached for gpt-5-mini');
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) => caught instanceof UpstreamError && caught.status === 429,
    );
  });

  it('treats a 400 as not retryable', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: {
            message: "Unsupported parameter: 'seed'.",
            type: 'invalid_request_error',
            param: 'seed',
            code: 'unsupported_parameter',
          },
        }),
      );
    });
    const invalid = await adapter.generate(call()).catch((caught: unknown) => caught);
    assert.ok(invalid instanceof UpstreamError && invalid.status === 400 && invalid.retryable === false);
    assert.equal(invalid.message, "Unsupported parameter: 'seed'.");
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) => caught instanceof UpstreamError && caught.status === 400 && !caught.retryable,
    );
  });

  it('treats a stream cut before its terminal event as broken: a part after output, thrown before', async () => {
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(frame(created, 0));
      response.write(frame(textDelta('partial'), 1));
      response.write('event: response.output_text.delta\ndata: {"type":"response.outp');
      // Let the bytes leave before the connection drops, as a real cut mid-frame does.
      await new Promise((resolve) => setTimeout(resolve, 50));
      response.destroy();
    });
    const parts = await collect(adapter.stream(call()));
    assert.deepEqual(parts.slice(1, 2), [{ type: 'text-delta', delta: 'partial' }]);
    const last = parts.at(-1)!;
    assert.equal(parts.length, 3);
    assert.ok(last.type === 'error' && last.error.retryable);

    upstream.handle((_request, response) => writeEvents(response, [created, inProgress]));
    await assert.rejects(
      collect(adapter.stream(call())),
      (caught: unknown) =>
        caught instanceof UpstreamError && caught.kind === 'invalid-response' && caught.retryable,
    );
  });

  it('throws a timeout when no output arrives before the first-token timeout', async () => {
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(frame(created, 0));
      response.write(frame(inProgress, 1));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      response.end();
    });
    const started = Date.now();
    await assert.rejects(
      collect(adapter.stream(call({ timeouts: { headersMs: 2000, firstTokenMs: 150, idleMs: 5000 } }))),
      (caught: unknown) => caught instanceof UpstreamError && caught.kind === 'timeout' && caught.retryable,
    );
    assert.ok(Date.now() - started < 900, 'the first-token timeout fired before the upstream finished');
  });

  it('waits out long silent reasoning the upstream shows with a reasoning item and keepalives', async () => {
    const pause = () => new Promise((resolve) => setTimeout(resolve, 100));
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      let position = 0;
      const send = (event: ResponsesEvent) => response.write(frame(event, position++));
      send(created);
      send(inProgress);
      send({
        type: 'response.output_item.added',
        output_index: 0,
        item: { id: 'rs_1', type: 'reasoning', summary: [] },
      });
      // 400 ms of reasoning against a 150 ms first-token timeout, a keepalive every 100 ms.
      for (let beat = 0; beat < 4; beat++) {
        await pause();
        send({ type: 'keepalive' });
      }
      for (const event of messageStart) send(event);
      send(textDelta('Done.'));
      send({
        type: 'response.completed',
        response: responseObject({ status: 'completed', output: [messageItem], usage }),
      });
      response.end();
    });
    const parts = await collect(
      adapter.stream(call({ timeouts: { headersMs: 2000, firstTokenMs: 150, idleMs: 5000 } })),
    );
    assert.deepEqual(
      parts.filter((part) => part.type === 'text-delta'),
      [{ type: 'text-delta', delta: 'Done.' }],
    );
  });

  it('fails over in the end from an upstream that only ever says it is working', async () => {
    let stop = false;
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(frame(created, 0));
      for (let beat = 1; !stop && beat < 200; beat++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        response.write(frame({ type: 'keepalive' }, beat));
      }
      response.end();
    });
    const started = Date.now();
    await assert.rejects(
      collect(adapter.stream(call({ timeouts: { headersMs: 2000, firstTokenMs: 150, idleMs: 5000 } }))),
      (caught: unknown) => caught instanceof UpstreamError && caught.kind === 'timeout',
    );
    stop = true;
    const waited = Date.now() - started;
    // Ended by the cap of ten first-token timeouts (a timeout), not by the upstream closing after its
    // four seconds of keepalives. A beat every 20 ms against a 150 ms timeout leaves room for a
    // loaded machine's late timers.
    assert.ok(waited >= 1350 && waited < 3500, `signs of life stretched the wait (${waited} ms)`);
  });
});

describe('OpenAI Responses adapter: encrypted reasoning', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  const http = createUpstreamHttp();
  const openAi = createOpenAiResponsesAdapter({ http });
  const xAi = createOpenAiResponsesAdapter({ http, reasoningFormat: 'xai-responses-v1' });
  const call = (request: Partial<AdapterCall['request']>): AdapterCall => ({
    request: { model: 'gpt-5-mini', input: [{ type: 'message', role: 'user', content: [] }], ...request },
    target: { baseUrl: `${upstream.url}/v1`, apiKey: 'sk-upstream' },
    signal: new AbortController().signal,
    timeouts: { headersMs: 2000, firstTokenMs: 2000, idleMs: 2000 },
  });
  const encrypted = (id: string) => ({ ...reasoningItem, id, encrypted_content: `gAAAAAB${id}` });

  before(async () => {
    upstream = await startFakeUpstream();
  });
  after(async () => {
    await http.close();
    await upstream.close();
  });

  it('asks a reasoning model for its reasoning encrypted and reads it as blocks in their place', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify(
          responseObject({
            status: 'completed',
            output: [
              encrypted('rs_1'),
              messageItem,
              encrypted('rs_2'),
              functionCallItem,
              encrypted('rs_3'),
              { ...functionCallItem, id: 'fc_2', call_id: 'call_2' },
              encrypted('rs_4'),
            ],
            usage,
          }),
        ),
      );
    });
    const result = await openAi.generate(call({ reasoningModel: true }));
    assert.deepEqual((upstream.requests.at(-1)!.body as Record<string, unknown>).include, [
      'reasoning.encrypted_content',
    ]);
    assert.deepEqual(result.reasoningBlocks, [
      { text: '', redactedData: 'gAAAAABrs_1', format: 'openai-responses-v1' },
      { text: '', redactedData: 'gAAAAABrs_2', format: 'openai-responses-v1', beforeToolCall: 0 },
      { text: '', redactedData: 'gAAAAABrs_3', format: 'openai-responses-v1', beforeToolCall: 1 },
      // After the last call it stays after it.
      { text: '', redactedData: 'gAAAAABrs_4', format: 'openai-responses-v1', beforeToolCall: 2 },
    ]);

    // xAI's values are its own format.
    const fromXai = await xAi.generate(call({ reasoningModel: true }));
    assert.equal(fromXai.reasoningBlocks?.[0]?.format, 'xai-responses-v1');
  });

  it('does not ask a model that does not reason for encrypted reasoning', async () => {
    upstream.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(responseObject({ status: 'completed', output: [messageItem], usage })));
    });
    const result = await openAi.generate(call({ model: 'gpt-4.1' }));
    assert.equal('include' in (upstream.requests.at(-1)!.body as Record<string, unknown>), false);
    assert.equal(result.reasoningBlocks, undefined);
  });

  it('sends its own encrypted reasoning back before the items it came before, and no one else’s', async () => {
    upstream.handle((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(responseObject({ status: 'completed', output: [messageItem], usage })));
    });
    const input: AdapterCall['request']['input'] = [
      { type: 'message', role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
      {
        type: 'message',
        role: 'assistant',
        content: [{ type: 'text', text: 'Checking.' }],
        reasoning: [
          { text: '', redactedData: 'gAAAAABown1', format: 'openai-responses-v1' },
          { text: 'thought', signature: 'sig', format: 'anthropic-claude-v1' },
          { text: '', redactedData: 'xai-data', format: 'xai-responses-v1' },
          { text: 'a summary, no data', format: 'openai-responses-v1' },
        ],
      },
      {
        type: 'function-call',
        callId: 'call_1',
        name: 'weather',
        arguments: '{}',
        reasoning: [{ text: '', redactedData: 'gAAAAABown2', format: 'openai-responses-v1' }],
      },
      { type: 'function-call-output', callId: 'call_1', output: 'sunny' },
    ];
    await openAi.generate(call({ input }));
    const sent = upstream.requests.at(-1)!.body as Record<string, unknown>;
    assert.deepEqual(sent.input, [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather?' }] },
      { type: 'reasoning', summary: [], encrypted_content: 'gAAAAABown1' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
      { type: 'reasoning', summary: [], encrypted_content: 'gAAAAABown2' },
      { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
    ]);
    // Sending reasoning back means the model reasons: its next reasoning is asked for too.
    assert.deepEqual(sent.include, ['reasoning.encrypted_content']);

    // A model that does not reason (gpt-4.1 after gpt-5 in one conversation) refuses reasoning items.
    await openAi.generate(call({ model: 'gpt-4.1', input, reasoningModel: false }));
    const toPlain = upstream.requests.at(-1)!.body as Record<string, unknown>;
    assert.equal(
      (toPlain.input as Array<Record<string, unknown>>).some((item) => item.type === 'reasoning'),
      false,
    );
    assert.equal('include' in toPlain, false);

    await xAi.generate(call({ input }));
    const toXai = (upstream.requests.at(-1)!.body as Record<string, unknown>).input as Array<
      Record<string, unknown>
    >;
    assert.deepEqual(
      toXai.filter((item) => item.type === 'reasoning'),
      [{ type: 'reasoning', summary: [], encrypted_content: 'xai-data' }],
    );
  });

  it('streams a reasoning item’s encrypted content as a redacted part before the call it led to', async () => {
    const reasoning = encrypted('rs_9');
    upstream.handle((_request, response) =>
      writeEvents(response, [
        created,
        { type: 'response.output_item.added', output_index: 0, item: { ...reasoning, summary: [] } },
        {
          type: 'response.reasoning_summary_text.delta',
          item_id: 'rs_9',
          output_index: 0,
          summary_index: 0,
          delta: 'Thinking.',
        },
        { type: 'response.output_item.done', output_index: 0, item: reasoning },
        {
          type: 'response.output_item.added',
          output_index: 1,
          item: { ...functionCallItem, status: 'in_progress', arguments: '' },
        },
        { type: 'response.output_item.done', output_index: 1, item: functionCallItem },
        {
          type: 'response.completed',
          response: responseObject({ status: 'completed', output: [reasoning, functionCallItem], usage }),
        },
      ]),
    );
    const parts = await collect(openAi.stream(call({ reasoningModel: true })));
    assert.deepEqual(
      parts.filter((part) => part.type !== 'response-metadata' && part.type !== 'usage'),
      [
        { type: 'reasoning-delta', delta: 'Thinking.' },
        { type: 'reasoning-redacted', data: 'gAAAAABrs_9', format: 'openai-responses-v1' },
        { type: 'tool-call-start', index: 0, callId: 'call_Xy9z8KqW2mF3', name: 'weather' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":"Oslo"}' },
        { type: 'tool-call-end', index: 0 },
        { type: 'finish', reason: 'tool-calls', nativeReason: 'completed' },
      ],
    );
  });
});
