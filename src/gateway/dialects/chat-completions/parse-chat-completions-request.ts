import type {
  FunctionTool,
  GenerationRequest,
  ReasoningOptions,
  ResponseFormat,
  ToolChoice,
} from '../../../spec/generation-request.js';
import type { ParsedRequest } from '../dialect.js';
import { invalidParameter } from '../shared/invalid-parameter.js';
import { applyOutputOptions } from '../shared/output-options.js';
import { toProviderPreferences } from '../shared/provider-preferences.js';
import { checkedMetadata, requestedModels, sessionId } from '../shared/request-rules.js';
import { allowedTools, customToolRefused } from '../shared/tool-rules.js';
import type { ChatCompletionsBody } from './chat-completions-schema.js';
import { convertChatMessages } from './convert-chat-messages.js';

/** Fields whose meaning we cannot honour: a silent drop would return something the caller did not ask for. */
function refuseUnsupported(body: ChatCompletionsBody): void {
  if (typeof body.n === 'number' && body.n > 1)
    throw invalidParameter('body.n', 'must be 1: multiple choices are not supported');
  if (body.logprobs === true) throw invalidParameter('body.logprobs', 'is not supported');
  if (typeof body.top_logprobs === 'number' && body.top_logprobs > 0)
    throw invalidParameter('body.top_logprobs', 'is not supported');
  if (body.functions !== undefined) throw invalidParameter('body.functions', 'is not supported: use tools');
  if (body.function_call !== undefined)
    throw invalidParameter('body.function_call', 'is not supported: use tool_choice');
  if (body.audio !== undefined && body.audio !== null)
    throw invalidParameter('body.audio', 'is not supported');
  if (body.web_search_options !== undefined)
    throw invalidParameter('body.web_search_options', 'is not supported');
}

function tools(body: ChatCompletionsBody): FunctionTool[] | undefined {
  if (!body.tools || body.tools.length === 0) return undefined;
  const seen = new Set<string>();
  return body.tools.map((tool, index) => {
    if (tool.type === 'custom') throw customToolRefused(`body.tools.${index}.type`);
    const { name, description, parameters, strict } = tool.function;
    if (seen.has(name))
      throw invalidParameter(`body.tools.${index}.function.name`, `repeats the tool name '${name}'`);
    seen.add(name);
    const canonical: FunctionTool = {
      type: 'function',
      name,
      // Omitted parameters mean "no arguments" in OpenAI's API; providers want an explicit schema.
      parameters: parameters ?? { type: 'object', properties: {} },
    };
    if (description !== undefined) canonical.description = description;
    if (typeof strict === 'boolean') canonical.strict = strict;
    return canonical;
  });
}

/**
 * The tool choice, and the tools it leaves the model: all that were declared, or for
 * `allowed_tools` the ones it lists (its mode becoming the choice).
 */
function toolChoice(
  body: ChatCompletionsBody,
  known: FunctionTool[] | undefined,
): { choice?: ToolChoice; tools?: FunctionTool[] } {
  const choice = body.tool_choice;
  if (choice === undefined) return { tools: known };
  if (typeof choice === 'string') {
    if (choice === 'required' && !known?.length)
      throw invalidParameter('body.tool_choice', 'required needs body.tools');
    return { choice, tools: known };
  }
  if (choice.type === 'custom') throw customToolRefused('body.tool_choice.type');
  if (choice.type === 'allowed_tools') {
    const listed = choice.allowed_tools.tools.map((tool, index) => {
      const field = `body.tool_choice.allowed_tools.tools.${index}`;
      if (tool.type === 'custom') throw customToolRefused(`${field}.type`);
      return { name: tool.function.name, field: `${field}.function.name` };
    });
    return { choice: choice.allowed_tools.mode, tools: allowedTools(known, listed) };
  }
  const name = choice.function.name;
  if (!known?.some((tool) => tool.name === name))
    throw invalidParameter('body.tool_choice.function.name', `names no tool of body.tools: '${name}'`);
  return { choice: { type: 'function', name }, tools: known };
}

