import type { EmbeddingResult } from '../../../spec/embedding.js';
import type { AdapterCall, ProviderAdapter } from '../../../spec/provider-adapter.js';
import type { GenerationResult, StreamPart } from '../../../spec/stream-part.js';
import { UpstreamError } from '../../../spec/upstream-error.js';
import { emptyUsage, type Usage } from '../../../spec/usage.js';
import { baseUrlOf, bearerHeadersOf, perTarget } from '../shared/per-target.js';
import { parseUpstreamJson } from '../shared/server-sent-events.js';
import { guardStream } from '../shared/stream-guard.js';
import { openUpstream, requestUpstreamJson, type UpstreamHttp } from '../shared/upstream-http.js';
import { convertToOpenAiChatRequest, type OpenAiChatOptions } from './convert-to-openai-chat-request.js';
import { mapOpenAiFinishReason } from './map-openai-finish-reason.js';
import {
  readOpenAiChoice,
  readOpenAiIdentity,
  readOpenAiStreamError,
  readOpenAiUsage,
} from './openai-chat-api.js';
import { createToolCallReader } from './openai-chat-tool-calls.js';
import { embedWithOpenAi, type OpenAiEmbeddingsOptions } from './openai-embeddings.js';

const headersFor = (call: Pick<AdapterCall, 'target'>) => bearerHeadersOf(call.target);
const chatUrlOf = perTarget((target) => `${baseUrlOf(target)}/chat/completions`);

/**
 * OpenAI chat completions, and the OpenAI-compatible family that most providers of the catalogue
 * speak. Non-streamed calls read one JSON reply; streamed calls read SSE chunks into typed parts.
 * The same family serves `/embeddings` on the same base URL and credential.
 */
export function createOpenAiChatAdapter(
  options: { http: UpstreamHttp } & Partial<OpenAiChatOptions> & Partial<OpenAiEmbeddingsOptions>,
): ProviderAdapter {
  const settings: OpenAiChatOptions = {
    maxTokensField: options.maxTokensField ?? 'max_tokens',
    supportsTopK: options.supportsTopK ?? true,
  };
  const embeddingSettings: OpenAiEmbeddingsOptions = {
    embeddingInputType: options.embeddingInputType ?? true,
  };
  const url = (call: AdapterCall) => chatUrlOf(call.target);

  return {
    protocol: 'openai-chat',

    async generate(call): Promise<GenerationResult> {
      const reply = await requestUpstreamJson(options.http, call, {
        url: url(call),
        headers: headersFor(call),
        body: JSON.stringify(convertToOpenAiChatRequest(call.request, { ...settings, stream: false })),
        signal: call.signal,
      });
      const error = readOpenAiStreamError(reply);
      if (error) throw new UpstreamError({ message: error.message, kind: 'http', status: error.code ?? 502 });
      const choice = readOpenAiChoice(reply, 'message');
      if (!choice)
        throw new UpstreamError({ message: 'Upstream reply has no choices', kind: 'invalid-response' });
      const identity = readOpenAiIdentity(reply);
      return {
        id: identity.id ?? null,
        model: identity.model ?? null,
        text: choice.content ?? '',
        reasoning: choice.reasoning ?? '',
        ...(choice.refusal ? { refusal: choice.refusal } : {}),
        toolCalls: choice.toolCalls.map((toolCall, position) => ({
          callId: toolCall.id ?? `call_${position}`,
          name: toolCall.name ?? '',
          arguments: toolCall.arguments ?? '',
        })),
        usage: readOpenAiUsage((reply as Record<string, unknown>).usage) ?? emptyUsage(),
        finishReason: mapOpenAiFinishReason(choice.finishReason),
        nativeFinishReason: choice.finishReason ?? null,
      };
    },

    embed(call): Promise<EmbeddingResult> {
      return embedWithOpenAi({
        http: options.http,
        call,
        headers: headersFor(call),
        settings: embeddingSettings,
      });
    },

    async *stream(call): AsyncGenerator<StreamPart> {
      // Converted before the guard: a request the converter refuses is the caller's error, not a
      // failure of this upstream to fail over from.
      const body = JSON.stringify(convertToOpenAiChatRequest(call.request, { ...settings, stream: true }));
      const guard = guardStream(call);
      let usage: Usage | undefined;
      try {
        const events = await openUpstream(options.http, call, {
          url: url(call),
          headers: headersFor(call),
          body,
          signal: guard.signal,
        });

        let finish: string | undefined;
        let sawDone = false;
        let identified = false;
        const toolCalls = createToolCallReader(call.request.tools?.map((tool) => tool.name));
        for await (const event of events) {
          if (event.data === '[DONE]') {
            // A stream that ends before its first chunk answered nothing: a bad answer to fail over
            // from, not a completed empty reply.
            if (!identified) {
              throw new UpstreamError({
                message: 'Upstream stream ended with [DONE] before any chunk',
                kind: 'invalid-response',
              });
            }
            sawDone = true;
            break;
          }
          const chunk = parseUpstreamJson(event.data);
          const streamError = readOpenAiStreamError(chunk);
          if (streamError) {
            throw new UpstreamError({
              message: streamError.message,
              kind: 'http',
              status: streamError.code ?? 502,
            });
          }
          if (!identified) {
            identified = true;
            yield { type: 'response-metadata', ...readOpenAiIdentity(chunk) };
          }
          usage = readOpenAiUsage((chunk as Record<string, unknown>).usage) ?? usage;
          const choice = readOpenAiChoice(chunk, 'delta');
          if (!choice) continue;
          if (choice.reasoning) {
            guard.output();
            yield { type: 'reasoning-delta', delta: choice.reasoning };
          }
          if (choice.content) {
            guard.output();
            yield { type: 'text-delta', delta: choice.content };
          }
          if (choice.refusal) {
            guard.output();
            yield { type: 'refusal-delta', delta: choice.refusal };
          }
          for (const toolCall of choice.toolCalls) {
            const parts = toolCalls.read(toolCall);
            // A named call held for the rest of its name is the answer begun, not silence.
            if (parts.length === 0 && toolCall.name) guard.begun();
            for (const part of parts) {
              guard.output();
              yield part;
            }
          }
          if (choice.finishReason) {
            finish = choice.finishReason;
            for (const part of toolCalls.finish()) {
              guard.output();
              yield part;
            }
          }
        }
        if (!sawDone && finish === undefined) {
          throw new UpstreamError({
            message: 'Upstream stream ended before it finished',
            kind: 'invalid-response',
          });
        }
        for (const part of toolCalls.end()) {
          guard.output();
          yield part;
        }
        yield { type: 'usage', usage: usage ?? emptyUsage() };
        yield { type: 'finish', reason: mapOpenAiFinishReason(finish), nativeReason: finish ?? null };
      } catch (error) {
        const failure = guard.failure(error);
        if (!guard.started) throw failure;
        // Counts a chunk carried before the failure bill better than bytes.
        if (usage) yield { type: 'usage', usage };
        yield { type: 'error', error: failure };
      } finally {
        guard.release();
      }
    },
  };
}
