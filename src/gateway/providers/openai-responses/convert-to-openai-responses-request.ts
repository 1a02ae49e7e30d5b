import type {
  ContentPart,
  GenerationRequest,
  InputItem,
  ReasoningBlock,
  ReasoningFormat,
  ReasoningOptions,
} from '../../../spec/generation-request.js';
import { UnsupportedRequestError } from '../../../spec/upstream-error.js';
import { withoutGeneratedImages } from '../shared/generated-images.js';
import { refuseImageOutput } from '../shared/text-output-only.js';
import { hasTools, sendsToolChoice } from '../shared/tool-choice.js';
import { mediaAfterResults } from '../shared/tool-result-media.js';

type ResponsesInputContent =
  | { type: 'input_text'; text: string }
  | { type: 'input_image'; image_url: string; detail?: 'auto' | 'low' | 'high' }
  | { type: 'input_file'; file_data?: string; file_url?: string; filename?: string };

type ResponsesInputItem =
  | { type: 'message'; role: 'system' | 'developer' | 'user'; content: ResponsesInputContent[] }
  | { type: 'message'; role: 'assistant'; content: Array<{ type: 'output_text'; text: string }> }
  | { type: 'function_call'; call_id: string; name: string; arguments: string }
  | { type: 'function_call_output'; call_id: string; output: string }
  | { type: 'reasoning'; summary: []; encrypted_content: string };

function convertPart(part: ContentPart): ResponsesInputContent {
  switch (part.type) {
    case 'text':
      return { type: 'input_text', text: part.text };
    case 'image':
      return { type: 'input_image', image_url: part.url, ...(part.detail ? { detail: part.detail } : {}) };
    case 'file':
      // A data URL travels whole as `file_data`; anything else is a URL OpenAI fetches itself.
      return {
        type: 'input_file',
        ...(part.url.startsWith('data:') ? { file_data: part.url } : { file_url: part.url }),
        ...(part.filename ? { filename: part.filename } : {}),
      };
    case 'audio':
      // https://platform.openai.com/docs/api-reference/responses/create: input content is text,
      // images and files only; audio input needs the chat-completions or Realtime API.
      throw new UnsupportedRequestError('The OpenAI Responses API does not accept audio input');
  }
}

/** Assistant turns are earlier output, which the Responses API takes as `output_text` only. */
function convertAssistantPart(part: ContentPart): { type: 'output_text'; text: string } {
  if (part.type !== 'text') {
    throw new UnsupportedRequestError(`OpenAI Responses assistant turns carry text only, not ${part.type}`);
  }
  return { type: 'output_text', text: part.text };
}

/**
 * The encrypted reasoning of `format` that came before an item, as the reasoning items the API
 * takes back (without their ids: with `store: false` an id names an item OpenAI did not keep, and
 * the encrypted content carries what it needs). Other providers' blocks and bare text stay here.
 */
function reasoningItemsOf(
  reasoning: ReasoningBlock[] | undefined,
  format: ReasoningFormat | null,
): ResponsesInputItem[] {
  if (!reasoning || format === null) return [];
  const items: ResponsesInputItem[] = [];
  for (const block of reasoning) {
    if (block.format === format && block.redactedData)
      items.push({ type: 'reasoning', summary: [], encrypted_content: block.redactedData });
  }
  return items;
}

function convertInputItem(item: InputItem): ResponsesInputItem {
  if (item.type === 'message') {
    return item.role === 'assistant'
      ? { type: 'message', role: 'assistant', content: item.content.map(convertAssistantPart) }
      : { type: 'message', role: item.role, content: item.content.map(convertPart) };
  }
  if (item.type === 'function-call') {
    return { type: 'function_call', call_id: item.callId, name: item.name, arguments: item.arguments };
  }
  return { type: 'function_call_output', call_id: item.callId, output: item.output };
}

/**
 * Input items → Responses input items, one for one (the Responses input is already a list of
 * items), each after the encrypted reasoning of `format` that came before it (none with null).
 */
export function convertToOpenAiResponsesInput(
  input: InputItem[],
  format: ReasoningFormat | null = 'openai-responses-v1',
): ResponsesInputItem[] {
  const items: ResponsesInputItem[] = [];
  for (const item of input) {
    if (item.type !== 'function-call-output') items.push(...reasoningItemsOf(item.reasoning, format));
    items.push(convertInputItem(item));
  }
  return items;
}

