import type { GeneratedImage, GenerationResult } from '../../../spec/stream-part.js';
import type { GenerationFailure, GenerationInfo, GenerationSummary } from '../dialect.js';
import { standardError } from '../shared/error-envelope.js';
import type { ChatCompletionsBody } from './chat-completions-schema.js';
import { renderReasoningDetails } from './chat-reasoning-details.js';
import { chatUsage, mapChatFinishReason } from './chat-usage.js';

/**
 * Reasoning text is returned unless the caller asked to leave it out: `reasoning.exclude`, else the
 * legacy `include_reasoning` (the same precedence as the parsed `reasoning.include`).
 */
export function showsReasoning(body: ChatCompletionsBody): boolean {
  const exclude = body.reasoning?.exclude;
  if (typeof exclude === 'boolean') return !exclude;
  return body.include_reasoning !== false;
}

/**
 * A generated image as the reference's `ChatAssistantImages` entry: a base64 data URL (its media
 * type checked by the adapter). Streamed, each entry also carries its `index` in the answer.
 */
export const chatImage = (image: GeneratedImage) => ({
  type: 'image_url' as const,
  image_url: { url: `data:${image.mediaType};base64,${image.data}` },
});

/**
 * A finished non-streamed generation as a `chat.completion` (reference §1.2, `ChatResult`). When
 * the upstream failed after producing output, `failure` adds `choices[0].error` next to the partial
 * message (the reference's shape; HTTP stays 200 and the output produced is billed).
 */
export function renderChatCompletion(
  body: ChatCompletionsBody,
  info: GenerationInfo,
  result: GenerationResult,
  summary: GenerationSummary,
  failure?: GenerationFailure,
) {
  const toolCalls = result.toolCalls.map((call) => ({
    id: call.callId,
    type: 'function' as const,
    function: { name: call.name, arguments: call.arguments },
  }));
  const shown = showsReasoning(body);
  const details = result.reasoningBlocks ? renderReasoningDetails(result, shown) : undefined;
  const message = {
    role: 'assistant' as const,
    // OpenAI clients expect null, not "", when the turn is only tool calls or a refusal.
    content: result.text === '' && (toolCalls.length > 0 || result.refusal) ? null : result.text,
    refusal: result.refusal ? result.refusal : null,
    reasoning: result.reasoning !== '' && shown ? result.reasoning : null,
    ...(details ? { reasoning_details: details } : {}),
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    ...(result.images ? { images: result.images.map(chatImage) } : {}),
  };
  const choice = {
    index: 0,
    message,
    finish_reason: failure ? ('error' as const) : mapChatFinishReason(result.finishReason),
    native_finish_reason: result.nativeFinishReason,
    logprobs: null,
    ...(failure ? { error: standardError(failure) } : {}),
  };
  return {
    id: info.id,
    object: 'chat.completion' as const,
    created: info.createdAt,
    model: info.model,
    provider: info.providerName,
    system_fingerprint: null,
    choices: [choice],
    usage: chatUsage(summary),
    ...(summary.metadata ? { switchyard_metadata: summary.metadata } : {}),
  };
}
