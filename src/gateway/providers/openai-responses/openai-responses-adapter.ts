import type { ReasoningFormat } from '../../../spec/generation-request.js';
import type { AdapterCall, ProviderAdapter } from '../../../spec/provider-adapter.js';
import type { GenerationResult, StreamPart } from '../../../spec/stream-part.js';
import { UpstreamError } from '../../../spec/upstream-error.js';
import { emptyUsage, type Usage } from '../../../spec/usage.js';
import { baseUrlOf, bearerHeadersOf, perTarget } from '../shared/per-target.js';
import { parseUpstreamJson } from '../shared/server-sent-events.js';
import { guardStream } from '../shared/stream-guard.js';
import { openUpstream, requestUpstreamJson, type UpstreamHttp } from '../shared/upstream-http.js';
import { convertToOpenAiResponsesRequest } from './convert-to-openai-responses-request.js';
import {
  mapOpenAiResponsesFinishReason,
  nativeOpenAiResponsesFinishReason,
} from './map-openai-responses-finish-reason.js';
import {
  type OpenAiResponsesErrorView,
  type OpenAiResponseView,
  readOpenAiResponse,
  readOpenAiResponsesStreamEvent,
  statusForOpenAiResponsesError,
} from './openai-responses-api.js';

const responsesUrlOf = perTarget((target) => `${baseUrlOf(target)}/responses`);

/** Separate reasoning summaries read as paragraphs, in one reasoning text. */
const REASONING_SEPARATOR = '\n\n';

/** A failed response or an error event, with the status OpenAI would have sent before the stream. */
function errorFromEvent(error: OpenAiResponsesErrorView, raw: string): UpstreamError {
  return new UpstreamError({
    message: error.message,
    kind: 'http',
    status: statusForOpenAiResponsesError(error.code),
    raw: raw.slice(0, 2000),
  });
}

function finishOf(response: OpenAiResponseView, hasFunctionCalls: boolean) {
  const status = { status: response.status, incompleteReason: response.incompleteReason };
  return {
    reason: mapOpenAiResponsesFinishReason({ ...status, hasFunctionCalls }),
    nativeReason: nativeOpenAiResponsesFinishReason(status),
  };
}

/**
 * OpenAI Responses (`POST /responses`). Non-streamed calls read one Response object; streamed
 * calls read the typed SSE events (response.created, output items and their deltas, and one of
 * response.completed, response.incomplete or response.failed) into parts.
 *
 * A reasoning item's `encrypted_content` is the model's reasoning, which a stateless caller
 * (`store: false`) sends back for the model to keep thinking from it: it becomes a redacted
 * reasoning block of `reasoningFormat` (`openai-responses-v1`, or `xai-responses-v1` for xAI's
 * API, whose values OpenAI cannot read), and only blocks of that format are sent back to it.
 */
