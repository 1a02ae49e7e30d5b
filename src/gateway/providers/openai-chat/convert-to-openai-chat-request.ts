import type { ContentPart, GenerationRequest, InputItem } from '../../../spec/generation-request.js';
import { UnsupportedRequestError } from '../../../spec/upstream-error.js';
import { withoutGeneratedImages } from '../shared/generated-images.js';
import { refuseImageOutput } from '../shared/text-output-only.js';
import { hasTools, sendsToolChoice } from '../shared/tool-choice.js';
import { mediaAfterResults } from '../shared/tool-result-media.js';

type OpenAiContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } }
  | { type: 'file'; file: { file_data?: string; filename?: string } }
  | { type: 'input_audio'; input_audio: { data: string; format: string } };

type OpenAiMessage =
  | { role: 'system' | 'developer' | 'user'; content: string | OpenAiContentPart[] }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    }
  | { role: 'tool'; tool_call_id: string; content: string };

function convertPart(part: ContentPart): OpenAiContentPart {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'image':
      return {
        type: 'image_url',
        image_url: part.detail ? { url: part.url, detail: part.detail } : { url: part.url },
      };
    case 'file':
      // Chat completions take inline files only (`file_data` is a data URL); a link cannot be sent.
      if (!part.url.startsWith('data:')) {
        throw new UnsupportedRequestError(
          'The chat-completions protocol accepts files only as data: URLs, not links',
        );
      }
      return {
        type: 'file',
        file: { file_data: part.url, ...(part.filename ? { filename: part.filename } : {}) },
      };
    case 'audio':
      return { type: 'input_audio', input_audio: { data: part.data, format: part.format } };
  }
}

/** Plain text stays a string (what every OpenAI-compatible server accepts); anything else is a part list. */
function convertContent(content: ContentPart[]): string | OpenAiContentPart[] {
  if (content.every((part) => part.type === 'text'))
    return content.map((part) => (part as { text: string }).text).join('');
  return content.map(convertPart);
}

/** Input items → chat messages. Function calls join the assistant turn before them, as OpenAI expects. */
export function convertToOpenAiChatMessages(
  instructions: string | undefined,
  input: InputItem[],
): OpenAiMessage[] {
  const messages: OpenAiMessage[] = [];
  if (instructions) messages.push({ role: 'system', content: instructions });
  for (const item of input) {
    if (item.type === 'message') {
      if (item.role === 'assistant') {
        // Assistant turns are text only in this protocol.
        if (item.content.some((part) => part.type !== 'text')) {
          throw new UnsupportedRequestError(
            'The chat-completions protocol accepts only text in assistant turns',
          );
        }
        messages.push({ role: 'assistant', content: convertContent(item.content) as string });
      } else {
        messages.push({ role: item.role, content: convertContent(item.content) });
      }
    } else if (item.type === 'function-call') {
      const call = {
        id: item.callId,
        type: 'function' as const,
        function: { name: item.name, arguments: item.arguments },
      };
      const last = messages.at(-1);
      if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else {
      messages.push({ role: 'tool', tool_call_id: item.callId, content: item.output });
    }
  }
  return messages;
}

export interface OpenAiChatOptions {
  /** OpenAI's own API wants `max_completion_tokens`; most compatible servers read `max_tokens`. */
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
  /** Whether the server accepts `top_k` (OpenAI rejects unknown sampling fields). */
  supportsTopK: boolean;
}

/** The canonical request as an OpenAI chat-completions body. */
export function convertToOpenAiChatRequest(
  request: GenerationRequest,
  options: OpenAiChatOptions & { stream: boolean },
): Record<string, unknown> {
  refuseImageOutput(request, 'OpenAI chat completions');
  const body: Record<string, unknown> = {
    model: request.model,
    messages: convertToOpenAiChatMessages(
      request.instructions,
      mediaAfterResults(withoutGeneratedImages(request.input)),
    ),
  };
  if (options.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  if (request.tools?.length) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: {
        name: tool.name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        parameters: tool.parameters,
        ...(tool.strict !== undefined ? { strict: tool.strict } : {}),
      },
    }));
  }
  // OpenAI refuses tool_choice and parallel_tool_calls without tools ("only allowed when tools
  // are specified"); without tools `auto` and `none` mean the same as leaving them out.
  if (sendsToolChoice(request)) {
    body.tool_choice =
      typeof request.toolChoice === 'string'
        ? request.toolChoice
        : { type: 'function', function: { name: request.toolChoice.name } };
  }
  if (request.parallelToolCalls !== undefined && hasTools(request))
    body.parallel_tool_calls = request.parallelToolCalls;
  if (request.maxOutputTokens !== undefined) body[options.maxTokensField] = request.maxOutputTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.topK !== undefined && options.supportsTopK) body.top_k = request.topK;
  if (request.frequencyPenalty !== undefined) body.frequency_penalty = request.frequencyPenalty;
  if (request.presencePenalty !== undefined) body.presence_penalty = request.presencePenalty;
  if (request.stop?.length) body.stop = request.stop;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.user !== undefined) body.user = request.user;
  if (request.responseFormat) {
    const format = request.responseFormat;
    body.response_format =
      format.type === 'json_schema'
        ? {
            type: 'json_schema',
            json_schema: {
              name: format.name,
              schema: format.schema,
              ...(format.strict !== undefined ? { strict: format.strict } : {}),
              ...(format.description !== undefined ? { description: format.description } : {}),
            },
          }
        : { type: format.type };
  }
  if (request.reasoning?.effort && request.reasoning.effort !== 'none') {
    body.reasoning_effort = request.reasoning.effort;
  }
  return body;
}
