import { type Static, Type } from 'typebox';
import { stringEnum } from '../../../platform/schema-types.js';
import { ImageConfigSchema } from '../shared/output-options.js';
import { ProviderPreferencesSchema, RouteSchema } from '../shared/provider-preferences.js';
import {
  MAX_INT32,
  MetadataSchema,
  ModelIdSchema,
  ModelsSchema,
  SessionIdSchema,
  TraceSchema,
  UserSchema,
} from '../shared/request-rules.js';
import { nullable, taggedUnion } from '../shared/schema-unions.js';

/**
 * The body of `POST /responses` (spec §4.6, OpenAPI `ResponsesRequest`, plus the fields of the
 * `openai` SDK's `ResponseCreateParams`), validated by Ajv before `parse` runs.
 *
 * Unknown top-level fields are refused (400 "body.x is not a known field"), like every other body
 * of this service: both official SDKs only send fields their users set, and every field either SDK
 * knows is listed here. Nested objects that carry history or vendor options (input items, tools,
 * plugins, trace, image_config) stay open, because clients round-trip fields we do not read.
 *
 * Rules that Ajv cannot state clearly (input items, `models` ≤ 3, `tool_choice`, tool types,
 * metadata keys, stateless-only fields) are checked in `parse-responses-request.ts`.
 */

const nullableNumber = (range: { minimum?: number; maximum?: number } = {}) => nullable(Type.Number(range));
const nullableInteger = (range: { minimum?: number; maximum?: number } = {}) => nullable(Type.Integer(range));
const nullableString = () => nullable(Type.String());
const nullableBoolean = () => nullable(Type.Boolean());
const AnyObject = Type.Record(Type.String(), Type.Unknown());

/** One element of `input` before `parse` reads it: messages, function calls and outputs, reasoning. */
export type ResponsesInputItem = Record<string, unknown>;

const Input = Type.Unsafe<string | ResponsesInputItem[]>({
  type: ['string', 'array'],
  description:
    'A user message as text, or an array of items (messages, function_call, function_call_output, image_generation_call)',
  items: { type: 'object' },
});

const FunctionTool = Type.Object({
  type: Type.Literal('function'),
  name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
  description: Type.Optional(nullableString()),
  parameters: Type.Optional(nullable(AnyObject)),
  strict: Type.Optional(nullableBoolean()),
});
/** Built-in tools (web search, file search…) pass the schema so `parse` can refuse them by name. */
const OtherTool = Type.Object({ type: Type.String({ minLength: 1 }) });

/** A tool as sent; only `type: function` passes `parse`. Unknown fields are kept (tools round-trip). */
export type ResponsesToolBody = Static<typeof OtherTool> & Partial<Omit<Static<typeof FunctionTool>, 'type'>>;

const Tool = Type.Unsafe<ResponsesToolBody>(
  Type.Dependent(Type.Object({ type: Type.Literal('function') }), FunctionTool, OtherTool),
);

const TextFormat = taggedUnion({
  text: Type.Object({ type: Type.Literal('text') }, { additionalProperties: false }),
  json_object: Type.Object({ type: Type.Literal('json_object') }, { additionalProperties: false }),
  json_schema: Type.Object(
    {
      type: Type.Literal('json_schema'),
      name: Type.String({ minLength: 1, maxLength: 64 }),
      schema: AnyObject,
      strict: Type.Optional(nullableBoolean()),
      description: Type.Optional(Type.String()),
    },
    { additionalProperties: false },
  ),
});

export type ResponsesTextFormat = Static<typeof TextFormat>;

const Text = Type.Object(
  {
    format: Type.Optional(TextFormat),
    verbosity: Type.Optional(stringEnum(['low', 'medium', 'high', 'xhigh', 'max'], { nullable: true })),
  },
  { additionalProperties: false },
);

const summaryLevel = stringEnum(['auto', 'concise', 'detailed'], { nullable: true });

const ReasoningFields = Type.Object(
  {
    effort: Type.Optional(
      stringEnum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'], { nullable: true }),
    ),
    summary: Type.Optional(summaryLevel),
    /** The `openai` SDK's deprecated spelling of `summary`. */
    generate_summary: Type.Optional(summaryLevel),
    enabled: Type.Optional(nullableBoolean()),
    max_tokens: Type.Optional(nullableInteger({ minimum: 0 })),
    exclude: Type.Optional(nullableBoolean()),
    context: Type.Optional(stringEnum(['auto', 'all_turns', 'current_turn'], { nullable: true })),
    mode: Type.Optional(stringEnum(['standard', 'pro'], { nullable: true })),
  },
  { additionalProperties: false },
);
const Reasoning = nullable(ReasoningFields);

const closed = { additionalProperties: false } as const;

