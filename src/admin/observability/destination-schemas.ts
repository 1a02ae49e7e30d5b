import { Type } from 'typebox';
import { DESTINATION_TYPE_NAMES } from '../../broadcast/destination-types.js';
import { storableText, stringEnum } from '../../platform/schema-types.js';
import { DESTINATION_REGIONS } from './destination-record.js';
import { FilterRulesSchema, StoredFilterRulesSchema } from './filter-rules.js';

export const MAX_KEY_HASHES = 1000;
export const MIN_SAMPLING_RATE = 0.0001;
/** A name as sent, padding included (its 1–255 characters are counted once trimmed). */
const MAX_SENT_NAME_LENGTH = 1024;

const uuid = Type.String({ format: 'uuid' });
const timestamp = Type.String({ format: 'date-time' });
const page = {
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
};

/** A JSON object of any fields (serialized whole in responses). */
const freeObject = (description: string) =>
  Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, description });

/**
 * Fields a create and a PATCH share. The config's shape depends on the type, so here it is any
 * object; the service validates it against the type's own schema.
 */
const editableFields = {
  // The 255 is checked once trimmed (destination-service.ts); what is sent is only bounded here.
  name: storableText({
    minLength: 1,
    maxLength: MAX_SENT_NAME_LENGTH,
    description: '1 to 255 characters once leading and trailing whitespace is trimmed',
  }),
  config: freeObject("The type's settings; secret fields and header values are returned masked"),
  enabled: Type.Boolean(),
  api_key_hashes: Type.Union(
    [
      Type.Array(Type.String({ pattern: '^[0-9a-f]{64}$', description: 'An API key hash' }), {
        minItems: 1,
        maxItems: MAX_KEY_HASHES,
      }),
      Type.Null(),
    ],
    { description: 'Only traffic of these keys is forwarded; null = every key' },
  ),
  broadcast_generation_cost: Type.Boolean({ description: 'Include cost and billing metadata' }),
  broadcast_generation_identity: Type.Boolean({ description: 'Include identity metadata' }),
  broadcast_generation_request_context: Type.Boolean({ description: 'Include request-context metadata' }),
  filter_rules: Type.Union([FilterRulesSchema, Type.Null()], {
    description: 'Which events are forwarded; null = all (docs/observability.md, "Filter rules")',
  }),
  privacy_mode: Type.Boolean({ description: 'Forward metadata only, never prompts or outputs' }),
  regions: Type.Array(stringEnum(['global', 'europe', 'us', 'eu']), {
    minItems: 1,
    maxItems: 16,
    description: '`eu` is stored as `europe`; duplicates are dropped',
  }),
  sampling_rate: Type.Number({ minimum: MIN_SAMPLING_RATE, maximum: 1 }),
};

export const DestinationIdParams = Type.Object({ id: uuid }, { additionalProperties: false });

export const ListDestinationsQuery = Type.Object(
  { ...page, workspace_id: Type.Optional(uuid) },
  { additionalProperties: false },
);

export const CreateDestinationBody = Type.Object(
  {
    type: stringEnum(DESTINATION_TYPE_NAMES),
    name: editableFields.name,
    config: editableFields.config,
    workspace_id: Type.Optional(uuid),
    enabled: Type.Optional(editableFields.enabled),
    api_key_hashes: Type.Optional(editableFields.api_key_hashes),
    broadcast_generation_cost: Type.Optional(editableFields.broadcast_generation_cost),
    broadcast_generation_identity: Type.Optional(editableFields.broadcast_generation_identity),
    broadcast_generation_request_context: Type.Optional(editableFields.broadcast_generation_request_context),
    filter_rules: Type.Optional(editableFields.filter_rules),
    privacy_mode: Type.Optional(editableFields.privacy_mode),
    regions: Type.Optional(editableFields.regions),
    sampling_rate: Type.Optional(editableFields.sampling_rate),
  },
  { additionalProperties: false },
);

/** Spec 4.5: any subset of the editable fields; neither `type` nor `workspace_id` can change. */
export const UpdateDestinationBody = Type.Object(
  {
    name: Type.Optional(editableFields.name),
    config: Type.Optional(editableFields.config),
    enabled: Type.Optional(editableFields.enabled),
    api_key_hashes: Type.Optional(editableFields.api_key_hashes),
    broadcast_generation_cost: Type.Optional(editableFields.broadcast_generation_cost),
    broadcast_generation_identity: Type.Optional(editableFields.broadcast_generation_identity),
    broadcast_generation_request_context: Type.Optional(editableFields.broadcast_generation_request_context),
    filter_rules: Type.Optional(editableFields.filter_rules),
    privacy_mode: Type.Optional(editableFields.privacy_mode),
    regions: Type.Optional(editableFields.regions),
    sampling_rate: Type.Optional(editableFields.sampling_rate),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const DestinationRecordSchema = Type.Object({
  id: uuid,
  workspace_id: uuid,
  name: Type.String(),
  type: Type.String(),
  config: freeObject('Secret fields and every header value masked'),
  enabled: Type.Boolean(),
  api_key_hashes: Type.Union([Type.Array(Type.String()), Type.Null()]),
  broadcast_generation_cost: Type.Boolean(),
  broadcast_generation_identity: Type.Boolean(),
  broadcast_generation_request_context: Type.Boolean(),
  filter_rules: Type.Union([StoredFilterRulesSchema, Type.Null()]),
  privacy_mode: Type.Boolean(),
  regions: Type.Array(stringEnum(DESTINATION_REGIONS)),
  sampling_rate: Type.Number(),
  created_at: timestamp,
  updated_at: timestamp,
});

export const DELIVERY_STATUSES = ['dead', 'pending'] as const;

export const ListDeliveriesQuery = Type.Object(
  { ...page, status: Type.Optional(stringEnum(DELIVERY_STATUSES)) },
  { additionalProperties: false },
);

export const DeliveryRecordSchema = Type.Object({
  id: Type.String(),
  generation_id: Type.String(),
  status: stringEnum(DELIVERY_STATUSES),
  attempts: Type.Integer(),
  next_attempt_at: timestamp,
  last_status: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  created_at: timestamp,
  dead_at: Type.Union([timestamp, Type.Null()]),
});
