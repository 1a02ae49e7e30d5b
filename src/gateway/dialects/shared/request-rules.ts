import { Type } from 'typebox';
import { NO_NUL_PATTERN, storableText } from '../../../platform/schema-types.js';
import { invalidParameter } from './invalid-parameter.js';
import { nullable } from './schema-unions.js';

/**
 * The gateway's own request fields that every dialect carries the same way (spec 4.6, reference
 * §7): the `models` fallback list, `session_id` and its header, `user`, `metadata` and `trace`.
 * Their schemas and the rules a schema cannot word well live here so the four surfaces agree.
 */

/** The reference gateway's limit on the fallback list after `model` (observed on its live API). */
export const MAX_FALLBACK_MODELS = 3;
const MAX_SESSION_ID_LENGTH = 256;
const MAX_METADATA_PAIRS = 16;
const MAX_METADATA_KEY_LENGTH = 64;
const MAX_METADATA_VALUE_LENGTH = 512;

type Headers = Record<string, string | string[] | undefined>;

/** A catalogue model id; longer than any the catalogue holds, short enough to log. */
export const ModelIdSchema = Type.String({ minLength: 1, maxLength: 200 });

/**
 * Fallback models after `model`. Their count is checked by `requestedModels`, which words the
 * refusal as the reference does ("must have 3 items or fewer").
 */
export const ModelsSchema = Type.Array(ModelIdSchema, {
  description: `Fallback models tried in order after model, at most ${MAX_FALLBACK_MODELS}`,
});

export const SessionIdSchema = nullable(
  storableText({
    maxLength: MAX_SESSION_ID_LENGTH,
    description: 'Sticky-routing and grouping key; wins over the x-session-id header',
  }),
);

export const UserSchema = nullable(storableText({ maxLength: 256, description: 'End-user identifier' }));

/** Key rules (length, no brackets) are checked by `checkedMetadata`, whose message can name the key. */
export const MetadataSchema = Type.Unsafe<Record<string, string> | null>({
  type: ['object', 'null'],
  description: `Up to ${MAX_METADATA_PAIRS} pairs; keys up to ${MAX_METADATA_KEY_LENGTH} characters without [ or ]; values up to ${MAX_METADATA_VALUE_LENGTH} characters`,
  maxProperties: MAX_METADATA_PAIRS,
  additionalProperties: { type: 'string', maxLength: MAX_METADATA_VALUE_LENGTH, pattern: NO_NUL_PATTERN },
});

/** Tracing keys with special handling; other keys travel as custom metadata (spec 4.6). */
export const TraceSchema = nullable(
  Type.Object(
    {
      trace_id: Type.Optional(Type.String()),
      trace_name: Type.Optional(Type.String()),
      span_name: Type.Optional(Type.String()),
      generation_name: Type.Optional(Type.String()),
      parent_span_id: Type.Optional(Type.String()),
    },
    { additionalProperties: true, description: 'Tracing keys; other keys travel as custom metadata' },
  ),
);

/**
 * The models routing tries, in order: `model` first, then the fallbacks, each once. `field` names
 * the fallback list in the refusal (`body.fallbacks` on the Messages surface).
 */
export function requestedModels(request: {
  model: string | null | undefined;
  fallbacks: readonly string[] | null | undefined;
  field?: string;
}): string[] {
  const { model, fallbacks, field = 'body.models' } = request;
  if (fallbacks && fallbacks.length > MAX_FALLBACK_MODELS) {
    throw invalidParameter(field, `must have ${MAX_FALLBACK_MODELS} items or fewer`);
  }
  const models = [...new Set([...(model ? [model] : []), ...(fallbacks ?? [])])];
  if (models.length === 0) throw invalidParameter('body.model', `is required (or ${field})`);
  return models;
}

/**
 * The sticky-routing key: the body's `session_id`, else the first `x-session-id` header. The
 * header is held to the body's length rule only when it is the one used.
 */
export function sessionId(bodySessionId: string | null | undefined, headers: Headers): string | null {
  if (bodySessionId) return bodySessionId;
  const header = headers['x-session-id'];
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return null;
  if (value.length > MAX_SESSION_ID_LENGTH) {
    throw invalidParameter(
      'headers.x-session-id',
      `must NOT have more than ${MAX_SESSION_ID_LENGTH} characters`,
    );
  }
  return value;
}

/** `metadata` after the key rules the schema leaves to this check; null when absent. */
export function checkedMetadata(
  metadata: Record<string, string> | null | undefined,
): Record<string, string> | null {
  if (!metadata) return null;
  for (const key of Object.keys(metadata)) {
    if (key.length > MAX_METADATA_KEY_LENGTH) {
      throw invalidParameter(
        'body.metadata',
        `keys must have ${MAX_METADATA_KEY_LENGTH} characters or fewer: ${JSON.stringify(key)}`,
      );
    }
    if (key.includes('[') || key.includes(']')) {
      throw invalidParameter('body.metadata', `keys must not contain brackets: ${JSON.stringify(key)}`);
    }
    if (key.includes('\u0000'))
      throw invalidParameter('body.metadata', 'keys must not contain NUL characters');
  }
  return metadata;
}

/**
 * Whether a content link is one an upstream can fetch, or inline data: `http(s)://` or `data:`
 * (lower case, as every adapter reads it). Anything else (`ftp:`, `file:`, `javascript:`) would be
 * sent on to fail at the provider, far from its cause, or worse be taken for a path by one.
 */
export const isContentUrl = (value: string): boolean =>
  value.startsWith('data:') || value.startsWith('https://') || value.startsWith('http://');

/**
 * Base64 as providers decode it: RFC 4648's alphabet or its URL-safe one, padding only at the end,
 * whitespace (MIME encoders wrap lines) anywhere. The padding group starts with `=`, which the
 * first class does not hold, so a failing match backtracks one character at a time: a
 * multi-megabyte payload is refused in linear time, however it ends.
 */
const BASE64 = /^[A-Za-z0-9+/_\-\s]*(?:=\s*){0,2}$/;
const BASE64_DIGIT = /[A-Za-z0-9+/_-]/;

export const isBase64 = (value: string): boolean => BASE64_DIGIT.test(value) && BASE64.test(value);

/**
 * What is wrong with a content link, or null: it must be `http(s)://` or `data:` (see
 * `isContentUrl`), and a base64 `data:` URL must hold base64. Garbage in the data would otherwise
 * reach the provider, which refuses it far from its cause (Anthropic, Gemini) or reads it as some
 * other image.
 */
export function contentUrlProblem(value: string): string | null {
  if (!isContentUrl(value)) return 'must be an http(s) or data: URL';
  if (!value.startsWith('data:')) return null;
  const comma = value.indexOf(',');
  if (comma < 0) return 'must be a data: URL of the form data:<media type>;base64,<data>';
  const parameters = value.slice(5, comma).split(';');
  if (parameters.includes('base64') && !isBase64(value.slice(comma + 1))) {
    return 'must hold base64 data after ";base64," (the data is empty or not base64)';
  }
  return null;
}

/**
 * The largest value of an integer field that providers read as a 32-bit integer (`top_k`,
 * `dimensions`): JSON allows 1e308, which passes an integer check and is refused upstream.
 */
export const MAX_INT32 = 2_147_483_647;
