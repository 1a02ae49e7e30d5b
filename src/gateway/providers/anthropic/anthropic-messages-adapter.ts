import type { AdapterCall, ProviderAdapter } from '../../../spec/provider-adapter.js';
import type { GenerationResult, StreamPart } from '../../../spec/stream-part.js';
import { UpstreamError } from '../../../spec/upstream-error.js';
import { baseUrlOf, credentialHeadersOf, perTarget } from '../shared/per-target.js';
import { parseUpstreamJson } from '../shared/server-sent-events.js';
import { guardStream } from '../shared/stream-guard.js';
import { openUpstream, requestUpstreamJson, type UpstreamHttp } from '../shared/upstream-http.js';
import {
  type AnthropicErrorView,
  type AnthropicUsageCounts,
  readAnthropicError,
  readAnthropicMessage,
  readAnthropicStreamEvent,
  statusForAnthropicError,
  toCanonicalUsage,
} from './anthropic-messages-api.js';
import { convertToAnthropicMessagesRequest } from './convert-to-anthropic-messages-request.js';
import { mapAnthropicStopReason } from './map-anthropic-stop-reason.js';

/** Whose thinking blocks these are, for the dialects that tell clients (`reasoning_details[].format`). */
const ANTHROPIC_FORMAT = 'anthropic-claude-v1' as const;

/**
 * The API version every request names (https://docs.anthropic.com/en/api/versioning); still the
 * current one, and new features arrive as `anthropic-beta` headers on top of it.
 */
export const ANTHROPIC_VERSION = '2023-06-01';

/** An error event, with the status Anthropic would have sent for it before the stream began. */
function errorFromEvent(error: AnthropicErrorView, raw: string): UpstreamError {
  return new UpstreamError({
    message: error.message,
    kind: 'http',
    status: statusForAnthropicError(error.errorType),
    raw: raw.slice(0, 2000),
  });
}

/** Ends a streamed tool call; one whose input came as no delta sends its start's input first. */
function* closeCall(open: { index: number; input: unknown; streamed: boolean }): Generator<StreamPart> {
  if (!open.streamed) {
    const input = typeof open.input === 'object' && open.input !== null ? open.input : {};
    yield { type: 'tool-call-delta', index: open.index, argumentsDelta: JSON.stringify(input) };
  }
  yield { type: 'tool-call-end', index: open.index };
}

/**
 * Anthropic Messages (`POST /v1/messages`). Non-streamed calls read one message; streamed calls
 * read the typed SSE events (message_start, content blocks, message_delta, message_stop) into parts.
 */
