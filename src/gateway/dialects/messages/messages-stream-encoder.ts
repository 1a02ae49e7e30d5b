import type { FinishReason } from '../../../spec/finish-reason.js';
import type { StreamPart } from '../../../spec/stream-part.js';
import { emptyUsage } from '../../../spec/usage.js';
import type { GenerationFailure, GenerationInfo, GenerationSummary, StreamEncoder } from '../dialect.js';
import type { MessagesBody } from './messages-body-schema.js';
import { messagesErrorObject } from './messages-errors.js';
import {
  messageId,
  messagesOpaque,
  messagesTokenCounts,
  messagesUsage,
  stopReason,
} from './messages-wire.js';
import { JsonObjectPrefix } from './tool-input.js';

/**
 * Anthropic names every frame (`event: <type>`) and repeats the type in the data
 * (https://docs.anthropic.com/en/docs/build-with-claude/streaming); SDKs dispatch on the event line.
 */
const frame = (event: { type: string } & Record<string, unknown>) =>
  `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

type OpenBlock =
  | { kind: 'text' }
  /** `signed` once its signature_delta went out: later reasoning is another block. */
  | { kind: 'thinking'; signed: boolean }
  | { kind: 'redacted' }
  /** `input` reads the call's arguments; `sent` once some of them went out. */
  | { kind: 'tool'; toolIndex: number; ended: boolean; input: JsonObjectPrefix; sent: boolean };

/** Parts that write into content blocks; the rest (usage, finish, metadata, error) never wait. */
const isContent = (part: StreamPart) =>
  part.type === 'text-delta' ||
  part.type === 'refusal-delta' ||
  part.type === 'reasoning-delta' ||
  part.type === 'reasoning-signature' ||
  part.type === 'reasoning-redacted' ||
  part.type === 'tool-call-start' ||
  part.type === 'tool-call-delta' ||
  part.type === 'tool-call-end';

/**
 * The Messages stream: `message_start`, content blocks (`content_block_start`, deltas,
 * `content_block_stop`, one block open at a time, indexes from 0), then `message_delta` with the
 * stop reason and usage, and `message_stop`. No `data: [DONE]` follows: Anthropic never sends one
 * and `message_stop` is what every Anthropic client ends on (the official TypeScript SDK would
 * skip a data-only frame, but hand-written clients that parse every `data:` line would not).
 *
 * Anthropic blocks never interleave, while canonical tool calls may (an OpenAI-compatible upstream
 * can start call 1 before call 0's arguments are complete, and ends them all at the finish). So
 * while a tool block is open and its call has not ended, content for anything else is held back
 * and replayed once the call ends: each block is then complete and in order, at the cost of
 * delaying a later call's arguments until the earlier call ends.
 */
export function createMessagesStreamEncoder(body: MessagesBody, info: GenerationInfo): StreamEncoder {
  const id = messageId(info.id);
  let nextIndex = 0;
  let open: OpenBlock | null = null;
  let held: StreamPart[] = [];
  let sawToolCall = false;
  let finish: { reason: FinishReason; native: string | null; sequence: string | undefined } | null = null;
  /** Tool calls that have had their block; a repeated start must not open a second one. */
  const openedTools = new Set<number>();

  const close = (): string => {
    if (open === null) return '';
    open = null;
    return frame({ type: 'content_block_stop', index: nextIndex - 1 });
  };

  const openBlock = (block: OpenBlock, contentBlock: Record<string, unknown>): string => {
    const closing = close();
    open = block;
    return `${closing}${frame({ type: 'content_block_start', index: nextIndex++, content_block: contentBlock })}`;
  };

  const delta = (payload: Record<string, unknown>) =>
    frame({ type: 'content_block_delta', index: nextIndex - 1, delta: payload });

  /** Writes one part, assuming no open tool call is waiting for it to be held back. */
  const apply = (part: StreamPart): string => {
    switch (part.type) {
      // Anthropic has no refusal block: a refusal is what the model said, as text.
      case 'text-delta':
      case 'refusal-delta':
        if (part.delta === '') return '';
        return (
          (open?.kind === 'text' ? '' : openBlock({ kind: 'text' }, { type: 'text', text: '' })) +
          delta({ type: 'text_delta', text: part.delta })
        );
      case 'reasoning-delta':
        if (part.delta === '') return '';
        return (
          (open?.kind === 'thinking' && !open.signed
            ? ''
            : openBlock(
                { kind: 'thinking', signed: false },
                { type: 'thinking', thinking: '', signature: '' },
              )) + delta({ type: 'thinking_delta', thinking: part.delta })
        );
      case 'reasoning-signature': {
        // The signature closes the thinking streamed since the last one; a client sends it back.
        const opening =
          open?.kind === 'thinking' && !open.signed
            ? ''
            : openBlock(
                { kind: 'thinking', signed: false },
                { type: 'thinking', thinking: '', signature: '' },
              );
        if (open?.kind === 'thinking') open.signed = true;
        return (
          opening + delta({ type: 'signature_delta', signature: messagesOpaque(part.signature, part.format) })
        );
      }
      case 'reasoning-redacted':
        return openBlock(
          { kind: 'redacted' },
          { type: 'redacted_thinking', data: messagesOpaque(part.data, part.format) },
        );
      case 'tool-call-start':
        if (openedTools.has(part.index)) return '';
        openedTools.add(part.index);
        sawToolCall = true;
        return openBlock(
          { kind: 'tool', toolIndex: part.index, ended: false, input: new JsonObjectPrefix(), sent: false },
          { type: 'tool_use', id: part.callId, name: part.name, input: {} },
        );
      case 'tool-call-delta': {
        if (open?.kind !== 'tool' || open.toolIndex !== part.index) return '';
        // Only arguments that are still the beginning of a JSON object go out (./tool-input.ts):
        // past a fault, the SDK's parser would throw. Whitespace before the object is left out.
        let json = part.argumentsDelta.slice(0, open.input.feed(part.argumentsDelta));
        if (!open.sent) json = json.trimStart();
        if (json === '') return '';
        open.sent = true;
        return delta({ type: 'input_json_delta', partial_json: json });
      }
      case 'tool-call-end':
        if (open?.kind !== 'tool' || open.toolIndex !== part.index) return '';
        // The block stays open until something else starts, as Anthropic's blocks do.
        open.ended = true;
        return replayHeld();
      case 'finish':
        finish = { reason: part.reason, native: part.nativeReason, sequence: part.stopSequence };
        return '';
      // A generated image has no Messages block (docs/decisions.md): it is left out, its tokens billed.
      default:
        return '';
    }
  };

  const waiting = () => open?.kind === 'tool' && !open.ended;

  const accept = (part: StreamPart): string => {
    if (waiting() && isContent(part)) {
      const toolIndex = (open as Extract<OpenBlock, { kind: 'tool' }>).toolIndex;
      const forOpenCall =
        (part.type === 'tool-call-delta' || part.type === 'tool-call-end') && part.index === toolIndex;
      if (!forOpenCall) {
        held.push(part);
        return '';
      }
    }
    return apply(part);
  };

  const replayHeld = (): string => {
    const replay = held;
    held = [];
    let out = '';
    for (const part of replay) out += accept(part);
    return out;
  };

  /** At the end nothing more will arrive: whatever was held is written, calls treated as ended. */
  const flush = (): string => {
    let out = '';
    while (held.length > 0) {
      if (open?.kind === 'tool') open.ended = true;
      out += replayHeld();
    }
    return out + close();
  };

  return {
    start(usageAtStart) {
      return frame({
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model: info.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          // As Anthropic does, the prompt's counts when the upstream reported them as it began
          // (Anthropic's own message_start); zeros from one that counts only at the end.
          // message_delta carries them all in either case, and the SDKs take its counts.
          usage: messagesTokenCounts(usageAtStart ?? emptyUsage()),
          provider: info.providerName,
        },
      });
    },
    part: accept,
    end(summary: GenerationSummary) {
      const closing = flush();
      const stop = stopReason({
        body,
        finishReason: finish?.reason ?? 'stop',
        nativeFinishReason: finish?.native ?? null,
        hasToolCalls: sawToolCall,
        stopSequence: finish?.sequence,
      });
      const stopEvent: { type: 'message_stop'; switchyard_metadata?: Record<string, unknown> } = {
        type: 'message_stop',
      };
      if (summary.metadata !== null) stopEvent.switchyard_metadata = summary.metadata;
      return `${closing}${frame({ type: 'message_delta', delta: stop, usage: messagesUsage(summary) })}${frame(stopEvent)}`;
    },
    fail(failure: GenerationFailure, summary: GenerationSummary) {
      const closing = flush();
      const event: { type: 'error'; error: unknown; switchyard_metadata?: Record<string, unknown> } = {
        type: 'error',
        error: messagesErrorObject(failure),
      };
      if (summary.metadata !== null) event.switchyard_metadata = summary.metadata;
      return `${closing}${frame(event)}`;
    },
  };
}
