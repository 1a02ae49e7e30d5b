import type { GenerationResult } from '../../../spec/stream-part.js';
import type { GenerationInfo, GenerationSummary } from '../dialect.js';
import {
  echoRequest,
  finishedResponse,
  itemIds,
  lastItemStatus,
  type OutputItem,
  outcomeOfFinish,
  type ResponseObject,
} from './response-object.js';
import type { ResponsesBody } from './responses-body-schema.js';

/**
 * A non-streamed generation as a Response: a reasoning item first (when there was reasoning), the
 * message (when there was text), then one function_call item per tool call. When the output was
 * cut short the last item is `incomplete`, as OpenAI marks it.
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
  if (result.reasoning) {
    output.push({
      type: 'reasoning',
      id: ids.reasoning(0),
      status: 'completed',
      summary: [],
      content: [{ type: 'reasoning_text', text: result.reasoning }],
    });
  }
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
    output.push({
      type: 'function_call',
      id: ids.functionCall(index),
      call_id: call.callId,
      name: call.name,
      arguments: call.arguments,
      status: 'completed',
    });
  });
  const last = output.at(-1);
  if (last) last.status = lastItemStatus(outcome);
  return finishedResponse({
    info,
    echo: echoRequest(body),
    outcome,
    output,
    outputText: result.text,
    summary,
  });
}
