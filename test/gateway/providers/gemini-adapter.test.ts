import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import {
  convertToGeminiContents,
  SKIP_SIGNATURE_CHECK,
} from '../../../src/gateway/providers/gemini/convert-to-gemini-request.js';
import { createGeminiAdapter } from '../../../src/gateway/providers/gemini/gemini-adapter.js';
import { createUpstreamHttp } from '../../../src/gateway/providers/shared/upstream-http.js';
import type { AdapterCall } from '../../../src/spec/provider-adapter.js';
import type { StreamPart } from '../../../src/spec/stream-part.js';
import { UnsupportedRequestError, UpstreamError } from '../../../src/spec/upstream-error.js';
import { collect, startFakeUpstream } from '../../helpers/fake-upstream.js';

// Bodies in the shape Gemini's v1beta API sends them: every reply and stream chunk is a
// GenerateContentResponse; streamed ones hold only the new parts and the running usage.
const identity = { modelVersion: 'gemini-2.5-flash', responseId: 'mKd3aOa2Ha6Xz7IP0f7x-Qo' };
const chunk = (parts: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    candidates: [{ content: { parts, role: 'model' }, index: 0, ...extra }],
    usageMetadata: { promptTokenCount: 42, totalTokenCount: 42 },
    ...identity,
  });
const finalUsage = {
  promptTokenCount: 42,
  candidatesTokenCount: 20,
  totalTokenCount: 110,
  cachedContentTokenCount: 16,
  thoughtsTokenCount: 48,
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: 42 }],
  cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 16 }],
};
const googleError = (code: number, status: string, message: string, details?: unknown[]) =>
  JSON.stringify({ error: { code, message, status, ...(details ? { details } : {}) } });

// What call() below becomes on the wire, streamed or not: only the URL differs.
const expectedBody = {
  contents: [
    {
      role: 'user',
      parts: [
        { text: 'Weather where this was taken?' },
        { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
        { fileData: { mimeType: 'application/pdf', fileUri: 'https://example.com/report.pdf' } },
        { fileData: { mimeType: 'application/octet-stream', fileUri: 'https://example.com/notes' } },
        { inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } },
        { text: 'Quickly.' },
      ],
    },
    {
      role: 'model',
      parts: [
        { text: 'Checking.' },
        // Each call and its response carry the call's id, which Gemini 3 matches them by.
        { functionCall: { id: 'call_0', name: 'weather', args: { city: 'Paris' } } },
        { functionCall: { id: 'call_1', name: 'time', args: {} } },
      ],
    },
    {
      role: 'user',
      parts: [
        { functionResponse: { id: 'call_0', name: 'weather', response: { temp: 21 } } },
        { functionResponse: { id: 'call_1', name: 'time', response: { content: '14:00' } } },
        { functionResponse: { id: 'call_unknown', name: 'call_unknown', response: { content: '[1,2]' } } },
      ],
    },
  ],
  systemInstruction: { parts: [{ text: 'Be brief.\n\nAnswer in English.' }] },
  tools: [
    {
      functionDeclarations: [
        {
          name: 'weather',
          description: 'Current weather',
          // JSON Schema as the client wrote it: `parameters` would refuse much of it.
          parametersJsonSchema: {
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          },
        },
        { name: 'time' },
      ],
    },
  ],
  toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['weather'] } },
  generationConfig: {
    maxOutputTokens: 100,
    temperature: 0.2,
    topP: 0.9,
    topK: 5,
    stopSequences: ['END'],
    seed: 7,
    responseMimeType: 'application/json',
    responseJsonSchema: { type: 'object', properties: { summary: { type: 'string' } } },
    thinkingConfig: { thinkingBudget: 1024, includeThoughts: true },
  },
};

/** Gemini ends its SSE events with CRLF pairs. */
async function writeGeminiSse(response: ServerResponse, frames: string[], delayMs = 0): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'x-goog-api-version': 'v1beta' });
  for (const frame of frames) {
    response.write(`data: ${frame}\r\n\r\n`);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
  response.end();
}

function reply(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(body);
}

