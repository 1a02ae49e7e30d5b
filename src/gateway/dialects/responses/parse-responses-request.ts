import type {
  FunctionTool,
  GenerationRequest,
  ReasoningOptions,
  ResponseFormat,
} from '../../../spec/generation-request.js';
import type { ParsedRequest } from '../dialect.js';
import { invalidParameter } from '../shared/invalid-parameter.js';
import { applyOutputOptions } from '../shared/output-options.js';
import { toProviderPreferences } from '../shared/provider-preferences.js';
import { checkedMetadata, requestedModels, sessionId } from '../shared/request-rules.js';
import { customToolRefused } from '../shared/tool-rules.js';
import { convertResponsesInput } from './convert-responses-input.js';
import type { ResponsesBody, ResponsesTextFormat, ResponsesToolBody } from './responses-body-schema.js';

type Headers = Record<string, string | string[] | undefined>;

/**
 * A validated `/responses` body → the canonical request and routing facts. Throws a 400 naming
 * the field for what the schema cannot say: the stateless-only fields, `models` ≤ 3, `tool_choice`
 * other than auto, non-function tools, metadata keys, and every rule on `input` items.
 *
 * Accepted and only validated (nothing reads them yet): `stop_server_tools_when`, `max_tool_calls`,
 * `plugins`, `include`, `service_tier`, `truncation`, `text.verbosity`, `prompt_cache_*`,
 * `cache_control`, `debug`, `safety_identifier`, `top_logprobs`, `stream_options`,
 * `context_management`.
 */
export function parseResponsesRequest(body: ResponsesBody, headers: Headers): ParsedRequest {
  refuseStatefulFields(body);
  const models = requestedModels({ model: body.model, fallbacks: body.models });
  const generation: Omit<GenerationRequest, 'model'> = { input: convertResponsesInput(body.input) };
  if (body.instructions) generation.instructions = body.instructions;
  const tools = convertTools(body.tools);
  if (tools.length > 0) generation.tools = tools;
  if (body.tool_choice !== undefined && body.tool_choice !== null) {
    // Spec 4.6: only `auto`; an `allowed_tools` choice (which /chat/completions takes) included.
    if (body.tool_choice !== 'auto') throw invalidParameter('body.tool_choice', 'only "auto" is supported');
    generation.toolChoice = 'auto';
  }
  if (body.parallel_tool_calls != null) generation.parallelToolCalls = body.parallel_tool_calls;
  if (body.max_output_tokens != null) generation.maxOutputTokens = body.max_output_tokens;
  if (body.temperature != null) generation.temperature = body.temperature;
  if (body.top_p != null) generation.topP = body.top_p;
  if (body.top_k != null) generation.topK = body.top_k;
  if (body.frequency_penalty != null) generation.frequencyPenalty = body.frequency_penalty;
  if (body.presence_penalty != null) generation.presencePenalty = body.presence_penalty;
  if (body.text?.format) generation.responseFormat = toResponseFormat(body.text.format);
  const reasoning = toReasoning(body.reasoning);
  if (reasoning) generation.reasoning = reasoning;
  applyOutputOptions(generation, body.modalities, body.image_config);
  if (body.user) generation.user = body.user;
  return {
    generation,
    models,
    provider: toProviderPreferences(body.provider, body.route),
    stream: body.stream ?? false,
    sessionId: sessionId(body.session_id, headers),
    user: body.user || null,
    metadata: checkedMetadata(body.metadata),
    trace: body.trace ?? null,
  };
}

/** The API keeps nothing between requests, so anything that points at stored state is refused. */
function refuseStatefulFields(body: ResponsesBody): void {
  if (body.store === true) {
    throw invalidParameter('body.store', 'must be false: responses are not stored (the API is stateless)');
  }
  if (body.background === true) {
    throw invalidParameter('body.background', 'is not supported: background responses need stored responses');
  }
  if (body.previous_response_id != null) {
    throw invalidParameter(
      'body.previous_response_id',
      'is not supported: responses are not stored, send the full history in input',
    );
  }
  if (body.conversation != null) {
    throw invalidParameter(
      'body.conversation',
      'is not supported: conversations are not stored, send the full history in input',
    );
  }
  if (body.prompt != null) {
    throw invalidParameter(
      'body.prompt',
      'is not supported: there are no stored prompts, send the text in instructions and input',
    );
  }
}

const EMPTY_PARAMETERS = { type: 'object', properties: {} };

function convertTools(tools: ResponsesToolBody[] | undefined): FunctionTool[] {
  const names = new Set<string>();
  return (tools ?? []).map((tool, index) => {
    if (tool.type === 'custom') throw customToolRefused(`body.tools.${index}.type`);
    if (tool.type !== 'function') {
      throw invalidParameter(
        `body.tools.${index}.type`,
        `${JSON.stringify(tool.type)} is not supported yet: only function tools are`,
      );
    }
    // The schema requires a valid name for function tools.
    const name = tool.name as string;
    if (names.has(name)) throw invalidParameter(`body.tools.${index}.name`, `"${name}" is already defined`);
    names.add(name);
    const converted: FunctionTool = {
      type: 'function',
      name,
      parameters: tool.parameters ?? EMPTY_PARAMETERS,
    };
    if (tool.description) converted.description = tool.description;
    if (tool.strict != null) converted.strict = tool.strict;
    return converted;
  });
}

function toResponseFormat(format: ResponsesTextFormat): ResponseFormat {
  if (format.type !== 'json_schema') return { type: format.type };
  const converted: ResponseFormat = { type: 'json_schema', name: format.name, schema: format.schema };
  if (format.strict != null) converted.strict = format.strict;
  if (format.description !== undefined) converted.description = format.description;
  return converted;
}

/**
 * `exclude: true` hides reasoning text; asking for a summary (or `exclude: false`) asks for it.
 * Without either the provider's default applies.
 */
function toReasoning(reasoning: ResponsesBody['reasoning']): ReasoningOptions | undefined {
  if (!reasoning) return undefined;
  const options: ReasoningOptions = {};
  if (reasoning.effort != null) options.effort = reasoning.effort;
  if (reasoning.max_tokens != null) options.maxTokens = reasoning.max_tokens;
  if (reasoning.enabled != null) options.enabled = reasoning.enabled;
  if (reasoning.exclude != null) options.include = !reasoning.exclude;
  else if ((reasoning.summary ?? reasoning.generate_summary) != null) options.include = true;
  const summary = reasoning.summary ?? reasoning.generate_summary;
  if (summary != null) options.summary = summary;
  return Object.keys(options).length > 0 ? options : undefined;
}
