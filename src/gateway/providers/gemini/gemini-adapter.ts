import { randomBytes } from 'node:crypto';
import type { GenerationRequest } from '../../../spec/generation-request.js';
import type { AdapterCall, ProviderAdapter } from '../../../spec/provider-adapter.js';
import type { GenerationResult, StreamPart } from '../../../spec/stream-part.js';
import { UpstreamError } from '../../../spec/upstream-error.js';
import { emptyUsage, type Usage } from '../../../spec/usage.js';
import { baseUrlOf, credentialHeadersOf } from '../shared/per-target.js';
import { parseUpstreamJson } from '../shared/server-sent-events.js';
import { guardStream } from '../shared/stream-guard.js';
import {
  errorFromText,
  openUpstream,
  requestUpstreamJson,
  type UpstreamEventStream,
  type UpstreamHttp,
  type UpstreamText,
} from '../shared/upstream-http.js';
import { convertToGeminiRequest } from './convert-to-gemini-request.js';
import {
  readGeminiBlockReason,
  readGeminiCandidate,
  readGeminiError,
  readGeminiIdentity,
  readGeminiRetryDelaySeconds,
  readGeminiUsage,
} from './gemini-api.js';
import { mapGeminiFinishReason } from './map-gemini-finish-reason.js';

/**
 * Finishes that mean the model produced no usable answer: a function call it could not parse
 * (MALFORMED_FUNCTION_CALL), a call to a tool it was not given or while tools were off
 * (UNEXPECTED_TOOL_CALL), more calls than Gemini allows (TOO_MANY_TOOL_CALLS), or output it could not
 * form (MALFORMED_RESPONSE). Each is a failure, which another candidate may get right, as every
 * dialect tells it, rather than a completed turn with little or nothing in it.
 */
const FAILED_FINISHES = new Set([
  'MALFORMED_FUNCTION_CALL',
  'UNEXPECTED_TOOL_CALL',
  'TOO_MANY_TOOL_CALLS',
  'MALFORMED_RESPONSE',
]);
const failedFinish = (reason: string) =>
  new UpstreamError({
    message: `Gemini stopped with ${reason}: the model's answer is not usable`,
    kind: 'invalid-response',
  });

/**
 * An id for a function call Gemini sent without one (Gemini has no call ids before its 3.x models):
 * unique, not `call_<index>`, which repeats in every turn of a conversation, and a client that keys
 * results by id, or a fallback to a provider that refuses repeated ids (Anthropic), would collide.
 */
const newCallId = () => `call_${randomBytes(12).toString('base64url')}`;

const GEMINI_FORMAT = 'google-gemini-v1' as const;

/**
 * Whether the answer may hold images: asked for, or no modalities named on a model that makes them
 * (its default answer may hold some).
 */
const mayHoldImages = (request: GenerationRequest): boolean =>
  request.outputModalities ? request.outputModalities.includes('image') : request.imageModel === true;

/**
 * The size bound of a reply or stream event that may hold images. Gemini sends each image whole,
 * in one part of one event, as base64: a 2K or 4K PNG is 8 to 10 MB of it, past the 4 MiB an event
 * (and near the 32 MiB a reply) may otherwise hold. Other requests keep those bounds.
 */
const IMAGE_ANSWER_BYTES = 64 * 1024 * 1024;

/**
 * How much of an event a stream that failed must have received for it to be counted as an image
 * cut in transit: Gemini's text events hold a part's text and at most a thought signature of a few
 * KB, its images hundreds of KB and more.
 */
const CUT_IMAGE_CHARS = 64 * 1024;

const headersOf = credentialHeadersOf((apiKey) => ({ 'x-goog-api-key': apiKey }));
const headersFor = (call: AdapterCall) => headersOf(call.target);

