import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type {
  GenerationFailure,
  GenerationInfo,
  GenerationSummary,
  StreamEncoder,
} from '../../../src/gateway/dialects/dialect.js';
import { responsesDialect } from '../../../src/gateway/dialects/responses/responses-dialect.js';
import type { StreamPart } from '../../../src/spec/stream-part.js';
import { emptyUsage } from '../../../src/spec/usage.js';

const info: GenerationInfo = {
  id: 'gen-1730000000-abc',
  createdAt: 1730000000,
  model: 'openai/gpt-4o',
  providerSlug: 'openai',
  providerName: 'OpenAI',
};

const summary: GenerationSummary = {
  usage: { inputTokens: 10, outputTokens: 3, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 1 },
  cost: { totalNanos: 30_000, inputNanos: 10_000, outputNanos: 20_000 },
  isByok: false,
  metadata: null,
};

const body = { model: 'openai/gpt-4o', input: 'hi', stream: true, temperature: 0.5 } as any;
const finish = (reason: 'stop' | 'length' | 'tool-calls' = 'stop'): StreamPart[] => [
  { type: 'usage', usage: emptyUsage() },
  { type: 'finish', reason, nativeReason: reason },
];

/** Runs parts through a fresh encoder the way the route does: start, every part, then end or fail. */
function encode(
  parts: StreamPart[],
  ending: { summary?: GenerationSummary; failure?: GenerationFailure } = {},
): { text: string; encoder: StreamEncoder } {
  const encoder = responsesDialect.streamEncoder(body, info);
  let text = encoder.start();
  for (const part of parts) text += encoder.part(part);
  const done = ending.summary ?? summary;
  text += ending.failure ? encoder.fail(ending.failure, done) : encoder.end(done);
  return { text, encoder };
}

/** Splits SSE text into events: every frame is one `data:` line, JSON except the final [DONE]. */
function frames(text: string): any[] {
  assert.ok(text.endsWith('\n\n'), 'the stream ends with a blank line');
  const chunks = text.slice(0, -2).split('\n\n');
  assert.equal(chunks.at(-1), 'data: [DONE]', 'the stream ends with [DONE]');
  return chunks.slice(0, -1).map((chunk) => {
    assert.ok(chunk.startsWith('data: '), `a data frame: ${chunk.slice(0, 40)}`);
    assert.ok(!chunk.includes('\n'), 'one line per frame, no event: lines');
    return JSON.parse(chunk.slice('data: '.length));
  });
}

/**
 * Applies events to a response snapshot with the index rules of the `openai` SDK's
 * `accumulateResponse` (src/lib/responses/ResponseAccumulator.ts): items and parts may only be
 * appended at the next index, deltas need an existing item and part of the right type. It throws
 * where the SDK would, and returns the snapshot just before the terminal event replaces it.
 */
function accumulate(events: any[]): any {
  let snapshot: any;
  for (const event of events) {
    if (!snapshot) {
      assert.equal(event.type, 'response.created', 'the first event is response.created');
      snapshot = structuredClone(event.response);
      continue;
    }
    const output = snapshot.output;
    const item = () => {
      const found = output[event.output_index];
      assert.ok(found, `${event.type}: missing output at index ${event.output_index}`);
      return found;
    };
    switch (event.type) {
      case 'response.in_progress':
        snapshot = structuredClone(event.response);
        break;
      case 'response.output_item.added':
        assert.equal(event.output_index, output.length, 'items are appended in order');
        output.push(structuredClone(event.item));
        break;
      case 'response.output_item.done':
        item();
        output[event.output_index] = structuredClone(event.item);
        break;
      case 'response.content_part.added': {
        const target = item();
        target.content ??= [];
        assert.equal(event.content_index, target.content.length, 'parts are appended in order');
        assert.equal(target.type === 'message', event.part.type === 'output_text');
        target.content.push(structuredClone(event.part));
        break;
      }
      case 'response.content_part.done':
        assert.ok(item().content[event.content_index], 'content_part.done for an existing part');
        item().content[event.content_index] = structuredClone(event.part);
        break;
      case 'response.output_text.delta':
      case 'response.reasoning_text.delta': {
        const part = item().content?.[event.content_index];
        assert.ok(part, `${event.type}: missing content at index ${event.content_index}`);
        assert.equal(
          part.type,
          event.type === 'response.output_text.delta' ? 'output_text' : 'reasoning_text',
        );
        part.text += event.delta;
        break;
      }
      case 'response.output_text.done':
      case 'response.reasoning_text.done':
        assert.equal(item().content[event.content_index].text, event.text, 'done repeats the full text');
        break;
      case 'response.function_call_arguments.delta':
        assert.equal(item().type, 'function_call');
        item().arguments += event.delta;
        break;
      case 'response.function_call_arguments.done':
        assert.equal(item().arguments, event.arguments, 'done repeats the full arguments');
        break;
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed':
        return snapshot;
      default:
        assert.fail(`an event the SDK does not know: ${event.type}`);
    }
  }
  assert.fail('no terminal event');
}