function responseFormat(body: ChatCompletionsBody): ResponseFormat | undefined {
  const format = body.response_format;
  if (!format) return undefined;
  if (format.type !== 'json_schema') return { type: format.type };
  const spec = format.json_schema;
  const canonical: ResponseFormat = { type: 'json_schema', name: spec.name, schema: spec.schema };
  if (typeof spec.strict === 'boolean') canonical.strict = spec.strict;
  if (spec.description !== undefined) canonical.description = spec.description;
  return canonical;
}

/** `reasoning`, its OpenAI shorthand `reasoning_effort` and the legacy `include_reasoning`, as one. */
function reasoning(body: ChatCompletionsBody): ReasoningOptions | undefined {
  const given = body.reasoning ?? {};
  const shorthand = body.reasoning_effort ?? undefined;
  if (given.effort && shorthand && given.effort !== shorthand)
    throw invalidParameter('body.reasoning_effort', 'differs from body.reasoning.effort');
  const options: ReasoningOptions = {};
  const effort = given.effort ?? shorthand;
  if (effort) options.effort = effort;
  if (typeof given.max_tokens === 'number') options.maxTokens = given.max_tokens;
  if (typeof given.enabled === 'boolean') options.enabled = given.enabled;
  if (typeof given.exclude === 'boolean') options.include = !given.exclude;
  else if (typeof body.include_reasoning === 'boolean') options.include = body.include_reasoning;
  // Asking for a summary asks for reasoning to come back, as on the Responses surface.
  if (given.summary) {
    options.summary = given.summary;
    options.include ??= true;
  }
  return Object.keys(options).length > 0 ? options : undefined;
}

/** Copies the sampling parameters that are set; absent and null both mean "provider default". */
function samplingParameters(body: ChatCompletionsBody, generation: Omit<GenerationRequest, 'model'>): void {
  // Both token caps may arrive (older clients send both); the newer name wins.
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (typeof maxTokens === 'number') generation.maxOutputTokens = maxTokens;
  if (typeof body.temperature === 'number') generation.temperature = body.temperature;
  if (typeof body.top_p === 'number') generation.topP = body.top_p;
  // The reference documents top_k 0 as "disabled", which upstreams that take top_k would refuse.
  if (typeof body.top_k === 'number' && body.top_k > 0) generation.topK = body.top_k;
  if (typeof body.frequency_penalty === 'number') generation.frequencyPenalty = body.frequency_penalty;
  if (typeof body.presence_penalty === 'number') generation.presencePenalty = body.presence_penalty;
  if (typeof body.seed === 'number') generation.seed = body.seed;
  const stop = typeof body.stop === 'string' ? [body.stop] : body.stop;
  if (stop && stop.length > 0) generation.stop = stop;
}

/**
 * A validated chat-completions body → the pipeline's request. Throws a 400 AppError naming the
 * field and the rule for everything the schema cannot express.
 */
export function parseChatCompletionsRequest(
  body: ChatCompletionsBody,
  headers: Record<string, string | string[] | undefined>,
): ParsedRequest {
  refuseUnsupported(body);
  const models = requestedModels({ model: body.model, fallbacks: body.models });
  const generation: Omit<GenerationRequest, 'model'> = { input: convertChatMessages(body.messages) };
  const { choice, tools: offered } = toolChoice(body, tools(body));
  if (offered) generation.tools = offered;
  if (choice !== undefined) generation.toolChoice = choice;
  if (typeof body.parallel_tool_calls === 'boolean') generation.parallelToolCalls = body.parallel_tool_calls;
  samplingParameters(body, generation);
  const format = responseFormat(body);
  if (format) generation.responseFormat = format;
  const reasoningOptions = reasoning(body);
  if (reasoningOptions) generation.reasoning = reasoningOptions;
  applyOutputOptions(generation, body.modalities, body.image_config);
  if (body.user) generation.user = body.user;
  return {
    generation,
    models,
    provider: toProviderPreferences(body.provider, body.route),
    stream: body.stream === true,
    sessionId: sessionId(body.session_id, headers),
    user: body.user || null,
    metadata: checkedMetadata(body.metadata),
    trace: body.trace ?? null,
  };
}
