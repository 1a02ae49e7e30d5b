import type { CancelSignal } from './cancel-signal.js';
import type { EmbedCall, EmbeddingResult } from './embedding.js';
import type { GenerationRequest } from './generation-request.js';
import type { GenerationResult, StreamPart } from './stream-part.js';

/** Where and how to reach one upstream endpoint. */
export interface UpstreamTarget {
  /** The provider's API base, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey: string | null;
  /** Extra headers the provider needs (API versions, attribution). */
  headers?: Record<string, string>;
}

export interface Timeouts {
  /** From sending the request until response headers arrive. */
  headersMs: number;
  /** From the headers until the first output of a stream. */
  firstTokenMs: number;
  /** Longest gap between two chunks of a stream. */
  idleMs: number;
}

export interface AdapterCall {
  request: GenerationRequest;
  target: UpstreamTarget;
  signal: CancelSignal;
  timeouts: Timeouts;
}

/**
 * Egress to one upstream wire protocol. An adapter knows nothing of dialects, Fastify or storage:
 * canonical request in, canonical result or stream parts out, `UpstreamError` on failure.
 */
export interface ProviderAdapter {
  readonly protocol: string;
  /**
   * True for a protocol that can return generated images (Gemini); the others refuse a request for
   * image output before sending it. The reservation counts the image price only where this is true.
   */
  readonly returnsImages?: boolean;
  generate(call: AdapterCall): Promise<GenerationResult>;
  /** Throws before the first part when the call fails early; later failures arrive as an `error` part. */
  stream(call: AdapterCall): AsyncIterable<StreamPart>;
  /**
   * Embeddings, for protocols that have them (absent otherwise, so routing can skip the endpoint).
   * Throws `UpstreamError` like `generate`, also when the reply does not hold one vector per input.
   */
  embed?(call: EmbedCall): Promise<EmbeddingResult>;
}
