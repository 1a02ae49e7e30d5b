import { type TSchema, type TUnsafe, Type } from 'typebox';

/**
 * Text that can be stored on both backends unchanged: PostgreSQL refuses the NUL character, and an
 * unpaired surrogate (not valid UTF-16) would be stored as U+FFFD, so two different ids would read
 * back the same. Ajv compiles patterns with the `u` flag, where a surrogate range matches only
 * unpaired surrogates.
 */
export const NO_NUL_PATTERN = '^[^\\u0000\\ud800-\\udfff]*$';

/** Matches text with a character that is not whitespace: a name that is not blank. */
export const NOT_BLANK_PATTERN = '\\S';

/**
 * A display name (a key's, a guardrail's…): storable text that is not blank. Two patterns, so a
 * refusal names the rule that failed (Ajv reports the first; `allOf` is checked before the length,
 * the length before `pattern`, so an empty name still reads as too short).
 */
export const nameText = (options: { minLength?: number; maxLength?: number; description?: string } = {}) =>
  Type.String({ ...options, pattern: NOT_BLANK_PATTERN, allOf: [{ pattern: NO_NUL_PATTERN }] });

export const storableText = (
  options: { minLength?: number; maxLength?: number; description?: string } = {},
) => Type.String({ ...options, pattern: NO_NUL_PATTERN });

/**
 * A string enum (optionally also null) as a plain JSON Schema `enum`, so a refusal can list the
 * allowed values instead of Ajv's "must be equal to constant".
 */
export function stringEnum<T extends string>(values: readonly T[]): TUnsafe<T>;
export function stringEnum<T extends string>(
  values: readonly T[],
  options: { nullable: true },
): TUnsafe<T | null>;
export function stringEnum<T extends string>(
  values: readonly T[],
  options: { nullable?: boolean } = {},
): TSchema {
  return options.nullable
    ? Type.Unsafe<T | null>({ type: ['string', 'null'], enum: [...values, null] })
    : Type.Unsafe<T>({ type: 'string', enum: [...values] });
}
