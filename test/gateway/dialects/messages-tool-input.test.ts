import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
// The parser the official SDK's MessageStream reads accumulated input_json_delta fragments with.
import { partialParse } from '@anthropic-ai/sdk/_vendor/partial-json-parser/parser';
import { JsonObjectPrefix, toolInput } from '../../../src/gateway/dialects/messages/tool-input.js';
import { MAX_JSON_DEPTH } from '../../../src/platform/json-depth.js';

/** What a streamed client is given of `text` fed in `pieces`: the accepted part of each, leading whitespace left out. */
function streamed(pieces: string[]): string {
  const reader = new JsonObjectPrefix();
  let sent = '';
  for (const piece of pieces) {
    const accepted = piece.slice(0, reader.feed(piece));
    sent += sent === '' ? accepted.trimStart() : accepted;
  }
  return sent;
}

/** What the SDK's MessageStream makes of the fragments it accumulated (`{}` when none came). */
const sdkReads = (sent: string): unknown => (sent === '' ? {} : partialParse(sent));

/** A small deterministic generator, so a failure names its seed and replays. */
function random(seed: number) {
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  return { next, pick };
}

const STRING_PIECES = [
  'a',
  'Paris',
  ' ',
  'é',
  '😀',
  '\\n',
  '\\"',
  '\\\\',
  '\\/',
  '\\u00e9',
  '\\ud83d\\ude00',
  ':',
  ',',
];
const NUMBERS = ['0', '-0', '7', '-12', '3.25', '0.5', '1e3', '2E-7', '-4.5e+10', '100'];

/** JSON text of a random object, with random whitespace between its tokens. */
function jsonObject(rng: ReturnType<typeof random>, depth = 0): string {
  const space = () => rng.pick(['', '', '', ' ', '\n  ', '\t']);
  const string = () => {
    let text = '';
    const length = Math.floor(rng.next() * 4);
    for (let index = 0; index < length; index += 1) text += rng.pick(STRING_PIECES);
    return `"${text}"`;
  };
  const value = (level: number): string => {
    const kind = Math.floor(rng.next() * (level < 3 ? 7 : 4));
    if (kind === 0) return string();
    if (kind === 1) return rng.pick(NUMBERS);
    if (kind === 2) return rng.pick(['true', 'false', 'null']);
    if (kind === 3) return string();
    if (kind === 4 || kind === 5) return object(level + 1);
    const items = Array.from(
      { length: Math.floor(rng.next() * 4) },
      () => space() + value(level + 1) + space(),
    );
    return `[${items.join(',')}]`;
  };
  const object = (level: number): string => {
    const members = Array.from(
      { length: Math.floor(rng.next() * 4) },
      () => `${space()}${string()}${space()}:${space()}${value(level)}${space()}`,
    );
    return `{${members.join(',')}}`;
  };
  return space() + object(depth) + space();
}

