import { createHash } from 'node:crypto';
import type { CancelSignal } from '../../../spec/cancel-signal.js';
import type { EmbedCall, EmbeddingResult } from '../../../spec/embedding.js';
import type { InputItem } from '../../../spec/generation-request.js';
import type { AdapterCall, ProviderAdapter } from '../../../spec/provider-adapter.js';
import type { GenerationResult, StreamPart } from '../../../spec/stream-part.js';
import { UpstreamError } from '../../../spec/upstream-error.js';
import type { Usage } from '../../../spec/usage.js';
import { refuseImageOutput } from '../shared/text-output-only.js';

/**
 * The built-in demo provider: deterministic, zero-priced models that answer in-process, so a fresh
 * install serves a real request end to end and tests exercise failover without any network. The
 * upstream model id selects the behaviour.
 */
export const demoModels = {
  /** Repeats the last user message. */
  echo: 'echo',
  /** Streams a fixed sentence word by word (and calls the first tool when tools are given). */
  scripted: 'scripted',
  /** Fails with HTTP 429 and Retry-After: 1 before any output. */
  rateLimited: 'fail-429',
  /** Fails with HTTP 500 before any output. */
  serverError: 'fail-500',
  /** Sends nothing until the caller's first-token timeout has passed. */
  slowFirstToken: 'slow-first-token',
  /** Sends two words, then the stream breaks. */
  cutMidStream: 'cut-mid-stream',
  /** Embeds: a deterministic unit-length vector per input (16 dimensions unless `dimensions` says). */
  embed: 'embed',
} as const;

/** Vector length of the `embed` model when the request names none. */
export const DEMO_EMBEDDING_DIMENSIONS = 16;
/** The longest vector the `embed` model makes, as a real model has a maximum. */
const MAX_DEMO_EMBEDDING_DIMENSIONS = 4096;
/**
 * The most values (inputs × dimensions) one request may ask the `embed` model for: 2048 inputs of
 * 128 dimensions, or 64 of 4096 — about 5 MB of JSON. Unbounded, 2048 inputs of 4096 made a 180 MB
 * answer that held the event loop for 15 s; a real provider's answer is bounded too (its token limit
 * per request, and the gateway's 32 MB limit on a reply).
 */
export const MAX_DEMO_EMBEDDING_VALUES = 262_144;

export const SCRIPTED_TEXT = 'The quick brown fox jumps over the lazy dog.';

/** Rough token count for usage: one token per four characters, at least one for non-empty text. */
const tokens = (text: string): number => (text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4)));

function inputText(instructions: string | undefined, input: InputItem[]): string {
  const texts = input.flatMap((item) => {
    if (item.type === 'message')
      return item.content.flatMap((part) => (part.type === 'text' ? [part.text] : []));
    return item.type === 'function-call' ? [item.arguments] : [item.output];
  });
  return [instructions ?? '', ...texts].join('\n');
}

function lastUserText(input: InputItem[]): string {
  for (let index = input.length - 1; index >= 0; index -= 1) {
    const item = input[index];
    if (item?.type === 'message' && item.role === 'user') {
      return item.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
    }
  }
  return '';
}

function usageFor(call: AdapterCall, output: string): Usage {
  return {
    inputTokens: tokens(inputText(call.request.instructions, call.request.input)),
    outputTokens: tokens(output),
    cachedInputTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
  };
}

const wait = (ms: number, signal: CancelSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new UpstreamError({ message: 'The request was aborted', kind: 'aborted' }));
      },
      { once: true },
    );
  });

function failureFor(model: string): UpstreamError | null {
  if (model === demoModels.rateLimited) {
    return new UpstreamError({
      message: 'Demo provider: rate limited',
      kind: 'http',
      status: 429,
      retryAfterSeconds: 1,
    });
  }
  if (model === demoModels.serverError) {
    return new UpstreamError({ message: 'Demo provider: internal error', kind: 'http', status: 500 });
  }
  if (!Object.values(demoModels).includes(model as never)) {
    return new UpstreamError({ message: `Demo provider has no model "${model}"`, kind: 'http', status: 404 });
  }
  return null;
}

/**
 * A unit-length vector from SHA-256 in counter mode over the input: the same input always gives the
 * same vector, different inputs practically never do, and no state is kept.
 */
function demoVector(input: string | number[], dimensions: number): number[] {
  const seed = typeof input === 'string' ? `text:${input}` : `tokens:${input.join(',')}`;
  const values: number[] = [];
  for (let block = 0; values.length < dimensions; block += 1) {
    const digest = createHash('sha256').update(`${block}\0${seed}`).digest();
    for (let offset = 0; offset < digest.length && values.length < dimensions; offset += 4) {
      values.push(digest.readUInt32LE(offset) / 0x8000_0000 - 1);
    }
  }
  const norm = Math.hypot(...values);
  return norm === 0 ? values.map((_, index) => (index === 0 ? 1 : 0)) : values.map((value) => value / norm);
}

