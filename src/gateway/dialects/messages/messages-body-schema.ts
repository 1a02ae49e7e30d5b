import { type Static, Type } from 'typebox';
import { storableText, stringEnum } from '../../../platform/schema-types.js';
import { ProviderPreferencesSchema, RouteSchema } from '../shared/provider-preferences.js';
import {
  MAX_INT32,
  ModelIdSchema,
  ModelsSchema,
  SessionIdSchema,
  TraceSchema,
  UserSchema,
} from '../shared/request-rules.js';
import { nullable, taggedUnion, textOrList } from '../shared/schema-unions.js';

/**
 * The `POST /messages` body: Anthropic's Messages request (https://docs.anthropic.com/en/api/messages)
 * for the features the gateway carries, plus the gateway's own routing fields (reference §7).
 *
 * Unknown fields are refused at every level (400 "body.<field> is not a known field"), as Anthropic
 * itself refuses them and as the admin bodies do: a feature we would silently drop (`mcp_servers`,
 * `container`, `context_management`) or a misspelt field must not turn into a different request.
 * The official SDKs send only the fields the caller set, so they work unmodified. `cache_control`
 * (top level and on system, tool, content and tool-result blocks) is carried to Anthropic upstreams
 * as prompt-cache breakpoints. Fields Anthropic defines that have no canonical counterpart but change
 * nothing about the answer are accepted and ignored: `citations`, a document's `context`, and
 * `service_tier`.
 */

const CacheControl = Type.Object(
  { type: Type.Literal('ephemeral'), ttl: Type.Optional(stringEnum(['5m', '1h'])) },
  { additionalProperties: false },
);
const Ignored = Type.Unsafe<unknown>({});

const TextBlock = Type.Object(
  {
    type: Type.Literal('text'),
    text: Type.String(),
    cache_control: Type.Optional(CacheControl),
    citations: Type.Optional(Ignored),
  },
  { additionalProperties: false },
);
const Data = Type.String({ minLength: 1 });
/** A `url` source is a link the provider fetches: http(s) only (inline data is a `base64` source). */
const Url = Type.String({ minLength: 1, pattern: '^https?://' });

const ImageBlock = Type.Object(
  {
    type: Type.Literal('image'),
    source: taggedUnion({
      base64: Type.Object(
        {
          type: Type.Literal('base64'),
          media_type: stringEnum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
          data: Data,
        },
        { additionalProperties: false },
      ),
      url: Type.Object({ type: Type.Literal('url'), url: Url }, { additionalProperties: false }),
    }),
    cache_control: Type.Optional(CacheControl),
  },
  { additionalProperties: false },
);

const DocumentBlock = Type.Object(
  {
    type: Type.Literal('document'),
    source: taggedUnion({
      base64: Type.Object(
        { type: Type.Literal('base64'), media_type: stringEnum(['application/pdf']), data: Data },
        { additionalProperties: false },
      ),
      url: Type.Object({ type: Type.Literal('url'), url: Url }, { additionalProperties: false }),
      text: Type.Object(
        { type: Type.Literal('text'), media_type: stringEnum(['text/plain']), data: Type.String() },
        { additionalProperties: false },
      ),
    }),
    title: Type.Optional(nullable(Type.String())),
    context: Type.Optional(Ignored),
    citations: Type.Optional(Ignored),
    cache_control: Type.Optional(CacheControl),
  },
  { additionalProperties: false },
);

const ToolUseBlock = Type.Object(
  {
    type: Type.Literal('tool_use'),
    id: Type.String({ minLength: 1 }),
    name: Type.String({ minLength: 1 }),
    input: Type.Optional(Type.Unsafe<Record<string, unknown>>({ type: 'object' })),
    cache_control: Type.Optional(CacheControl),
  },
  { additionalProperties: false },
);

const ToolResultBlock = Type.Object(
  {
    type: Type.Literal('tool_result'),
    tool_use_id: Type.String({ minLength: 1 }),
    content: Type.Optional(
      textOrList(taggedUnion({ text: TextBlock, image: ImageBlock, document: DocumentBlock })),
    ),
    is_error: Type.Optional(Type.Boolean()),
    cache_control: Type.Optional(CacheControl),
  },
  { additionalProperties: false },
);

const ThinkingBlock = Type.Object(
  {
    type: Type.Literal('thinking'),
    thinking: Type.String(),
    signature: Type.Optional(Type.String()),
    cache_control: Type.Optional(CacheControl),
  },
  { additionalProperties: false },
);
const RedactedThinkingBlock = Type.Object(
  {
    type: Type.Literal('redacted_thinking'),
    data: Type.String(),
    cache_control: Type.Optional(CacheControl),
  },
  { additionalProperties: false },
);

const ContentBlock = taggedUnion({
  text: TextBlock,
  image: ImageBlock,
  document: DocumentBlock,
  tool_use: ToolUseBlock,
  tool_result: ToolResultBlock,
  thinking: ThinkingBlock,
  redacted_thinking: RedactedThinkingBlock,
});
export type MessagesContentBlock = Static<typeof ContentBlock>;

