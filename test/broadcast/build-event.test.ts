import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildBroadcastEvent, eventRequestOf } from '../../src/broadcast/build-event.js';
import type { GenerationRequest } from '../../src/spec/generation-request.js';
import { sampleGenerationRecord } from '../helpers/generation-record.js';

const IMAGE = `data:image/png;base64,${'A'.repeat(4096)}`;

/** A request with everything an event leaves out: media, reasoning signatures, cache marks, tool schemas. */
const request: Omit<GenerationRequest, 'model'> = {
  instructions: 'Be brief.',
  input: [
    {
      type: 'message',
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this picture?', cacheControl: { type: 'ephemeral' } },
        { type: 'image', url: IMAGE },
      ],
    },
    {
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'Let me look closer.' }],
      reasoning: [{ text: 'thinking', signature: 'S'.repeat(2048) }],
    },
    {
      type: 'function-call',
      callId: 'call-1',
      name: 'zoom',
      arguments: '{"factor":2}',
      reasoning: [{ text: 'zoom in', signature: 'T'.repeat(512) }],
    },
    {
      type: 'function-call-output',
      callId: 'call-1',
      output: 'zoomed',
      media: [{ type: 'image', url: IMAGE }],
      isError: false,
    },
  ],
  temperature: 0.2,
  tools: [
    {
      type: 'function',
      name: 'zoom',
      description: 'Zooms in',
      parameters: { type: 'object', properties: { factor: { type: 'number' } } },
    },
  ],
};

describe('the request as a broadcast event keeps it', () => {
  it('keeps the text, the calls and the parameters, and nothing else', () => {
    const kept = eventRequestOf(request);
    assert.deepEqual(kept, {
      instructions: 'Be brief.',
      input: [
        {
          type: 'message',
          role: 'user',
          content: [{ type: 'text', text: 'What is in this picture?', cacheControl: { type: 'ephemeral' } }],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Let me look closer.' }] },
        { type: 'function-call', callId: 'call-1', name: 'zoom', arguments: '{"factor":2}' },
        { type: 'function-call-output', callId: 'call-1', output: 'zoomed' },
      ],
      parameters: { temperature: 0.2 },
      toolsOffered: 1,
    });
    assert.ok(JSON.stringify(kept).length < 1_000, 'no media or signature travels with it');
  });

  it('builds the same event from it as the conversation reads', () => {
    const event = buildBroadcastEvent({
      record: sampleGenerationRecord(),
      request: eventRequestOf(request),
      output: { text: 'A cat.', toolCalls: [] },
      keyName: 'app',
      region: 'global',
      startedAtMs: 1_700_000_000_000,
      endedAtMs: 1_700_000_001_250,
    });
    assert.deepEqual(event.input, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is in this picture?' },
      { role: 'assistant', content: 'Let me look closer.' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'call-1', name: 'zoom', arguments: '{"factor":2}' }],
      },
      { role: 'tool', content: 'zoomed', tool_call_id: 'call-1' },
    ]);
    assert.deepEqual(event.output, [{ role: 'assistant', content: 'A cat.' }]);
    assert.deepEqual(event.parameters, { temperature: 0.2 });
    assert.deepEqual(event.tools, { offered: 1, called: 0 });
  });
});
