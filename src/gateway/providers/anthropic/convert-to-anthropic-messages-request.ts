import { createHash } from 'node:crypto';
import type {
  CacheControl,
  ContentPart,
  FunctionTool,
  GenerationRequest,
  InputItem,
  ReasoningBlock,
  ReasoningOptions,
  ResponseFormat,
} from '../../../spec/generation-request.js';
import { UnsupportedRequestError } from '../../../spec/upstream-error.js';
import { standardBase64 } from '../shared/base64-data.js';
import { argumentsObject } from '../shared/function-arguments.js';
import { withoutGeneratedImages } from '../shared/generated-images.js';
import { refuseImageOutput } from '../shared/text-output-only.js';
import { thinkingRoom } from '../shared/thinking-room.js';
import { anthropicOutputSchema, anthropicStrictToolSchema } from './anthropic-output-schema.js';
import { anthropicToolInputSchema, hasRootCombinator } from './anthropic-tool-schema.js';

type AnthropicSource =
  | { type: 'url'; url: string }
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'text'; media_type: 'text/plain'; data: string };

type AnthropicContentBlock = (
  | { type: 'text'; text: string }
  | { type: 'image'; source: AnthropicSource }
  | { type: 'document'; source: AnthropicSource; title?: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string | AnthropicContentBlock[]; is_error?: true }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
) & { cache_control?: CacheControl };

/** A system prompt section; the system goes as blocks only when one carries a cache breakpoint. */
type SystemSection = { text: string; cacheControl?: CacheControl };

/** A block with the cache breakpoint of what it came from. */
function withCache<T extends AnthropicContentBlock>(block: T, cacheControl: CacheControl | undefined): T {
  if (cacheControl !== undefined) block.cache_control = cacheControl;
  return block;
}

interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: AnthropicContentBlock[];
}

/**
 * Anthropic requires `max_tokens` on every request, where the canonical request leaves it optional.
 * 4096 is the largest output every current Claude model accepts (Claude 3 Haiku tops out there),
 * so the default never turns a valid request into a 400.
 */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * Thinking budgets for effort levels, since Anthropic takes a token budget rather than an effort.
 * 1024 is Anthropic's minimum budget; `medium` is near the 10k its extended-thinking guide starts
 * from; `max` is the largest budget that, plus the default answer room, stays within 32k output
 * tokens, the lowest limit among the thinking models (Claude Opus 4).
 */
const EFFORT_BUDGETS: Record<Exclude<ReasoningOptions['effort'], 'none' | undefined>, number> = {
  minimal: 1024,
  low: 4096,
  medium: 10_000,
  high: 16_000,
  xhigh: 24_000,
  max: 32_000 - DEFAULT_MAX_TOKENS,
};
const MIN_THINKING_BUDGET = 1024;

/** `data:<media type>;base64,<data>`; other data URLs (percent-encoded) are not accepted. */
function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+)(?:;[^;,]+)*;base64,(.*)$/s.exec(url);
  if (!match) return undefined;
  return { mediaType: match[1] as string, data: match[2] as string };
}

function sourceFor(url: string, what: string): AnthropicSource {
  if (!url.startsWith('data:')) return { type: 'url', url };
  const parsed = parseDataUrl(url);
  if (!parsed) throw new UnsupportedRequestError(`The ${what} data URL is not base64-encoded`);
  return { type: 'base64', media_type: parsed.mediaType, data: standardBase64(parsed.data) };
}

/** The image types Anthropic's image blocks take. */
const IMAGE_MEDIA_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/**
 * Inline data of the given media type as the block Anthropic takes it in: JPEG, PNG, GIF and WebP
 * images as images, PDFs as documents (some clients put every attachment in image_url, others an
 * image in a file part), plain text as a text document. Anything else cannot be carried.
 */
