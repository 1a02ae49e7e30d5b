import { type Static, type TObject, type TSchema, type TUnsafe, Type } from 'typebox';
import { stringEnum } from '../../../platform/schema-types.js';

/**
 * Unions written so that Ajv's first error (the only one the service reports) names the real
 * problem. With `anyOf`, Ajv's first error is the first branch's mismatch: a broken image block
 * reads "…content.1 must have required property 'text'", a wrong boolean "must be boolean" though
 * null was allowed too. Type lists and `if`/`then`/`else` keep the error inside the form the value
 * has. Every dialect builds its body schema with these.
 */

/**
 * `schema` or null. A schema with a JSON type becomes one `type: [<type>, 'null']` schema (null
 * joining its `enum` too), so its own rules keep their errors and a wrong type reads
 * "must be boolean,null"; anything else (a union, a `const`) falls back to `anyOf`.
 */
export function nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  const { type, enum: values } = schema as { type?: string | string[]; enum?: unknown[] };
  if (type === undefined || 'const' in schema) {
    return Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()]));
  }
  const types = Array.isArray(type) ? type : [type];
  return Type.Unsafe<Static<T> | null>({
    ...schema,
    type: types.includes('null') ? types : [...types, 'null'],
    ...(values && !values.includes(null) ? { enum: [...values, null] } : {}),
  });
}

/**
 * Object variants told apart by a `type` field, as nested `if`/`then`/`else` rather than `anyOf`:
 * the error is the one inside the variant the value names ("…content.1.source.data must be
 * string"), and a value naming no variant gets "…type must be one of: text, image, …".
 */
export function taggedUnion<const Variants extends Record<string, TObject>>(
  variants: Variants,
  options: { otherTypes?: boolean } = {},
): TUnsafe<Static<Variants[keyof Variants]>> {
  const names = Object.keys(variants);
  // `otherTypes`: a value naming none of the variants passes (with a string `type`), for lists a
  // client echoes back whose entry types may grow.
  let schema: TSchema = Type.Object({ type: options.otherTypes ? Type.String() : stringEnum(names) });
  for (const name of [...names].reverse()) {
    schema = Type.Dependent(Type.Object({ type: Type.Literal(name) }), variants[name] as TObject, schema);
  }
  return Type.Unsafe<Static<Variants[keyof Variants]>>(schema);
}

/**
 * Text or a list of `item`, as one `type: [string, array]` schema: `items` applies to arrays only,
 * so an error inside the list is reported at its own path rather than as "must be string".
 * `options` adds array rules such as `maxItems`.
 */
export function textOrList<Item extends TSchema>(
  item: Item,
  options: { maxItems?: number } = {},
): TUnsafe<string | Static<Item>[]> {
  return Type.Unsafe<string | Static<Item>[]>({ type: ['string', 'array'], items: item, ...options });
}