export function createOpenAiResponsesAdapter(options: {
  http: UpstreamHttp;
  reasoningFormat?: ReasoningFormat;
}): ProviderAdapter {
  const url = (call: AdapterCall) => responsesUrlOf(call.target);
  const headersFor = (call: AdapterCall) => bearerHeadersOf(call.target);
  const format: ReasoningFormat = options.reasoningFormat ?? 'openai-responses-v1';

  return {
    protocol: 'openai-responses',

    async generate(call): Promise<GenerationResult> {
      const json = await requestUpstreamJson(options.http, call, {
        url: url(call),
        headers: headersFor(call),
        body: JSON.stringify(
          convertToOpenAiResponsesRequest(call.request, { stream: false, reasoningFormat: format }),
        ),
        signal: call.signal,
      });
      const reply = readOpenAiResponse(json);
      if (!reply) {
        throw new UpstreamError({
          message: 'Upstream reply has no output',
          kind: 'invalid-response',
          raw: JSON.stringify(json).slice(0, 500),
        });
      }
      if (reply.status === 'failed' || reply.error) {
        throw errorFromEvent(
          reply.error ?? { code: null, message: 'Upstream response failed' },
          JSON.stringify(json),
        );
      }
      const reasoning: string[] = [];
      const result: GenerationResult = {
        id: reply.id ?? null,
        model: reply.model ?? null,
        text: '',
        reasoning: '',
        toolCalls: [],
        usage: reply.usage ?? emptyUsage(),
        finishReason: 'other',
        nativeFinishReason: null,
      };
      const blocks: NonNullable<GenerationResult['reasoningBlocks']> = [];
      // Encrypted reasoning before the first function call goes back with it (or, when text comes
      // first, before the text); after a call, it is placed before the next one, or after the
      // last, as the stream has it and as Anthropic's thinking is placed.
      let unplaced: typeof blocks = [];
      for (const item of reply.output) {
        if (item.type === 'message') {
          result.text += item.text;
          if (item.refusal) result.refusal = (result.refusal ?? '') + item.refusal;
          unplaced = [];
        } else if (item.type === 'reasoning') {
          reasoning.push(...item.texts);
          if (item.encryptedContent !== undefined) {
            const block: (typeof blocks)[number] = { text: '', redactedData: item.encryptedContent, format };
            if (result.toolCalls.length > 0) block.beforeToolCall = result.toolCalls.length;
            else unplaced.push(block);
            blocks.push(block);
          }
        } else if (item.type === 'function_call') {
          for (const block of unplaced) block.beforeToolCall = result.toolCalls.length;
          unplaced = [];
          result.toolCalls.push({
            callId: item.callId || `call_${result.toolCalls.length}`,
            name: item.name,
            arguments: item.arguments,
          });
        }
      }
      result.reasoning = reasoning.join(REASONING_SEPARATOR);
      if (blocks.length > 0) result.reasoningBlocks = blocks;
      const finish = finishOf(reply, result.toolCalls.length > 0);
      result.finishReason = finish.reason;
      result.nativeFinishReason = finish.nativeReason;
      return result;
    },

    async *stream(call): AsyncGenerator<StreamPart> {
      // Converted before the guard: a request the converter refuses is the caller's error, not a
      // failure of this upstream to fail over from.
      const body = JSON.stringify(
        convertToOpenAiResponsesRequest(call.request, { stream: true, reasoningFormat: format }),
      );
      const guard = guardStream(call);
      // The counts a response.failed event carries, billed with the failure.
      let failedUsage: Usage | undefined;
      try {
        const events = await openUpstream(options.http, call, {
          url: url(call),
          headers: headersFor(call),
          body,
          signal: guard.signal,
        });

        let terminal: OpenAiResponseView | undefined;
        let identified = false;
        // Function calls are numbered 0, 1, 2 among themselves, while `output_index` also counts
        // messages and reasoning items; argument deltas name their item by id and by position.
        let toolCalls = 0;
        const callsByItem = new Map<string, number>();
        const callsByOutput = new Map<number, number>();
        const argumentsSent = new Set<number>();
        const findCall = (itemId: string | undefined, outputIndex: number | undefined) =>
          (itemId !== undefined ? callsByItem.get(itemId) : undefined) ??
          (outputIndex !== undefined ? callsByOutput.get(outputIndex) : undefined);
        let reasoningSection: string | undefined;

        for await (const frame of events) {
          const event = readOpenAiResponsesStreamEvent(parseUpstreamJson(frame.data));
          if ('response' in event && !identified) {
            identified = true;
            const metadata: StreamPart = { type: 'response-metadata' };
            if (event.response.id !== undefined) metadata.id = event.response.id;
            if (event.response.model !== undefined) metadata.model = event.response.model;
            yield metadata;
          }
          if (event.type === 'keepalive') {
            guard.alive();
            continue;
          }
          if (event.type === 'response.output_item.added') {
            const item = event.item;
            // A reasoning item opens while the model thinks; with no summary asked for, nothing
            // else may come for minutes.
            if (item.type === 'reasoning') guard.alive();
            if (item.type !== 'function_call') continue;
            guard.output();
            const index = toolCalls++;
            if (item.id !== undefined) callsByItem.set(item.id, index);
            if (event.outputIndex !== undefined) callsByOutput.set(event.outputIndex, index);
            yield { type: 'tool-call-start', index, callId: item.callId || `call_${index}`, name: item.name };
          } else if (event.type === 'response.output_text.delta') {
            if (!event.delta) continue;
            guard.output();
            yield { type: 'text-delta', delta: event.delta };
          } else if (event.type === 'response.refusal.delta') {
            if (!event.delta) continue;
            guard.output();
            yield { type: 'refusal-delta', delta: event.delta };
          } else if (
            event.type === 'response.reasoning_summary_text.delta' ||
            event.type === 'response.reasoning_text.delta'
          ) {
            if (!event.delta) continue;
            guard.output();
            // A new summary part starts a new paragraph, as the non-streamed reasoning joins them.
            const separator =
              reasoningSection !== undefined && reasoningSection !== event.section ? REASONING_SEPARATOR : '';
            reasoningSection = event.section;
            yield { type: 'reasoning-delta', delta: separator + event.delta };
          } else if (event.type === 'response.function_call_arguments.delta') {
            const index = findCall(event.itemId, event.outputIndex);
            if (index === undefined || !event.delta) continue;
            argumentsSent.add(index);
            yield { type: 'tool-call-delta', index, argumentsDelta: event.delta };
          } else if (event.type === 'response.output_item.done') {
            const item = event.item;
            if (item.type === 'reasoning' && item.encryptedContent !== undefined) {
              guard.output();
              yield { type: 'reasoning-redacted', data: item.encryptedContent, format };
              continue;
            }
            if (item.type !== 'function_call') continue;
            const index = findCall(item.id, event.outputIndex);
            if (index === undefined) continue;
            // A server that sends the arguments only with the finished item still delivers them.
            if (!argumentsSent.has(index) && item.arguments) {
              yield { type: 'tool-call-delta', index, argumentsDelta: item.arguments };
            }
            if (item.id !== undefined) callsByItem.delete(item.id);
            if (event.outputIndex !== undefined) callsByOutput.delete(event.outputIndex);
            yield { type: 'tool-call-end', index };
          } else if (event.type === 'response.completed' || event.type === 'response.incomplete') {
            terminal = event.response;
            break;
          } else if (event.type === 'response.failed') {
            failedUsage = event.response.usage;
            throw errorFromEvent(
              event.response.error ?? { code: null, message: 'Upstream response failed' },
              frame.data,
            );
          } else if (event.type === 'error') {
            throw errorFromEvent(event.error, frame.data);
          }
        }
        if (!terminal) {
          throw new UpstreamError({
            message: 'Upstream stream ended before the response completed',
            kind: 'invalid-response',
          });
        }
        for (const index of new Set([...callsByItem.values(), ...callsByOutput.values()])) {
          yield { type: 'tool-call-end', index };
        }
        yield { type: 'usage', usage: terminal.usage ?? emptyUsage() };
        const hasFunctionCalls =
          toolCalls > 0 || terminal.output.some((item) => item.type === 'function_call');
        yield { type: 'finish', ...finishOf(terminal, hasFunctionCalls) };
      } catch (error) {
        const failure = guard.failure(error);
        if (!guard.started) throw failure;
        if (failedUsage) yield { type: 'usage', usage: failedUsage };
        yield { type: 'error', error: failure };
      } finally {
        guard.release();
      }
    },
  };
}
