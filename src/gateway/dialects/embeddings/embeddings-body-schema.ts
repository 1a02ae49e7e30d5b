import { type Static, Type } from 'typebox';
import { stringEnum } from '../../../platform/schema-types.js';
import { ProviderPreferencesSchema } from '../shared/provider-preferences.js';
import {
  MAX_INT32,
  ModelIdSchema,
  ModelsSchema,
  SessionIdSchema,
  UserSchema,
} from '../shared/request-rules.js';

/** OpenAI's limit on inputs per request; no upstream we reach takes more in one call. */
export const MAX_EMBEDDING_INPUTS = 2048;

/** What `input` may be: one text, texts, one token list, or token lists. */
export type EmbeddingsInput = string | string[] | number[] | number[][];

/**
 * One JSON Schema over all four forms rather than an `anyOf` of them: Ajv reports the first failing
 * branch of an `anyOf`, so `[]` would read "must be string"; this way each refusal names the real
 * rule (`body.input must NOT have fewer than 1 items`, `body.input.1 must NOT have fewer than 1
 * characters`). Mixing forms in one list passes here and is refused by the parser. Token ids are
 * non-negative integers (the reference says `number`; a fractional token id means nothing).
 */
const Input = Type.Unsafe<EmbeddingsInput>({
  type: ['string', 'array'],
  minLength: 1,
  minItems: 1,
  maxItems: MAX_EMBEDDING_INPUTS,
  items: {
    type: ['string', 'integer', 'array'],
    minLength: 1,
    minimum: 0,
    minItems: 1,
    items: { type: 'integer', minimum: 0 },
  },
  description: 'Text, texts, a token list or token lists to embed; one vector per text or token list',
});

/** `POST /embeddings` (reference §12; openapi `createEmbeddings`). Multimodal inputs are not accepted. */
export const embeddingsBodySchema = Type.Object(
  {
    input: Input,
    model: Type.Optional(ModelIdSchema),
    models: Type.Optional(ModelsSchema),
    encoding_format: Type.Optional(stringEnum(['float', 'base64'])),
    dimensions: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_INT32 })),
    user: Type.Optional(UserSchema),
    input_type: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    provider: Type.Optional(ProviderPreferencesSchema),
    session_id: Type.Optional(SessionIdSchema),
  },
  { additionalProperties: false },
);

export type EmbeddingsBody = Static<typeof embeddingsBodySchema>;