/** `${baseUrl}/models/${model}:${method}`; a model id written as `models/…` is accepted too. */
function urlFor(call: AdapterCall, method: 'generateContent' | 'streamGenerateContent?alt=sse'): string {
  const model = call.request.model.replace(/^models\//, '');
  return `${baseUrlOf(call.target)}/models/${model}:${method}`;
}

/** A non-2xx reply as an UpstreamError, with the retry delay Google puts in the body, not a header. */
function errorFromGeminiReply(reply: UpstreamText): UpstreamError {
  const error = errorFromText(reply);
  const delay = error.retryAfterSeconds ?? readGeminiRetryDelaySeconds(error.raw);
  if (delay === error.retryAfterSeconds) return error;
  return new UpstreamError({
    message: error.message,
    kind: error.kind,
    status: error.status,
    raw: error.raw,
    retryAfterSeconds: delay,
  });
}

function throwIfErrorBody(reply: unknown): void {
  const error = readGeminiError(reply);
  if (error) throw new UpstreamError({ message: error.message, kind: 'http', status: error.code ?? 502 });
}

/**
 * Google's Gemini API (`generateContent`, `streamGenerateContent`). Streamed calls ask for SSE
 * (`alt=sse`): each event is a whole `GenerateContentResponse` holding only the new parts.
 * https://ai.google.dev/api/generate-content
 */
export function createGeminiAdapter(options: { http: UpstreamHttp }): ProviderAdapter {
  return {
    protocol: 'gemini',
    returnsImages: true,

    async generate(call): Promise<GenerationResult> {
      const reply = await requestUpstreamJson(options.http, call, {
        url: urlFor(call, 'generateContent'),
        headers: headersFor(call),
        body: JSON.stringify(convertToGeminiRequest(call.request)),
        signal: call.signal,
        toError: errorFromGeminiReply,
        maxReplyBytes: mayHoldImages(call.request) ? IMAGE_ANSWER_BYTES : undefined,
      });
      throwIfErrorBody(reply);
      const identity = readGeminiIdentity(reply);
      const usage = readGeminiUsage((reply as Record<string, unknown>).usageMetadata) ?? emptyUsage();
      const candidate = readGeminiCandidate(reply);
      if (!candidate) {
        const blockReason = readGeminiBlockReason(reply);
        if (!blockReason)
          throw new UpstreamError({ message: 'Upstream reply has no candidates', kind: 'invalid-response' });
        return {
          id: identity.id ?? null,
          model: identity.model ?? null,
          text: '',
          reasoning: '',
          toolCalls: [],
          usage,
          finishReason: 'content-filter',
          nativeFinishReason: blockReason,
        };
      }
      if (candidate.finishReason && FAILED_FINISHES.has(candidate.finishReason))
        throw failedFinish(candidate.finishReason);
      let text = '';
      let reasoning = '';
      const toolCalls: GenerationResult['toolCalls'] = [];
      const images: NonNullable<GenerationResult['images']> = [];
      // Signatures go back on the part they came with: a call's before that call, a text's with the text.
      const reasoningBlocks: NonNullable<GenerationResult['reasoningBlocks']> = [];
      for (const part of candidate.parts) {
        if (part.signature !== undefined) {
          reasoningBlocks.push({
            text: '',
            signature: part.signature,
            format: GEMINI_FORMAT,
            ...(part.type === 'function-call' ? { beforeToolCall: toolCalls.length } : {}),
          });
        }
        if (part.type === 'text') text += part.text;
        else if (part.type === 'reasoning') reasoning += part.text;
        else if (part.type === 'image') images.push({ mediaType: part.mediaType, data: part.data });
        else {
          toolCalls.push({
            callId: part.id ?? newCallId(),
            name: part.name,
            arguments: JSON.stringify(part.args),
          });
        }
      }
      return {
        id: identity.id ?? null,
        model: identity.model ?? null,
        text,
        reasoning,
        ...(reasoningBlocks.length > 0 ? { reasoningBlocks } : {}),
        toolCalls,
        ...(images.length > 0 ? { images } : {}),
        usage,
        finishReason: mapGeminiFinishReason(candidate.finishReason, {
          hasFunctionCalls: toolCalls.length > 0,
        }),
        nativeFinishReason: candidate.finishReason ?? null,
      };
    },

    async *stream(call): AsyncGenerator<StreamPart> {
      // Built before the try: a request Gemini cannot express is an UnsupportedRequestError, not an
      // upstream failure to fail over from.
      const body = JSON.stringify(convertToGeminiRequest(call.request));
      const images = mayHoldImages(call.request);
      const guard = guardStream(call);
      let events: UpstreamEventStream | null = null;
      try {
        events = await openUpstream(options.http, call, {
          url: urlFor(call, 'streamGenerateContent?alt=sse'),
          headers: headersFor(call),
          body,
          signal: guard.signal,
          toError: errorFromGeminiReply,
          maxEventBytes: images ? IMAGE_ANSWER_BYTES : undefined,
        });

        let usage: Usage | undefined;
        let finish: string | undefined;
        let blockReason: string | undefined;
        let identified = false;
        // Gemini sends each function call whole, in one part, and without an id.
        let toolCalls = 0;
        for await (const event of events) {
          const chunk = parseUpstreamJson(event.data);
          throwIfErrorBody(chunk);
          if (!identified) {
            identified = true;
            yield { type: 'response-metadata', ...readGeminiIdentity(chunk) };
          }
          // Every chunk repeats the running totals; the last one holds the final count.
          usage = readGeminiUsage((chunk as Record<string, unknown>).usageMetadata) ?? usage;
          blockReason = readGeminiBlockReason(chunk) ?? blockReason;
          const candidate = readGeminiCandidate(chunk);
          if (!candidate) continue;
          for (const part of candidate.parts) {
            guard.output();
            if (part.type === 'function-call') {
              const index = toolCalls++;
              const callId = part.id ?? newCallId();
              // A call's signature goes just before its start, as the reasoning that led to it.
              if (part.signature !== undefined)
                yield {
                  type: 'reasoning-signature',
                  signature: part.signature,
                  format: GEMINI_FORMAT,
                  callId,
                };
              yield { type: 'tool-call-start', index, callId, name: part.name };
              yield { type: 'tool-call-delta', index, argumentsDelta: JSON.stringify(part.args) };
              yield { type: 'tool-call-end', index };
              continue;
            }
            // A streamed image comes whole, in one chunk's part.
            if (part.type === 'image') {
              yield { type: 'image-output', mediaType: part.mediaType, data: part.data };
              continue;
            }
            if (part.text !== '')
              yield { type: part.type === 'text' ? 'text-delta' : 'reasoning-delta', delta: part.text };
            if (part.signature !== undefined)
              yield { type: 'reasoning-signature', signature: part.signature, format: GEMINI_FORMAT };
          }
          if (candidate.finishReason) finish = candidate.finishReason;
        }
        // Gemini has no end-of-stream marker: a finish reason (or a blocked prompt) is the only
        // sign that the stream was not cut.
        if (finish === undefined && blockReason === undefined) {
          throw new UpstreamError({
            message: 'Upstream stream ended before it finished',
            kind: 'invalid-response',
          });
        }
        if (FAILED_FINISHES.has(finish ?? '')) throw failedFinish(finish as string);
        yield { type: 'usage', usage: usage ?? emptyUsage() };
        if (finish === undefined) {
          yield { type: 'finish', reason: 'content-filter', nativeReason: blockReason ?? null };
        } else {
          yield {
            type: 'finish',
            reason: mapGeminiFinishReason(finish, { hasFunctionCalls: toolCalls > 0 }),
            nativeReason: finish,
          };
        }
      } catch (error) {
        const failure = guard.failure(error);
        if (!guard.started) throw failure;
        // An image cut in transit (or over the bound) was produced, and Google bills it.
        const cut = images && (events?.unfinishedEventLength() ?? 0) >= CUT_IMAGE_CHARS;
        yield cut ? { type: 'error', error: failure, imagesCut: 1 } : { type: 'error', error: failure };
      } finally {
        guard.release();
      }
    },
  };
}
