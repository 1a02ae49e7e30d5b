import type {
  FunctionTool,
  GenerationRequest,
  ReasoningOptions,
  ToolChoice,
} from '../../../spec/generation-request.js';
import type { ParsedRequest } from '../dialect.js';
import { invalidParameter } from '../shared/invalid-parameter.js';
import { toProviderPreferences } from '../shared/provider-preferences.js';
import { requestedModels, sessionId } from '../shared/request-rules.js';
import { convertMessagesInput, systemInstructions } from './convert-messages-input.js';
import type { MessagesBody, MessagesTool } from './messages-body-schema.js';

const isCustomTool = (tool: MessagesTool): tool is Extract<MessagesTool, { input_schema: unknown }> =>
  tool.type === undefined || tool.type === 'custom';

/**
 * Custom tools become function tools. Anthropic's server tools (web search, bash, code execution…)
 * run inside Anthropic's API; the gateway has no counterpart, so they are refused by name rather
 * than dropped, which would leave the model without a tool the caller counted on.
 */
function convertTools(tools: MessagesTool[]): FunctionTool[] {
  const names = new Set<string>();
  return tools.map((tool, index) => {
    if (!isCustomTool(tool)) {
      throw invalidParameter(
        `body.tools.${index}.type`,
        `${tool.type} is not supported: only custom tools (name, description, input_schema) are`,
      );
    }
    if (names.has(tool.name))
      throw invalidParameter(`body.tools.${index}.name`, `${tool.name} is declared twice`);
    names.add(tool.name);
    const converted: FunctionTool = { type: 'function', name: tool.name, parameters: tool.input_schema };
    if (tool.description !== undefined) converted.description = tool.description;
    if (tool.strict !== undefined) converted.strict = tool.strict;
    if (tool.cache_control !== undefined) converted.cacheControl = tool.cache_control;
    return converted;
  });
}

function convertToolChoice(
  choice: NonNullable<MessagesBody['tool_choice']>,
  tools: FunctionTool[],
): ToolChoice {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      if (tools.length === 0) throw invalidParameter('body.tool_choice', 'any needs body.tools');
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      if (!tools.some((tool) => tool.name === choice.name)) {
        throw invalidParameter('body.tool_choice.name', `${choice.name} does not name a tool in body.tools`);
      }
      return { type: 'function', name: choice.name };
  }
}

/** `thinking` and `output_config.effort` as canonical reasoning options. */
function convertReasoning(body: MessagesBody): ReasoningOptions | undefined {
  const reasoning: ReasoningOptions = {};
  const thinking = body.thinking;
  if (thinking?.type === 'disabled') reasoning.enabled = false;
  else if (thinking !== undefined) {
    reasoning.enabled = true;
    if (thinking.type === 'enabled') reasoning.maxTokens = thinking.budget_tokens;
    // `display: omitted` asks Anthropic to withhold the thinking text while still thinking.
    reasoning.include = thinking.display !== 'omitted';
  }
  const effort = body.output_config?.effort;
  if (effort) {
    reasoning.effort = effort;
    // Anthropic's effort governs how many tokens the whole answer spends, thinking or not: without
    // thinking on, it asks for none.
    if (reasoning.enabled !== true) reasoning.effortAsksReasoning = false;
  }
  return Object.keys(reasoning).length > 0 ? reasoning : undefined;
}

/**
 * The structured-output format: `output_config.format`, or the beta's top-level `output_format`
 * that older clients still send. Both at once is refused, as the Anthropic SDK refuses it
 * (`assertOneOutputFormat`), rather than one silently winning.
 */
function outputFormat(body: MessagesBody): NonNullable<MessagesBody['output_format']> | undefined {
  const format = body.output_config?.format ?? undefined;
  const deprecated = body.output_format ?? undefined;
  if (format !== undefined && deprecated !== undefined) {
    throw invalidParameter(
      'body.output_format',
      'cannot be combined with body.output_config.format; send only output_config.format (output_format is deprecated)',
    );
  }
  return format ?? deprecated;
}

/**
 * Requested models in fallback order: `model`, then `models` or this skin's `fallbacks` (which the
 * reference forbids combining), without repeats.
 */
function messagesModels(body: MessagesBody): string[] {
  if (body.models !== undefined && body.fallbacks !== undefined && body.fallbacks !== null) {
    throw invalidParameter('body.fallbacks', 'cannot be combined with body.models; send one of them');
  }
  if (body.models !== undefined) return requestedModels({ model: body.model, fallbacks: body.models });
  const fallbacks = body.fallbacks?.map((fallback) => fallback.model);
  return requestedModels({ model: body.model, fallbacks, field: 'body.fallbacks' });
}

/**
 * Cross-field rules and conversion once the schema has passed: Anthropic wire in, canonical out.
 * Throws AppError('invalid_request') naming the field and the rule.
 */
export function parseMessagesRequest(
  body: MessagesBody,
  headers: Record<string, string | string[] | undefined>,
): ParsedRequest {
  const models = messagesModels(body);
  const generation: Omit<GenerationRequest, 'model'> = { input: convertMessagesInput(body.messages) };
  const instructions = systemInstructions(body.system);
  if (instructions !== undefined) generation.instructions = instructions;
  // System blocks keep their sections when one marks a cache breakpoint.
  if (Array.isArray(body.system) && body.system.some((block) => block.cache_control !== undefined)) {
    generation.instructionSections = body.system.map((block) =>
      block.cache_control !== undefined
        ? { text: block.text, cacheControl: block.cache_control }
        : { text: block.text },
    );
  }
  if (body.cache_control !== undefined) generation.cacheControl = body.cache_control;
  if (body.tools !== undefined && body.tools.length > 0) generation.tools = convertTools(body.tools);
  if (body.tool_choice !== undefined) {
    generation.toolChoice = convertToolChoice(body.tool_choice, generation.tools ?? []);
    if ('disable_parallel_tool_use' in body.tool_choice && body.tool_choice.disable_parallel_tool_use) {
      generation.parallelToolCalls = false;
    }
  }
  generation.maxOutputTokens = body.max_tokens;
  if (body.temperature !== undefined) generation.temperature = body.temperature;
  if (body.top_p !== undefined) generation.topP = body.top_p;
  if (body.top_k !== undefined) generation.topK = body.top_k;
  if (body.stop_sequences !== undefined && body.stop_sequences.length > 0) {
    generation.stop = body.stop_sequences;
  }
  const reasoning = convertReasoning(body);
  if (reasoning) generation.reasoning = reasoning;
  const format = outputFormat(body);
  if (format) generation.responseFormat = { type: 'json_schema', name: 'output', schema: format.schema };
  // Anthropic's own end-user field is `metadata.user_id`; the gateway's `user` wins when both are sent.
  const user = body.user || body.metadata?.user_id || null;
  if (user !== null) generation.user = user;
  return {
    generation,
    models,
    provider: toProviderPreferences(body.provider, body.route),
    stream: body.stream === true,
    sessionId: sessionId(body.session_id, headers),
    user,
    metadata: null,
    trace: body.trace ?? null,
  };
}
