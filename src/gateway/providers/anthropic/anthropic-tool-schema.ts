import { UnsupportedRequestError } from '../../../spec/upstream-error.js';
import { isSchema, type Schema } from './anthropic-output-schema.js';

const COMBINATORS = ['anyOf', 'oneOf', 'allOf'] as const;

/** How much of a combinator that could not be merged is quoted in the schema's description. */
const MAX_QUOTED_CHARS = 2_000;

/** An object schema whose properties can be merged: an object type (or none) and only plain members. */
const isMergeable = (member: unknown): member is Schema =>
  isSchema(member) &&
  (member.type === undefined || member.type === 'object') &&
  member.$ref === undefined &&
  COMBINATORS.every((keyword) => member[keyword] === undefined) &&
  (member.properties === undefined || isSchema(member.properties));

const requiredOf = (schema: Schema): string[] =>
  Array.isArray(schema.required)
    ? schema.required.filter((name): name is string => typeof name === 'string')
    : [];

/** One alternative as the description names it: its required properties, else all of them. */
function formOf(member: Schema): string {
  const required = requiredOf(member);
  const names =
    required.length > 0 ? required : Object.keys(isSchema(member.properties) ? member.properties : {});
  return names.length > 0 ? names.join(' + ') : '(no arguments)';
}

/**
 * A tool's parameters as Anthropic's `input_schema`, which must be an object schema: a schema that
 * leaves out `type` (`{}` accepts any arguments, and arguments are always an object) gets
 * `type: "object"`; one that names another type cannot describe a tool's arguments.
 *
 * Anthropic also refuses `anyOf`, `oneOf` and `allOf` at the root ("input_schema does not support
 * oneOf, allOf, or anyOf at the top level"), which zod unions and many MCP servers write there; one
 * such tool fails every request that lists it. They are merged into the root: `allOf`'s members
 * add their properties and required names; `anyOf`/`oneOf`'s alternatives add their properties,
 * and only the names every alternative requires stay required, the alternatives named in the
 * description ("Exactly one of these forms: yaml; files; dir"). A member that is no plain object
 * schema (a `$ref`, a nested combinator) is quoted in the description instead. The model reads the
 * arguments' rules there; a tool that is not strict has its arguments checked by the model alone
 * on Anthropic anyway.
 */
export function anthropicToolInputSchema(name: string, parameters: Schema): Schema {
  if (parameters.type !== 'object' && parameters.type !== undefined) {
    throw new UnsupportedRequestError(
      `Anthropic needs tool ${JSON.stringify(name)}'s parameters to be an object schema (type "object")`,
    );
  }
  if (!hasRootCombinator(parameters))
    return parameters.type === 'object' ? parameters : { type: 'object', ...parameters };
  return mergedRoot(parameters);
}

/**
 * Whether a schema has a combinator at its root: merged for a plain tool, such a schema has no
 * strict form (the merge is looser than what the client asked to be guaranteed).
 */
export const hasRootCombinator = (parameters: Schema): boolean =>
  COMBINATORS.some((keyword) => parameters[keyword] !== undefined);

function mergedRoot(parameters: Schema): Schema {
  const { anyOf, oneOf, allOf, ...rest } = parameters;
  const properties: Schema = { ...(isSchema(rest.properties) ? rest.properties : {}) };
  const required = new Set(requiredOf(rest));
  const notes: string[] = [];
  const unmerged: Schema = {};
  const addProperties = (member: Schema) => {
    if (!isSchema(member.properties)) return;
    for (const [property, schema] of Object.entries(member.properties)) {
      if (!Object.hasOwn(properties, property)) properties[property] = schema;
    }
  };

  /**
   * The alternatives' properties: one the alternatives define alike is taken as it is; one they
   * define apart (a tagged union's `type: {const: "create"}` against `{const: "delete"}`) becomes
   * an `anyOf` of its distinct definitions, so that no alternative's value is lost. The root's own
   * definition of a property wins.
   */
  const addAlternatives = (alternatives: Schema[]) => {
    const variants = new Map<string, Map<string, unknown>>();
    for (const alternative of alternatives) {
      if (!isSchema(alternative.properties)) continue;
      for (const [property, schema] of Object.entries(alternative.properties)) {
        if (Object.hasOwn(properties, property)) continue;
        const distinct = variants.get(property) ?? new Map<string, unknown>();
        distinct.set(JSON.stringify(schema), schema);
        variants.set(property, distinct);
      }
    }
    for (const [property, distinct] of variants) {
      const schemas = [...distinct.values()];
      properties[property] = schemas.length === 1 ? schemas[0] : { anyOf: schemas };
    }
  };

  if (allOf !== undefined) {
    const members = Array.isArray(allOf) ? allOf : [allOf];
    const left: unknown[] = [];
    for (const member of members) {
      if (!isMergeable(member)) {
        left.push(member);
        continue;
      }
      addProperties(member);
      for (const property of requiredOf(member)) required.add(property);
    }
    if (left.length > 0) unmerged.allOf = left;
  }

  for (const [keyword, value] of [
    ['oneOf', oneOf],
    ['anyOf', anyOf],
  ] as const) {
    if (value === undefined) continue;
    // Arguments are always an object: a `null` alternative (a nullable root) says nothing of them.
    const alternatives = (Array.isArray(value) ? value : [value]).filter(
      (alternative) => !(isSchema(alternative) && alternative.type === 'null'),
    );
    const mergeable = alternatives.filter(isMergeable);
    if (mergeable.length < alternatives.length)
      unmerged[keyword] = alternatives.filter((a) => !isMergeable(a));
    if (mergeable.length === 0) continue;
    addAlternatives(mergeable);
    // Only what every alternative requires is required whichever form the arguments take (none
    // when some alternative could not be read).
    if (mergeable.length === alternatives.length) {
      const [first, ...others] = mergeable.map((alternative) => new Set(requiredOf(alternative)));
      for (const property of first ?? [])
        if (others.every((set) => set.has(property))) required.add(property);
    }
    const forms = mergeable.map(formOf);
    if (new Set(forms).size > 1) {
      notes.push(
        `${keyword === 'oneOf' ? 'Exactly one' : 'At least one'} of these forms: ${forms.join('; ')}.`,
      );
    }
  }

  if (Object.keys(unmerged).length > 0) {
    const quoted = JSON.stringify(unmerged);
    notes.push(
      `The arguments must also match: ${quoted.length > MAX_QUOTED_CHARS ? `${quoted.slice(0, MAX_QUOTED_CHARS)}…` : quoted}`,
    );
  }
  const description = [typeof rest.description === 'string' ? rest.description : '', ...notes]
    .filter((text) => text.length > 0)
    .join('\n\n');
  const merged: Schema = { ...rest, type: 'object', properties };
  if (required.size > 0) merged.required = [...required];
  else delete merged.required;
  if (description.length > 0) merged.description = description;
  return merged;
}