function inlineBlock(
  source: Extract<AnthropicSource, { type: 'base64' }>,
  givenType: string,
  title: string | undefined,
): AnthropicContentBlock {
  const lowered = givenType.toLowerCase();
  const mediaType = lowered === 'image/jpg' ? 'image/jpeg' : lowered;
  const titled = title ? { title } : {};
  if (IMAGE_MEDIA_TYPES.has(mediaType))
    return { type: 'image', source: { ...source, media_type: mediaType } };
  if (mediaType === 'application/pdf')
    return { type: 'document', source: { ...source, media_type: mediaType }, ...titled };
  if (mediaType === 'text/plain') {
    // Plain-text documents travel as text, not base64: Anthropic's base64 documents are PDF only.
    const data = Buffer.from(source.data, 'base64').toString();
    return { type: 'document', source: { type: 'text', media_type: 'text/plain', data }, ...titled };
  }
  throw new UnsupportedRequestError(
    mediaType.startsWith('image/')
      ? `Anthropic accepts images of type image/jpeg, image/png, image/gif or image/webp, not ${givenType}`
      : `Anthropic accepts inline files as images, PDF or plain text, not ${givenType}`,
  );
}

function imageBlock(url: string): AnthropicContentBlock {
  const source = sourceFor(url, 'image');
  if (source.type !== 'base64') return { type: 'image', source };
  return inlineBlock(source, source.media_type, undefined);
}

/** What Anthropic allows in a tool_use id (and so in a tool_result's tool_use_id). */
const TOOL_ID = /^[a-zA-Z0-9_-]+$/;

/**
 * A tool call id as Anthropic accepts it. Ids made by other providers may hold characters Anthropic
 * refuses (Kimi's `functions.get_weather:0`), which a conversation that falls back to Anthropic
 * carries in its history: those characters become `_`, and a short hash of the original id keeps
 * two ids that differ only there apart. The same id always maps the same way, so a call and its
 * result still match.
 */
export function anthropicToolId(id: string): string {
  if (TOOL_ID.test(id)) return id;
  const digest = createHash('sha256').update(id).digest('hex').slice(0, 12);
  return `${id.replace(/[^a-zA-Z0-9_-]/g, '_')}_${digest}`;
}

function convertPart(part: ContentPart): AnthropicContentBlock | undefined {
  const block = convertPartBlock(part);
  return block && withCache(block, part.cacheControl);
}

function convertPartBlock(part: ContentPart): AnthropicContentBlock | undefined {
  switch (part.type) {
    case 'text':
      // Anthropic rejects empty text blocks ("text content blocks must be non-empty").
      return part.text === '' ? undefined : { type: 'text', text: part.text };
    case 'image':
      return imageBlock(part.url);
    case 'file': {
      const source = sourceFor(part.url, 'file');
      if (source.type === 'base64')
        return inlineBlock(source, part.mediaType ?? source.media_type, part.filename);
      return { type: 'document', source, ...(part.filename ? { title: part.filename } : {}) };
    }
    case 'audio':
      throw new UnsupportedRequestError('Anthropic Messages does not accept audio input');
  }
}

/**
 * An assistant turn's reasoning as Anthropic's blocks, unchanged. Only signed thinking (and redacted
 * thinking) goes back: Anthropic checks the signature and refuses a thinking block without one
 * (reasoning another provider produced, say), which is dropped instead, as is anything not known
 * to be Anthropic's (`format`).
 */
function thinkingBlocks(reasoning: readonly ReasoningBlock[] | undefined): AnthropicContentBlock[] {
  if (!reasoning) return [];
  return reasoning.flatMap((block): AnthropicContentBlock[] => {
    if (block.format !== 'anthropic-claude-v1') return [];
    if (block.redactedData !== undefined) return [{ type: 'redacted_thinking', data: block.redactedData }];
    return block.signature ? [{ type: 'thinking', thinking: block.text, signature: block.signature }] : [];
  });
}

/**
 * Input items → the system prompt and user/assistant turns. Anthropic has no system role inside
 * `messages`, so system and developer turns join `instructions` (their text only); it also wants
 * turns to alternate, so consecutive blocks of one role merge into one turn. Tool calls belong to
 * the assistant, tool results to the user.
 */
