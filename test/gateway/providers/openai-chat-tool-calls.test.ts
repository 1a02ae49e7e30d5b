import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createToolCallReader } from '../../../src/gateway/providers/openai-chat/openai-chat-tool-calls.js';

// The reader alone, for shapes that are awkward to stream from a fake upstream; the adapter's
// tests (openai-chat-adapter.test.ts) and test/gateway/inference/streamed-tool-calls.test.ts drive
// it through real streams.
describe('OpenAI-compatible tool-call reader', () => {
  it('reads a delta with an id and another name under the index of a call that had no id as a new call', () => {
    const reader = createToolCallReader();
    const parts = [
      ...reader.read({ index: 0, name: 'f', arguments: '{"x":1}' }),
      ...reader.read({ index: 0, id: 'c2', name: 'g', arguments: '{"y":2}' }),
      ...reader.end(),
    ];
    assert.deepEqual(parts, [
      { type: 'tool-call-start', index: 0, callId: 'call_0', name: 'f' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"x":1}' },
      { type: 'tool-call-end', index: 0 },
      { type: 'tool-call-start', index: 1, callId: 'c2', name: 'g' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{"y":2}' },
      { type: 'tool-call-end', index: 1 },
    ]);
  });

  it('keeps one call when its name is repeated on every chunk and its id comes late', () => {
    const reader = createToolCallReader();
    const parts = [
      ...reader.read({ index: 0, name: 'f', arguments: '{"x":' }),
      ...reader.read({ index: 0, id: 'c1', name: 'f', arguments: '1}' }),
      ...reader.end(),
    ];
    assert.deepEqual(
      parts.map((part) => part.type),
      ['tool-call-start', 'tool-call-delta', 'tool-call-delta', 'tool-call-end'],
    );
  });

  it('joins a name whose first piece came with the id, starting the call when its arguments begin', () => {
    const reader = createToolCallReader();
    assert.deepEqual(reader.read({ index: 0, id: 'c1', name: 'get_', arguments: '' }), []);
    assert.deepEqual(reader.read({ index: 0, name: 'weather' }), []);
    assert.deepEqual(reader.read({ index: 0, arguments: '{"city":' }), [
      { type: 'tool-call-start', index: 0, callId: 'c1', name: 'get_weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
    ]);
    assert.deepEqual(reader.read({ index: 0, arguments: '"Oslo"}' }), [
      { type: 'tool-call-delta', index: 0, argumentsDelta: '"Oslo"}' },
    ]);
    assert.deepEqual(reader.end(), [{ type: 'tool-call-end', index: 0 }]);
  });

  it("starts a call at once when its name is one of the request's tools that begins no other", () => {
    const reader = createToolCallReader(['get_weather', 'search', 'search_web']);
    assert.deepEqual(reader.read({ index: 0, id: 'c1', name: 'get_weather', arguments: '' }), [
      { type: 'tool-call-start', index: 0, callId: 'c1', name: 'get_weather' },
    ]);
    // "search" begins "search_web": the call waits for its arguments, so a piece "_web" can join it.
    assert.deepEqual(reader.read({ index: 1, id: 'c2', name: 'search', arguments: '' }), []);
    assert.deepEqual(reader.read({ index: 1, name: '_web' }), [
      { type: 'tool-call-start', index: 1, callId: 'c2', name: 'search_web' },
    ]);
    // A first piece that is a whole name of none of the tools waits; it starts once the pieces
    // make one.
    const pieces = createToolCallReader(['get_weather']);
    assert.deepEqual(pieces.read({ index: 0, id: 'c3', name: 'get_' }), []);
    assert.deepEqual(pieces.read({ index: 0, name: 'weather' }), [
      { type: 'tool-call-start', index: 0, callId: 'c3', name: 'get_weather' },
    ]);
  });

  it('holds a declared name that came without an id for its arguments, so a late id is kept', () => {
    const reader = createToolCallReader(['get_weather']);
    assert.deepEqual(reader.read({ index: 0, name: 'get_weather' }), []);
    assert.deepEqual(reader.read({ index: 0, id: 'up_1', arguments: '{}' }), [
      { type: 'tool-call-start', index: 0, callId: 'up_1', name: 'get_weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
    ]);
  });

  it("starts OpenAI's form (id and whole name, then argument pieces) with its first argument piece", () => {
    const reader = createToolCallReader();
    assert.deepEqual(reader.read({ index: 0, id: 'c1', name: 'get_weather', arguments: '' }), []);
    assert.deepEqual(reader.read({ index: 0, arguments: '{}' }), [
      { type: 'tool-call-start', index: 0, callId: 'c1', name: 'get_weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
    ]);
  });

  it('starts a call whose name came in pieces without arguments when another begins or at the finish', () => {
    const reader = createToolCallReader();
    reader.read({ index: 0, id: 'c1', name: 'get_' });
    reader.read({ index: 0, name: 'weather' });
    assert.deepEqual(reader.read({ index: 1, id: 'c2', name: 'get_', arguments: '' }), [
      { type: 'tool-call-start', index: 0, callId: 'c1', name: 'get_weather' },
    ]);
    assert.deepEqual(reader.read({ index: 1, name: 'time' }), []);
    assert.deepEqual(reader.finish(), [
      { type: 'tool-call-start', index: 1, callId: 'c2', name: 'get_time' },
    ]);
    assert.deepEqual(reader.end(), [
      { type: 'tool-call-end', index: 0 },
      { type: 'tool-call-end', index: 1 },
    ]);
  });

  it('reads 50,000 calls, each started once and ended once', () => {
    const reader = createToolCallReader();
    let starts = 0;
    for (let index = 0; index < 50_000; index += 1) {
      for (const part of reader.read({ index, id: `c${index}`, name: 'f', arguments: '{}' }))
        if (part.type === 'tool-call-start') starts += 1;
    }
    assert.equal(starts, 50_000);
    assert.equal(reader.end().length, 50_000, 'every call ends');
  });
});
