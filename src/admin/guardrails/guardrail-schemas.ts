import { type TSchema, Type } from 'typebox';
import { MAX_USD_AMOUNT } from '../../billing/money.js';
import { nameText, storableText, stringEnum } from '../../platform/schema-types.js';
import { BUILTIN_FILTER_SLUGS } from './builtin-filter-catalog.js';
import { MAX_PATTERN_LENGTH } from './regex-safety.js';

/** At most this many custom filters per guardrail: each is analysed for ReDoS when saved. */
export const MAX_CUSTOM_FILTERS = 50;
const MAX_LIST_ITEMS = 500;

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const timestamp = Type.String({ format: 'date-time' });
const Action = stringEnum(['block', 'redact', 'flag']);
const ScanScope = stringEnum(['user_only', 'all_messages']);
const ResetInterval = stringEnum(['daily', 'weekly', 'monthly'], { nullable: true });
const names = (description: string) =>
  nullable(
    Type.Array(storableText({ minLength: 1, maxLength: 200 }), {
      minItems: 1,
      maxItems: MAX_LIST_ITEMS,
      description: `${description}; null clears the list`,
    }),
  );

export const GuardrailIdParams = Type.Object(
  { id: Type.String({ format: 'uuid', description: 'Guardrail id' }) },
  { additionalProperties: false },
);

export const PageQuery = Type.Object(
  {
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Default 50' })),
  },
  { additionalProperties: false },
);

export const ListGuardrailsQuery = Type.Object(
  {
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Default 50' })),
    workspace_id: Type.Optional(Type.String({ format: 'uuid', description: "Default: the key's workspace" })),
  },
  { additionalProperties: false },
);

const BuiltinFilterInput = Type.Object(
  {
    slug: stringEnum(BUILTIN_FILTER_SLUGS),
    action: Action,
    label: Type.Optional(
      Type.String({ maxLength: 100, description: 'Accepted and ignored: labels are fixed' }),
    ),
    scan_scope: Type.Optional(ScanScope),
  },
  { additionalProperties: false },
);

const CustomFilterInput = Type.Object(
  {
    pattern: storableText({
      minLength: 1,
      maxLength: MAX_PATTERN_LENGTH,
      description: 'A JavaScript regex (flags gu)',
    }),
    action: Action,
    label: Type.Optional(nullable(storableText({ maxLength: 100 }))),
  },
  { additionalProperties: false },
);

/** The fields create and update share (spec 2.5); every one optional on both. */
const ruleFields = {
  description: Type.Optional(nullable(storableText({ maxLength: 1000 }))),
  limit_usd: Type.Optional(nullable(Type.Number({ exclusiveMinimum: 0, maximum: MAX_USD_AMOUNT }))),
  reset_interval: Type.Optional(ResetInterval),
  allowed_models: Type.Optional(names('Model ids or canonical slugs, stored as canonical slugs')),
  allowed_providers: Type.Optional(names('Provider slugs')),
  ignored_models: Type.Optional(names('Model ids or canonical slugs, stored as canonical slugs')),
  ignored_providers: Type.Optional(names('Provider slugs')),
  enforce_zdr: Type.Optional(
    nullable(Type.Boolean({ description: 'Deprecated: copied into each enforce_zdr_* flag not given' })),
  ),
  enforce_zdr_anthropic: Type.Optional(nullable(Type.Boolean())),
  enforce_zdr_openai: Type.Optional(nullable(Type.Boolean())),
  enforce_zdr_google: Type.Optional(nullable(Type.Boolean())),
  enforce_zdr_other: Type.Optional(nullable(Type.Boolean())),
  content_filter_builtins: Type.Optional(
    nullable(Type.Array(BuiltinFilterInput, { minItems: 1, maxItems: BUILTIN_FILTER_SLUGS.length })),
  ),
  content_filters: Type.Optional(
    nullable(Type.Array(CustomFilterInput, { minItems: 1, maxItems: MAX_CUSTOM_FILTERS })),
  ),
};

const name = nameText({ minLength: 1, maxLength: 200 });

export const CreateGuardrailBody = Type.Object(
  { name, ...ruleFields, workspace_id: Type.Optional(Type.String({ format: 'uuid' })) },
  { additionalProperties: false },
);

export const UpdateGuardrailBody = Type.Object(
  { name: Type.Optional(name), ...ruleFields },
  { additionalProperties: false, minProperties: 1 },
);

export const GuardrailRecordSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  workspace_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  description: nullable(Type.String()),
  limit_usd: nullable(Type.Number()),
  reset_interval: ResetInterval,
  allowed_models: nullable(Type.Array(Type.String())),
  allowed_providers: nullable(Type.Array(Type.String())),
  ignored_models: nullable(Type.Array(Type.String())),
  ignored_providers: nullable(Type.Array(Type.String())),
  enforce_zdr: Type.Null({ description: 'Deprecated; always null' }),
  enforce_zdr_anthropic: nullable(Type.Boolean()),
  enforce_zdr_openai: nullable(Type.Boolean()),
  enforce_zdr_google: nullable(Type.Boolean()),
  enforce_zdr_other: nullable(Type.Boolean()),
  content_filter_builtins: nullable(
    Type.Array(
      Type.Object({
        slug: Type.String(),
        action: Type.String(),
        label: Type.String(),
        scan_scope: Type.Optional(Type.String()),
      }),
    ),
  ),
  content_filters: nullable(
    Type.Array(
      Type.Object({ pattern: Type.String(), action: Type.String(), label: nullable(Type.String()) }),
    ),
  ),
  created_at: timestamp,
  updated_at: timestamp,
});

const keyHash = Type.String({ pattern: '^[0-9a-f]{64}$', description: 'An API key hash' });
const userId = storableText({ minLength: 1, maxLength: 256 });

export const KeyHashesBody = Type.Object(
  { key_hashes: Type.Array(keyHash, { minItems: 1, maxItems: 100 }) },
  { additionalProperties: false },
);

export const MemberUserIdsBody = Type.Object(
  { member_user_ids: Type.Array(userId, { minItems: 1, maxItems: 100 }) },
  { additionalProperties: false },
);

export const KeyAssignmentSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  guardrail_id: Type.String({ format: 'uuid' }),
  key_hash: Type.String(),
  key_name: Type.String(),
  key_label: Type.String(),
  assigned_by: Type.String({ description: 'Hash of the management key that made the assignment' }),
  created_at: timestamp,
});

export const MemberAssignmentSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  guardrail_id: Type.String({ format: 'uuid' }),
  user_id: Type.String(),
  organization_id: Type.String(),
  assigned_by: Type.String({ description: 'Hash of the management key that made the assignment' }),
  created_at: timestamp,
});
