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
 * with no type, an object whose other properties follow a schema, a `$ref` outside the document or
 * to nothing in it, a recursive schema) is refused, naming the node.
 */
export function anthropicOutputSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const reshaped = reshape(schema, '#', 0);
  refuseDanglingOrRecursiveReferences(reshaped);
  return reshaped;
}

/**
 * A strict tool's `input_schema`, reshaped as a format's schema is and compiled into the same
 * grammar, with one more rule: Anthropic takes a tool's schema only with `type: "object"` at its
 * root ("tools.0.custom.input_schema.type: Input should be 'object'") and without `anyOf`, `oneOf`
 * or `allOf` there ("input_schema does not support oneOf, allOf, or anyOf at the top level"). The
 * reshaping can leave a root without that type where the client's had it: beside a combinator,
 * an `enum` or a `const` the type gives way, and a root `$ref` (zod's schema registered with an id)
 * keeps nothing but its definitions. Such a schema is refused here, to go as the client wrote it
 * (which Anthropic takes, unless a combinator at its root makes it refuse the tool strict or not).
 * A format's root takes any type: Anthropic lists none it refuses there.
 */
export function anthropicStrictToolSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const reshaped = anthropicOutputSchema(schema);
  if (reshaped.type !== 'object')
    refuse(
      '#',
      'a tool\'s input_schema must be an object at its root (type "object", no anyOf, oneOf, allOf or $ref)',
    );
  return reshaped;
}

/**
 * Past this many nested schemas the reshaping (a recursion) refuses rather than risk the stack.
 * Request bodies nest at most 128 JSON levels (decisions.md), two or more per schema level, so no
 * schema a client can send comes near it; it keeps this function safe whoever calls it.
 */
const MAX_DEPTH = 128;

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

export type Schema = Record<string, unknown>;

/** A JSON Schema node: an object, not an array or null. */
export const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isPrimitive = (value: unknown): boolean => value === null || typeof value !== 'object';

function refuse(path: string, what: string): never {
  throw new UnsupportedRequestError(
    `Anthropic's structured outputs cannot take the response format's schema at ${path}: ${what}`,
  );
}

/** One node, reshaped into a new object; the client's schema is left as it was. */
function reshape(node: unknown, path: string, depth: number): Schema {
  if (!isSchema(node)) return refuse(path, 'a schema must be an object');
  if (depth > MAX_DEPTH) return refuse(path, `schemas nest at most ${MAX_DEPTH} levels deep`);
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
        reshape(definition, `${path}/${key}/${name}`, depth + 1),
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

  if (Array.isArray(anyOf))
    out.anyOf = anyOf.map((variant, i) => reshape(variant, `${path}/anyOf/${i}`, depth + 1));
  else if (Array.isArray(oneOf))
    out.anyOf = oneOf.map((variant, i) => reshape(variant, `${path}/oneOf/${i}`, depth + 1));
  else if (Array.isArray(allOf))
    out.allOf = allOf.map((entry, i) => reshape(entry, `${path}/allOf/${i}`, depth + 1));
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
        reshape(property, `${path}/properties/${name}`, depth + 1),
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
    if (items !== undefined) out.items = reshape(items, `${path}/items`, depth + 1);
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

/** Keywords whose value maps names to schemas, and those whose value lists schemas. */
const SCHEMA_MAPS = ['$defs', 'definitions', 'properties'];
const SCHEMA_LISTS = ['anyOf', 'allOf'];

/**
 * Calls `visit` with each schema a reshaped node holds and the pointer tokens that lead to it. After
 * reshaping these are the only keywords whose values are schemas: everything else was kept as a
 * value or moved into a description.
 */
function eachHeld(node: Schema, visit: (child: Schema, key: string, name?: string | number) => void): void {
  for (const key of SCHEMA_MAPS) {
    const map = node[key];
    if (isSchema(map))
      for (const [name, child] of Object.entries(map)) if (isSchema(child)) visit(child, key, name);
  }
  for (const key of SCHEMA_LISTS) {
    const list = node[key];
    if (Array.isArray(list))
      for (const [i, child] of list.entries()) if (isSchema(child)) visit(child, key, i);
  }
  if (isSchema(node.items)) visit(node.items, 'items');
}

/** Where `target` is in the document, for a refusal's message (walked only then). */
function pathOf(document: Schema, target: Schema): string {
  const unseen: Array<[Schema, string]> = [[document, '#']];
  for (let next = unseen.pop(); next !== undefined; next = unseen.pop()) {
    const [node, path] = next;
    if (node === target) return path;
    eachHeld(node, (child, key, name) =>
      unseen.push([child, name === undefined ? `${path}/${key}` : `${path}/${key}/${name}`]),
    );
  }
  return '#';
}

/**
 * What a `$ref` names in the reshaped document: its fragment is a JSON Pointer (RFC 6901) in a URI
 * (RFC 3986), so it is percent-decoded, split at `/`, and each token read with `~1` as `/` and `~0`
 * as `~`. Undefined when it names nothing, is not a pointer (an `$anchor` name) or is not
 * well-formed percent-encoding. Read in the reshaped document because that is what Anthropic
 * resolves: a `$ref` into a keyword moved into a description, or through `oneOf` (now `anyOf`),
 * names nothing there.
 */
function pointee(document: Schema, ref: string): unknown {
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (pointer === '') return document;
  if (!pointer.startsWith('/')) return undefined;
  let node: unknown = document;
  for (const token of pointer.slice(1).split('/')) {
    const key = token.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(node)) {
      if (!/^(0|[1-9][0-9]*)$/.test(key)) return undefined;
      node = node[Number(key)];
    } else if (isSchema(node) && Object.hasOwn(node, key)) node = node[key];
    else return undefined;
  }
  return node;
}