export function createAnthropicMessagesAdapter(options: {
  http: UpstreamHttp;
  version?: string;
}): ProviderAdapter {
  const urlOf = perTarget((target) => `${baseUrlOf(target)}/messages`);
  const url = (call: AdapterCall) => urlOf(call.target);
  const headersOf = credentialHeadersOf((apiKey) => ({ 'x-api-key': apiKey }), {
    'anthropic-version': options.version ?? ANTHROPIC_VERSION,
  });
  const headersFor = (call: AdapterCall) => headersOf(call.target);

  return {
    protocol: 'anthropic-messages',

    async generate(call): Promise<GenerationResult> {
      const reply = await requestUpstreamJson(options.http, call, {
        url: url(call),
        headers: headersFor(call),
        body: JSON.stringify(convertToAnthropicMessagesRequest(call.request, { stream: false })),
        signal: call.signal,
      });
      const error = readAnthropicError(reply);
      if (error) throw errorFromEvent(error, JSON.stringify(reply));
      const message = readAnthropicMessage(reply);
      if (!message) {
        throw new UpstreamError({
          message: 'Upstream reply has no content',
          kind: 'invalid-response',
          raw: JSON.stringify(reply).slice(0, 500),
        });
      }
      const result: GenerationResult = {
        id: message.id ?? null,
        model: message.model ?? null,
        text: '',
        reasoning: '',
        toolCalls: [],
        usage: toCanonicalUsage(message.usage),
        finishReason: mapAnthropicStopReason(message.stopReason),
        nativeFinishReason: message.stopReason ?? null,
      };
      if (message.stopSequence !== undefined) result.stopSequence = message.stopSequence;
      const reasoningBlocks: NonNullable<GenerationResult['reasoningBlocks']> = [];
      // A block after a tool call (interleaved thinking) comes before the next one.
      const anchor = () => (result.toolCalls.length > 0 ? { beforeToolCall: result.toolCalls.length } : {});
      for (const block of message.content) {
        if (block.type === 'text') result.text += block.text;
        else if (block.type === 'thinking') {
          result.reasoning += block.thinking;
          reasoningBlocks.push({
            text: block.thinking,
            ...(block.signature ? { signature: block.signature } : {}),
            format: ANTHROPIC_FORMAT,
            ...anchor(),
          });
        } else if (block.type === 'redacted_thinking') {
          reasoningBlocks.push({ text: '', redactedData: block.data, format: ANTHROPIC_FORMAT, ...anchor() });
        } else if (block.type === 'tool_use') {
          result.toolCalls.push({
            callId: block.id || `call_${result.toolCalls.length}`,
            name: block.name,
            arguments: JSON.stringify(block.input ?? {}),
          });
        }
      }
      if (reasoningBlocks.length > 0) result.reasoningBlocks = reasoningBlocks;
      return result;
    },

    async *stream(call): AsyncGenerator<StreamPart> {
      // Converted before the try: a request the caller got wrong is an UnsupportedRequestError, not
      // an upstream failure to fail over from.
      const body = JSON.stringify(convertToAnthropicMessagesRequest(call.request, { stream: true }));
      const guard = guardStream(call);
      // Counts so far: message_start's prompt side, message_delta's cumulative output.
      let usage: AnthropicUsageCounts = {};
      try {
        const events = await openUpstream(options.http, call, {
          url: url(call),
          headers: headersFor(call),
          body,
          signal: guard.signal,
        });

        let stopReason: string | undefined;
        let stopSequence: string | undefined;
        let sawStop = false;
        let identified = false;
        // Content block index → tool-call index: tool calls are numbered 0, 1, 2 among themselves,
        // while Anthropic's block index also counts text and thinking blocks.
        // A call none of whose input arrived as deltas gets its start's `input` (`{}` for a tool
        // without parameters), as the non-streamed answer does: an empty arguments text is no JSON.
        const openCalls = new Map<number, { index: number; input: unknown; streamed: boolean }>();
        let toolCalls = 0;
        for await (const frame of events) {
          const event = readAnthropicStreamEvent(parseUpstreamJson(frame.data));
          if (event.type === 'message_start') {
            // Later counts (message_delta) win; this one carries the prompt side.
            usage = { ...usage, ...event.usage };
            if (!identified) {
              identified = true;
              const metadata: StreamPart = { type: 'response-metadata' };
              if (event.id !== undefined) metadata.id = event.id;
              if (event.model !== undefined) metadata.model = event.model;
              // The prompt's counts are known now: a Messages client gets them in its message_start.
              if (Object.keys(event.usage).length > 0) metadata.usage = toCanonicalUsage(event.usage);
              yield metadata;
            }
          } else if (event.type === 'content_block_start') {
            const block = event.block;
            if (block.type === 'tool_use') {
              guard.output();
              const index = toolCalls++;
              openCalls.set(event.index, { index, input: block.input, streamed: false });
              yield { type: 'tool-call-start', index, callId: block.id || `call_${index}`, name: block.name };
            } else if (block.type === 'text' && block.text) {
              guard.output();
              yield { type: 'text-delta', delta: block.text };
            } else if (block.type === 'thinking' && block.thinking) {
              guard.output();
              yield { type: 'reasoning-delta', delta: block.thinking };
            } else if (block.type === 'redacted_thinking' && block.data) {
              guard.output();
              yield { type: 'reasoning-redacted', data: block.data, format: ANTHROPIC_FORMAT };
            }
          } else if (event.type === 'content_block_delta') {
            const delta = event.delta;
            if (delta.type === 'text_delta' && delta.text) {
              guard.output();
              yield { type: 'text-delta', delta: delta.text };
            } else if (delta.type === 'thinking_delta' && delta.thinking) {
              guard.output();
              yield { type: 'reasoning-delta', delta: delta.thinking };
            } else if (delta.type === 'signature_delta' && delta.signature) {
              yield { type: 'reasoning-signature', signature: delta.signature, format: ANTHROPIC_FORMAT };
            } else if (delta.type === 'input_json_delta' && delta.partialJson) {
              const open = openCalls.get(event.index);
              if (open !== undefined) {
                open.streamed = true;
                yield { type: 'tool-call-delta', index: open.index, argumentsDelta: delta.partialJson };
              }
            }
          } else if (event.type === 'content_block_stop') {
            const open = openCalls.get(event.index);
            if (open !== undefined) {
              openCalls.delete(event.index);
              yield* closeCall(open);
            }
          } else if (event.type === 'message_delta') {
            // message_delta usage is cumulative, not an increment.
            usage = { ...usage, ...event.usage };
            if (event.stopReason !== undefined) stopReason = event.stopReason;
            if (event.stopSequence !== undefined) stopSequence = event.stopSequence;
          } else if (event.type === 'message_stop') {
            // A stream that stops before message_start answered nothing: a bad answer to fail
            // over from, not a completed empty reply.
            if (!identified && !guard.started) {
              throw new UpstreamError({
                message: 'Upstream stream sent message_stop before message_start',
                kind: 'invalid-response',
              });
            }
            sawStop = true;
            break;
          } else if (event.type === 'error') {
            throw errorFromEvent(event.error, frame.data);
          }
        }
        if (!sawStop) {
          throw new UpstreamError({
            message: 'Upstream stream ended before message_stop',
            kind: 'invalid-response',
          });
        }
        for (const open of openCalls.values()) yield* closeCall(open);
        yield { type: 'usage', usage: toCanonicalUsage(usage) };
        yield {
          type: 'finish',
          reason: mapAnthropicStopReason(stopReason),
          nativeReason: stopReason ?? null,
          ...(stopSequence !== undefined ? { stopSequence } : {}),
        };
      } catch (error) {
        const failure = guard.failure(error);
        if (!guard.started) throw failure;
        // What the upstream counted before failing (the prompt, at least) bills better than bytes.
        if (Object.keys(usage).length > 0) yield { type: 'usage', usage: toCanonicalUsage(usage) };
        yield { type: 'error', error: failure };
      } finally {
        guard.release();
      }
    },
  };
}
