import type { ServerResponse } from 'node:http';
import type { RecordedRequest } from './fake-upstream.js';

/**
 * An Anthropic Messages endpoint with structured outputs, for tests that drive the gateway's
 * Anthropic adapter: it checks a request's output format as the real API does and refuses a
 * malformed one with Anthropic's 400 (`invalid_request_error`), and otherwise answers `answer` as
 * the reply's text (after a thinking block when `thinking` is on), whole or streamed.
 *
 * The checks are the documented ones (https://platform.claude.com/docs/en/build-with-claude/structured-outputs,
 * "JSON Schema limitations", "Schema validation errors" and "Feature compatibility"):
 * `output_config.format` holds `type: "json_schema"` and a `schema`, nothing else; every node has a
 * type (or `anyOf`, `allOf`, `enum`, `const`, `$ref`), whatever its place, the root included; every
 * object sets `additionalProperties: false`; no numeric bounds, string lengths, array bounds beyond a
 * `minItems` of 0 or 1, composition other than `anyOf` and `allOf`, string formats outside
 * Anthropic's list, non-primitive `enum` values, references outside the schema or to nothing in it,
 * or recursion (a `$ref` leading back into a schema that holds it: "Too many recursive definitions
 * in schema"); no prefilled assistant turn. A strict tool's `input_schema` is held to the same
 * rules, and every tool's to an object at its root (`type: "object"`, no `anyOf`, `oneOf` or
 * `allOf` at the top level), strict or not; a non-strict schema compiles to no grammar, so
 * recursion is fine there. The deprecated top-level `output_format` is taken only with its beta
 * header. A refused keyword, a tool's root and recursion are reported in Anthropic's own words
 * ("…schema: For 'integer' type, property 'minimum' is not supported", "tools.0.custom.input_schema.type:
 * Input should be 'object'"); the other messages are the fake's.
 */
export function structuredAnthropic(answer: string) {
  return (request: RecordedRequest, response: ServerResponse): void => {
    const body = request.body as Record<string, any>;
    const problem = structuredOutputProblem(body, String(request.headers['anthropic-beta'] ?? ''));
    if (problem !== undefined) {
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: problem } }));
      return;
    }
    const thinking = body.thinking !== undefined ? 'The caller wants JSON.' : undefined;
    if (body.stream !== true) {
      const content = [
        ...(thinking ? [{ type: 'thinking', thinking, signature: 'EqQBsig-structured' }] : []),
        { type: 'text', text: answer },
      ];
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_structured',
          type: 'message',
          role: 'assistant',
          model: body.model,
          content,
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 30, output_tokens: 12 },
        }),
      );
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (type: string, data: Record<string, unknown>) =>
      response.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    send('message_start', {
      message: {
        id: 'msg_structured',
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: [],
        stop_reason: null,
        usage: { input_tokens: 30, output_tokens: 1 },
      },
    });
    let index = 0;
    if (thinking) {
      send('content_block_start', { index, content_block: { type: 'thinking', thinking: '' } });
      send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking } });
      send('content_block_delta', {
        index,
        delta: { type: 'signature_delta', signature: 'EqQBsig-structured' },
      });
      send('content_block_stop', { index });
      index += 1;
    }
    send('content_block_start', { index, content_block: { type: 'text', text: '' } });
    // The JSON arrives in pieces, as Anthropic streams it.
    const half = Math.ceil(answer.length / 2);
    for (const piece of [answer.slice(0, half), answer.slice(half)])
      send('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    send('content_block_stop', { index });
    send('message_delta', {
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 12 },
    });
    send('message_stop', {});
    response.end();
  };
}

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

/** Keywords the grammar compiler refuses wherever they appear. */
const UNSUPPORTED = [
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'maxItems',
  'uniqueItems',
  'contains',
  'prefixItems',
  'minProperties',
  'maxProperties',
  'patternProperties',
  'propertyNames',
  'dependentRequired',
  'dependentSchemas',
  'unevaluatedProperties',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
];

/** Keywords that give a node its type, one of which every node must have. */
const TYPED_BY = ['type', 'anyOf', 'allOf', 'enum', 'const', '$ref'];

const isObject = (value: unknown): value is Record<string, any> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The message of the 400 Anthropic answers to this body's output format or tools, or undefined. */
export function structuredOutputProblem(body: Record<string, any>, beta: string): string | undefined {
  return outputFormatProblem(body, beta) ?? toolsProblem(body.tools);
}