export function convertToAnthropicMessages(
  instructions: string | SystemSection[] | undefined,
  input: InputItem[],
): { system: string | AnthropicContentBlock[] | undefined; messages: AnthropicMessage[] } {
  const system: SystemSection[] =
    typeof instructions === 'string'
      ? [{ text: instructions }]
      : (instructions ?? []).filter((s) => s.text !== '');
  const messages: AnthropicMessage[] = [];
  const append = (role: AnthropicMessage['role'], blocks: AnthropicContentBlock[]) => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const item of input) {
    if (item.type === 'message') {
      if (item.role === 'system' || item.role === 'developer') {
        let cacheControl: CacheControl | undefined;
        let text = '';
        for (const part of item.content) {
          if (part.type !== 'text') continue;
          text += part.text;
          cacheControl = part.cacheControl ?? cacheControl;
        }
        if (text) system.push(cacheControl !== undefined ? { text, cacheControl } : { text });
      } else {
        append(item.role, [
          ...(item.role === 'assistant' ? thinkingBlocks(item.reasoning) : []),
          ...item.content.flatMap((part) => convertPart(part) ?? []),
        ]);
      }
    } else if (item.type === 'function-call') {
      append('assistant', [
        ...thinkingBlocks(item.reasoning),
        withCache(
          {
            type: 'tool_use',
            id: anthropicToolId(item.callId),
            name: item.name,
            input: argumentsObject(item),
          },
          item.cacheControl,
        ),
      ]);
    } else {
      append('user', [withCache(toolResultBlock(item), item.cacheControl)]);
    }
  }
  if (messages.length === 0) {
    throw new UnsupportedRequestError(
      'The conversation has no user or assistant content: Anthropic needs at least one message besides the system prompt',
    );
  }
  return { system: systemPrompt(system), messages };
}

/** A tool's result: its text, with the images and documents it returned as blocks after it. */
function toolResultBlock(item: Extract<InputItem, { type: 'function-call-output' }>): AnthropicContentBlock {
  const tool_use_id = anthropicToolId(item.callId);
  let content: string | AnthropicContentBlock[] = item.output;
  if (item.media !== undefined) {
    content = item.output === '' ? [] : [{ type: 'text', text: item.output }];
    for (const part of item.media) {
      const block = convertPart(part);
      if (block) content.push(block);
    }
  }
  return item.isError
    ? { type: 'tool_result', tool_use_id, content, is_error: true }
    : { type: 'tool_result', tool_use_id, content };
}

/**
 * The system prompt: one text, as before, unless a section marks a cache breakpoint; then its
 * sections as text blocks, so that the breakpoint stays where the client put it.
 */
function systemPrompt(sections: SystemSection[]): string | AnthropicContentBlock[] | undefined {
  if (sections.length === 0) return undefined;
  if (!sections.some((section) => section.cacheControl !== undefined))
    return sections.map((section) => section.text).join('\n\n');
  return sections.map((section) => withCache({ type: 'text', text: section.text }, section.cacheControl));
}

/** How a Claude model takes thinking, by its version in the model id (`claude-opus-4-7`, `claude-3-7-sonnet-…`). */
type ThinkingStyle = 'budget' | 'adaptive' | 'adaptive-only';

/**
 * Claude 4.6 models take adaptive thinking (`{type: "adaptive"}` with `output_config.effort`) and
 * still a token budget; from 4.7 on (Opus 4.7, 4.8, the Claude 5 family) a budget is refused
 * ("thinking.type.enabled is not supported for this model"); before 4.6 only a budget is taken
 * ("adaptive thinking is not supported on this model").
 */
export function thinkingStyleOf(model: string): ThinkingStyle {
  const version = /^claude-(?:[a-z]+-)?(\d+)(?:[-.](\d{1,2}))?(?:[-.@]|$)/.exec(model);
  if (!version) return 'budget';
  const major = Number(version[1]);
  const minor = version[2] === undefined ? 0 : Number(version[2]);
  if (major > 4 || (major === 4 && minor >= 7)) return 'adaptive-only';
  return major === 4 && minor === 6 ? 'adaptive' : 'budget';
}

/**
 * Effort levels as Anthropic's `output_config.effort` names them. The 4.6 models take no `xhigh`
 * ("This model does not support effort level 'xhigh'"): theirs is `max` (ADAPTIVE_46_EFFORTS).
 */
const ANTHROPIC_EFFORTS = {
  minimal: 'low',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'xhigh',
  max: 'max',
} as const;
const ADAPTIVE_46_EFFORTS = { ...ANTHROPIC_EFFORTS, xhigh: 'max' } as const;
const OPUS_45_EFFORTS = { ...ANTHROPIC_EFFORTS, xhigh: 'high', max: 'high' } as const;

