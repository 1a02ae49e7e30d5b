import { type TSchema, Type } from 'typebox';
import { nameText, storableText } from '../../platform/schema-types.js';

/** A non-empty list of distinct entries, or null for "no restriction" (and, on PATCH, to clear it). */
const allowList = <Item extends TSchema>(item: Item, description: string) =>
  Type.Union([Type.Array(item, { minItems: 1, maxItems: 1000, uniqueItems: true }), Type.Null()], {
    description,
  });

const editableFields = {
  name: nameText({ minLength: 1, maxLength: 200 }),
  disabled: Type.Boolean(),
  is_fallback: Type.Boolean({ description: 'Used only when no other route for the request succeeds' }),
  sort_order: Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Lower is tried first' }),
  allowed_api_key_hashes: allowList(
    Type.String({ pattern: '^[0-9a-f]{64}$' }),
    'Hashes of API keys of the same workspace that may use this credential; null = every key',
  ),
  allowed_models: allowList(
    storableText({ minLength: 1, maxLength: 256 }),
    'Model ids or canonical slugs of the catalogue (stored as canonical slugs); null = every model',
  ),
  allowed_user_ids: allowList(
    storableText({ minLength: 1, maxLength: 256 }),
    'End-user ids (the request `user`) that may use this credential; null = everyone',
  ),
};

const provider = Type.String({
  minLength: 1,
  maxLength: 100,
  description: 'A provider slug of GET /providers',
});
const key = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: 'The provider secret; stored encrypted, never returned',
});

export const ByokIdParams = Type.Object(
  { id: Type.String({ format: 'uuid' }) },
  { additionalProperties: false },
);

export const ListByokQuery = Type.Object(
  {
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    workspace_id: Type.Optional(Type.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
);

export const CreateByokBody = Type.Object(
  {
    provider,
    key,
    name: Type.Optional(editableFields.name),
    disabled: Type.Optional(editableFields.disabled),
    is_fallback: Type.Optional(editableFields.is_fallback),
    sort_order: Type.Optional(editableFields.sort_order),
    allowed_api_key_hashes: Type.Optional(editableFields.allowed_api_key_hashes),
    allowed_models: Type.Optional(editableFields.allowed_models),
    allowed_user_ids: Type.Optional(editableFields.allowed_user_ids),
    workspace_id: Type.Optional(Type.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
);

/** Any field of the credential but its workspace; `key` rotates the secret (and its label). */
export const UpdateByokBody = Type.Object(
  {
    provider: Type.Optional(provider),
    key: Type.Optional(key),
    name: Type.Optional(editableFields.name),
    disabled: Type.Optional(editableFields.disabled),
    is_fallback: Type.Optional(editableFields.is_fallback),
    sort_order: Type.Optional(editableFields.sort_order),
    allowed_api_key_hashes: Type.Optional(editableFields.allowed_api_key_hashes),
    allowed_models: Type.Optional(editableFields.allowed_models),
    allowed_user_ids: Type.Optional(editableFields.allowed_user_ids),
  },
  { additionalProperties: false, minProperties: 1 },
);

const nullableList = Type.Union([Type.Array(Type.String()), Type.Null()]);

export const ByokRecordSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  workspace_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  provider: Type.String(),
  label: Type.String({ description: 'A masked form of the secret' }),
  disabled: Type.Boolean(),
  is_fallback: Type.Boolean(),
  sort_order: Type.Integer(),
  allowed_api_key_hashes: nullableList,
  allowed_models: nullableList,
  allowed_user_ids: nullableList,
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