describe('messages: tool input as a client reads it', () => {
  it('reads arguments that are a JSON object as they are', () => {
    assert.deepEqual(toolInput('{"city":"Paris","days":[1,2]}'), { city: 'Paris', days: [1, 2] });
    assert.deepEqual(toolInput('  {"a": {"b": null}}\n'), { a: { b: null } });
  });

  it('reads arguments max_tokens cut off as the SDK reads them streamed: the members completed', () => {
    assert.deepEqual(toolInput('{"city": "Par'), {});
    assert.deepEqual(toolInput('{"city": "Paris", "unit": "cel'), { city: 'Paris' });
    assert.deepEqual(toolInput('{"city": "Paris", "days": 1'), { city: 'Paris' });
    assert.deepEqual(toolInput('{"city": "Paris", "days": 1 '), { city: 'Paris', days: 1 });
    assert.deepEqual(toolInput('{"a": [1, 2, {"b": tru'), { a: [1, 2, {}] });
    assert.deepEqual(toolInput('{"a": {"b": "c"}, "d": {'), { a: { b: 'c' }, d: {} });
    assert.deepEqual(toolInput('{"a"'), {});
    assert.deepEqual(toolInput(''), {});
    assert.deepEqual(toolInput('   '), {});
  });

  it('reads malformed arguments up to the fault', () => {
    // A regular expression's backslash, unescaped: JSON has no \d.
    assert.deepEqual(toolInput('{"path": "src", "pattern": "\\d+"}'), { path: 'src' });
    // A raw line break inside a string.
    assert.deepEqual(toolInput('{"a": 1, "text": "two\nlines"}'), { a: 1 });
    // The object written twice (an upstream that repeats the arguments at the end).
    assert.deepEqual(toolInput('{"city":"Paris"}{"city":"Paris"}'), { city: 'Paris' });
    assert.deepEqual(toolInput('{"city": Paris}'), {});
    assert.deepEqual(toolInput('{"n": 01}'), {});
    // Not an object at all.
    assert.deepEqual(toolInput('[1, 2]'), {});
    assert.deepEqual(toolInput('"Paris"'), {});
    assert.deepEqual(toolInput('city=Paris'), {});
  });

  it('reads arguments nesting deeper than MAX_JSON_DEPTH to the level that goes deeper', () => {
    const deep = `${'{"a":'.repeat(MAX_JSON_DEPTH + 5)}1${'}'.repeat(MAX_JSON_DEPTH + 5)}`;
    const sent = streamed([deep]);
    assert.equal(sent, '{"a":'.repeat(MAX_JSON_DEPTH));
    const expected = JSON.parse(`${'{"a":'.repeat(MAX_JSON_DEPTH - 1)}{}${'}'.repeat(MAX_JSON_DEPTH - 1)}`);
    assert.deepEqual(toolInput(deep), expected);
    assert.deepEqual(sdkReads(sent), expected);
  });

  it('streams the longest beginning that is a JSON object and withholds the rest', () => {
    assert.equal(streamed(['{"path": "src", ', '"pattern": "\\d+"}']), '{"path": "src", "pattern": "\\');
    assert.equal(streamed(['  ', '\n{"a"', ': 1}']), '{"a": 1}');
    assert.equal(streamed(['{"a":1}', '{"a":1}']), '{"a":1}');
    assert.equal(streamed(['[1]']), '');
    const reader = new JsonObjectPrefix();
    assert.equal(reader.feed('{"a": x'), 6);
    assert.equal(reader.feed('"more"}'), 0, 'nothing is accepted after a fault');
  });

  it('agrees with the SDK on every beginning of random objects, however they are split', () => {
    for (let seed = 1; seed <= 300; seed += 1) {
      const rng = random(seed);
      const text = jsonObject(rng);
      assert.deepEqual(toolInput(text), JSON.parse(text), `seed ${seed}: ${text}`);
      for (let end = 0; end <= text.length; end += 1) {
        const prefix = text.slice(0, end);
        // Split at a random point: the pieces a stream brings need not fall on tokens.
        const cut = Math.floor(rng.next() * (prefix.length + 1));
        const sent = streamed([prefix.slice(0, cut), prefix.slice(cut)]);
        assert.equal(sent, prefix.trimStart(), `seed ${seed}: a beginning is sent whole: ${prefix}`);
        assert.deepEqual(toolInput(prefix), sdkReads(sent), `seed ${seed}: ${JSON.stringify(prefix)}`);
      }
    }
  });

  it('never sends what the SDK cannot read, and the whole answer reads what it was sent', () => {
    const faults = [
      '\\d',
      '\\x',
      '\n',
      '\t',
      'x',
      '}',
      ']',
      ',',
      ':',
      '"',
      '{',
      '01',
      '-',
      '.5',
      'tru ',
      '\\u12g4',
    ];
    for (let seed = 1; seed <= 300; seed += 1) {
      const rng = random(seed * 7919);
      const text = jsonObject(rng);
      for (let attempt = 0; attempt < 10; attempt += 1) {
        const at = Math.floor(rng.next() * (text.length + 1));
        const broken = text.slice(0, at) + rng.pick(faults) + text.slice(at);
        const sent = streamed(broken.match(/[\s\S]{1,5}/g) ?? []);
        let read: unknown;
        assert.doesNotThrow(
          () => {
            read = sdkReads(sent);
          },
          `seed ${seed}: the SDK reads ${JSON.stringify(sent)}`,
        );
        assert.deepEqual(toolInput(broken), read, `seed ${seed}: ${JSON.stringify(broken)}`);
      }
    }
  });
});