/**
 * The effort levels a Claude model takes as `output_config.effort`, or undefined for one that takes
 * none. Opus 4.5 was the first to take the field (low, medium, high), 4.6 added `max` and 4.7
 * `xhigh`; the other models before 4.6 (Sonnet and Haiku 4.5, Opus 4.1…) have no effort.
 * https://platform.claude.com/docs/en/build-with-claude/effort
 */
function effortLevelsOf(model: string) {
  const style = thinkingStyleOf(model);
  if (style === 'adaptive-only') return ANTHROPIC_EFFORTS;
  if (style === 'adaptive') return ADAPTIVE_46_EFFORTS;
  return /^claude-opus-4[-.]5(?:[-.@]|$)/.test(model) ? OPUS_45_EFFORTS : undefined;
}

/** A token budget as the effort level nearest to it (EFFORT_BUDGETS read backwards). */
function effortForBudget(budget: number): keyof typeof ANTHROPIC_EFFORTS {
  if (budget <= EFFORT_BUDGETS.low) return 'low';
  if (budget <= EFFORT_BUDGETS.medium) return 'medium';
  if (budget <= EFFORT_BUDGETS.high) return 'high';
  return budget <= EFFORT_BUDGETS.xhigh ? 'xhigh' : 'max';
}

interface ThinkingPlan {
  /** The `thinking` object, when the model thinks. */
  thinking?: Record<string, unknown>;
  /** `output_config.effort`: for adaptive thinking, or alone for an effort that asks for none. */
  effort?: string;
  maxTokens: number;
}

/**
 * The thinking, and the `max_tokens` that goes with it. Anthropic counts thinking inside
 * `max_tokens`. With a budget (models before 4.6, or a 4.6 model given one), budget < max_tokens
 * is required: a budget the caller gave is sent as is (a conflict is theirs to hear about from
 * Anthropic); one derived from an effort level is ours, so it takes at most three quarters of the
 * caller's `maxOutputTokens`, and is dropped when that leaves less than the 1024 minimum. Adaptive
 * thinking (4.6 given an effort or none, 4.7 and later always) goes with the effort level, a
 * budget given to a model that refuses one read as its nearest level, and `display: "summarized"`
 * (the newer models default to omitting the thinking text) or `"omitted"` when the caller left
 * reasoning out. With no `maxOutputTokens`, the default answer room comes on top of the budget
 * (for adaptive thinking, the budget of its effort level). An effort that asks for no thinking
 * (`/messages` `output_config.effort` without `thinking`) goes alone, without thinking, to a model
 * that takes the field, and is dropped for one that does not.
 */
function planThinking(request: GenerationRequest): ThinkingPlan {
  const explicitMax = request.maxOutputTokens;
  const reasoning = request.reasoning;
  const style = thinkingStyleOf(request.model);
  const on =
    reasoning !== undefined &&
    reasoning.enabled !== false &&
    reasoning.effort !== 'none' &&
    (reasoning.enabled === true ||
      reasoning.maxTokens !== undefined ||
      (reasoning.effort !== undefined && reasoning.effortAsksReasoning !== false));
  if (!on) {
    const effort = reasoning?.effortAsksReasoning === false ? reasoning.effort : undefined;
    const level =
      effort === undefined || effort === 'none' ? undefined : effortLevelsOf(request.model)?.[effort];
    return {
      ...(level !== undefined ? { effort: level } : {}),
      maxTokens: explicitMax ?? DEFAULT_MAX_TOKENS,
    };
  }
  if (style === 'adaptive-only' || (style === 'adaptive' && reasoning.maxTokens === undefined)) {
    // As with a budget: a cap too small to think in (three quarters under 1024) leaves no room for
    // an answer after thinking, so the request goes without.
    if (explicitMax !== undefined && thinkingRoom(explicitMax) < MIN_THINKING_BUDGET)
      return { maxTokens: explicitMax };
    const level =
      reasoning.effort !== undefined && reasoning.effort !== 'none'
        ? reasoning.effort
        : reasoning.maxTokens !== undefined
          ? effortForBudget(reasoning.maxTokens)
          : undefined;
    const room = level === undefined ? EFFORT_BUDGETS.medium : EFFORT_BUDGETS[level];
    return {
      thinking: { type: 'adaptive', display: reasoning.include === false ? 'omitted' : 'summarized' },
      ...(level !== undefined
        ? { effort: (style === 'adaptive' ? ADAPTIVE_46_EFFORTS : ANTHROPIC_EFFORTS)[level] }
        : {}),
      maxTokens: explicitMax ?? DEFAULT_MAX_TOKENS + room,
    };
  }
  const budget = thinkingBudget(reasoning, explicitMax);
  return {
    ...(budget !== undefined ? { thinking: { type: 'enabled', budget_tokens: budget } } : {}),
    maxTokens: explicitMax ?? DEFAULT_MAX_TOKENS + (budget ?? 0),
  };
}