const Message = Type.Object(
  { role: stringEnum(['user', 'assistant']), content: textOrList(ContentBlock) },
  { additionalProperties: false },
);

/** `input_schema` is a JSON Schema object; Anthropic requires its `type` to be `object`. */
const InputSchema = Type.Unsafe<Record<string, unknown>>({
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', enum: ['object'] } },
});
const CustomTool = Type.Object(
  {
    type: Type.Optional(Type.Literal('custom')),
    // Anthropic's rule for tool names.
    name: Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-zA-Z0-9_-]+$' }),
    description: Type.Optional(Type.String()),
    input_schema: InputSchema,
    strict: Type.Optional(Type.Boolean()),
    cache_control: Type.Optional(CacheControl),
  },
  { additionalProperties: false },
);
/** Anthropic's server tools (web_search_…, bash_…): recognized here so parse can refuse them by name. */
const ServerTool = Type.Object({ type: Type.String() });
const Tool = Type.Unsafe<Static<typeof CustomTool> | Static<typeof ServerTool>>(
  Type.Dependent(Type.Object({ type: Type.Optional(Type.Literal('custom')) }), CustomTool, ServerTool),
);
export type MessagesTool = Static<typeof Tool>;

const DisableParallel = Type.Optional(Type.Boolean());
const ToolChoice = taggedUnion({
  auto: Type.Object(
    { type: Type.Literal('auto'), disable_parallel_tool_use: DisableParallel },
    { additionalProperties: false },
  ),
  any: Type.Object(
    { type: Type.Literal('any'), disable_parallel_tool_use: DisableParallel },
    { additionalProperties: false },
  ),
  tool: Type.Object(
    {
      type: Type.Literal('tool'),
      name: Type.String({ minLength: 1 }),
      disable_parallel_tool_use: DisableParallel,
    },
    { additionalProperties: false },
  ),
  none: Type.Object({ type: Type.Literal('none') }, { additionalProperties: false }),
});

const ThinkingDisplay = Type.Optional(stringEnum(['summarized', 'omitted'], { nullable: true }));
/** Anthropic's minimum thinking budget is 1024 tokens. */
const Thinking = taggedUnion({
  enabled: Type.Object(
    {
      type: Type.Literal('enabled'),
      budget_tokens: Type.Integer({ minimum: 1024, maximum: 2_147_483_647 }),
      display: ThinkingDisplay,
    },
    { additionalProperties: false },
  ),
  disabled: Type.Object({ type: Type.Literal('disabled') }, { additionalProperties: false }),
  adaptive: Type.Object(
    { type: Type.Literal('adaptive'), display: ThinkingDisplay },
    { additionalProperties: false },
  ),
});

/** Anthropic's structured-output format: a JSON schema the answer follows. */
const OutputFormat = taggedUnion({
  json_schema: Type.Object(
    {
      type: Type.Literal('json_schema'),
      schema: Type.Unsafe<Record<string, unknown>>({ type: 'object' }),
    },
    { additionalProperties: false },
  ),
});

/**
 * Anthropic's effort level and structured-output format; null for either is not given, as the SDK
 * types them.
 */
const OutputConfig = Type.Object(
  {
    effort: Type.Optional(stringEnum(['low', 'medium', 'high', 'xhigh', 'max'], { nullable: true })),
    format: Type.Optional(nullable(OutputFormat)),
  },
  { additionalProperties: false },
);

export const messagesBodySchema = Type.Object(
  {
    model: ModelIdSchema,
    messages: Type.Array(Message, { minItems: 1 }),
    max_tokens: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
    system: Type.Optional(textOrList(taggedUnion({ text: TextBlock }))),
    stop_sequences: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    top_k: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_INT32 })),
    tools: Type.Optional(Type.Array(Tool)),
    tool_choice: Type.Optional(ToolChoice),
    stream: Type.Optional(Type.Boolean()),
    metadata: Type.Optional(
      Type.Object(
        { user_id: Type.Optional(nullable(storableText({ maxLength: 256 }))) },
        { additionalProperties: false },
      ),
    ),
    thinking: Type.Optional(Thinking),
    output_config: Type.Optional(OutputConfig),
    // The structured-outputs beta's spelling of `output_config.format` (header
    // `structured-outputs-2025-11-13`), deprecated at GA; the SDK types it nullable.
    output_format: Type.Optional(nullable(OutputFormat)),
    service_tier: Type.Optional(stringEnum(['auto', 'standard_only'])),
    cache_control: Type.Optional(CacheControl),
    // The gateway's own fields. `fallbacks` is this skin's spelling of `models` (reference §7);
    // the count of either is checked by parse, in the reference's wording.
    models: Type.Optional(ModelsSchema),
    fallbacks: Type.Optional(
      nullable(Type.Array(Type.Object({ model: ModelIdSchema }, { additionalProperties: false }))),
    ),
    provider: Type.Optional(ProviderPreferencesSchema),
    route: Type.Optional(RouteSchema),
    session_id: Type.Optional(SessionIdSchema),
    user: Type.Optional(UserSchema),
    trace: Type.Optional(TraceSchema),
  },
  { additionalProperties: false },
);

export type MessagesBody = Static<typeof messagesBodySchema>;
