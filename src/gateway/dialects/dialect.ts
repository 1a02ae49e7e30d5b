import type { TSchema } from 'typebox';
import type { GenerationRequest } from '../../spec/generation-request.js';
import type { GenerationResult, StreamPart } from '../../spec/stream-part.js';
import type { Usage } from '../../spec/usage.js';

/**
 * The contract between an ingress dialect (Responses, Chat Completions, Messages) and the
 * generation pipeline. A dialect turns its wire body into a `ParsedRequest`, and turns the
 * pipeline's canonical output back into its wire shapes. It never knows a provider.
 */

/** Provider routing preferences (reference §7), as every dialect accepts them in `provider`. */
export interface ProviderPreferences {
  order?: string[];
  allow_fallbacks?: boolean;
  require_parameters?: boolean;
  data_collection?: 'allow' | 'deny';
  zdr?: boolean | null;
  enforce_distillable_text?: boolean | null;
  only?: string[];
  ignore?: string[];
  quantizations?: string[];
  sort?:
    | 'price'
    | 'throughput'
    | 'latency'
    | { by: 'price' | 'throughput' | 'latency'; partition?: 'model' | 'none' };
  /** Tokens per second; a number applies to p50. */
  preferred_min_throughput?: number | Percentiles;
  /** Seconds; a number applies to p50. */
  preferred_max_latency?: number | Percentiles;
  /** USD per million tokens for prompt/completion; USD per unit for the others. */
  max_price?: { prompt?: number; completion?: number; request?: number; image?: number; audio?: number };
}

export interface Percentiles {
  p50?: number;
  p75?: number;
  p90?: number;
  p99?: number;
}

/** What a dialect extracts from a request body. */
export interface ParsedRequest {
  /** The canonical request without the upstream model id, which routing fills in per attempt. */
  generation: Omit<GenerationRequest, 'model'>;
  /** Requested catalogue models in fallback order: `model` first, then `models` (1 to 4 entries). */
  models: string[];
  /** Routing preferences with the deprecated `route` alias already folded into `sort.partition`. */
  provider: ProviderPreferences | null;
  stream: boolean;
  /** Sticky-routing key: the body's `session_id`, else the `x-session-id` header. */
  sessionId: string | null;
  user: string | null;
  metadata: Record<string, string> | null;
  trace: Record<string, unknown> | null;
}

/** Who answered: known when a generation commits (first output, or the whole result). */
export interface GenerationInfo {
  /** `gen-…`, also sent as the `X-Generation-Id` header. */
  id: string;
  /** Unix seconds. */
  createdAt: number;
  /** The catalogue id of the model that answered (may differ from the requested one on fallback). */
  model: string;
  providerSlug: string;
  /** Display name, e.g. "OpenAI". */
  providerName: string;
}

export interface CostBreakdown {
  totalNanos: number;
  inputNanos: number;
  outputNanos: number;
}

/** Known when a generation ends. */
export interface GenerationSummary {
  usage: Usage;
  cost: CostBreakdown;
  isByok: boolean;
  /** `switchyard_metadata` when the client asked for it (X-Switchyard-Metadata: enabled), else null. */
  metadata: Record<string, unknown> | null;
}

/**
 * A failure to show the client. Before a stream commits it becomes the HTTP status and body; after,
 * an in-band event. `errorType` is one of spec 2.7's `error_type` values.
 */
export interface GenerationFailure {
  status: number;
  message: string;
  errorType: string;
  /** Extra `error.metadata` (provider_name, raw, previous_errors…). */
  metadata?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** Encodes one stream for the wire; every method returns ready SSE text ('' when nothing is due). */
export interface StreamEncoder {
  /**
   * Frames sent when the stream commits, before the first part. `usageAtStart`: the counts the
   * upstream reported before its first output (the service's `usageAtStart`), null when it reports
   * them only at the end.
   */
  start(usageAtStart?: Usage | null): string;
  part(part: StreamPart): string;
  /** The closing frames of a successful stream: usage, metadata, terminator. */
  end(summary: GenerationSummary): string;
  /** The closing frames of a stream that failed after it began. */
  fail(failure: GenerationFailure, summary: GenerationSummary): string;
}

export interface Dialect<Body = unknown> {
  name: 'responses' | 'chat-completions' | 'messages';
  /** Fastify validates the body against it first (no coercion; unknown fields rejected or kept as the dialect chooses). */
  bodySchema: TSchema;
  /** Cross-field rules and conversion; throws AppError('invalid_request') naming the field and rule. */
  parse(body: Body, headers: Record<string, string | string[] | undefined>): ParsedRequest;
  renderResult(
    body: Body,
    info: GenerationInfo,
    result: GenerationResult,
    summary: GenerationSummary,
  ): unknown;
  streamEncoder(body: Body, info: GenerationInfo): StreamEncoder;
  /** The HTTP error body for a failure before any output (status and headers come from the failure). */
  renderFailure(failure: GenerationFailure, generationId: string | null): unknown;
}
