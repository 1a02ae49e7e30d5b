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
import { nullable, taggedUnion, textOrList } from '../shared/schema-unions.js';

/**
 * The `POST /chat/completions` body (OpenAI Chat Completions plus the reference's routing fields).
 *
 * Unknown top-level fields are refused (400 "body.x is not a known field"), as on every other body
 * of the service: a misspelt `max_tokens` would otherwise lift the caller's cost cap silently. The
 * list below is the union of what the `openai` SDK's `ChatCompletionCreateParams` and the
 * `@openrouter/sdk`'s `ChatRequest` can send, so both work unmodified; fields we do not act on are
 * accepted and ignored, and fields whose meaning we cannot honour (n > 1, logprobs, audio output,
 * legacy `functions`) are refused by `parse` with "is not supported".
 *
 * Nested message and content objects keep unknown fields: clients append the previous response's
 * message verbatim (`refusal`, `annotations`, `reasoning_details`…), and that must keep working.
 *
 * Unions are written as JSON Schema type lists or if/then/else (`../shared/schema-unions.ts`):
 * Ajv reports the first error only, and the first branch of an `anyOf` usually names the wrong problem.
 */

/** A prompt-cache breakpoint on a text part, as Anthropic takes it (OpenRouter's chat form). */
const CacheControlSchema = Type.Object(
  { type: Type.Literal('ephemeral'), ttl: Type.Optional(stringEnum(['5m', '1h'])) },
  { additionalProperties: false },
);

const ContentPartSchema = taggedUnion({
  text: Type.Object({
    type: Type.Literal('text'),
    text: Type.String(),
    cache_control: Type.Optional(CacheControlSchema),
  }),
  image_url: Type.Object({
    type: Type.Literal('image_url'),
    cache_control: Type.Optional(CacheControlSchema),
    image_url: Type.Object({
      url: Type.String({ minLength: 1 }),
      detail: Type.Optional(stringEnum(['auto', 'low', 'high', 'original'])),
    }),
  }),
  file: Type.Object({
    type: Type.Literal('file'),
    file: Type.Object({
      file_data: Type.Optional(Type.String({ minLength: 1 })),
      file_id: Type.Optional(Type.String()),
      filename: Type.Optional(Type.String()),
    }),
  }),
  input_audio: Type.Object({
    type: Type.Literal('input_audio'),
    input_audio: Type.Object({ data: Type.String({ minLength: 1 }), format: Type.String({ minLength: 1 }) }),
  }),
  /** Assistant turns only (OpenAI's refusal part, sent back with the conversation). */
  refusal: Type.Object({ type: Type.Literal('refusal'), refusal: Type.String() }),
});

export type ContentPartBody = Static<typeof ContentPartSchema>;

/** A string or a list of parts. */
const ContentSchema = nullable(textOrList(ContentPartSchema));

const ToolCallSchema = Type.Object({
  id: Type.String({ minLength: 1 }),
  type: Type.Optional(stringEnum(['function'])),
  function: Type.Object({ name: Type.String({ minLength: 1 }), arguments: Type.String() }),
});

const optionalText = Type.Optional(nullable(Type.String()));

/**
 * An image an assistant turn generated, as this gateway answers it (`message.images`, OpenRouter's
 * shape) and a client sends it back with that turn; `index` is the stream's and is ignored.
 */
const GeneratedImageSchema = Type.Object({
  type: stringEnum(['image_url']),
  image_url: Type.Object({ url: Type.String({ minLength: 1 }) }),
});
/** Whose reasoning an entry is; a name the gateway does not know reads as `unknown`. */
const ReasoningFormatSchema = Type.Optional(nullable(Type.String({ maxLength: 64 })));

/**
 * One `reasoning_details` entry of an earlier assistant turn, as the gateway returned it. Entries of
 * other types pass (and are not sent on): clients echo the list verbatim, and its types may grow.
 */
const ReasoningDetailSchema = taggedUnion(
  {
    'reasoning.text': Type.Object({
      type: Type.Literal('reasoning.text'),
      text: optionalText,
      signature: optionalText,
      format: ReasoningFormatSchema,
      id: optionalText,
    }),
    'reasoning.encrypted': Type.Object({
      type: Type.Literal('reasoning.encrypted'),
      data: Type.String(),
      format: ReasoningFormatSchema,
      id: optionalText,
    }),
    'reasoning.summary': Type.Object({
      type: Type.Literal('reasoning.summary'),
      summary: Type.String(),
      format: ReasoningFormatSchema,
      id: optionalText,
    }),
    'reasoning.server_tool_call': Type.Object({
      type: Type.Literal('reasoning.server_tool_call'),
      format: ReasoningFormatSchema,
      id: optionalText,
    }),
  },
  { otherTypes: true },
);