function thinkingBudget(reasoning: ReasoningOptions | undefined, explicitMax: number | undefined) {
  if (!reasoning || reasoning.enabled === false || reasoning.effort === 'none') return undefined;
  if (reasoning.maxTokens !== undefined) return reasoning.maxTokens;
  // `enabled: true` with neither budget nor effort asks for reasoning at a default level.
  const effort = reasoning.effort ?? (reasoning.enabled ? 'medium' : undefined);
  if (effort === undefined) return undefined;
  const budget = Math.min(EFFORT_BUDGETS[effort], thinkingRoom(explicitMax));
  return budget < MIN_THINKING_BUDGET ? undefined : budget;
}

/**
 * Whether the conversation's last assistant turn called tools without the thinking it began with.
 * With thinking on, Anthropic refuses such a turn ("a final assistant message must start with a
 * thinking block"): a client that did not send the signed thinking back (most chat clients keep
 * only text and tool calls), or a turn another provider answered. That request is sent without
 * thinking, which Anthropic accepts, rather than failed.
 */
function lastToolTurnUnsigned(messages: readonly AnthropicMessage[]): boolean {
  let last: AnthropicMessage | undefined;
  for (const message of messages) if (message.role === 'assistant') last = message;
  if (!last?.content.some((block) => block.type === 'tool_use')) return false;
  const first = last.content[0]?.type;
  return first !== 'thinking' && first !== 'redacted_thinking';
}

/**
 * Anthropic's limits on what strict tools and a JSON output format compile together in one
 * request (structured outputs, "schema complexity"): past them it answers a 400. OpenAI's Agents
 * SDK marks every function tool strict, so a long tool list would otherwise fail outright.
 */
const STRICT_LIMITS = { tools: 20, optionalParameters: 24, unionParameters: 16 };

/** A schema reshaped into the subset the grammar compiles, or undefined when it has no form there. */
function reshapedForGrammar(
  schema: Record<string, unknown>,
  reshape: (schema: Record<string, unknown>) => Record<string, unknown> = anthropicOutputSchema,
): Record<string, unknown> | undefined {
  try {
    return reshape(schema);
  } catch (error) {
    if (error instanceof UnsupportedRequestError) return undefined;
    throw error;
  }
}

/** Keywords whose value is a map of names to schemas, not a schema. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions']);

/** Optional properties and union-typed nodes in a (reshaped) schema, counted as Anthropic does. */
function schemaComplexity(schema: unknown, counts = { optional: 0, unions: 0 }) {
  if (Array.isArray(schema)) {
    for (const item of schema) schemaComplexity(item, counts);
    return counts;
  }
  if (typeof schema !== 'object' || schema === null) return counts;
  const node = schema as Record<string, unknown>;
  if (Array.isArray(node.anyOf) || Array.isArray(node.type)) counts.unions += 1;
  const properties = node.properties;
  if (typeof properties === 'object' && properties !== null) {
    const required = new Set(Array.isArray(node.required) ? node.required : []);
    for (const name of Object.keys(properties)) if (!required.has(name)) counts.optional += 1;
  }
  for (const [keyword, value] of Object.entries(node)) {
    if (SCHEMA_MAPS.has(keyword) && typeof value === 'object' && value !== null) {
      for (const member of Object.values(value)) schemaComplexity(member, counts);
    } else if (typeof value === 'object' && value !== null) schemaComplexity(value, counts);
  }
  return counts;
}

