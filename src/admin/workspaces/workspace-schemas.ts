import { Type } from 'typebox';
import { MAX_USD_AMOUNT } from '../../billing/money.js';
import { nameText, storableText, stringEnum } from '../../platform/schema-types.js';

export const SLUG_PATTERN = '^[a-z0-9]+(?:-[a-z0-9]+)*$';
export const PROVIDER_SORTS = ['price', 'throughput', 'latency', 'exacto'] as const;
/** Broadest first: each interval's limit must exceed the next one's. */
export const BUDGET_INTERVALS = ['lifetime', 'monthly', 'weekly', 'daily'] as const;

const timestamp = Type.String({ format: 'date-time' });

export const WorkspaceIdParams = Type.Object(
  { id: storableText({ minLength: 1, maxLength: 256, description: 'A workspace UUID or slug' }) },
  { additionalProperties: false },
);

export const BudgetParams = Type.Object(
  {
    id: storableText({ minLength: 1, maxLength: 256, description: 'A workspace UUID or slug' }),
    interval: stringEnum(['daily', 'weekly', 'monthly', 'lifetime']),
  },
  { additionalProperties: false },
);

export const PageQuery = Type.Object(
  {
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  },
  { additionalProperties: false },
);

const name = nameText({ minLength: 1, maxLength: 100 });
const slug = Type.String({ minLength: 1, maxLength: 50, pattern: SLUG_PATTERN });

/** The optional fields a workspace create and update share; null clears a text field. */
const optionalFields = {
  description: Type.Optional(Type.Union([storableText({ maxLength: 500 }), Type.Null()])),
  default_text_model: Type.Optional(Type.Union([storableText({ maxLength: 200 }), Type.Null()])),
  default_image_model: Type.Optional(Type.Union([storableText({ maxLength: 200 }), Type.Null()])),
  default_provider_sort: Type.Optional(
    Type.Unsafe<string | null>({ type: ['string', 'null'], enum: [...PROVIDER_SORTS, '', null] }),
  ),
  is_observability_broadcast_enabled: Type.Optional(Type.Boolean()),
  is_observability_io_logging_enabled: Type.Optional(Type.Boolean()),
  io_logging_sampling_rate: Type.Optional(Type.Number({ minimum: 0.0001, maximum: 1 })),
  io_logging_api_key_ids: Type.Optional(
    Type.Union([
      Type.Array(Type.String({ pattern: '^[0-9a-f]{64}$', description: 'An API key hash' }), {
        maxItems: 1000,
      }),
      Type.Null(),
    ]),
  ),
  is_data_discount_logging_enabled: Type.Optional(Type.Boolean()),
};

export const CreateWorkspaceBody = Type.Object(
  { name, slug, ...optionalFields },
  { additionalProperties: false },
);

export const UpdateWorkspaceBody = Type.Object(
  { name: Type.Optional(name), slug: Type.Optional(slug), ...optionalFields },
  { additionalProperties: false, minProperties: 1 },
);

export const WorkspaceRecordSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  created_by: Type.String(),
  default_text_model: Type.String(),
  default_image_model: Type.String(),
  default_provider_sort: Type.String(),
  default_guardrail_id: Type.String({ format: 'uuid' }),
  include_byok_in_budgets: Type.Boolean(),
  io_logging_api_key_ids: Type.Union([Type.Array(Type.String()), Type.Null()]),
  io_logging_sampling_rate: Type.Number(),
  is_data_discount_logging_enabled: Type.Boolean(),
  is_observability_broadcast_enabled: Type.Boolean(),
  is_observability_io_logging_enabled: Type.Boolean(),
  created_at: timestamp,
  updated_at: timestamp,
});

export const WorkspaceMemberSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  workspace_id: Type.String({ format: 'uuid' }),
  user_id: Type.String(),
  role: stringEnum(['admin', 'member']),
  created_at: timestamp,
});

export const UserIdsBody = Type.Object(
  {
    user_ids: Type.Array(storableText({ minLength: 1, maxLength: 256 }), { minItems: 1, maxItems: 100 }),
  },
  { additionalProperties: false },
);

export const BudgetRecordSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  workspace_id: Type.String({ format: 'uuid' }),
  interval: stringEnum(['daily', 'weekly', 'monthly', 'lifetime']),
  limit_usd: Type.Number(),
  reset_interval: stringEnum(['daily', 'weekly', 'monthly'], { nullable: true }),
  usage_usd: Type.Number({ description: 'Spend in the current window (BYOK included when the flag is set)' }),
  created_at: timestamp,
  updated_at: timestamp,
});

/** Limits are capped so nano-dollar amounts stay exact in a JS number (see docs/decisions.md). */
export const PutBudgetBody = Type.Object(
  {
    limit_usd: Type.Number({ exclusiveMinimum: 0, maximum: MAX_USD_AMOUNT }),
    include_byok_in_budgets: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