describe('Gemini adapter against a fake upstream', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  const http = createUpstreamHttp();
  const adapter = createGeminiAdapter({ http });
  const call = (overrides: Partial<AdapterCall> = {}): AdapterCall => ({
    request: {
      model: 'gemini-2.5-flash',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'text', text: 'Weather where this was taken?' },
            { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' },
            { type: 'file', url: 'https://example.com/report.pdf', mediaType: 'application/pdf' },
            { type: 'file', url: 'https://example.com/notes' },
            { type: 'audio', data: 'UklGRg==', format: 'wav' },
          ],
        },
        { type: 'message', role: 'user', content: [{ type: 'text', text: 'Quickly.' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Checking.' }] },
        { type: 'function-call', callId: 'call_0', name: 'weather', arguments: '{"city":"Paris"}' },
        { type: 'function-call', callId: 'call_1', name: 'time', arguments: '' },
        { type: 'function-call-output', callId: 'call_0', output: '{"temp":21}' },
        { type: 'function-call-output', callId: 'call_1', output: '14:00' },
        { type: 'function-call-output', callId: 'call_unknown', output: '[1,2]' },
      ],
      tools: [
        {
          type: 'function',
          name: 'weather',
          description: 'Current weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
        { type: 'function', name: 'time', parameters: { type: 'object', properties: {} } },
      ],
      toolChoice: { type: 'function', name: 'weather' },
      parallelToolCalls: false,
      maxOutputTokens: 100,
      temperature: 0.2,
      topP: 0.9,
      topK: 5,
      stop: ['END'],
      seed: 7,
      responseFormat: {
        type: 'json_schema',
        name: 'forecast',
        schema: { type: 'object', properties: { summary: { type: 'string' } } },
      },
      reasoning: { maxTokens: 1024, include: true },
    },
    target: { baseUrl: `${upstream.url}/v1beta/`, apiKey: 'AIza-upstream' },
    signal: new AbortController().signal,
    timeouts: { headersMs: 2000, firstTokenMs: 2000, idleMs: 2000 },
    ...overrides,
  });
  const simple = (overrides: Partial<AdapterCall> = {}): AdapterCall => ({
    ...call(overrides),
    request: {
      model: 'gemini-2.5-flash',
      input: [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    },
  });

  before(async () => {
    upstream = await startFakeUpstream();
  });
  after(async () => {
    await http.close();
    await upstream.close();
  });

  it('sends the canonical request in the generateContent wire format', async () => {
    upstream.handle((_request, response) =>
      reply(
        response,
        200,
        JSON.stringify({
          candidates: [
            {
              content: { parts: [{ text: '{"summary":"Sunny, 21°C."}' }], role: 'model' },
              finishReason: 'STOP',
              index: 0,
            },
          ],
          usageMetadata: {
            promptTokenCount: 30,
            candidatesTokenCount: 6,
            totalTokenCount: 61,
            thoughtsTokenCount: 25,
            promptTokensDetails: [{ modality: 'TEXT', tokenCount: 30 }],
          },
          ...identity,
        }),
      ),
    );
    const result = await adapter.generate(call());
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(sent.headers['x-goog-api-key'], 'AIza-upstream');
    assert.equal(sent.headers.authorization, undefined);
    assert.deepEqual(sent.body, expectedBody);
    assert.deepEqual(result, {
      id: 'mKd3aOa2Ha6Xz7IP0f7x-Qo',
      model: 'gemini-2.5-flash',
      text: '{"summary":"Sunny, 21°C."}',
      reasoning: '',
      toolCalls: [],
      // Gemini's candidatesTokenCount leaves out the 25 thinking tokens; canonical output includes them.
      usage: {
        inputTokens: 30,
        outputTokens: 31,
        cachedInputTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 25,
      },
      finishReason: 'stop',
      nativeFinishReason: 'STOP',
    });
  });

  it('maps tool choices and sends a bare request with no optional sections', async () => {
    upstream.handle((_request, response) =>
      reply(response, 200, chunk([{ text: 'Hello' }], { finishReason: 'STOP' })),
    );
    await adapter.generate(simple());
    assert.deepEqual(upstream.requests.at(-1)!.body, {
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
    });
    const modes: Array<[AdapterCall['request']['toolChoice'], string]> = [
      ['auto', 'AUTO'],
      ['required', 'ANY'],
      ['none', 'NONE'],
    ];
    const tools = [{ type: 'function' as const, name: 'f', parameters: { type: 'object', properties: {} } }];
    for (const [toolChoice, mode] of modes) {
      const base = simple();
      await adapter.generate({ ...base, request: { ...base.request, toolChoice, tools } });
      assert.deepEqual((upstream.requests.at(-1)!.body as Record<string, unknown>).toolConfig, {
        functionCallingConfig: { mode },
      });
      // Gemini refuses a function calling config without function declarations: one that changes
      // nothing without tools (auto, none) is left out; one that demands a tool stays, to be refused.
      await adapter.generate({ ...base, request: { ...base.request, toolChoice } });
      assert.deepEqual(
        (upstream.requests.at(-1)!.body as Record<string, unknown>).toolConfig,
        toolChoice === 'required' ? { functionCallingConfig: { mode } } : undefined,
      );
    }
  });

  it('refuses function-call arguments that are not a JSON object, before calling upstream', async () => {
    const sentBefore = upstream.requests.length;
    const base = simple();
    const bad = {
      ...base,
      request: {
        ...base.request,
        input: [{ type: 'function-call' as const, callId: 'call_0', name: 'weather', arguments: '{"city":' }],
      },
    };
    await assert.rejects(adapter.generate(bad), (caught: unknown) => {
      return (
        caught instanceof UnsupportedRequestError && /call_0 \(weather\).*not valid JSON/.test(caught.message)
      );
    });
    await assert.rejects(collect(adapter.stream(bad)), UnsupportedRequestError);
    assert.equal(upstream.requests.length, sentBefore);
  });

  it('reads a non-streamed function call with its thought signature, kept for the next turn', async () => {
    upstream.handle((_request, response) =>
      reply(
        response,
        200,
        JSON.stringify({
          candidates: [
            {
              content: {
                parts: [
                  { text: 'I should look that up.', thought: true },
                  { text: 'Looking it up.' },
                  {
                    functionCall: { name: 'weather', args: { city: 'Paris', units: 'metric' } },
                    thoughtSignature: 'CiQB0e2Kb0Xq1xPz',
                  },
                  { functionCall: { name: 'time', args: {} } },
                ],
                role: 'model',
              },
              finishReason: 'STOP',
              index: 0,
            },
          ],
          usageMetadata: finalUsage,
          ...identity,
        }),
      ),
    );
    const result = await adapter.generate(simple());
    assert.equal(result.text, 'Looking it up.');
    assert.equal(result.reasoning, 'I should look that up.');
    // Gemini sends no call ids: each call gets one of its own, unique, not its index.
    const ids = result.toolCalls.map((toolCall) => toolCall.callId);
    for (const id of ids) assert.match(id, /^call_[A-Za-z0-9_-]{16}$/);
    assert.notEqual(ids[0], ids[1]);
    assert.deepEqual(
      result.toolCalls.map(({ name, arguments: text }) => ({ name, arguments: text })),
      [
        { name: 'weather', arguments: '{"city":"Paris","units":"metric"}' },
        { name: 'time', arguments: '{}' },
      ],
    );
    // The signature came on the first call's part: it is that call's, anchored before it.
    assert.deepEqual(result.reasoningBlocks, [
      { text: '', signature: 'CiQB0e2Kb0Xq1xPz', format: 'google-gemini-v1', beforeToolCall: 0 },
    ]);
    const again = await adapter.generate(simple());
    assert.ok(!again.toolCalls.some((toolCall) => ids.includes(toolCall.callId)), 'ids repeat across turns');
    assert.equal(result.finishReason, 'tool-calls');
    assert.equal(result.nativeFinishReason, 'STOP');
    assert.deepEqual(result.usage, {
      inputTokens: 42,
      outputTokens: 68,
      cachedInputTokens: 16,
      cacheWriteTokens: 0,
      reasoningTokens: 48,
    });
  });

  it('streams thoughts, text, a function call, usage and finish as typed parts', async () => {
    upstream.handle((_request, response) =>
      writeGeminiSse(response, [
        chunk([{ text: '**Checking the forecast**\n', thought: true }]),
        chunk([{ text: 'Let me ' }]),
        chunk([{ text: 'check.' }]),
        JSON.stringify({
          candidates: [
            {
              content: {
                parts: [
                  {
                    functionCall: { name: 'weather', args: { city: 'Oslo' } },
                    thoughtSignature: 'CikB0e2Kb7Uq',
                  },
                ],
                role: 'model',
              },
              finishReason: 'STOP',
              index: 0,
            },
          ],
          usageMetadata: finalUsage,
          ...identity,
        }),
      ]),
    );
    const parts = await collect(adapter.stream(call()));
    const started = parts.find((part) => part.type === 'tool-call-start');
    assert.match(started?.type === 'tool-call-start' ? started.callId : '', /^call_[A-Za-z0-9_-]{16}$/);
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    assert.equal(sent.headers['x-goog-api-key'], 'AIza-upstream');
    assert.deepEqual(sent.body, expectedBody);
    assert.deepEqual(parts, [
      { type: 'response-metadata', id: 'mKd3aOa2Ha6Xz7IP0f7x-Qo', model: 'gemini-2.5-flash' },
      { type: 'reasoning-delta', delta: '**Checking the forecast**\n' },
      { type: 'text-delta', delta: 'Let me ' },
      { type: 'text-delta', delta: 'check.' },
      // The call's signature comes just before its start, naming it.
      {
        type: 'reasoning-signature',
        signature: 'CikB0e2Kb7Uq',
        format: 'google-gemini-v1',
        callId: (started as { callId: string }).callId,
      },
      { type: 'tool-call-start', index: 0, callId: (started as { callId: string }).callId, name: 'weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":"Oslo"}' },
      { type: 'tool-call-end', index: 0 },
      {
        type: 'usage',
        usage: {
          inputTokens: 42,
          outputTokens: 68,
          cachedInputTokens: 16,
          cacheWriteTokens: 0,
          reasoningTokens: 48,
        },
      },
      { type: 'finish', reason: 'tool-calls', nativeReason: 'STOP' },
    ]);
  });

  it('sends thinking budgets within the model range, effort levels as budgets, and thinking off', async () => {
    upstream.handle((_request, response) =>
      reply(response, 200, chunk([{ text: 'ok' }], { finishReason: 'STOP' })),
    );
    const sentThinking = async (
      model: string,
      reasoning: NonNullable<AdapterCall['request']['reasoning']>,
    ) => {
      const base = simple();
      await adapter.generate({ ...base, request: { ...base.request, model, reasoning } });
      return (upstream.requests.at(-1)!.body as any).generationConfig?.thinkingConfig;
    };
    assert.deepEqual(await sentThinking('gemini-2.5-flash', { effort: 'medium' }), { thinkingBudget: 8192 });
    assert.deepEqual(await sentThinking('gemini-2.5-flash', { maxTokens: 100_000 }), {
      thinkingBudget: 24_576,
    });
    // Off: Flash thinks 0 tokens; Pro cannot stop thinking and gets its least.
    assert.deepEqual(await sentThinking('gemini-2.5-flash', { enabled: false, include: true }), {
      thinkingBudget: 0,
      includeThoughts: false,
    });
    assert.deepEqual(await sentThinking('gemini-2.5-pro', { effort: 'none' }), { thinkingBudget: 128 });
    assert.deepEqual(await sentThinking('gemini-3-flash-preview', { effort: 'none' }), {
      thinkingLevel: 'minimal',
    });
    assert.equal(await sentThinking('gemini-3-pro-preview', { effort: 'none' }), undefined);
    // Flash-Lite thinks 512 tokens at least, when it thinks.
    assert.deepEqual(await sentThinking('gemini-2.5-flash-lite', { maxTokens: 100 }), {
      thinkingBudget: 512,
    });
    // An effort that asks for no reasoning (Anthropic's, without thinking) is the thinking's level
    // on models that think anyway, and turns no thinking on for Flash-Lite.
    const alone = { effort: 'low', effortAsksReasoning: false } as const;
    assert.equal(await sentThinking('gemini-2.5-flash-lite', alone), undefined);
    assert.deepEqual(await sentThinking('gemini-2.5-flash-lite', { effort: 'low' }), {
      thinkingBudget: 1024,
    });
    assert.deepEqual(await sentThinking('gemini-2.5-flash', alone), { thinkingBudget: 1024 });
    assert.deepEqual(await sentThinking('gemini-3-flash-preview', alone), { thinkingLevel: 'low' });
    // Gemini 3 takes levels: Flash four, Pro two.
    assert.deepEqual(await sentThinking('gemini-3-flash-preview', { effort: 'medium' }), {
      thinkingLevel: 'medium',
    });
    assert.deepEqual(await sentThinking('gemini-3.1-pro-preview', { effort: 'medium' }), {
      thinkingLevel: 'high',
    });
    assert.deepEqual(await sentThinking('gemini-3.1-pro-preview', { effort: 'low' }), {
      thinkingLevel: 'low',
    });
    // An effort's budget leaves a quarter of the output cap to answer.
    const base = simple();
    await adapter.generate({
      ...base,
      request: {
        ...base.request,
        model: 'gemini-2.5-flash',
        maxOutputTokens: 1000,
        reasoning: { effort: 'high' },
      },
    });
    assert.deepEqual((upstream.requests.at(-1)!.body as any).generationConfig.thinkingConfig, {
      thinkingBudget: 750,
    });
  });

  it("leaves a thought's own signature out: the call's is the one that goes back", async () => {
    upstream.handle((_request, response) =>
      reply(
        response,
        200,
        chunk(
          [
            { text: 'Thinking.', thought: true, thoughtSignature: 'THOUGHT' },
            { functionCall: { name: 'weather', args: {} }, thoughtSignature: 'CALL' },
          ],
          { finishReason: 'STOP' },
        ),
      ),
    );
    const result = await adapter.generate(simple());
    assert.equal(result.reasoning, 'Thinking.');
    assert.deepEqual(result.reasoningBlocks, [
      { text: '', signature: 'CALL', format: 'google-gemini-v1', beforeToolCall: 0 },
    ]);
    // Sent back with blocks of earlier reasoning ahead of it, the nearest one is the call's.
    const base = simple();
    await adapter.generate({
      ...base,
      request: {
        model: 'gemini-3-flash-preview',
        input: [
          { type: 'message', role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
          {
            type: 'function-call',
            callId: 'c1',
            name: 'weather',
            arguments: '{}',
            reasoning: [
              { text: '', signature: 'EARLIER', format: 'google-gemini-v1' },
              { text: '', signature: 'CALL', format: 'google-gemini-v1' },
            ],
          },
          { type: 'function-call-output', callId: 'c1', output: 'sunny' },
        ],
      },
    });
    const sent = upstream.requests.at(-1)!.body as {
      contents: Array<{ parts: Array<Record<string, unknown>> }>;
    };
    assert.equal(sent.contents[1]!.parts[0]!.thoughtSignature, 'CALL');
  });

  it('streams a signature that came with text after that text, without a call', async () => {
    upstream.handle((_request, response) =>
      writeGeminiSse(response, [
        chunk([{ text: 'Sunny.' }]),
        chunk([{ text: '', thoughtSignature: 'Eg0KCwgB' }], { finishReason: 'STOP' }),
      ]),
    );
    const parts = await collect(adapter.stream(simple()));
    assert.deepEqual(
      parts.filter((part) => part.type === 'text-delta' || part.type === 'reasoning-signature'),
      [
        { type: 'text-delta', delta: 'Sunny.' },
        { type: 'reasoning-signature', signature: 'Eg0KCwgB', format: 'google-gemini-v1' },
      ],
    );
  });

  it("sends each thought signature back on its part, and a placeholder where a 3.x model's call has none", async () => {
    upstream.handle((_request, response) =>
      reply(response, 200, chunk([{ text: 'Done.' }], { finishReason: 'STOP' })),
    );
    const history = (model: string, signed: boolean): AdapterCall => {
      const base = simple();
      const gemini = (signature: string) =>
        signed ? { reasoning: [{ text: '', signature, format: 'google-gemini-v1' as const }] } : {};
      return {
        ...base,
        request: {
          model,
          input: [
            {
              type: 'message',
              role: 'user',
              content: [{ type: 'text', text: 'Weather in Paris and Rome?' }],
            },
            {
              type: 'message',
              role: 'assistant',
              content: [{ type: 'text', text: 'Checking.' }],
              ...gemini('text-sig'),
            },
            {
              type: 'function-call',
              callId: 'c1',
              name: 'weather',
              arguments: '{"city":"Paris"}',
              ...gemini('call-sig'),
            },
            // Another provider's signature is never sent to Gemini.
            {
              type: 'function-call',
              callId: 'c2',
              name: 'weather',
              arguments: '{"city":"Rome"}',
              reasoning: [{ text: 'x', signature: 'anthropic-sig', format: 'anthropic-claude-v1' }],
            },
            { type: 'function-call-output', callId: 'c1', output: '{"temp":21}' },
            { type: 'function-call-output', callId: 'c2', output: '{"temp":25}' },
          ],
        },
      };
    };
    const modelTurn = async (call: AdapterCall) => {
      await adapter.generate(call);
      return (upstream.requests.at(-1)!.body as { contents: Array<{ parts: unknown[] }> }).contents[1]!.parts;
    };
    assert.deepEqual(await modelTurn(history('gemini-3-pro-preview', true)), [
      { text: 'Checking.', thoughtSignature: 'text-sig' },
      { functionCall: { id: 'c1', name: 'weather', args: { city: 'Paris' } }, thoughtSignature: 'call-sig' },
      { functionCall: { id: 'c2', name: 'weather', args: { city: 'Rome' } } },
    ]);
    // A 3.x model refuses a call in history without a signature; the documented placeholder goes
    // on the step's first call.
    assert.deepEqual(await modelTurn(history('gemini-3-pro-preview', false)), [
      { text: 'Checking.' },
      {
        functionCall: { id: 'c1', name: 'weather', args: { city: 'Paris' } },
        thoughtSignature: SKIP_SIGNATURE_CHECK,
      },
      { functionCall: { id: 'c2', name: 'weather', args: { city: 'Rome' } } },
    ]);
    // Models from before the check get none they were not given.
    assert.deepEqual(await modelTurn(history('gemini-2.5-flash', false)), [
      { text: 'Checking.' },
      { functionCall: { id: 'c1', name: 'weather', args: { city: 'Paris' } } },
      { functionCall: { id: 'c2', name: 'weather', args: { city: 'Rome' } } },
    ]);
  });

  it('maps finish reasons: STOP, MAX_TOKENS, SAFETY and unknown ones', async () => {
    const cases: Array<[string, string]> = [
      ['STOP', 'stop'],
      ['MAX_TOKENS', 'length'],
      ['SAFETY', 'content-filter'],
      ['RECITATION', 'content-filter'],
      ['PROHIBITED_CONTENT', 'content-filter'],
      ['LANGUAGE', 'other'],
    ];
    for (const [native, canonical] of cases) {
      upstream.handle((_request, response) =>
        reply(
          response,
          200,
          JSON.stringify({
            candidates: [
              {
                // A candidate stopped for safety has no content, only ratings.
                ...(native === 'SAFETY' ? {} : { content: { parts: [{ text: 'x' }], role: 'model' } }),
                finishReason: native,
                index: 0,
                safetyRatings: [{ category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH' }],
              },
            ],
            usageMetadata: { promptTokenCount: 5, totalTokenCount: 5 },
            ...identity,
          }),
        ),
      );
      const result = await adapter.generate(simple());
      assert.equal(result.finishReason, canonical, native);
      assert.equal(result.nativeFinishReason, native);
    }
    upstream.handle((_request, response) =>
      writeGeminiSse(response, [
        chunk([{ text: 'The first part' }]),
        chunk([], { finishReason: 'SAFETY', safetyRatings: [] }),
      ]),
    );
    const parts = await collect(adapter.stream(simple()));
    assert.deepEqual(parts.at(-1), { type: 'finish', reason: 'content-filter', nativeReason: 'SAFETY' });
  });

  it('fails a MALFORMED_FUNCTION_CALL answer (retryable), streamed or not, rather than completing it empty', async () => {
    upstream.handle((_request, response) =>
      reply(
        response,
        200,
        JSON.stringify({
          candidates: [
            { content: { parts: [], role: 'model' }, finishReason: 'MALFORMED_FUNCTION_CALL', index: 0 },
          ],
          usageMetadata: { promptTokenCount: 5, totalTokenCount: 5 },
          ...identity,
        }),
      ),
    );
    const whole = await adapter.generate(simple()).catch((caught: unknown) => caught);
    assert.ok(whole instanceof UpstreamError);
    assert.equal(whole.kind, 'invalid-response');
    assert.equal(whole.retryable, true);
    assert.match(whole.message, /MALFORMED_FUNCTION_CALL/);
    // Before any output the stream throws (another candidate may be tried); after output it ends
    // with an error part.
    upstream.handle((_request, response) =>
      writeGeminiSse(response, [chunk([], { finishReason: 'MALFORMED_FUNCTION_CALL' })]),
    );
    const early = await collect(adapter.stream(simple())).catch((caught: unknown) => caught);
    assert.ok(early instanceof UpstreamError);
    upstream.handle((_request, response) =>
      writeGeminiSse(response, [
        chunk([{ text: 'Let me call' }]),
        chunk([], { finishReason: 'MALFORMED_FUNCTION_CALL' }),
      ]),
    );
    const late = await collect(adapter.stream(simple()));
    assert.equal(late.at(-1)?.type, 'error');
    // The other finishes that leave no usable answer fail the same way.
    for (const reason of ['UNEXPECTED_TOOL_CALL', 'TOO_MANY_TOOL_CALLS', 'MALFORMED_RESPONSE']) {
      upstream.handle((_request, response) => reply(response, 200, chunk([], { finishReason: reason })));
      const failed = await adapter.generate(simple()).catch((caught: unknown) => caught);
      assert.ok(failed instanceof UpstreamError && failed.retryable, reason);
      assert.match((failed as UpstreamError).message, new RegExp(reason));
    }
  });

  it('reports a blocked prompt as a content-filter finish without text', async () => {
    const blocked = JSON.stringify({
      promptFeedback: {
        blockReason: 'PROHIBITED_CONTENT',
        safetyRatings: [{ category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' }],
      },
      usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
      ...identity,
    });
    upstream.handle((_request, response) => reply(response, 200, blocked));
    const result = await adapter.generate(simple());
    assert.equal(result.text, '');
    assert.equal(result.finishReason, 'content-filter');
    assert.equal(result.nativeFinishReason, 'PROHIBITED_CONTENT');
    assert.equal(result.usage.inputTokens, 9);

    upstream.handle((_request, response) => writeGeminiSse(response, [blocked]));
    assert.deepEqual(await collect(adapter.stream(simple())), [
      { type: 'response-metadata', id: 'mKd3aOa2Ha6Xz7IP0f7x-Qo', model: 'gemini-2.5-flash' },
      {
        type: 'usage',
        usage: {
          inputTokens: 9,
          outputTokens: 0,
          cachedInputTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: 0,
        },
      },
      { type: 'finish', reason: 'content-filter', nativeReason: 'PROHIBITED_CONTENT' },
    ]);
  });

  it('reports a 429 RESOURCE_EXHAUSTED as retryable, with the delay from its RetryInfo', async () => {
    upstream.handle((_request, response) =>
      reply(
        response,
        429,
        googleError(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan.', [
          {
            '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
            violations: [
              {
                quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
                quotaId: 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier',
                quotaDimensions: { location: 'global', model: 'gemini-2.5-flash' },
                quotaValue: '10',
              },
            ],
          },
          {
            '@type': 'type.googleapis.com/google.rpc.Help',
            links: [{ description: 'Learn more', url: 'https://ai.google.dev/gemini-api/docs/rate-limits' }],
          },
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '36.5s' },
        ]),
      ),
    );
    const error = await adapter.generate(simple()).catch((caught: unknown) => caught);
    assert.ok(error instanceof UpstreamError);
    assert.equal(error.status, 429);
    assert.equal(error.kind, 'http');
    assert.equal(error.retryable, true);
    assert.equal(error.retryAfterSeconds, 37);
    assert.equal(error.message, 'You exceeded your current quota, please check your plan.');
    assert.match(error.raw ?? '', /RESOURCE_EXHAUSTED/);
    await assert.rejects(
      collect(adapter.stream(simple())),
      (caught: unknown) => caught instanceof UpstreamError && caught.status === 429 && caught.retryable,
    );

    // A Retry-After header, when a proxy adds one, wins.
    upstream.handle((_request, response) => {
      response
        .writeHead(429, { 'content-type': 'application/json', 'retry-after': '5' })
        .end(googleError(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).'));
    });
    const withHeader = await adapter.generate(simple()).catch((caught: unknown) => caught);
    assert.ok(withHeader instanceof UpstreamError && withHeader.retryAfterSeconds === 5);
  });

  it('treats 400 INVALID_ARGUMENT as final and 503 UNAVAILABLE as retryable', async () => {
    upstream.handle((_request, response) =>
      reply(
        response,
        400,
        googleError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'API_KEY_INVALID',
            domain: 'googleapis.com',
            metadata: { service: 'generativelanguage.googleapis.com' },
          },
        ]),
      ),
    );
    const invalid = await adapter.generate(simple()).catch((caught: unknown) => caught);
    assert.ok(invalid instanceof UpstreamError);
    assert.equal(invalid.status, 400);
    assert.equal(invalid.retryable, false);
    assert.equal(invalid.retryAfterSeconds, null);
    assert.equal(invalid.message, 'API key not valid. Please pass a valid API key.');

    upstream.handle((_request, response) =>
      reply(
        response,
        503,
        googleError(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.'),
      ),
    );
    const overloaded = await adapter.generate(simple()).catch((caught: unknown) => caught);
    assert.ok(overloaded instanceof UpstreamError);
    assert.equal(overloaded.status, 503);
    assert.equal(overloaded.retryable, true);
    assert.equal(overloaded.message, 'The model is overloaded. Please try again later.');
    await assert.rejects(
      collect(adapter.stream(simple())),
      (caught: unknown) => caught instanceof UpstreamError && caught.status === 503 && caught.retryable,
    );
  });

  it('turns a stream cut after output into an in-band error part, and throws when cut before it', async () => {
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`data: ${chunk([{ text: 'partial' }])}\r\n\r\n`);
      response.write('data: {"candidates": [{"content": {"par');
      // Let the bytes leave before the connection drops, as a real cut mid-frame does.
      await new Promise((resolve) => setTimeout(resolve, 50));
      response.destroy();
    });
    const parts = await collect(adapter.stream(simple()));
    assert.deepEqual(parts.slice(0, 2), [
      { type: 'response-metadata', id: 'mKd3aOa2Ha6Xz7IP0f7x-Qo', model: 'gemini-2.5-flash' },
      { type: 'text-delta', delta: 'partial' },
    ]);
    const last = parts.at(-1)!;
    assert.ok(last.type === 'error' && last.error.retryable);

    // A clean end without a finish reason is a cut too: Gemini has no end-of-stream marker.
    upstream.handle((_request, response) => writeGeminiSse(response, [chunk([{ text: 'partial' }])]));
    const ended = await collect(adapter.stream(simple()));
    const endedLast = ended.at(-1)!;
    assert.ok(endedLast.type === 'error' && endedLast.error.kind === 'invalid-response');
    assert.ok(endedLast.type === 'error' && endedLast.error.retryable);

    upstream.handle((_request, response) => writeGeminiSse(response, []));
    await assert.rejects(
      collect(adapter.stream(simple())),
      (caught: unknown) =>
        caught instanceof UpstreamError && caught.kind === 'invalid-response' && caught.retryable,
    );
  });

  it('yields an error object sent inside a 200 stream after output', async () => {
    upstream.handle((_request, response) =>
      writeGeminiSse(response, [
        chunk([{ text: 'Hel' }]),
        googleError(500, 'INTERNAL', 'An internal error has occurred.'),
      ]),
    );
    const parts = await collect(adapter.stream(simple()));
    const last = parts.at(-1)!;
    assert.ok(last.type === 'error');
    assert.equal(last.error.message, 'An internal error has occurred.');
    assert.equal(last.error.status, 500);
    assert.ok(last.error.retryable);
  });

  it('throws a timeout when no output arrives before the first-token timeout', async () => {
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      // A chunk with an empty text part is no output.
      response.write(`data: ${chunk([{ text: '' }])}\r\n\r\n`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      response.end();
    });
    const started = Date.now();
    await assert.rejects(
      collect(adapter.stream(simple({ timeouts: { headersMs: 2000, firstTokenMs: 150, idleMs: 5000 } }))),
      (caught: unknown) => caught instanceof UpstreamError && caught.kind === 'timeout' && caught.retryable,
    );
    assert.ok(Date.now() - started < 900, 'the first-token timeout fired before the upstream finished');
  });

  it('stops reading and reports an abort when the caller aborts', async () => {
    upstream.handle((_request, response) =>
      writeGeminiSse(
        response,
        [chunk([{ text: 'a' }]), chunk([{ text: 'b' }]), chunk([], { finishReason: 'STOP' })],
        200,
      ),
    );
    const controller = new AbortController();
    const parts: StreamPart[] = [];
    for await (const part of adapter.stream(simple({ signal: controller.signal }))) {
      parts.push(part);
      if (part.type === 'text-delta') controller.abort();
    }
    assert.deepEqual(
      parts.map((part) => part.type),
      ['response-metadata', 'text-delta', 'error'],
    );
    const last = parts.at(-1)!;
    assert.ok(last.type === 'error' && last.error.kind === 'aborted' && !last.error.retryable);
  });

  describe('image output', () => {
    // What gemini-2.5-flash-image answers a "draw it" prompt with: text and an inlineData part,
    // the image's tokens counted apart in candidatesTokensDetails.
    const png =
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const imageUsage = {
      promptTokenCount: 12,
      candidatesTokenCount: 1299,
      totalTokenCount: 1311,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 12 }],
      candidatesTokensDetails: [
        { modality: 'IMAGE', tokenCount: 1290 },
        { modality: 'TEXT', tokenCount: 9 },
      ],
    };
    const imageCall = (): AdapterCall => {
      const base = simple();
      return {
        ...base,
        request: {
          ...base.request,
          model: 'gemini-2.5-flash-image',
          outputModalities: ['text', 'image'],
          imageConfig: { aspectRatio: '16:9', imageSize: '2K' },
        },
      };
    };

    it('asks for the modalities and image options, and reads the image with its tokens', async () => {
      upstream.handle((_request, response) =>
        reply(
          response,
          200,
          JSON.stringify({
            candidates: [
              {
                content: {
                  parts: [
                    { text: 'A draft.', thought: true },
                    { inlineData: { mimeType: 'image/png', data: 'ZHJhZnQ=' }, thought: true },
                    { text: 'Here is your cat.' },
                    { inlineData: { mimeType: 'image/png', data: png }, thoughtSignature: 'c2ln' },
                  ],
                  role: 'model',
                },
                finishReason: 'STOP',
                index: 0,
              },
            ],
            usageMetadata: imageUsage,
            ...identity,
          }),
        ),
      );
      const result = await adapter.generate(imageCall());
      assert.deepEqual((upstream.requests.at(-1)!.body as Record<string, unknown>).generationConfig, {
        responseModalities: ['TEXT', 'IMAGE'],
        imageConfig: { aspectRatio: '16:9', imageSize: '2K' },
      });
      assert.equal(result.text, 'Here is your cat.');
      // The draft image of its thinking is not the answer; the image's signature is not kept.
      assert.deepEqual(result.images, [{ mediaType: 'image/png', data: png }]);
      assert.equal(result.reasoningBlocks, undefined);
      assert.deepEqual(result.usage, {
        inputTokens: 12,
        outputTokens: 1299,
        cachedInputTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
        imageOutputTokens: 1290,
      });
    });

    it('asks for images only, without image options when none were given', async () => {
      upstream.handle((_request, response) =>
        reply(
          response,
          200,
          chunk([{ inlineData: { mimeType: 'image/jpeg', data: png } }], { finishReason: 'STOP' }),
        ),
      );
      const base = imageCall();
      const { imageConfig: _dropped, ...request } = base.request;
      const result = await adapter.generate({
        ...base,
        request: { ...request, outputModalities: ['image'] },
      });
      assert.deepEqual((upstream.requests.at(-1)!.body as Record<string, unknown>).generationConfig, {
        responseModalities: ['IMAGE'],
      });
      assert.equal(result.text, '');
      assert.deepEqual(result.images, [{ mediaType: 'image/jpeg', data: png }]);
    });

    it('sends a generated image back in the model turn, the text keeping its signature', () => {
      const contents = convertToGeminiContents([
        { type: 'message', role: 'user', content: [{ type: 'text', text: 'Draw a cat' }] },
        {
          type: 'message',
          role: 'assistant',
          content: [
            { type: 'text', text: 'Here is your cat.' },
            { type: 'image', url: `data:image/png;base64,${png}`, generated: true },
          ],
          reasoning: [{ text: '', signature: 'c2ln', format: 'google-gemini-v1' }],
        },
        { type: 'message', role: 'user', content: [{ type: 'text', text: 'Make it blue' }] },
      ]);
      assert.deepEqual(contents[1], {
        role: 'model',
        parts: [
          { text: 'Here is your cat.', thoughtSignature: 'c2ln' },
          { inlineData: { mimeType: 'image/png', data: png } },
        ],
      });
    });

    it('sends image options without modalities, leaving the model its default answer', async () => {
      upstream.handle((_request, response) =>
        reply(
          response,
          200,
          chunk([{ inlineData: { mimeType: 'image/png', data: png } }], { finishReason: 'STOP' }),
        ),
      );
      const base = imageCall();
      const { outputModalities: _none, ...request } = base.request;
      const result = await adapter.generate({ ...base, request });
      assert.deepEqual((upstream.requests.at(-1)!.body as Record<string, unknown>).generationConfig, {
        imageConfig: { aspectRatio: '16:9', imageSize: '2K' },
      });
      assert.deepEqual(result.images, [{ mediaType: 'image/png', data: png }]);
    });

    it('streams an image whole, in its place among the text', async () => {
      upstream.handle((_request, response) =>
        writeGeminiSse(response, [
          chunk([{ text: 'Here is ' }]),
          chunk([{ text: 'your cat.' }]),
          chunk([{ inlineData: { mimeType: 'image/png', data: png } }]),
          chunk([{ text: ' Enjoy.' }]),
          JSON.stringify({
            candidates: [{ content: { parts: [], role: 'model' }, finishReason: 'STOP', index: 0 }],
            usageMetadata: imageUsage,
            ...identity,
          }),
        ]),
      );
      const parts = await collect(adapter.stream(imageCall()));
      assert.equal(
        upstream.requests.at(-1)!.url,
        '/v1beta/models/gemini-2.5-flash-image:streamGenerateContent?alt=sse',
      );
      assert.deepEqual(parts.slice(1), [
        { type: 'text-delta', delta: 'Here is ' },
        { type: 'text-delta', delta: 'your cat.' },
        { type: 'image-output', mediaType: 'image/png', data: png },
        { type: 'text-delta', delta: ' Enjoy.' },
        {
          type: 'usage',
          usage: {
            inputTokens: 12,
            outputTokens: 1299,
            cachedInputTokens: 0,
            cacheWriteTokens: 0,
            reasoningTokens: 0,
            imageOutputTokens: 1290,
          },
        },
        { type: 'finish', reason: 'stop', nativeReason: 'STOP' },
      ]);
    });

    // A 2K or 4K image is 8 to 10 MB of base64, whole in one part.
    const bigImage = 'A'.repeat(5 * 1024 * 1024);
    const imageModelCall = (outputModalities?: Array<'text' | 'image'>): AdapterCall => {
      const base = imageCall();
      const { outputModalities: _asked, imageConfig: _options, ...request } = base.request;
      return {
        ...base,
        request: { ...request, imageModel: true, ...(outputModalities ? { outputModalities } : {}) },
      };
    };

    it('takes a streamed image past 4 MiB, whole, where the answer may hold images; a text answer keeps the bound', async () => {
      upstream.handle((_request, response) =>
        writeGeminiSse(response, [
          chunk([{ inlineData: { mimeType: 'image/png', data: bigImage } }]),
          chunk([], { finishReason: 'STOP' }),
        ]),
      );
      // No modalities named, on a model that makes images: its default answer may hold them.
      const parts = await collect(adapter.stream(imageModelCall()));
      const image = parts.find((part) => part.type === 'image-output');
      assert.equal(image?.type === 'image-output' && image.data.length, bigImage.length);
      assert.deepEqual(parts.at(-1), { type: 'finish', reason: 'stop', nativeReason: 'STOP' });
      const refused = await collect(adapter.stream(imageModelCall(['text']))).catch(
        (caught: unknown) => caught,
      );
      assert.ok(
        refused instanceof UpstreamError && /larger than 4194304 bytes/.test(refused.message),
        String(refused),
      );
    });

    it('takes a whole reply past 32 MiB where the answer may hold images', async () => {
      const huge = 'A'.repeat(33 * 1024 * 1024);
      upstream.handle((_request, response) =>
        reply(
          response,
          200,
          chunk([{ inlineData: { mimeType: 'image/png', data: huge } }], { finishReason: 'STOP' }),
        ),
      );
      const result = await adapter.generate(imageModelCall(['image']));
      assert.equal(result.images?.[0]?.data.length, huge.length);
    });

    it('reports an image cut in transit after the stream began, not a text event cut', async () => {
      const cutAfter = (partial: string) => (_request: unknown, response: ServerResponse) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(`data: ${chunk([{ text: 'Here is your cat.' }])}\r\n\r\n`);
        setTimeout(() => response.write(partial), 10);
        setTimeout(() => response.socket?.destroy(), 40);
      };
      upstream.handle(
        cutAfter(
          `data: ${chunk([{ inlineData: { mimeType: 'image/png', data: bigImage } }]).slice(0, 200_000)}`,
        ),
      );
      const parts = await collect(adapter.stream(imageModelCall(['text', 'image'])));
      const failed = parts.at(-1);
      assert.ok(failed?.type === 'error' && failed.imagesCut === 1, JSON.stringify(failed));
      upstream.handle(cutAfter(`data: ${chunk([{ text: 'More text' }]).slice(0, 40)}`));
      const text = await collect(adapter.stream(imageModelCall(['text', 'image'])));
      const textFailed = text.at(-1);
      assert.ok(
        textFailed?.type === 'error' && textFailed.imagesCut === undefined,
        JSON.stringify(textFailed),
      );
    });
  });
});