/**
 * The tools' schemas, each with `strict: true` where the caller asked for strict arguments and the
 * model takes structured outputs (strict tool use compiles the schema into the same grammar as an
 * output format, so it is reshaped the same way). A schema the grammar cannot express (a recursive
 * one, say), or one the reshaping would leave without an object at its root, goes as it is, without
 * `strict`, and so do all of them when together (with the output format's schema) they pass
 * Anthropic's limits: the tools still work, their arguments checked by the model alone, as on a
 * provider without strict tools.
 */
function toolSchemas(
  tools: FunctionTool[],
  grammar: boolean,
  formatSchema: unknown,
): Array<{ input_schema: Record<string, unknown>; strict?: true }> {
  const plain = tools.map((tool) => ({ input_schema: anthropicToolInputSchema(tool.name, tool.parameters) }));
  if (!grammar || !tools.some((tool) => tool.strict === true)) return plain;
  const schemas: Array<{ input_schema: Record<string, unknown>; strict?: true }> = plain.map(
    (entry, index) => {
      const tool = tools[index];
      const grammar =
        tool?.strict === true && !hasRootCombinator(tool.parameters)
          ? reshapedForGrammar(entry.input_schema, anthropicStrictToolSchema)
          : undefined;
      return grammar === undefined ? entry : { input_schema: grammar, strict: true };
    },
  );
  const strict = schemas.filter((entry) => entry.strict);
  const counts = schemaComplexity(formatSchema);
  for (const entry of strict) schemaComplexity(entry.input_schema, counts);
  const within =
    strict.length <= STRICT_LIMITS.tools &&
    counts.optional <= STRICT_LIMITS.optionalParameters &&
    counts.unions <= STRICT_LIMITS.unionParameters;
  return within ? schemas : plain;
}

function convertToolChoice(request: GenerationRequest): Record<string, unknown> | undefined {
  const choice = request.toolChoice;
  if (choice === 'none') return { type: 'none' };
  const base =
    choice === undefined || choice === 'auto'
      ? { type: 'auto' }
      : choice === 'required'
        ? { type: 'any' }
        : { type: 'tool', name: choice.name };
  if (request.parallelToolCalls === false) return { ...base, disable_parallel_tool_use: true };
  return choice === undefined ? undefined : base;
}

/**
 * How a response format reaches Anthropic. A `json_schema` format goes as `output_config.format`
 * (structured outputs, GA: no beta header), its schema reshaped into the subset Anthropic compiles
 * and its description, if any, as the schema's own; `name` and `strict` have no counterpart (the
 * grammar holds every answer to the schema, strict or not). Anthropic has no plain JSON mode, and
 * an object schema with no properties would allow only `{}`, so a `json_object` format is asked
 * for in the system prompt. So is a `json_schema` one, with its schema, where Anthropic would refuse
 * the format: for a model the catalogue does not list with structured outputs, and after a turn
 * the client prefilled for the assistant (Anthropic takes no prefill with a JSON output format).
 */
function outputFormat(
  format: ResponseFormat | undefined,
  native: boolean,
): { config?: Record<string, unknown>; instruction?: string } {
  if (format === undefined || format.type === 'text') return {};
  if (format.type === 'json_schema' && native) {
    const schema =
      format.description !== undefined && format.schema.description === undefined
        ? { description: format.description, ...format.schema }
        : format.schema;
    const grammar = grammarSchema(schema);
    if (grammar !== undefined) return { config: { format: { type: 'json_schema', schema: grammar } } };
  }
  const only = 'and nothing else: no text before or after it, no Markdown code fence';
  if (format.type === 'json_object') return { instruction: `Respond with one JSON object ${only}.` };
  const about = format.description !== undefined ? ` (${format.description})` : '';
  return {
    instruction: `Respond with one JSON value ${only}. It must conform to this JSON Schema, ${JSON.stringify(format.name)}${about}: ${JSON.stringify(format.schema)}`,
  };
}

/**
 * A format's schema as the grammar takes it, or undefined when it cannot: a schema the subset has
 * no form for (`{}` for any value, a map, a tuple) or one past Anthropic's complexity limits, which
 * it would refuse with a 400. Such a format is asked for in the instructions instead.
 */
function grammarSchema(schema: Record<string, unknown>): Record<string, unknown> | undefined {
  const reshaped = reshapedForGrammar(schema);
  if (reshaped === undefined) return undefined;
  const counts = schemaComplexity(reshaped);
  return counts.optional <= STRICT_LIMITS.optionalParameters && counts.unions <= STRICT_LIMITS.unionParameters
    ? reshaped
    : undefined;
}