/**
 * One schema for every role; the role-specific rules (a tool message's `tool_call_id`, text-only
 * system content) are checked by `parse`, whose messages can say which role needs what.
 */
const MessageSchema = Type.Object({
  role: stringEnum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: Type.Optional(ContentSchema),
  name: Type.Optional(Type.String()),
  tool_calls: Type.Optional(nullable(Type.Array(ToolCallSchema))),
  tool_call_id: Type.Optional(Type.String({ minLength: 1 })),
  /** Reasoning text of an earlier assistant turn: accepted, not forwarded (what travels back is below). */
  reasoning: Type.Optional(nullable(Type.String())),
  /** An earlier assistant turn's signed reasoning, sent back to the provider that made it. */
  reasoning_details: Type.Optional(nullable(Type.Array(ReasoningDetailSchema))),
  /** The images an earlier assistant turn generated, sent back with it (read on assistant turns). */
  images: Type.Optional(nullable(Type.Array(GeneratedImageSchema))),
});

export type MessageBody = Static<typeof MessageSchema>;

const FunctionToolSchema = Type.Object({
  type: stringEnum(['function']),
  function: Type.Object({
    // OpenAI's rule for function names; providers refuse anything else with their own 400.
    name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9_-]+$' }),
    description: Type.Optional(Type.String()),
    parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    strict: Type.Optional(nullable(Type.Boolean())),
  }),
});

/**
 * OpenAI's custom (freeform) tool, and a choice or allowed tool naming one: they pass the schema so
 * `parse` can say custom tools are not supported, rather than "must have required property 'function'".
 */
const CustomSchema = Type.Object({ type: Type.Literal('custom') });

const ToolSchema = Type.Dependent(CustomSchema, CustomSchema, FunctionToolSchema);

const NamedFunctionSchema = Type.Object({
  type: stringEnum(['function']),
  function: Type.Object({ name: Type.String({ minLength: 1 }) }),
});

/** `allowed_tools`: the tools the model may call this turn, of those declared, and how. */
const AllowedToolsChoiceSchema = Type.Object({
  type: Type.Literal('allowed_tools'),
  allowed_tools: Type.Object({
    mode: stringEnum(['auto', 'required']),
    tools: Type.Array(Type.Dependent(CustomSchema, CustomSchema, NamedFunctionSchema), { minItems: 1 }),
  }),
});

const ToolChoiceSchema = Type.Dependent(
  Type.String(),
  stringEnum(['auto', 'none', 'required']),
  Type.Dependent(
    CustomSchema,
    CustomSchema,
    taggedUnion({ function: NamedFunctionSchema, allowed_tools: AllowedToolsChoiceSchema }),
  ),
);

const ResponseFormatSchema = taggedUnion({
  text: Type.Object({ type: Type.Literal('text') }),
  json_object: Type.Object({ type: Type.Literal('json_object') }),
  json_schema: Type.Object({
    type: Type.Literal('json_schema'),
    json_schema: Type.Object({
      name: Type.String({ minLength: 1, maxLength: 64 }),
      description: Type.Optional(Type.String()),
      schema: Type.Record(Type.String(), Type.Unknown()),
      strict: Type.Optional(nullable(Type.Boolean())),
    }),
  }),
});

const efforts = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

const ReasoningSchema = Type.Object(
  {
    effort: Type.Optional(stringEnum(efforts, { nullable: true })),
    max_tokens: Type.Optional(nullable(Type.Integer({ minimum: 1 }))),
    exclude: Type.Optional(nullable(Type.Boolean())),
    enabled: Type.Optional(nullable(Type.Boolean())),
    summary: Type.Optional(stringEnum(['auto', 'concise', 'detailed'], { nullable: true })),
  },
  { additionalProperties: false },
);

const AnyObject = Type.Record(Type.String(), Type.Unknown());

const optionalNumber = (range: { minimum?: number; maximum?: number } = {}) =>
  Type.Optional(nullable(Type.Number(range)));