/**
 * Refuses a reshaped schema with a `$ref` to nothing in it, or a recursive one. Anthropic's grammar
 * has no form for recursion ("Not supported: recursive schemas"; a 400, "Too many recursive
 * definitions in schema"), while OpenAI's strict mode takes it: a tree, a linked list, `$ref: "#"`.
 * The schema is recursive when expanding every `$ref` in place would never end, that is when the
 * graph whose nodes are the schema's nodes and whose edges lead from a node to the schemas it holds
 * and from a `$ref` to what it names has a cycle (the schemas held form a tree, so any cycle passes
 * through a `$ref`). One depth-first walk with an explicit stack finds it: linear in the schema's
 * size however the references chain, and without recursion, so no schema can exhaust the stack.
 */
function refuseDanglingOrRecursiveReferences(document: Schema): void {
  // Every node with the nodes it holds: a `$ref` may name only one of these.
  const edges = new Map<Schema, Schema[]>();
  const references: Schema[] = [];
  const unseen: Schema[] = [document];
  for (let node = unseen.pop(); node !== undefined; node = unseen.pop()) {
    const children: Schema[] = [];
    eachHeld(node, (child) => {
      children.push(child);
      unseen.push(child);
    });
    edges.set(node, children);
    if (typeof node.$ref === 'string') references.push(node);
  }
  // Without a reference the schemas form a tree: nothing to resolve, no cycle.
  if (references.length === 0) return;
  for (const node of references) {
    const ref = node.$ref as string;
    const target = pointee(document, ref);
    // A map of schemas, or one left in a description as text, is no schema the grammar reads.
    if (!isSchema(target) || !edges.has(target))
      refuse(pathOf(document, node), `the $ref ${JSON.stringify(ref)} names no schema in the document`);
    edges.get(node)!.push(target);
  }

  const OPEN = 1;
  const DONE = 2;
  const state = new Map<Schema, typeof OPEN | typeof DONE>([[document, OPEN]]);
  const stack = [{ node: document, next: 0 }];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    const to = edges.get(frame.node)![frame.next++];
    if (to === undefined) {
      state.set(frame.node, DONE);
      stack.pop();
    } else if (state.get(to) === OPEN) {
      refuse(
        pathOf(document, frame.node),
        `recursive schemas are not supported: expanding its $refs from here comes back to ${pathOf(document, to)}`,
      );
    } else if (state.get(to) === undefined) {
      state.set(to, OPEN);
      stack.push({ node: to, next: 0 });
    }
  }
}