function toolsProblem(tools: unknown): string | undefined {
  if (!Array.isArray(tools)) return undefined;
  for (const [index, tool] of tools.entries()) {
    // Server tools (web search, code execution…) carry a versioned type and no input_schema.
    if (!isObject(tool) || (tool.type !== undefined && tool.type !== 'custom')) continue;
    const at = `tools.${index}.custom.input_schema`;
    const schema = tool.input_schema;
    if (!isObject(schema)) return `${at}: Input should be a valid dictionary`;
    if (schema.type !== 'object') return `${at}.type: Input should be 'object'`;
    if ('oneOf' in schema || 'allOf' in schema || 'anyOf' in schema)
      return `${at}: input_schema does not support oneOf, allOf, or anyOf at the top level`;
    if (tool.strict === true) {
      const problem = grammarProblem(schema, at);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

function outputFormatProblem(body: Record<string, any>, beta: string): string | undefined {
  if (body.output_format !== undefined && !beta.includes('structured-outputs-2025-11-13'))
    return 'output_format: Extra inputs are not permitted';
  const config = body.output_config;
  const format = config?.format ?? body.output_format;
  if (config !== undefined) {
    if (!isObject(config)) return 'output_config: Input should be an object';
    for (const key of Object.keys(config))
      if (key !== 'format' && key !== 'effort') return `output_config.${key}: Extra inputs are not permitted`;
  }
  if (format === undefined || format === null) return undefined;
  const where = config?.format !== undefined ? 'output_config.format' : 'output_format';
  if (!isObject(format)) return `${where}: Input should be an object`;
  if (format.type !== 'json_schema') return `${where}.type: Input should be 'json_schema'`;
  for (const key of Object.keys(format))
    if (key !== 'type' && key !== 'schema') return `${where}.${key}: Extra inputs are not permitted`;
  if (!isObject(format.schema)) return `${where}.schema: Input should be an object`;
  const last = Array.isArray(body.messages) ? body.messages.at(-1) : undefined;
  if (last?.role === 'assistant')
    return 'Prefilling the assistant message is not supported when using structured outputs';
  return grammarProblem(format.schema, `${where}.schema`);
}

/** What Anthropic refuses in a schema it compiles into a grammar: recursion first, then each node. */
function grammarProblem(schema: Record<string, any>, path: string): string | undefined {
  return referenceProblem(schema, path) ?? schemaProblem(schema, path);
}

function schemaProblem(node: unknown, path: string): string | undefined {
  if (!isObject(node)) return `${path}: a schema must be an object`;
  if (node.$ref !== undefined) {
    if (typeof node.$ref !== 'string' || !node.$ref.startsWith('#'))
      return `${path}: External $ref is not supported (${JSON.stringify(node.$ref)})`;
  }
  const types: unknown[] = Array.isArray(node.type) ? node.type : [node.type ?? 'any'];
  for (const keyword of UNSUPPORTED) {
    if (keyword in node)
      return `${path}: For '${String(types[0])}' type, property '${keyword}' is not supported`;
  }
  if (!TYPED_BY.some((keyword) => keyword in node))
    return `${path}: Invalid schema: Schema type is missing for schema: ${JSON.stringify(node)}`;
  if (node.minItems !== undefined && node.minItems !== 0 && node.minItems !== 1)
    return `${path}: For 'array' type, 'minItems' values other than 0 or 1 are not supported`;
  if (types.includes('object') && node.additionalProperties !== false)
    return `${path}: For 'object' type, 'additionalProperties' must be explicitly set to false`;
  if (node.format !== undefined && !STRING_FORMATS.has(node.format))
    return `${path}: For 'string' type, format '${String(node.format)}' is not supported`;
  if (
    node.enum !== undefined &&
    !(Array.isArray(node.enum) && node.enum.every((v: unknown) => v === null || typeof v !== 'object'))
  )
    return `${path}: enum values must be strings, numbers, booleans or null`;
  const children: Array<[unknown, string]> = [];
  for (const key of ['properties', '$defs', 'definitions']) {
    if (isObject(node[key]))
      for (const [name, child] of Object.entries(node[key])) children.push([child, `${path}.${key}.${name}`]);
  }
  for (const key of ['anyOf', 'allOf']) {
    if (!Array.isArray(node[key])) continue;
    for (const [i, child] of node[key].entries()) children.push([child, `${path}.${key}.${i}`]);
  }
  if (node.items !== undefined) children.push([node.items, `${path}.items`]);
  for (const [child, at] of children) {
    const problem = schemaProblem(child, at);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** The schemas a node holds (the keywords the grammar reads), which a reference may lead into. */
function subschemas(node: Record<string, any>): unknown[] {
  const held: unknown[] = [];
  for (const key of ['properties', '$defs', 'definitions'])
    if (isObject(node[key])) held.push(...Object.values(node[key]));
  for (const key of ['anyOf', 'allOf']) if (Array.isArray(node[key])) held.push(...node[key]);
  if (node.items !== undefined) held.push(node.items);
  return held;
}

/**
 * What the `$ref` `ref` names in `root` (a JSON Pointer in a URI fragment: percent-decoded, then
 * `~1` read as `/` and `~0` as `~`), or undefined when it names nothing.
 */
function referenced(root: Record<string, any>, ref: string): unknown {
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (pointer === '') return root;
  if (!pointer.startsWith('/')) return undefined;
  let at: unknown = root;
  for (const token of pointer.split('/').slice(1)) {
    const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/**
 * A reference to nothing, or recursion: the schema expanded from its root, each `$ref` replaced by
 * what it names, reaches a node it is already inside of. `inside` holds the nodes of the expansion
 * under way; a node expanded once is not expanded again.
 */
function referenceProblem(root: Record<string, any>, path: string): string | undefined {
  const inside = new Set<unknown>();
  const expanded = new Set<unknown>();
  const expand = (node: unknown): string | undefined => {
    if (!isObject(node) || expanded.has(node)) return undefined;
    if (inside.has(node)) return `${path}: Too many recursive definitions in schema`;
    inside.add(node);
    const next = [...subschemas(node)];
    if (typeof node.$ref === 'string' && node.$ref.startsWith('#')) {
      const target = referenced(root, node.$ref);
      if (!isObject(target))
        return `${path}: Invalid schema: Reference to non-existent definition: ${node.$ref}`;
      next.push(target);
    }
    for (const child of next) {
      const problem = expand(child);
      if (problem !== undefined) return problem;
    }
    inside.delete(node);
    expanded.add(node);
    return undefined;
  };
  return expand(root);
}
