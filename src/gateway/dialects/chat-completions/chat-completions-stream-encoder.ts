import type { FinishReason } from '../../../spec/finish-reason.js';
import type { StreamPart } from '../../../spec/stream-part.js';
import type { GenerationFailure, GenerationInfo, GenerationSummary, StreamEncoder } from '../dialect.js';
import { standardError } from '../shared/error-envelope.js';
import type { ChatCompletionsBody } from './chat-completions-schema.js';
import { type ReasoningDetail, StreamedReasoningDetails } from './chat-reasoning-details.js';
import { chatUsage, mapChatFinishReason } from './chat-usage.js';
import { chatImage, showsReasoning } from './render-chat-completion.js';

const DONE = 'data: [DONE]\n\n';

/**
 * The `chat.completion.chunk` stream of reference §1.2. Every delta frame is a precomputed prefix
 * (id, model, provider, the choice's opening) + one `JSON.stringify` of the new text + a fixed
 * suffix: this runs once per upstream token, so it allocates nothing but the frame itself. The
 * closing frames (finish, the single usage chunk with `choices: []`, `[DONE]`) are built once.
 */
export function createChatCompletionsStreamEncoder(
  body: ChatCompletionsBody,
  info: GenerationInfo,
): StreamEncoder {
  const envelope = {
    id: info.id,
    object: 'chat.completion.chunk' as const,
    created: info.createdAt,
    model: info.model,
    provider: info.providerName,
  };
  // `{"id":…,"provider":…,` : the envelope without its closing brace, shared by every frame.
  const head = `data: ${JSON.stringify(envelope).slice(0, -1)},"choices":`;
  const deltaHead = `${head}[{"index":0,"delta":{"role":"assistant",`;
  const deltaTail = '},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}\n\n';
  const reasoningShown = showsReasoning(body);
  // Made at the first reasoning: most streams have none, and pay nothing for it.
  let details: StreamedReasoningDetails | undefined;
  let images = 0;
  let finishReason: FinishReason = 'stop';
  let nativeFinishReason: string | null = null;
  let closed = false;

  const frame = (chunk: object) => `data: ${JSON.stringify(chunk)}\n\n`;
  const detailsFrame = (entries: readonly ReasoningDetail[]) =>
    entries.length === 0 ? '' : `${deltaHead}"reasoning_details":${JSON.stringify(entries)}${deltaTail}`;
  const usageFrame = (summary: GenerationSummary) =>
    frame({
      ...envelope,
      choices: [],
      usage: chatUsage(summary),
      ...(summary.metadata ? { switchyard_metadata: summary.metadata } : {}),
    });

  return {
    start: () => '',

    part(part: StreamPart): string {
      switch (part.type) {
        case 'text-delta':
          return part.delta === '' ? '' : `${deltaHead}"content":${JSON.stringify(part.delta)}${deltaTail}`;
        case 'reasoning-delta':
          details ??= new StreamedReasoningDetails(reasoningShown);
          details.next(part);
          return part.delta === '' || !reasoningShown
            ? ''
            : `${deltaHead}"reasoning":${JSON.stringify(part.delta)}${deltaTail}`;
        case 'reasoning-signature':
        case 'reasoning-redacted':
          details ??= new StreamedReasoningDetails(reasoningShown);
          return detailsFrame(details.next(part));
        case 'refusal-delta':
          return part.delta === '' ? '' : `${deltaHead}"refusal":${JSON.stringify(part.delta)}${deltaTail}`;
        case 'image-output':
          // Each image whole, in a chunk of its own, numbered in the answer.
          return `${deltaHead}"images":[${JSON.stringify({ ...chatImage(part), index: images++ })}]${deltaTail}`;
        case 'tool-call-start':
          return `${details ? detailsFrame(details.callStarts(part.callId)) : ''}${deltaHead}"tool_calls":[{"index":${part.index},"id":${JSON.stringify(part.callId)},"type":"function","function":{"name":${JSON.stringify(part.name)},"arguments":""}}]${deltaTail}`;
        case 'tool-call-delta':
          return part.argumentsDelta === ''
            ? ''
            : `${deltaHead}"tool_calls":[{"index":${part.index},"function":{"arguments":${JSON.stringify(part.argumentsDelta)}}}]${deltaTail}`;
        case 'finish':
          finishReason = part.reason;
          nativeFinishReason = part.nativeReason;
          return '';
        // Usage arrives in the summary; errors arrive through fail(); the rest has no chat frame.
        default:
          return '';
      }
    },

    end(summary: GenerationSummary): string {
      if (closed) return '';
      closed = true;
      const waiting = details ? detailsFrame(details.flush()) : '';
      const finish = frame({
        ...envelope,
        choices: [
          {
            index: 0,
            delta: { role: 'assistant', content: '' },
            finish_reason: mapChatFinishReason(finishReason),
            native_finish_reason: nativeFinishReason,
            logprobs: null,
          },
        ],
      });
      return waiting + finish + usageFrame(summary) + DONE;
    },

    fail(failure: GenerationFailure, summary: GenerationSummary): string {
      if (closed) return '';
      closed = true;
      const error = frame({
        ...envelope,
        error: standardError(failure),
        choices: [
          {
            index: 0,
            delta: { content: '' },
            finish_reason: 'error',
            native_finish_reason: nativeFinishReason,
          },
        ],
      });
      // What was produced before the failure is billed, so the client sees its usage too.
      return error + usageFrame(summary) + DONE;
    },
  };
}
