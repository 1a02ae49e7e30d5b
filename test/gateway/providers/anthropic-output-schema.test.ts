import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { transformJSONSchema } from '@anthropic-ai/sdk/lib/transform-json-schema';
import {
  anthropicOutputSchema,
  anthropicStrictToolSchema,
} from '../../../src/gateway/providers/anthropic/anthropic-output-schema.js';
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

  const refused = (schema: Record<string, unknown>, pattern: RegExp) =>
    assert.throws(
      () => anthropicOutputSchema(schema),
      (error: unknown) => error instanceof UnsupportedRequestError && pattern.test(error.message),
    );
  /** A closed object with one property `next`, `$ref` what it takes. */
  const node = (ref: string) => ({
    type: 'object',
    properties: { next: { $ref: ref } },
    additionalProperties: false,
  });

  it('refuses a recursive schema, whichever way its $ref leads back, and keeps $refs that only share', () => {
    const recursive = /recursive schemas are not supported/;
    // A linked list through the root itself, and a tree through a definition (OpenAI's strict mode takes both).
    refused(
      {
        type: 'object',
        properties: { value: { type: 'number' }, next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } },
      },
      /at #\/properties\/next\/anyOf\/0: recursive schemas are not supported: .* comes back to #$/,
    );
    refused(
      {
        type: 'object',
        properties: { root: { $ref: '#/$defs/node' } },
        $defs: {
          node: {
            type: 'object',
            properties: { children: { type: 'array', items: { $ref: '#/$defs/node' } } },
          },
        },
      },
      recursive,
    );
    // Through another definition, draft-07 style; from a root that is itself a $ref; to itself.
    refused(
      {
        type: 'object',
        properties: { head: { $ref: '#/definitions/Person' } },
        definitions: {
          Person: { type: 'object', properties: { team: { $ref: '#/definitions/Team' } } },
          Team: {
            type: 'object',
            properties: { members: { type: 'array', items: { $ref: '#/definitions/Person' } } },
          },
        },
      },
      recursive,
    );
    refused({ $ref: '#/$defs/list', $defs: { list: node('#/$defs/list') } }, recursive);
    refused({ $ref: '#' }, recursive);
    refused({ ...node('#/$defs/a'), $defs: { a: { $ref: '#/$defs/a' } } }, recursive);
    // To a node the $ref is inside of, by its path rather than a definition.
    refused({ type: 'object', properties: { tree: node('#/properties/tree') } }, recursive);
    // Names with JSON Pointer escapes (~1 is "/", ~0 is "~", ~01 is "~1") and percent-encoding.
    for (const [name, ref] of [
      ['a/b', '#/$defs/a~1b'],
      ['a~b', '#/$defs/a~0b'],
      ['a~1b', '#/$defs/a~01b'],
      ['my node', '#/$defs/my%20node'],
      ['node', '#/%24defs/%6E%6F%64%65'],
    ] as const)
      refused({ ...node(ref), $defs: { [name]: node(ref) } }, recursive);

    // A definition used twice, a chain of them, an escaped name, a sibling property: no recursion.
    const shared = {
      type: 'object',
      properties: {
        home: { $ref: '#/$defs/address' },
        work: { $ref: '#/$defs/address' },
        origin: { $ref: '#/$defs/a~1b' },
        copy: { $ref: '#/properties/name' },
        name: { type: 'string' },
      },
      $defs: {
        address: { type: 'object', properties: { city: { $ref: '#/$defs/city' } } },
        city: { type: 'string' },
        'a/b': { type: 'string' },
      },
    };
    const reshaped = anthropicOutputSchema(shared);
    assert.deepEqual((reshaped.properties as Record<string, unknown>).copy, { $ref: '#/properties/name' });
    assert.deepEqual((reshaped.$defs as Record<string, unknown>).address, {
      type: 'object',
      properties: { city: { $ref: '#/$defs/city' } },
      additionalProperties: false,
    });
  });

  it('refuses a $ref that names no schema in what Anthropic receives', () => {
    const nothing = /names no schema in the document/;
    const pointing = (ref: string, extra: Record<string, unknown> = {}) => ({
      type: 'object',
      properties: { shape: { oneOf: [{ type: 'string' }, { type: 'number' }] }, x: { $ref: ref } },
      $defs: { a: { type: 'string' } },
      ...extra,
    });
    refused(
      pointing('#/$defs/missing'),
      /at #\/properties\/x: the \$ref "#\/\$defs\/missing" names no schema/,
    );
    // Not a pointer (an $anchor name), not percent-encoding, a map of schemas, not an index.
    for (const ref of [
      '#a',
      '#/$defs/%E0%A4%A',
      '#/$defs',
      '#/properties/shape/anyOf/01',
      '#/properties/shape/anyOf/2',
    ])
      refused(pointing(ref), nothing);
    // oneOf is anyOf once reshaped, and patternProperties went into a description as text.
    refused(pointing('#/properties/shape/oneOf/0'), nothing);
    refused(pointing('#/patternProperties/p', { patternProperties: { p: { type: 'string' } } }), nothing);
    // The same pointers into what was kept resolve.
    assert.doesNotThrow(() => anthropicOutputSchema(pointing('#/properties/shape/anyOf/1')));
    assert.doesNotThrow(() => anthropicOutputSchema(pointing('#/$defs/a')));
  });

  it('judges a hostile schema in linear time, and never past the stack', { timeout: 20_000 }, () => {
    // 50,000 definitions, each naming the next: fine, until the last names the first.
    const count = 50_000;
    const chain = (closed: boolean) => {
      const $defs: Record<string, unknown> = {};
      for (let i = 0; i < count; i++)
        $defs[`d${i}`] =
          i < count - 1
            ? { $ref: `#/$defs/d${i + 1}` }
            : closed
              ? { $ref: '#/$defs/d0' }
              : { type: 'string' };
      return { type: 'object', properties: { start: { $ref: '#/$defs/d0' } }, $defs };
    };
    assert.equal(Object.keys(anthropicOutputSchema(chain(false)).$defs as object).length, count);
    refused(chain(true), /at #\/\$defs\/d49999: recursive schemas are not supported/);
    // Each of 64 definitions names the next twice: 2^64 paths through 128 $refs, walked once each.
    const $defs: Record<string, unknown> = { d64: { type: 'string' } };
    for (let i = 0; i < 64; i++)
      $defs[`d${i}`] = {
        type: 'object',
        properties: { left: { $ref: `#/$defs/d${i + 1}` }, right: { $ref: `#/$defs/d${i + 1}` } },
      };
    assert.doesNotThrow(() => anthropicOutputSchema({ $ref: '#/$defs/d0', $defs }));
    // Nested 50,000 levels deep (a body could not be, but the function holds its own).
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < count; i++) deep = { type: 'array', items: deep };
    refused(deep, /schemas nest at most 128 levels deep/);
  });
  it("holds a strict tool's schema to an object at its root, which the reshaping can lose; a format's root may be any type", () => {
    const args = { type: 'object', properties: { query: { type: 'string', minLength: 1 } } };
    const closed = {
      type: 'object',
      properties: { query: { type: 'string', description: '{minLength: 1}' } },
      additionalProperties: false,
    };
    assert.deepEqual(anthropicStrictToolSchema(args), closed);
    // The adapter gives a tool's schema its type "object"; beside a root $ref (zod's schema
    // registered with an id) or a combinator, the reshaping keeps the $ref or the variants only.
    for (const schema of [
      { type: 'object', $ref: '#/$defs/Args', $defs: { Args: args } },
      { type: 'object', anyOf: [args, { type: 'object', properties: { id: { type: 'integer' } } }] },
      { type: 'object', allOf: [args] },
      { type: 'object', const: 'x' },
    ])
      assert.throws(
        () => anthropicStrictToolSchema(schema),
        (error: unknown) =>
          error instanceof UnsupportedRequestError &&
          /at #: a tool's input_schema must be an object at its root/.test(error.message),
      );
    // A format takes them, and an array, as its root.
    assert.deepEqual(anthropicOutputSchema({ $ref: '#/$defs/Args', $defs: { Args: args } }), {
      $defs: { Args: closed },
      $ref: '#/$defs/Args',
    });
    assert.deepEqual(anthropicOutputSchema({ type: 'array', items: args }), { type: 'array', items: closed });
  });
});
