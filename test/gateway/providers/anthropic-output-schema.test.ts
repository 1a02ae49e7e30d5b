import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { transformJSONSchema } from '@anthropic-ai/sdk/lib/transform-json-schema';
import { anthropicOutputSchema } from '../../../src/gateway/providers/anthropic/anthropic-output-schema.js';
import { UnsupportedRequestError } from '../../../src/spec/upstream-error.js';

/**
 * What zod 4's `z.toJSONSchema(schema, { reused: 'ref' })` makes of a typical object: string
 * lengths, an email and a URL, integer bounds, an array of 1 to 5 tags, an enum, a nullable, a
 * literal, a datetime, a positive number and an address schema used twice (`$defs`).
 */
const ZOD_PERSON = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100, description: 'Full name' },
    email: { type: 'string', format: 'email', pattern: '^[^@]+@[^@]+$' },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    website: { type: 'string', format: 'uri' },
    tags: { minItems: 1, maxItems: 5, type: 'array', items: { $ref: '#/$defs/__schema0' } },
    role: { type: 'string', enum: ['admin', 'user'] },
    nickname: { type: ['string', 'null'] },
    home: { $ref: '#/$defs/__schema1' },
    work: { $ref: '#/$defs/__schema1' },
    kind: { type: 'string', const: 'person' },
    joined: { type: 'string', format: 'date-time', pattern: '^\\d{4}-\\d\\d-\\d\\dT' },
    score: { type: 'number', exclusiveMinimum: 0 },
  },
  required: ['name', 'email', 'age', 'tags', 'role', 'nickname', 'home', 'kind', 'joined', 'score'],
  additionalProperties: false,
  $defs: {
    __schema0: { type: 'string' },
    __schema1: {
      type: 'object',
      properties: {
        street: { type: 'string', minLength: 1 },
        city: { type: 'string' },
        zip: { type: 'string', pattern: '^\\d{5}$' },
      },
      required: ['street', 'city', 'zip'],
      additionalProperties: false,
    },
  },
};

describe("a response format's schema as Anthropic's structured outputs take it", () => {
  it("reshapes a zod schema exactly as the Anthropic SDK's own helper does", () => {
    const before = structuredClone(ZOD_PERSON);
    const reshaped = anthropicOutputSchema(ZOD_PERSON);
    assert.deepEqual(reshaped, transformJSONSchema(ZOD_PERSON));
    assert.deepEqual(ZOD_PERSON, before, "the client's schema is not changed");
    const properties = reshaped.properties as Record<string, Record<string, unknown>>;
    // What the grammar cannot hold is text the model still reads.
    assert.deepEqual(properties.age, { type: 'integer', description: '{minimum: 0, maximum: 150}' });
    assert.deepEqual(properties.name, {
      type: 'string',
      description: 'Full name\n\n{minLength: 1, maxLength: 100}',
    });
    assert.deepEqual(properties.tags, {
      type: 'array',
      items: { $ref: '#/$defs/__schema0' },
      minItems: 1,
      description: '{maxItems: 5}',
    });
    assert.deepEqual(properties.role, { enum: ['admin', 'user'] });
    assert.equal(reshaped.$schema, undefined);
  });

  it('closes every object, oneOf becoming anyOf, and keeps only the formats Anthropic knows', () => {
    const reshaped = anthropicOutputSchema({
      type: 'object',
      properties: {
        shape: {
          oneOf: [
            { type: 'object', properties: { radius: { type: 'number' } } },
            { type: 'object', properties: { side: { type: 'number' } }, additionalProperties: true },
          ],
        },
        free: { type: 'object' },
        id: { type: 'string', format: 'uuid' },
        path: { type: 'string', format: 'uri-reference' },
        items: { type: 'array', items: { type: 'integer' }, minItems: 0, uniqueItems: true },
      },
    });
    assert.deepEqual(reshaped, {
      type: 'object',
      properties: {
        shape: {
          anyOf: [
            { type: 'object', properties: { radius: { type: 'number' } }, additionalProperties: false },
            { type: 'object', properties: { side: { type: 'number' } }, additionalProperties: false },
          ],
        },
        free: { type: 'object', properties: {}, additionalProperties: false },
        id: { type: 'string', format: 'uuid' },
        path: { type: 'string', description: '{format: "uri-reference"}' },
        items: {
          type: 'array',
          items: { type: 'integer' },
          minItems: 0,
          description: '{uniqueItems: true}',
        },
      },
      additionalProperties: false,
    });
  });

  it('reshapes draft-07 definitions like $defs and closes an object whose type is a list', () => {
    // zod-to-json-schema (zod 3) and OpenAI-style strict schemas: `definitions`, nullable type lists.
    const reshaped = anthropicOutputSchema({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        owner: { $ref: '#/definitions/Person' },
        backup: { type: ['object', 'null'], properties: { name: { type: 'string', maxLength: 9 } } },
      },
      required: ['owner', 'backup'],
      definitions: {
        Person: { type: 'object', properties: { age: { type: 'integer', minimum: 18 } } },
      },
    });
    assert.deepEqual(reshaped, {
      definitions: {
        Person: {
          type: 'object',
          properties: { age: { type: 'integer', description: '{minimum: 18}' } },
          additionalProperties: false,
        },
      },
      type: 'object',
      properties: {
        owner: { $ref: '#/definitions/Person' },
        backup: {
          type: ['object', 'null'],
          properties: { name: { type: 'string', description: '{maxLength: 9}' } },
          additionalProperties: false,
        },
      },
      required: ['owner', 'backup'],
      additionalProperties: false,
    });
  });

  it('refuses what it cannot express, naming the node, as a request this protocol cannot carry', () => {
    const refused = (schema: Record<string, unknown>, pattern: RegExp) =>
      assert.throws(
        () => anthropicOutputSchema(schema),
        (error: unknown) => error instanceof UnsupportedRequestError && pattern.test(error.message),
      );
    // Anything at all (zod's z.any()): no type to compile.
    refused(
      { type: 'object', properties: { extra: {} } },
      /at #\/properties\/extra: every node needs a type/,
    );
    // A map (zod's z.record()): closing it would allow only {}.
    refused(
      {
        type: 'object',
        properties: { scores: { type: 'object', additionalProperties: { type: 'number' } } },
      },
      /at #\/properties\/scores: objects must be closed/,
    );
    // An open object with no properties of its own (Pydantic's dict[str, Any], zod's
    // z.record(z.any())): closing it would allow only {} too.
    for (const additionalProperties of [true, {}])
      refused(
        { type: 'object', properties: { meta: { type: 'object', additionalProperties } } },
        /at #\/properties\/meta: objects must be closed/,
      );
    // One with properties of its own is closed, keeping what it describes; an empty one is {}.
    assert.deepEqual(
      anthropicOutputSchema({
        type: 'object',
        properties: { a: { type: 'string' } },
        additionalProperties: true,
      }),
      { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false },
    );
    assert.deepEqual(anthropicOutputSchema({ type: 'object' }), {
      type: 'object',
      properties: {},
      additionalProperties: false,
    });
    refused(
      { type: 'object', properties: { a: { $ref: 'https://example.com/a.json' } } },
      /only references inside the schema/,
    );
    refused({ type: 'array', items: true }, /at #\/items: a schema must be an object/);
    // Two combinators on one node: keeping one would drop the other's constraint.
    refused(
      {
        type: 'object',
        properties: {
          v: { anyOf: [{ type: 'string' }, { type: 'number' }], oneOf: [{ type: 'string' }] },
        },
      },
      /at #\/properties\/v: anyOf, oneOf and allOf go one to a node/,
    );
  });
});
