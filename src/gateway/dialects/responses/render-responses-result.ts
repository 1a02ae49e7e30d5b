import type { GenerationResult } from '../../../spec/stream-part.js';
import type { GenerationInfo, GenerationSummary } from '../dialect.js';
import {
  echoRequest,
  finishedResponse,
  itemIds,
  lastItemStatus,
  type OutputItem,
  outcomeOfFinish,
  type ReasoningSeal,
  type ResponseObject,
  sealOf,
} from './response-object.js';
import type { ResponsesBody } from './responses-body-schema.js';

/**
 * A non-streamed generation as a Response: reasoning items first (when there was reasoning; one per
 * signed block), the message (when there was text), an image_generation_call item per generated
 * image, then one function_call item per tool call, each after the signed reasoning that led to
 * it. When the output was cut short the last item is `incomplete`, as OpenAI marks it (an image,
 * which comes whole, stays completed). A stream keeps images where they came among the text; here
 * the text is one message and the images follow it.
 */
export function renderResponsesResult(
  body: ResponsesBody,
  info: GenerationInfo,
  result: GenerationResult,
  summary: GenerationSummary,
): ResponseObject {
  const outcome = outcomeOfFinish(result.finishReason);
  const ids = itemIds(info.id);
  const output: OutputItem[] = [];
  let reasonings = 0;
  const reasoningItem = (text: string, seal: ReasoningSeal | undefined) =>
    output.push({
      type: 'reasoning',
      id: ids.reasoning(reasonings++),
      status: 'completed',
      summary: [],
      content: [{ type: 'reasoning_text', text }],
      ...seal,
    });
  // The provider's signed blocks, each an item of its own, in its place (before the call it led to).
  const blocks = result.reasoningBlocks;
  const reasoningBefore = (toolCall: number | undefined) => {
    if (!blocks) return;
    for (const block of blocks)
      if (block.beforeToolCall === toolCall) reasoningItem(block.text, sealOf(block));
  };
  // Reasoning text the blocks do not hold (Gemini's signatures come apart from its thought text).
  if (result.reasoning && !blocks?.some((block) => block.text !== ''))
    reasoningItem(result.reasoning, undefined);
  reasoningBefore(undefined);
  let messages = 0;
  if (result.text) {
    output.push({
      type: 'message',
      id: ids.message(messages++),
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: result.text, annotations: [] }],
    });
  }
  result.images?.forEach((image, index) => {
    output.push({
      type: 'image_generation_call',
      id: ids.imageGeneration(index),
      status: 'completed',
      result: image.data,
    });
  });
  // A refusal is a message of its own, as the stream sends it.
  if (result.refusal) {
    output.push({
      type: 'message',
      id: ids.message(messages++),
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'refusal', refusal: result.refusal }],
    });
  }
  result.toolCalls.forEach((call, index) => {
    reasoningBefore(index);
    output.push({
      type: 'function_call',
      id: ids.functionCall(index),
      call_id: call.callId,
      name: call.name,
      arguments: call.arguments,
      status: 'completed',
    });
  });
  // Thinking after the last call (Anthropic's interleaved thinking), last.
  if (blocks && result.toolCalls.length > 0) reasoningBefore(result.toolCalls.length);
  const last = output.at(-1);
  if (last && last.type !== 'image_generation_call') last.status = lastItemStatus(outcome);
  return finishedResponse({
    info,
    echo: echoRequest(body),
    outcome,
    output,
    outputText: result.text,
    summary,
  });
}
