import { UnsupportedRequestError } from '../../../spec/upstream-error.js';

/**
 * A response format's JSON Schema in the subset Anthropic's structured outputs compile
 * (https://platform.claude.com/docs/en/build-with-claude/structured-outputs, "JSON Schema
 * limitations"). Anthropic answers a 400 to every object without `additionalProperties: false`, to
 * numeric bounds (`minimum`, `maximum`, `multipleOf`…), string lengths, array bounds other than a
 * `minItems` of 0 or 1, string formats outside its list and `enum` values that are not primitives;
 * zod and Pydantic emit most of these. The schema is reshaped as the Anthropic SDK's own helper does
 * (`transformJSONSchema`, @anthropic-ai/sdk lib/transform-json-schema): objects closed, `oneOf` as
 * `anyOf`, and whatever the grammar cannot hold moved into the node's `description` as text, so
 * the model still reads the constraint it cannot be held to. Two differences from the helper:
 * `definitions` (draft-07, zod-to-json-schema) are kept and reshaped like `$defs`, where the helper
 * would flatten them into a description and leave their `$ref`s dangling; and a type list
 * (`["object", "null"]`) gets what each of its types needs. What cannot be expressed at all (a node
 * with no type, an object whose other properties follow a schema, a `$ref` outside the document)
 * is refused, naming the node.
 */
export function anthropicOutputSchema(schema: Record<string, unknown>): Record<string, unknown> {
  return reshape(schema, '#');
}

/** The string formats Anthropic's grammars know. */
const STRING_FORMATS = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'uri',
  'ipv4',
  'ipv6',
  'uuid',
]);

type Schema = Record<string, unknown>;

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isPrimitive = (value: unknown): boolean => value === null || typeof value !== 'object';

function refuse(path: string, what: string): never {
  throw new UnsupportedRequestError(
    `Anthropic's structured outputs cannot take the response format's schema at ${path}: ${what}`,
  );
}

/** One node, reshaped into a new object; the client's schema is left as it was. */
function reshape(node: unknown, path: string): Schema {
  if (!isSchema(node)) return refuse(path, 'a schema must be an object');
  // What is left in `rest` after the supported keywords are taken goes to the description.
  const rest: Schema = { ...node };
  const take = (key: string): unknown => {
    const value = rest[key];
    delete rest[key];
    return value;
  };
  const out: Schema = {};

  // Definitions first: a `$ref` beside them returns early and keeps them.
  for (const key of ['$defs', 'definitions']) {
    const definitions = take(key);
    if (definitions === undefined) continue;
    if (!isSchema(definitions)) return refuse(`${path}/${key}`, 'definitions must be an object');
    out[key] = Object.fromEntries(
      Object.entries(definitions).map(([name, definition]) => [
        name,
        reshape(definition, `${path}/${key}/${name}`),
      ]),
    );
  }

  const ref = take('$ref');
  if (ref !== undefined) {
    if (typeof ref !== 'string' || !ref.startsWith('#'))
      return refuse(path, `only references inside the schema are supported, not ${JSON.stringify(ref)}`);
    out.$ref = ref;
    return out;
  }

  const values = rest.enum;
  if (Array.isArray(values) && values.length > 0 && values.every(isPrimitive)) out.enum = take('enum');
  if (rest.const !== undefined && isPrimitive(rest.const)) out.const = take('const');
  const literal = 'enum' in out || 'const' in out;
  const declared = take('type');
  // An enum or const says the type already; the helper leaves it out then.
  const type = literal ? undefined : declared;
  const anyOf = take('anyOf');
  const oneOf = take('oneOf');
  const allOf = take('allOf');
  // `$schema` names the dialect and constrains nothing.
  take('$schema');
  // One combinator per node is kept (a type beside it gives way to its variants', as in the SDK's
  // helper): two of them would lose one, and the grammar allow what the schema does not.
  if ([anyOf, oneOf, allOf].filter(Array.isArray).length > 1)
    return refuse(path, 'anyOf, oneOf and allOf go one to a node, not beside each other');

  if (Array.isArray(anyOf)) out.anyOf = anyOf.map((variant, i) => reshape(variant, `${path}/anyOf/${i}`));
  else if (Array.isArray(oneOf))
    out.anyOf = oneOf.map((variant, i) => reshape(variant, `${path}/oneOf/${i}`));
  else if (Array.isArray(allOf)) out.allOf = allOf.map((entry, i) => reshape(entry, `${path}/allOf/${i}`));
  else if (!literal) {
    if (type === undefined)
      return refuse(path, 'every node needs a type (or anyOf, oneOf, allOf, enum or const)');
    out.type = type;
  }

  const description = take('description');
  if (description !== undefined) out.description = description;
  const title = take('title');
  if (title !== undefined) out.title = title;

  const types = Array.isArray(type) ? type : [type];
  if (types.includes('object')) {
    const properties = take('properties') ?? {};
    if (!isSchema(properties)) return refuse(`${path}/properties`, 'properties must be an object');
    out.properties = Object.fromEntries(
      Object.entries(properties).map(([name, property]) => [
        name,
        reshape(property, `${path}/properties/${name}`),
      ]),
    );
    // Absent or `true` means open; Anthropic takes closed objects only, and closing one with
    // properties keeps what it describes. A schema for the other properties (a map, zod's record),
    // or an open object with no properties of its own (Pydantic's `dict[str, Any]`, zod's
    // `z.record(z.any())`), would become an object that can hold nothing.
    const additional = take('additionalProperties');
    const declared = Object.keys(properties).length > 0;
    if (
      (isSchema(additional) && Object.keys(additional).length > 0) ||
      (!declared && additional !== false && additional !== undefined)
    )
      return refuse(path, 'objects must be closed (additionalProperties false), not hold other properties');
    out.additionalProperties = false;
    const required = take('required');
    if (required !== undefined) out.required = required;
  }
  if (types.includes('string') && typeof rest.format === 'string' && STRING_FORMATS.has(rest.format))
    out.format = take('format');
  if (types.includes('array')) {
    const items = take('items');
    if (items !== undefined) out.items = reshape(items, `${path}/items`);
    if (rest.minItems === 0 || rest.minItems === 1) out.minItems = take('minItems');
  }

  const left = Object.entries(rest);
  if (left.length > 0) {
    const note = `{${left.map(([key, value]) => `${key}: ${JSON.stringify(value)}`).join(', ')}}`;
    out.description =
      typeof out.description === 'string' && out.description !== '' ? `${out.description}\n\n${note}` : note;
  }
  return out;
}