export const ChatCompletionsBodySchema = Type.Object(
  {
    messages: Type.Array(MessageSchema, { minItems: 1 }),
    model: Type.Optional(ModelIdSchema),
    models: Type.Optional(ModelsSchema),
    tools: Type.Optional(Type.Array(ToolSchema)),
    tool_choice: Type.Optional(ToolChoiceSchema),
    parallel_tool_calls: Type.Optional(nullable(Type.Boolean())),
    max_tokens: Type.Optional(nullable(Type.Integer({ minimum: 1 }))),
    max_completion_tokens: Type.Optional(nullable(Type.Integer({ minimum: 1 }))),
    temperature: optionalNumber({ minimum: 0, maximum: 2 }),
    top_p: optionalNumber({ minimum: 0, maximum: 1 }),
    top_k: Type.Optional(nullable(Type.Integer({ minimum: 0, maximum: MAX_INT32 }))),
    frequency_penalty: optionalNumber({ minimum: -2, maximum: 2 }),
    presence_penalty: optionalNumber({ minimum: -2, maximum: 2 }),
    repetition_penalty: optionalNumber({ minimum: 0, maximum: 2 }),
    min_p: optionalNumber({ minimum: 0, maximum: 1 }),
    top_a: optionalNumber({ minimum: 0, maximum: 1 }),
    stop: Type.Optional(nullable(textOrList(Type.String(), { maxItems: 4 }))),
    seed: Type.Optional(
      nullable(Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER })),
    ),
    response_format: Type.Optional(ResponseFormatSchema),
    reasoning: Type.Optional(nullable(ReasoningSchema)),
    reasoning_effort: Type.Optional(stringEnum(efforts, { nullable: true })),
    /** The reference's legacy switch for returning reasoning text. */
    include_reasoning: Type.Optional(nullable(Type.Boolean())),
    stream: Type.Optional(nullable(Type.Boolean())),
    /** Accepted, no effect: usage is always sent (reference §1.1). */
    stream_options: Type.Optional(nullable(AnyObject)),
    /** The reference's legacy `usage: { include }`; usage is always sent. */
    usage: Type.Optional(nullable(AnyObject)),
    n: Type.Optional(nullable(Type.Integer({ minimum: 1 }))),
    logprobs: Type.Optional(nullable(Type.Boolean())),
    top_logprobs: Type.Optional(nullable(Type.Integer({ minimum: 0, maximum: 20 }))),
    logit_bias: Type.Optional(nullable(Type.Record(Type.String(), Type.Number()))),
    user: Type.Optional(UserSchema),
    session_id: Type.Optional(SessionIdSchema),
    metadata: Type.Optional(MetadataSchema),
    provider: Type.Optional(ProviderPreferencesSchema),
    route: Type.Optional(RouteSchema),
    trace: Type.Optional(TraceSchema),
    // What the answer may hold and how its images are shaped (../shared/output-options.ts).
    modalities: Type.Optional(nullable(Type.Array(stringEnum(['text', 'image', 'audio'])))),
    image_config: Type.Optional(ImageConfigSchema),
    // Accepted and ignored: routing, caching and output hints we do not act on (yet).
    transforms: Type.Optional(Type.Array(Type.String())),
    plugins: Type.Optional(Type.Array(Type.Object({ id: Type.String() }))),
    prediction: Type.Optional(nullable(AnyObject)),
    verbosity: Type.Optional(stringEnum(['low', 'medium', 'high'], { nullable: true })),
    service_tier: Type.Optional(
      stringEnum(['auto', 'default', 'fast', 'flex', 'priority', 'scale'], { nullable: true }),
    ),
    store: Type.Optional(nullable(Type.Boolean())),
    prompt_cache_key: Type.Optional(nullable(Type.String())),
    prompt_cache_retention: Type.Optional(nullable(Type.String())),
    prompt_cache_options: Type.Optional(nullable(AnyObject)),
    cache_control: Type.Optional(AnyObject),
    safety_identifier: Type.Optional(nullable(Type.String())),
    debug: Type.Optional(AnyObject),
    stop_server_tools_when: Type.Optional(Type.Array(AnyObject)),
    // Known but refused by `parse` with "is not supported" (better than "not a known field").
    functions: Type.Optional(Type.Array(AnyObject)),
    function_call: Type.Optional(Type.Unknown()),
    audio: Type.Optional(nullable(AnyObject)),
    web_search_options: Type.Optional(AnyObject),
  },
  { additionalProperties: false },
);

export type ChatCompletionsBody = Static<typeof ChatCompletionsBodySchema>;