function checkSequence(events: any[]) {
  assert.deepEqual(
    events.map((event) => event.sequence_number),
    events.map((_, index) => index),
    'sequence numbers count up from 0',
  );
}

const types = (events: any[]) => events.map((event) => event.type);

describe('responses dialect: stream', () => {
  it('streams a text answer in the reference order and ends with the full response', () => {
    const { text } = encode([
      { type: 'response-metadata', id: 'chatcmpl-1', model: 'gpt-4o' },
      { type: 'text-delta', delta: 'Hel' },
      { type: 'text-delta', delta: 'lo' },
      ...finish(),
    ]);
    const events = frames(text);
    checkSequence(events);
    assert.deepEqual(types(events), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const [created, inProgress, added, partAdded, delta] = events;
    assert.equal(created.response.status, 'in_progress');
    assert.deepEqual(created.response.output, []);
    assert.equal(created.response.completed_at, null);
    assert.equal(created.response.temperature, 0.5);
    assert.deepEqual(inProgress.response, created.response);
    assert.deepEqual(added, {
      type: 'response.output_item.added',
      sequence_number: 2,
      output_index: 0,
      item: {
        type: 'message',
        id: 'msg_1730000000-abc',
        role: 'assistant',
        status: 'in_progress',
        content: [],
      },
    });
    assert.deepEqual(partAdded.part, { type: 'output_text', text: '', annotations: [] });
    assert.deepEqual(delta, {
      type: 'response.output_text.delta',
      sequence_number: 4,
      item_id: 'msg_1730000000-abc',
      output_index: 0,
      content_index: 0,
      delta: 'Hel',
      logprobs: [],
    });
    assert.equal(events[6].text, 'Hello');

    const completed = events.at(-1).response;
    assert.equal(completed.status, 'completed');
    assert.equal(completed.id, 'gen-1730000000-abc');
    assert.ok(Number.isInteger(completed.completed_at));
    assert.equal(completed.output_text, 'Hello');
    assert.deepEqual(completed.output, [
      {
        type: 'message',
        id: 'msg_1730000000-abc',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Hello', annotations: [] }],
      },
    ]);
    assert.equal(completed.usage.total_tokens, 13);
    assert.equal(completed.usage.cost, 0.00003);
    assert.deepEqual(accumulate(events).output, completed.output);
  });

  it('streams tool calls as function_call items, closing each when the next starts', () => {
    // The chat-completions adapter's order: both calls open before either ends.
    const { text } = encode([
      { type: 'tool-call-start', index: 0, callId: 'call_a', name: 'weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '"Paris"}' },
      { type: 'tool-call-start', index: 1, callId: 'call_b', name: 'time' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{}' },
      { type: 'tool-call-end', index: 0 },
      { type: 'tool-call-end', index: 1 },
      ...finish('tool-calls'),
    ]);
    const events = frames(text);
    checkSequence(events);
    assert.deepEqual(types(events), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    assert.deepEqual(events[2].item, {
      type: 'function_call',
      id: 'fc_1730000000-abc_0',
      call_id: 'call_a',
      name: 'weather',
      arguments: '',
      status: 'in_progress',
    });
    assert.deepEqual(events[3], {
      type: 'response.function_call_arguments.delta',
      sequence_number: 3,
      item_id: 'fc_1730000000-abc_0',
      output_index: 0,
      delta: '{"city":',
    });
    assert.deepEqual(events[5], {
      type: 'response.function_call_arguments.done',
      sequence_number: 5,
      item_id: 'fc_1730000000-abc_0',
      output_index: 0,
      name: 'weather',
      arguments: '{"city":"Paris"}',
    });
    assert.equal(events[7].output_index, 1);
    const completed = events.at(-1).response;
    assert.deepEqual(completed.output, [
      {
        type: 'function_call',
        id: 'fc_1730000000-abc_0',
        call_id: 'call_a',
        name: 'weather',
        arguments: '{"city":"Paris"}',
        status: 'completed',
      },
      {
        type: 'function_call',
        id: 'fc_1730000000-abc_1',
        call_id: 'call_b',
        name: 'time',
        arguments: '{}',
        status: 'completed',
      },
    ]);
    assert.equal(completed.output_text, '');
    assert.deepEqual(accumulate(events).output, completed.output);
  });

  it('holds a call that starts while another is open until that one ends, its arguments whole', () => {
    // An upstream that streams two calls' arguments interleaved (index 0, 1, 0, 1).
    const { text } = encode([
      { type: 'tool-call-start', index: 0, callId: 'call_a', name: 'weather' },
      { type: 'tool-call-start', index: 1, callId: 'call_b', name: 'time' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{"tz":' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '"Paris"}' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '"CET"}' },
      { type: 'tool-call-end', index: 0 },
      { type: 'tool-call-end', index: 1 },
      ...finish('tool-calls'),
    ]);
    const events = frames(text);
    checkSequence(events);
    assert.deepEqual(types(events), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    // Every done event carries the call's whole arguments: a client acting on
    // output_item.done runs the tool with them.
    const done = events.filter((event) => event.type === 'response.output_item.done');
    assert.deepEqual(
      done.map((event) => [event.output_index, event.item.call_id, event.item.arguments, event.item.status]),
      [
        [0, 'call_a', '{"city":"Paris"}', 'completed'],
        [1, 'call_b', '{"tz":"CET"}', 'completed'],
      ],
    );
    assert.deepEqual(events[7].item, {
      type: 'function_call',
      id: 'fc_1730000000-abc_1',
      call_id: 'call_b',
      name: 'time',
      arguments: '',
      status: 'in_progress',
    });
    assert.equal(events[8].delta, '{"tz":"CET"}');
    const completed = events.at(-1).response;
    assert.deepEqual(accumulate(events).output, completed.output);
    assert.deepEqual(
      completed.output.map((item: { arguments: string }) => item.arguments),
      ['{"city":"Paris"}', '{"tz":"CET"}'],
    );
  });

  it('releases held calls, closed, when text starts or the stream fails', () => {
    const failure = { status: 502, message: 'cut', errorType: 'provider_unavailable' } as GenerationFailure;
    const { text } = encode(
      [
        { type: 'tool-call-start', index: 0, callId: 'call_a', name: 'weather' },
        { type: 'tool-call-start', index: 1, callId: 'call_b', name: 'time' },
        { type: 'tool-call-delta', index: 1, argumentsDelta: '{}' },
      ],
      { failure },
    );
    const events = frames(text);
    checkSequence(events);
    const completed = events.at(-1).response;
    assert.equal(completed.status, 'failed');
    assert.deepEqual(
      completed.output.map((item: { call_id: string; arguments: string }) => [item.call_id, item.arguments]),
      [
        ['call_a', ''],
        ['call_b', '{}'],
      ],
    );
    assert.deepEqual(accumulate(events).output, completed.output);
    const withText = frames(
      encode([
        { type: 'tool-call-start', index: 0, callId: 'call_a', name: 'weather' },
        { type: 'tool-call-start', index: 1, callId: 'call_b', name: 'time' },
        { type: 'text-delta', delta: 'Both asked.' },
        ...finish('tool-calls'),
      ]).text,
    );
    checkSequence(withText);
    assert.deepEqual(
      accumulate(withText).output.map((item: { type: string }) => item.type),
      ['function_call', 'function_call', 'message'],
    );
  });

  it('streams reasoning as a reasoning item before the message', () => {
    const { text } = encode([
      { type: 'reasoning-delta', delta: 'Think' },
      { type: 'reasoning-delta', delta: 'ing.' },
      { type: 'text-delta', delta: 'Answer' },
      ...finish(),
    ]);
    const events = frames(text);
    checkSequence(events);
    assert.deepEqual(types(events), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    assert.deepEqual(events[2].item, {
      type: 'reasoning',
      id: 'rs_1730000000-abc',
      status: 'in_progress',
      summary: [],
      content: [],
    });
    assert.deepEqual(events[3].part, { type: 'reasoning_text', text: '' });
    assert.deepEqual(events[4], {
      type: 'response.reasoning_text.delta',
      sequence_number: 4,
      item_id: 'rs_1730000000-abc',
      output_index: 0,
      content_index: 0,
      delta: 'Think',
    });
    assert.equal(events[6].text, 'Thinking.');
    assert.equal(events[9].output_index, 1);
    const completed = events.at(-1).response;
    assert.deepEqual(completed.output[0], {
      type: 'reasoning',
      id: 'rs_1730000000-abc',
      status: 'completed',
      summary: [],
      content: [{ type: 'reasoning_text', text: 'Thinking.' }],
    });
    assert.equal(completed.output[1].content[0].text, 'Answer');
    assert.equal(completed.output_text, 'Answer');
    assert.deepEqual(accumulate(events).output, completed.output);
  });

  it('closes a reasoning item with what the provider signed, and opens one for a signature alone', () => {
    const { text } = encode([
      // Anthropic: signed thinking, then a redacted block, then the call.
      { type: 'reasoning-delta', delta: 'Paris first.' },
      { type: 'reasoning-signature', signature: 'sig-1', format: 'anthropic-claude-v1' },
      { type: 'reasoning-redacted', data: 'opaque', format: 'anthropic-claude-v1' },
      { type: 'tool-call-start', index: 0, callId: 'c0', name: 'weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
      { type: 'tool-call-end', index: 0 },
      // Gemini: the next call's signature just before it, then a text's after the text.
      { type: 'reasoning-signature', signature: 'g-call', format: 'google-gemini-v1', callId: 'c1' },
      { type: 'tool-call-start', index: 1, callId: 'c1', name: 'weather' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{}' },
      { type: 'tool-call-end', index: 1 },
      { type: 'text-delta', delta: 'Done.' },
      { type: 'reasoning-signature', signature: 'g-text', format: 'google-gemini-v1' },
      ...finish('tool-calls'),
    ]);
    const events = frames(text);
    checkSequence(events);
    const output = events.at(-1).response.output;
    assert.deepEqual(accumulate(events).output, output);
    const shape = (item: any) =>
      item.type === 'reasoning'
        ? {
            text: item.content[0]?.text,
            signature: item.signature,
            encrypted: item.encrypted_content,
            format: item.format,
          }
        : item.type === 'function_call'
          ? { call: item.call_id }
          : { message: item.content[0].text };
    assert.deepEqual(output.map(shape), [
      { text: 'Paris first.', signature: 'sig-1', encrypted: undefined, format: 'anthropic-claude-v1' },
      {
        text: '',
        signature: undefined,
        encrypted: 'anthropic-claude-v1:opaque',
        format: 'anthropic-claude-v1',
      },
      { call: 'c0' },
      { text: '', signature: undefined, encrypted: 'google-gemini-v1:g-call', format: 'google-gemini-v1' },
      { call: 'c1' },
      { message: 'Done.' },
      { text: '', signature: undefined, encrypted: 'google-gemini-v1:g-text', format: 'google-gemini-v1' },
    ]);
    // Each reasoning item's done event carries its seal, as the final response does.
    const done = events.filter(
      (event) => event.type === 'response.output_item.done' && event.item.type === 'reasoning',
    );
    assert.deepEqual(
      done.map((event) => event.item),
      output.filter((item: any) => item.type === 'reasoning'),
    );
  });

  it('gives a message that resumes after a tool call its own item and id', () => {
    const { text } = encode([
      { type: 'text-delta', delta: 'Let me check.' },
      { type: 'tool-call-start', index: 0, callId: 'call_a', name: 'weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
      { type: 'text-delta', delta: 'Done.' },
      ...finish(),
    ]);
    const events = frames(text);
    checkSequence(events);
    const completed = events.at(-1).response;
    assert.deepEqual(
      completed.output.map((item: any) => [item.type, item.id]),
      [
        ['message', 'msg_1730000000-abc'],
        ['function_call', 'fc_1730000000-abc_0'],
        ['message', 'msg_1730000000-abc_1'],
      ],
    );
    assert.equal(completed.output_text, 'Let me check.Done.');
    assert.deepEqual(accumulate(events).output, completed.output);
  });

  it('ends as incomplete when the output hit the token limit', () => {
    const { text } = encode([{ type: 'text-delta', delta: 'Cut sh' }, ...finish('length')]);
    const events = frames(text);
    checkSequence(events);
    assert.equal(events.at(-2).type, 'response.output_item.done');
    assert.equal(events.at(-2).item.status, 'incomplete');
    const last = events.at(-1);
    assert.equal(last.type, 'response.incomplete');
    assert.equal(last.response.status, 'incomplete');
    assert.deepEqual(last.response.incomplete_details, { reason: 'max_output_tokens' });
    assert.deepEqual(accumulate(events).output, last.response.output);
  });

  it('fails after output with response.failed, the open item incomplete and the typed error', () => {
    const { text } = encode([{ type: 'text-delta', delta: 'Partial' }], {
      failure: { status: 502, message: 'Provider returned error', errorType: 'provider_unavailable' },
    });
    const events = frames(text);
    checkSequence(events);
    assert.deepEqual(types(events).slice(-4), [
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.failed',
    ]);
    assert.equal(events.at(-2).item.status, 'incomplete');
    const failed = events.at(-1).response;
    assert.equal(failed.status, 'failed');
    assert.deepEqual(failed.error, { code: 'server_error', message: 'Provider returned error' });
    assert.equal(failed.error_type, 'provider_unavailable');
    assert.equal(failed.completed_at, null);
    assert.equal(failed.output[0].content[0].text, 'Partial');
    assert.equal(failed.usage.input_tokens, 10);
    assert.deepEqual(accumulate(events).output, failed.output);
  });

  it('maps error types to the native error codes', () => {
    const codeFor = (errorType: string) =>
      frames(encode([], { failure: { status: 400, message: 'x', errorType } }).text).at(-1).response.error
        ?.code;
    assert.equal(codeFor('rate_limit_exceeded'), 'rate_limit_exceeded');
    assert.equal(codeFor('invalid_request'), 'invalid_prompt');
    assert.equal(codeFor('provider_overloaded'), 'server_error');
    assert.equal(codeFor('timeout'), 'server_error');
  });

  it('turns a length failure into an incomplete response, not a failed one', () => {
    const events = frames(
      encode([{ type: 'text-delta', delta: 'Long' }], {
        failure: { status: 400, message: 'too long', errorType: 'context_length_exceeded' },
      }).text,
    );
    checkSequence(events);
    const last = events.at(-1);
    assert.equal(last.type, 'response.incomplete');
    assert.equal(last.response.error, null);
    assert.deepEqual(last.response.incomplete_details, { reason: 'max_output_tokens' });
  });

  it('puts switchyard_metadata on the final response only when asked for', () => {
    const metadata = { requested: 'openai/gpt-4o', strategy: 'direct' };
    const events = frames(
      encode([{ type: 'text-delta', delta: 'Hi' }, ...finish()], { summary: { ...summary, metadata } }).text,
    );
    assert.deepEqual(events.at(-1).response.switchyard_metadata, metadata);
    assert.ok(events.slice(0, -1).every((event) => !JSON.stringify(event).includes('switchyard_metadata')));
    const plain = frames(encode([{ type: 'text-delta', delta: 'Hi' }, ...finish()]).text);
    assert.equal('switchyard_metadata' in plain.at(-1).response, false);
  });

  it('writes nothing once the stream has ended', () => {
    const { encoder } = encode([{ type: 'text-delta', delta: 'Hi' }, ...finish()]);
    assert.equal(encoder.part({ type: 'text-delta', delta: 'late' }), '');
    assert.equal(encoder.end(summary), '');
    assert.equal(encoder.fail({ status: 500, message: 'x', errorType: 'server' }, summary), '');
  });

  it('escapes deltas so every frame stays one line of valid JSON', () => {
    const tricky = 'line one\nline two\n\ndata: "quoted" \u2028 \\ end';
    const events = frames(encode([{ type: 'text-delta', delta: tricky }, ...finish()]).text);
    assert.equal(events.find((event) => event.type === 'response.output_text.delta').delta, tricky);
    assert.equal(events.at(-1).response.output_text, tricky);
  });

  it('streams an empty answer as created, in_progress and completed', () => {
    const events = frames(encode(finish()).text);
    assert.deepEqual(types(events), ['response.created', 'response.in_progress', 'response.completed']);
    assert.deepEqual(events.at(-1).response.output, []);
  });
});
