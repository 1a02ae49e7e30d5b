import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { anthropicToolInputSchema } from '../../../src/gateway/providers/anthropic/anthropic-tool-schema.js';
import { UnsupportedRequestError } from '../../../src/spec/upstream-error.js';

describe("a tool's parameters as Anthropic's input_schema", () => {
  it('keeps an object schema as it is and gives one without a type "object"', () => {
    const schema = { type: 'object', properties: { q: { type: 'string' } } };
    assert.equal(anthropicToolInputSchema('f', schema), schema);
    assert.deepEqual(anthropicToolInputSchema('f', {}), { type: 'object' });
    assert.throws(() => anthropicToolInputSchema('f', { type: 'string' }), UnsupportedRequestError);
  });

  it("merges allOf's members: their properties and required names", () => {
    assert.deepEqual(
      anthropicToolInputSchema('f', {
        type: 'object',
        properties: { a: { type: 'string' } },
        required: ['a'],
        allOf: [
          { properties: { b: { type: 'number' } }, required: ['b'] },
          { type: 'object', properties: { a: { type: 'integer' }, c: { type: 'boolean' } } },
        ],
      }),
      {
        type: 'object',
        // The root's own definition of a property wins over a member's.
        properties: { a: { type: 'string' }, b: { type: 'number' }, c: { type: 'boolean' } },
        required: ['a', 'b'],
      },
    );
  });

  it('merges oneOf and anyOf alternatives, keeping required only what all require, and names the forms', () => {
    const merged = anthropicToolInputSchema('f', {
      oneOf: [
        { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        { type: 'object', properties: { name: { type: 'string' }, exact: { type: 'boolean' } } },
      ],
    });
    assert.deepEqual(merged, {
      type: 'object',
      properties: { id: { type: 'string' }, name: { type: 'string' }, exact: { type: 'boolean' } },
      description: 'Exactly one of these forms: id; name + exact.',
    });
    // A property the alternatives define apart keeps every definition: a tagged union's tag keeps
    // each of its values (the forms name the same properties, so no note is added).
    assert.deepEqual(
      anthropicToolInputSchema('f', {
        oneOf: [
          { properties: { action: { const: 'start' }, id: { type: 'string' } }, required: ['action', 'id'] },
          { properties: { action: { const: 'stop' }, id: { type: 'string' } }, required: ['action', 'id'] },
        ],
      }),
      {
        type: 'object',
        properties: { action: { anyOf: [{ const: 'start' }, { const: 'stop' }] }, id: { type: 'string' } },
        required: ['action', 'id'],
      },
    );
  });

  it("drops a nullable root's null and merges the rest", () => {
    assert.deepEqual(
      anthropicToolInputSchema('f', {
        anyOf: [{ type: 'object', properties: { q: { type: 'string' } }, required: ['q'] }, { type: 'null' }],
      }),
      { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    );
  });

  it('quotes what it cannot merge (a $ref, a nested combinator) in the description, bounded', () => {
    const merged = anthropicToolInputSchema('f', {
      type: 'object',
      description: 'Find things.',
      properties: { q: { type: 'string' } },
      anyOf: [{ $ref: '#/$defs/A' }, { properties: { z: { type: 'string' } } }],
      $defs: { A: { type: 'object', properties: { a: { type: 'string' } } } },
    });
    assert.equal(merged.type, 'object');
    assert.equal(merged.anyOf, undefined);
    // The alternative that merges lends its properties (none required: the other is unread); the
    // one that does not is quoted.
    assert.deepEqual(merged.properties, { q: { type: 'string' }, z: { type: 'string' } });
    assert.equal(merged.required, undefined);
    assert.equal(
      merged.description,
      `Find things.\n\nThe arguments must also match: ${JSON.stringify({ anyOf: [{ $ref: '#/$defs/A' }] })}`,
    );
    const huge = anthropicToolInputSchema('f', {
      oneOf: [{ $ref: `#/${'x'.repeat(50_000)}` }],
    });
    assert.ok((huge.description as string).length < 2_100);
    // Malformed combinators (not a list, an empty list) are quoted, never thrown on.
    assert.equal(anthropicToolInputSchema('f', { anyOf: 'x' }).anyOf, undefined);
    assert.equal(anthropicToolInputSchema('f', { oneOf: [] }).oneOf, undefined);
    assert.equal(anthropicToolInputSchema('f', { allOf: [null, 3] }).allOf, undefined);
  });
});