/** When server-side tool loops stop; each kind carries its one field. */
const StopCondition = taggedUnion({
  step_count_is: Type.Object(
    { type: Type.Literal('step_count_is'), step_count: Type.Integer({ minimum: 1 }) },
    closed,
  ),
  max_cost: Type.Object(
    { type: Type.Literal('max_cost'), max_cost_in_dollars: Type.Number({ minimum: 0 }) },
    closed,
  ),
  has_tool_call: Type.Object(
    { type: Type.Literal('has_tool_call'), tool_name: Type.String({ minLength: 1 }) },
    closed,
  ),
  max_tokens_used: Type.Object(
    { type: Type.Literal('max_tokens_used'), max_tokens: Type.Integer({ minimum: 1 }) },
    closed,
  ),
  finish_reason_is: Type.Object(
    { type: Type.Literal('finish_reason_is'), reason: Type.String({ minLength: 1 }) },
    closed,
  ),
});

const Plugin = Type.Object(
  { id: Type.String({ minLength: 1 }) },
  { additionalProperties: true, description: 'Accepted and validated; plugins are not run yet' },
);

const PromptTemplate = nullable(
  Type.Object({ id: Type.String(), variables: Type.Optional(nullable(AnyObject)) }),
);

const PromptCacheOptions = nullable(
  Type.Object({ mode: stringEnum(['explicit']), ttl: Type.Optional(nullableString()) }),
);

const CacheControl = Type.Object({
  type: stringEnum(['ephemeral']),
  ttl: Type.Optional(stringEnum(['5m', '1h'])),
});

const INCLUDABLE = [
  'file_search_call.results',
  'message.input_image.image_url',
  'computer_call_output.output.image_url',
  'reasoning.encrypted_content',
  'code_interpreter_call.outputs',
  'web_search_call.results',
  'web_search_call.action.sources',
  'message.output_text.logprobs',
] as const;

export const ResponsesBodySchema = Type.Object(
  {
    input: Input,
    model: Type.Optional(ModelIdSchema),
    models: Type.Optional(ModelsSchema),
    instructions: Type.Optional(nullableString()),
    stream: Type.Optional(nullableBoolean()),
    store: Type.Optional(nullableBoolean()),
    background: Type.Optional(nullableBoolean()),
    previous_response_id: Type.Optional(nullableString()),
    conversation: Type.Optional(Type.Unsafe<unknown>({ type: ['string', 'object', 'null'] })),
    max_output_tokens: Type.Optional(nullableInteger({ minimum: 1 })),
    max_tool_calls: Type.Optional(nullableInteger({ minimum: 1 })),
    top_logprobs: Type.Optional(nullableInteger({ minimum: 0, maximum: 20 })),
    top_k: Type.Optional(nullableInteger({ minimum: 0, maximum: MAX_INT32 })),
    temperature: Type.Optional(nullableNumber({ minimum: 0, maximum: 2 })),
    top_p: Type.Optional(nullableNumber({ minimum: 0, maximum: 1 })),
    frequency_penalty: Type.Optional(nullableNumber({ minimum: -2, maximum: 2 })),
    presence_penalty: Type.Optional(nullableNumber({ minimum: -2, maximum: 2 })),
    parallel_tool_calls: Type.Optional(nullableBoolean()),
    tools: Type.Optional(Type.Array(Tool)),
    tool_choice: Type.Optional(
      Type.Unsafe<unknown>({ type: ['string', 'object', 'null'], description: 'Only "auto"' }),
    ),
    stop_server_tools_when: Type.Optional(Type.Array(StopCondition, { minItems: 1 })),
    metadata: Type.Optional(MetadataSchema),
    modalities: Type.Optional(nullable(Type.Array(stringEnum(['text', 'image'])))),
    include: Type.Optional(nullable(Type.Array(stringEnum(INCLUDABLE)))),
    reasoning: Type.Optional(Reasoning),
    text: Type.Optional(Text),
    truncation: Type.Optional(stringEnum(['auto', 'disabled'], { nullable: true })),
    service_tier: Type.Optional(
      stringEnum(['auto', 'default', 'fast', 'flex', 'priority', 'scale'], { nullable: true }),
    ),
    provider: Type.Optional(ProviderPreferencesSchema),
    plugins: Type.Optional(Type.Array(Plugin)),
    route: Type.Optional(RouteSchema),
    prompt: Type.Optional(PromptTemplate),
    prompt_cache_key: Type.Optional(nullableString()),
    prompt_cache_options: Type.Optional(PromptCacheOptions),
    prompt_cache_retention: Type.Optional(stringEnum(['in_memory', 'in-memory', '24h'], { nullable: true })),
    cache_control: Type.Optional(CacheControl),
    image_config: Type.Optional(ImageConfigSchema),
    debug: Type.Optional(Type.Object({ echo_upstream_body: Type.Optional(Type.Boolean()) })),
    trace: Type.Optional(TraceSchema),
    session_id: Type.Optional(SessionIdSchema),
    user: Type.Optional(UserSchema),
    safety_identifier: Type.Optional(nullableString()),
    stream_options: Type.Optional(
      nullable(Type.Object({ include_obfuscation: Type.Optional(Type.Boolean()) })),
    ),
    context_management: Type.Optional(nullable(Type.Array(AnyObject))),
  },
  { additionalProperties: false },
);

export type ResponsesBody = Static<typeof ResponsesBodySchema>;