/** The smallest `max_output_tokens` OpenAI's Responses API takes. */
const MIN_MAX_OUTPUT_TOKENS = 16;

/**
 * OpenAI's effort levels. `max` has no OpenAI counterpart and asks for the most, `xhigh`; `none`
 * is left out, since models before gpt-5.1 reject it (and gpt-4o rejects `reasoning` altogether).
 * A token budget (`maxTokens`) has no counterpart either: OpenAI takes levels only.
 */
function convertReasoning(reasoning: ReasoningOptions | undefined): Record<string, unknown> | undefined {
  if (!reasoning) return undefined;
  const converted: Record<string, unknown> = {};
  if (reasoning.effort && reasoning.effort !== 'none') {
    converted.effort = reasoning.effort === 'max' ? 'xhigh' : reasoning.effort;
  }
  // Reasoning text itself is never returned; a summary of it is, when asked for, at the level asked.
  if (reasoning.include) converted.summary = reasoning.summary ?? 'auto';
  return Object.keys(converted).length > 0 ? converted : undefined;
}

/**
 * The canonical request as an OpenAI Responses body (`POST /responses`). The Responses API accepts
 * no seed, top_k, frequency or presence penalty, nor stop sequences, and rejects unknown fields,
 * so those are left out, as other adapters do with unsupported sampling fields.
 */
export function convertToOpenAiResponsesRequest(
  request: GenerationRequest,
  options: { stream: boolean; reasoningFormat?: ReasoningFormat },
): Record<string, unknown> {
  refuseImageOutput(request, 'OpenAI Responses');
  const format = options.reasoningFormat ?? 'openai-responses-v1';
  const body: Record<string, unknown> = { model: request.model };
  if (request.instructions) body.instructions = request.instructions;
  // A model that does not reason refuses reasoning items ("can only be provided to a reasoning or
  // computer use model"): a conversation begun on gpt-5 and continued on gpt-4.1 leaves them out.
  const input = convertToOpenAiResponsesInput(
    mediaAfterResults(withoutGeneratedImages(request.input)),
    request.reasoningModel === false ? null : format,
  );
  body.input = input;
  // The gateway keeps no upstream state: every request carries its whole conversation, and
  // nothing is left on OpenAI's side for a `previous_response_id` to refer to.
  body.store = false;
  if (options.stream) body.stream = true;
  if (request.tools?.length) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      parameters: tool.parameters,
      // Responses defaults `strict` to true, which rejects any schema not written for it (every
      // property required, no additional properties); unset keeps chat-completions' default, off.
      strict: tool.strict ?? false,
    }));
  }
  // As on chat completions, tool_choice and parallel_tool_calls go only with tools.
  if (sendsToolChoice(request)) {
    body.tool_choice =
      typeof request.toolChoice === 'string'
        ? request.toolChoice
        : { type: 'function', name: request.toolChoice.name };
  }
  if (request.parallelToolCalls !== undefined && hasTools(request))
    body.parallel_tool_calls = request.parallelToolCalls;
  // OpenAI refuses a cap below 16 ("Expected a value >= 16"); a smaller one is raised to it, and
  // billing stays within what the caller's cap reserved.
  if (request.maxOutputTokens !== undefined)
    body.max_output_tokens = Math.max(request.maxOutputTokens, MIN_MAX_OUTPUT_TOKENS);
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.responseFormat) {
    const format = request.responseFormat;
    body.text = {
      format:
        format.type === 'json_schema'
          ? {
              type: 'json_schema',
              name: format.name,
              schema: format.schema,
              ...(format.strict !== undefined ? { strict: format.strict } : {}),
              ...(format.description !== undefined ? { description: format.description } : {}),
            }
          : { type: format.type },
    };
  }
  const reasoning = convertReasoning(request.reasoning);
  if (reasoning) body.reasoning = reasoning;
  // A model that reasons is asked for its reasoning encrypted, which the caller sends back next
  // turn; a model that does not refuses the include ("Encrypted content is not supported").
  if (
    request.reasoningModel === true ||
    (request.reasoningModel === undefined &&
      (request.reasoning !== undefined || input.some((item) => item.type === 'reasoning')))
  )
    body.include = ['reasoning.encrypted_content'];
  if (request.user !== undefined) body.user = request.user;
  return body;
}
