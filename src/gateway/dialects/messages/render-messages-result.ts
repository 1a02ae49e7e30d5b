import type { GenerationResult } from '../../../spec/stream-part.js';
import type { GenerationInfo, GenerationSummary } from '../dialect.js';
import type { MessagesBody } from './messages-body-schema.js';
import { type MessagesUsage, messageId, messagesOpaque, messagesUsage, stopReason } from './messages-wire.js';
import { toolInput } from './tool-input.js';

export type MessagesResultBlock =
  /** The provider's signature when it signs its reasoning (Anthropic); '' otherwise, which SDKs accept. */
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export interface MessagesResult {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: MessagesResultBlock[];
  stop_reason: string;
  stop_sequence: string | null;
  usage: MessagesUsage;
  /** The display name of the provider that answered (the reference adds it to Anthropic's shape). */
  provider: string;
  switchyard_metadata?: Record<string, unknown>;
}

/**
 * A whole generation as an Anthropic `message`: thinking first, then text, then tool calls. Images
 * an image model generated have no Messages block and are left out (docs/decisions.md).
 */
export function renderMessagesResult(
  body: MessagesBody,
  info: GenerationInfo,
  result: GenerationResult,
  summary: GenerationSummary,
): MessagesResult {
  const content: MessagesResultBlock[] = [];
  // The provider's own reasoning blocks, signatures included (Anthropic), each in its place: the
  // client sends them back with the turn's tool calls, and Anthropic refuses them altered.
  const blocks = result.reasoningBlocks;
  const reasoningBefore = (toolCall: number | undefined) => {
    for (const block of blocks ?? []) {
      if (block.beforeToolCall !== toolCall) continue;
      content.push(
        block.redactedData !== undefined
          ? { type: 'redacted_thinking', data: messagesOpaque(block.redactedData, block.format) }
          : {
              type: 'thinking',
              thinking: block.text,
              signature: block.signature === undefined ? '' : messagesOpaque(block.signature, block.format),
            },
      );
    }
  };
  // Reasoning text the blocks do not hold (Gemini's signatures come apart from its thought text).
  if (result.reasoning !== '' && !blocks?.some((block) => block.text !== ''))
    content.push({ type: 'thinking', thinking: result.reasoning, signature: '' });
  if (blocks) reasoningBefore(undefined);
  if (result.text !== '') content.push({ type: 'text', text: result.text });
  // Anthropic has no refusal block: a refusal is what the model said, as text.
  if (result.refusal) content.push({ type: 'text', text: result.refusal });
  result.toolCalls.forEach((call, index) => {
    if (blocks) reasoningBefore(index);
    content.push({ type: 'tool_use', id: call.callId, name: call.name, input: toolInput(call.arguments) });
  });
  if (blocks && result.toolCalls.length > 0) reasoningBefore(result.toolCalls.length);
  const rendered: MessagesResult = {
    id: messageId(info.id),
    type: 'message',
    role: 'assistant',
    model: info.model,
    content,
    ...stopReason({
      body,
      finishReason: result.finishReason,
      nativeFinishReason: result.nativeFinishReason,
      hasToolCalls: result.toolCalls.length > 0,
      stopSequence: result.stopSequence,
    }),
    usage: messagesUsage(summary),
    provider: info.providerName,
  };
  if (summary.metadata !== null) rendered.switchyard_metadata = summary.metadata;
  return rendered;
}