/** The system prompt with one more section after the client's. */
function withSection(
  system: string | AnthropicContentBlock[] | undefined,
  text: string,
): string | AnthropicContentBlock[] {
  if (system === undefined) return text;
  if (typeof system === 'string') return `${system}\n\n${text}`;
  return [...system, { type: 'text', text }];
}

/**
 * The canonical request as an Anthropic Messages body. Fields Anthropic has no counterpart for
 * (seed, frequency and presence penalties) are left out rather than rejected, as other adapters do
 * with unsupported sampling fields.
 */
export function convertToAnthropicMessagesRequest(
  request: GenerationRequest,
  options: { stream: boolean },
): Record<string, unknown> {
  refuseImageOutput(request, 'Anthropic Messages');
  const { system, messages } = convertToAnthropicMessages(
    request.instructionSections ?? request.instructions,
    withoutGeneratedImages(request.input),
  );
  let thinking = planThinking(request);
  // Anthropic refuses thinking with a forced tool call ("Thinking may not be enabled when
  // tool_choice forces tool use"), and after a tool turn sent back without its thinking: the
  // request goes without thinking, which it accepts, rather than failing.
  const forcesTool = request.toolChoice === 'required' || typeof request.toolChoice === 'object';
  if (
    thinking.thinking !== undefined &&
    ((forcesTool && request.tools?.length) || lastToolTurnUnsigned(messages))
  )
    thinking = { maxTokens: request.maxOutputTokens ?? DEFAULT_MAX_TOKENS };
  const thinks = thinking.thinking !== undefined;
  // Thinking stays: the grammar holds the answer only, not the thinking before it.
  const format = outputFormat(
    request.responseFormat,
    request.structuredOutputs !== false && messages.at(-1)?.role !== 'assistant',
  );
  const body: Record<string, unknown> = { model: request.model, max_tokens: thinking.maxTokens };
  if (format.instruction !== undefined) body.system = withSection(system, format.instruction);
  else if (system !== undefined) body.system = system;
  body.messages = messages;
  if (options.stream) body.stream = true;
  if (request.tools?.length) {
    const schemas = toolSchemas(
      request.tools,
      request.structuredOutputs !== false,
      (format.config?.format as { schema?: unknown } | undefined)?.schema,
    );
    body.tools = request.tools.map((tool, index) => ({
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      ...schemas[index],
      ...(tool.cacheControl !== undefined ? { cache_control: tool.cacheControl } : {}),
    }));
    // Anthropic rejects tool_choice without tools.
    const toolChoice = convertToolChoice(request);
    if (toolChoice) body.tool_choice = toolChoice;
  }
  // With thinking on, Anthropic takes no temperature but 1, no top_k, and top_p from 0.95 only:
  // those are left out then, as thinking was asked for too.
  if (request.temperature !== undefined && !thinks) {
    // OpenAI-style surfaces allow up to 2; Anthropic refuses anything above 1. Refused here, so
    // routing can move on to a candidate that takes it, rather than changed behind the caller's back.
    if (request.temperature > 1)
      throw new UnsupportedRequestError(
        `Anthropic accepts a temperature from 0 to 1, not ${request.temperature}`,
      );
    body.temperature = request.temperature;
  }
  // The newer models refuse `temperature` and `top_p` together ("cannot both be specified"): the
  // temperature, which every sampling setting of the other surfaces has, wins.
  if (request.topP !== undefined && body.temperature === undefined && (!thinks || request.topP >= 0.95))
    body.top_p = request.topP;
  if (request.topK !== undefined && !thinks) body.top_k = request.topK;
  if (request.stop?.length) body.stop_sequences = request.stop;
  if (request.user !== undefined) body.metadata = { user_id: request.user };
  if (thinking.thinking !== undefined) body.thinking = thinking.thinking;
  if (format.config !== undefined || thinking.effort !== undefined)
    body.output_config = {
      ...format.config,
      ...(thinking.effort !== undefined ? { effort: thinking.effort } : {}),
    };
  if (request.cacheControl !== undefined) body.cache_control = request.cacheControl;
  return body;
}
