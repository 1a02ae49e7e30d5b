import type { CancelSignal } from './cancel-signal.js';
import type { Timeouts, UpstreamTarget } from './provider-adapter.js';
import type { Usage } from './usage.js';

/**
 * The canonical embeddings request and result: what the embeddings dialect produces and an
 * adapter's `embed` consumes. Like the generation request, it carries no wire format.
 */
export interface EmbeddingRequest {
  /** The upstream's own model id: the endpoint's `provider_model_id`. */
  model: string;
  /**
   * One entry per vector wanted, in order: texts, or token id arrays. A single text or token array
   * from the client arrives here as a list of one, so the result always has one vector per entry.
   */
  input: string[] | number[][];
  /** Requested vector length, for models that can shorten their output (Matryoshka). */
  dimensions?: number;
  /**
   * How the client wants the vectors. Adapters always fetch floats and the dialect encodes base64
   * itself, so no adapter has to read it; it travels here so the pipeline can hand it to the renderer.
   */
  encodingFormat?: 'float' | 'base64';
  /** End-user identifier, forwarded where the provider accepts one. */
  user?: string;
  /** What the input is for (`search_query`, `search_document`…), for models that embed each differently. */
  inputType?: string;
}

/** The whole of one embeddings call. */
export interface EmbeddingResult {
  /** The model that answered, as the upstream named it, when it said. */
  model: string | null;
  /** One vector per input entry, in input order. Always floats (see `encodingFormat`). */
  vectors: number[][];
  /** `inputTokens` is what the upstream billed as prompt tokens; embeddings have no output tokens. */
  usage: Usage;
}

/** One embeddings attempt against one upstream endpoint, the counterpart of `AdapterCall`. */
export interface EmbedCall {
  request: EmbeddingRequest;
  target: UpstreamTarget;
  signal: CancelSignal;
  /** `headersMs` bounds the wait for the reply and `idleMs` the gaps while reading it; no stream. */
  timeouts: Timeouts;
}
