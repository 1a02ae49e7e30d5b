// Signed reasoning sent back by clients, read into the canonical items it travels on: which item a
// block goes with, and whose it is (`format`), on each surface. What the upstreams then receive is
// tested in the adapters' tests and end to end in test/sdk/reasoning-round-trip.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { attachReasoningDetails } from '../../../src/gateway/dialects/chat-completions/chat-reasoning-details.js';
import { convertMessagesInput } from '../../../src/gateway/dialects/messages/convert-messages-input.js';
import { convertResponsesInput } from '../../../src/gateway/dialects/responses/convert-responses-input.js';
import type { InputItem } from '../../../src/spec/generation-request.js';

const user = (text: string) => ({ role: 'user', content: text });
const reasoningOf = (items: InputItem[]) =>
  items.map((item) => (item.type === 'function-call-output' ? undefined : item.reasoning));

describe('signed reasoning sent back', () => {
  it('responses: a reasoning item goes with the answer after it; labels and formats say whose', () => {
    const items = convertResponsesInput([
      user('Weather?'),
      // Labelled: whose it is survives a client that dropped `format`.
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'google-gemini-v1:G1' },
      { type: 'function_call', call_id: 'c1', name: 'weather', arguments: '{}' },
      // Unlabelled, no format: nobody's (OpenAI's own, say), never sent to a provider.
      { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: 'gAAAAopenai' },
      // Anthropic's signature with its format, and its text.
      {
        type: 'reasoning',
        content: [{ type: 'reasoning_text', text: 'Rome next.' }],
        signature: 'sig-2',
        format: 'anthropic-claude-v1',
      },
      // Empty and unsigned items carry nothing back.
      { type: 'reasoning', encrypted_content: '' },
      { type: 'reasoning', content: [{ type: 'reasoning_text', text: 'unsigned' }] },
      { type: 'function_call', call_id: 'c2', name: 'weather', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'sunny' },
      { type: 'function_call_output', call_id: 'c2', output: 'sunny' },
    ]);
    assert.deepEqual(reasoningOf(items), [
      undefined,
      [{ text: '', signature: 'G1', format: 'google-gemini-v1' }],
      [
        { text: '', redactedData: 'gAAAAopenai', format: 'unknown' },
        { text: 'Rome next.', signature: 'sig-2', format: 'anthropic-claude-v1' },
      ],
      undefined,
      undefined,
    ]);
  });

  it("responses: a Gemini text's signature after its message goes back with that message", () => {
    const items = convertResponsesInput([
      user('Hi'),
      { role: 'assistant', content: [{ type: 'output_text', text: 'Hello.' }] },
      { type: 'reasoning', encrypted_content: 'google-gemini-v1:T1', format: 'google-gemini-v1' },
      // Anthropic's reasoning left at a turn's end has nothing to go with.
      { type: 'reasoning', signature: 'sig', format: 'anthropic-claude-v1' },
      user('And now?'),
    ]);
    assert.deepEqual(reasoningOf(items), [
      undefined,
      [{ text: '', signature: 'T1', format: 'google-gemini-v1' }],
      undefined,
    ]);
  });

  it('responses: a reasoning item of the wrong shape is a 400 naming the field', () => {
    assert.throws(
      () => convertResponsesInput([user('Hi'), { type: 'reasoning', signature: 5 }, user('x')]),
      /body\.input\.1\.signature must be string/,
    );
    assert.throws(
      () =>
        convertResponsesInput([user('Hi'), { type: 'reasoning', signature: 's', content: 'x' }, user('x')]),
      /body\.input\.1\.content must be an array of reasoning_text parts/,
    );
  });

  it("messages: a signature's label says whose it is; a Gemini text's trailing signature stays with the text", () => {
    const items = convertMessagesInput([
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Paris.', signature: 'sig-1' },
          { type: 'thinking', thinking: '', signature: 'google-gemini-v1:G1' },
          { type: 'tool_use', id: 'c1', name: 'weather', input: {} },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'sunny' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Sunny.' },
          { type: 'thinking', thinking: '', signature: 'google-gemini-v1:T1' },
        ],
      },
    ] as never);
    assert.deepEqual(reasoningOf(items), [
      undefined,
      [
        { text: 'Paris.', signature: 'sig-1', format: 'anthropic-claude-v1' },
        { text: '', signature: 'G1', format: 'google-gemini-v1' },
      ],
      undefined,
      [{ text: '', signature: 'T1', format: 'google-gemini-v1' }],
    ]);
  });

  it('chat: an entry goes with the tool call it names, the rest ahead of the turn; no format is nobody’s', () => {
    const turn: InputItem[] = [
      { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Checking.' }] },
      { type: 'function-call', callId: 'c1', name: 'weather', arguments: '{}' },
      { type: 'function-call', callId: 'c2', name: 'weather', arguments: '{}' },
    ];
    attachReasoningDetails(
      [
        { type: 'reasoning.text', text: 'First.', signature: 'sig-1', format: 'anthropic-claude-v1' },
        { type: 'reasoning.encrypted', data: 'between', id: 'c2', format: 'anthropic-claude-v1' },
        { type: 'reasoning.encrypted', data: 'G1', id: 'c1', format: 'google-gemini-v1' },
        { type: 'reasoning.encrypted', data: 'no-format' },
        { type: 'reasoning.encrypted', data: '', format: 'anthropic-claude-v1' },
        { type: 'reasoning.text', text: 'unsigned', format: 'anthropic-claude-v1' },
        { type: 'reasoning.summary', summary: 'A summary.' },
        { type: 'reasoning.future' },
      ],
      turn,
    );
    assert.deepEqual(reasoningOf(turn), [
      [
        { text: 'First.', signature: 'sig-1', format: 'anthropic-claude-v1' },
        { text: '', redactedData: 'no-format', format: 'unknown' },
      ],
      [{ text: '', signature: 'G1', format: 'google-gemini-v1' }],
      [{ text: '', redactedData: 'between', format: 'anthropic-claude-v1' }],
    ]);
  });
});
