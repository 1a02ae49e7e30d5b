import { Type } from 'typebox';
import { MAX_USD_AMOUNT } from '../../billing/money.js';
import { nameText, storableText, stringEnum } from '../../platform/schema-types.js';

const LimitReset = stringEnum(['daily', 'weekly', 'monthly'], { nullable: true });
/** Limits are capped so nano-dollar amounts stay exact in a JS number (see docs/decisions.md). */
const LimitUsd = Type.Union([Type.Number({ minimum: 0, maximum: MAX_USD_AMOUNT }), Type.Null()]);
const Usd = Type.Number();

export const KeyHashParams = Type.Object(
  {
    hash: Type.String({
      pattern: '^[0-9a-f]{64}$',
      description: 'SHA-256 of the key, 64 lowercase hex characters',
    }),
  },
  { additionalProperties: false },
);

export const KeyRecordSchema = Type.Object({
  hash: Type.String(),
  name: Type.String(),
  label: Type.String(),
  disabled: Type.Boolean(),
  limit: Type.Union([Usd, Type.Null()]),
  limit_remaining: Type.Union([Usd, Type.Null()]),
  limit_reset: LimitReset,
  include_byok_in_limit: Type.Boolean(),
  usage: Usd,
  usage_daily: Usd,
  usage_weekly: Usd,
  usage_monthly: Usd,
  byok_usage: Usd,
  byok_usage_daily: Usd,
  byok_usage_weekly: Usd,
  byok_usage_monthly: Usd,
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  creator_user_id: Type.Union([Type.String(), Type.Null()]),
  workspace_id: Type.String({ format: 'uuid' }),
});

export const CreateKeyBody = Type.Object(
  {
    name: nameText({ minLength: 1, maxLength: 200 }),
    limit: Type.Optional(LimitUsd),
    limit_reset: Type.Optional(LimitReset),
    include_byok_in_limit: Type.Optional(Type.Boolean()),
    expires_at: Type.Optional(
      Type.Union([Type.String({ description: 'ISO 8601 in UTC (Z or +00:00), with seconds' }), Type.Null()]),
    ),
    creator_user_id: Type.Optional(Type.Union([storableText({ minLength: 1, maxLength: 256 }), Type.Null()])),
    workspace_id: Type.Optional(Type.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
);

export const UpdateKeyBody = Type.Object(
  {
    name: Type.Optional(nameText({ minLength: 1, maxLength: 200 })),
    disabled: Type.Optional(Type.Boolean()),
    limit: Type.Optional(LimitUsd),
    limit_reset: Type.Optional(LimitReset),
    include_byok_in_limit: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const ListKeysQuery = Type.Object(
  {
    include_disabled: Type.Optional(stringEnum(['true', 'false'])),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
    workspace_id: Type.Optional(Type.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
);

export const CurrentKeySchema = Type.Object({
  label: Type.String(),
  name: Type.String(),
  hash: Type.String(),
  limit: Type.Union([Usd, Type.Null()]),
  limit_remaining: Type.Union([Usd, Type.Null()]),
  limit_reset: LimitReset,
  include_byok_in_limit: Type.Boolean(),
  usage: Usd,
  usage_daily: Usd,
  usage_weekly: Usd,
  usage_monthly: Usd,
  byok_usage: Usd,
  byok_usage_daily: Usd,
  byok_usage_weekly: Usd,
  byok_usage_monthly: Usd,
  is_free_tier: Type.Boolean(),
  is_management_key: Type.Boolean(),
  is_provisioning_key: Type.Boolean(),
  creator_user_id: Type.Union([Type.String(), Type.Null()]),
  expires_at: Type.Union([Type.String(), Type.Null()]),
  workspace_id: Type.String(),
});