/** The words a model answers with: the echo of the last user turn, or the scripted sentence. */
function answer(call: AdapterCall): string {
  return call.request.model === demoModels.echo ? lastUserText(call.request.input) : SCRIPTED_TEXT;
}

/** The scripted failures that happen before any output: errors, and a first token that never comes. */
async function failBeforeOutput(call: AdapterCall): Promise<void> {
  const failure = failureFor(call.request.model);
  if (failure) throw failure;
  if (call.request.model === demoModels.embed) {
    throw new UpstreamError({
      message: `Demo model "${demoModels.embed}" only embeds`,
      kind: 'http',
      status: 404,
    });
  }
  if (call.request.model === demoModels.slowFirstToken) {
    await wait(call.timeouts.firstTokenMs + 50, call.signal);
    throw new UpstreamError({
      message: 'Demo provider: no output before the first-token timeout',
      kind: 'timeout',
    });
  }
}

export function createDemoAdapter(): ProviderAdapter {
  return {
    protocol: 'demo',

    async generate(call): Promise<GenerationResult> {
      refuseImageOutput(call.request, 'demo');
      await failBeforeOutput(call);
      if (call.request.model === demoModels.cutMidStream) {
        throw new UpstreamError({ message: 'Demo provider: connection cut', kind: 'connection' });
      }
      const tool = call.request.model === demoModels.scripted ? call.request.tools?.[0] : undefined;
      const text = tool ? '' : answer(call);
      const limit = call.request.maxOutputTokens;
      const truncated = limit !== undefined && tokens(text) > limit ? text.slice(0, limit * 4) : text;
      return {
        id: 'demo-generation',
        model: call.request.model,
        text: truncated,
        reasoning: '',
        toolCalls: tool ? [{ callId: 'call_demo_0', name: tool.name, arguments: '{}' }] : [],
        usage: usageFor(call, truncated),
        finishReason: tool ? 'tool-calls' : truncated.length < text.length ? 'length' : 'stop',
        nativeFinishReason: tool ? 'tool_calls' : truncated.length < text.length ? 'length' : 'stop',
      };
    },

    async embed(call: EmbedCall): Promise<EmbeddingResult> {
      const { model, input, dimensions } = call.request;
      // The scripted failures apply to embeddings too, so failover over embeddings can be exercised.
      const failure = failureFor(model);
      if (failure) throw failure;
      if (model !== demoModels.embed) {
        throw new UpstreamError({
          message: `Demo model "${model}" does not embed`,
          kind: 'http',
          status: 404,
        });
      }
      if (dimensions !== undefined && dimensions > MAX_DEMO_EMBEDDING_DIMENSIONS) {
        throw new UpstreamError({
          message: `Demo provider: dimensions must be at most ${MAX_DEMO_EMBEDDING_DIMENSIONS}`,
          kind: 'http',
          status: 400,
        });
      }
      const entries: Array<string | number[]> = input;
      const width = dimensions ?? DEMO_EMBEDDING_DIMENSIONS;
      if (entries.length * width > MAX_DEMO_EMBEDDING_VALUES) {
        throw new UpstreamError({
          message:
            `Demo provider: inputs × dimensions must be at most ${MAX_DEMO_EMBEDDING_VALUES} ` +
            `(${entries.length} inputs × ${width} dimensions asked); send fewer inputs per request or fewer dimensions`,
          kind: 'http',
          status: 400,
        });
      }
      return {
        model,
        vectors: entries.map((entry) => demoVector(entry, width)),
        usage: {
          inputTokens: entries.reduce<number>(
            (sum, entry) => sum + (typeof entry === 'string' ? tokens(entry) : entry.length),
            0,
          ),
          outputTokens: 0,
          cachedInputTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: 0,
        },
      };
    },

    async *stream(call): AsyncGenerator<StreamPart> {
      refuseImageOutput(call.request, 'demo');
      await failBeforeOutput(call);
      yield { type: 'response-metadata', id: 'demo-generation', model: call.request.model };
      if (call.request.model === demoModels.cutMidStream) {
        yield { type: 'text-delta', delta: 'The ' };
        yield { type: 'text-delta', delta: 'quick ' };
        yield {
          type: 'error',
          error: new UpstreamError({ message: 'Demo provider: connection cut', kind: 'connection' }),
        };
        return;
      }
      const result = await this.generate(call);
      for (const [index, toolCall] of result.toolCalls.entries()) {
        yield { type: 'tool-call-start', index, callId: toolCall.callId, name: toolCall.name };
        yield { type: 'tool-call-delta', index, argumentsDelta: toolCall.arguments };
        yield { type: 'tool-call-end', index };
      }
      for (const word of result.text.match(/\S+\s*/g) ?? []) {
        if (call.signal.aborted) {
          yield {
            type: 'error',
            error: new UpstreamError({ message: 'The request was aborted', kind: 'aborted' }),
          };
          return;
        }
        yield { type: 'text-delta', delta: word };
      }
      yield { type: 'usage', usage: result.usage };
      yield { type: 'finish', reason: result.finishReason, nativeReason: result.nativeFinishReason };
    },
  };
}
