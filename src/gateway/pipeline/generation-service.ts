import { randomBytes } from 'node:crypto';
import type { CreditBalance } from '../../billing/credit-balance.js';
import { type EndpointPricing, generationCost, worstCaseCost } from '../../billing/generation-cost.js';
import type {
  GenerationAttempt,
  GenerationLog,
  GenerationRecordInput,
  OutboxRowsBuilder,
} from '../../billing/generation-log.js';
import type { Reservation, SpendCounters } from '../../billing/spend-counters.js';
import { type CollectedOutput, createOutputCollector, eventRequestOf } from '../../broadcast/build-event.js';
import { buildOutboxRows, type OutboxSources } from '../../broadcast/outbox-build.js';
import type { EndpointHealth } from '../../catalog/endpoint-health.js';
import { providerBase } from '../../catalog/provider-base.js';
import type { Config } from '../../config/config-schema.js';
import { AppError, errorKinds } from '../../errors/app-error.js';
import { errorTypeForStatus } from '../../errors/error-types.js';
import type { Clock } from '../../platform/clock.js';
import type { CancelSignal } from '../../spec/cancel-signal.js';
import type { EmbeddingRequest, EmbeddingResult } from '../../spec/embedding.js';
import type { GenerationRequest } from '../../spec/generation-request.js';
import type { Timeouts } from '../../spec/provider-adapter.js';
import type { GenerationResult, StreamPart } from '../../spec/stream-part.js';
import { UnsupportedRequestError, UpstreamError } from '../../spec/upstream-error.js';
import { emptyUsage, type Usage } from '../../spec/usage.js';
import type {
  GenerationFailure,
  GenerationInfo,
  GenerationSummary,
  ParsedRequest,
} from '../dialects/dialect.js';
import type { EffectivePolicy } from '../policy/effective-policy.js';
import type { PolicyCache } from '../policy/policy-cache.js';
import type { createAdapters } from '../providers/provider-protocols.js';
import type { Principal } from './authenticate.js';
import type { ContentFilterThreads } from './content-filters/content-filter-threads.js';
import { requestFor } from './endpoint-request.js';
import { type ContentFilterStage, runContentFilters } from './guardrail-stage.js';
import { estimatedImageTokens } from './image-token-estimate.js';
import { ObservedParts } from './observed-parts.js';
import type { AttemptPlanner, Candidate } from './plan-attempts.js';
import type { SessionRoutes } from './session-routes.js';
import { spendScopes } from './spend-limits.js';

export type ApiType = 'responses' | 'chat-completions' | 'messages' | 'embeddings';

/** Where each surface's body holds the conversation, named in a 400 about it. */
const CONVERSATION_PATHS: Record<ApiType, string> = {
  responses: 'body.input',
  'chat-completions': 'body.messages',
  messages: 'body.messages',
  embeddings: 'body.input',
};

/** Everything about one incoming generation request that is not the canonical request itself. */
export interface GenerationContext {
  principal: Principal;
  apiType: ApiType;
  parsed: ParsedRequest;
  /** Whether the client asked for `switchyard_metadata`. */
  withMetadata: boolean;
  /** Fires when the client goes away: the upstream call is aborted and what was produced is billed. */
  signal: CancelSignal;
  /** performance.now() when the request arrived. */
  startedAt: number;
  appReferer: string | null;
  appTitle: string | null;
}

/** A failure before any output: the route renders it in its dialect with this status. */
export class GenerationError extends Error {
  override name = 'GenerationError';
  constructor(
    readonly failure: GenerationFailure,
    readonly generationId: string | null,
  ) {
    super(failure.message);
  }
}

export interface StreamOutcome {
  info: GenerationInfo;
  /** Output parts as the adapter produced them; usage, finish and error parts are consumed here. */
  parts: AsyncIterable<StreamPart>;
  /**
   * The counts the upstream reported before its first output (Anthropic's message_start: the
   * prompt, its cache reads and writes), cleaned as billing cleans them; null from an upstream that
   * reports usage only at the end.
   */
  usageAtStart: Usage | null;
  /** Settles the reservation, records the generation; resolves with what the encoder closes with. */
  finish(): Promise<{ summary: GenerationSummary; failure: GenerationFailure | null }>;
}

/**
 * One attempt as the record stores it (`status` is what the upstream answered, null when nothing
 * did: a timeout, a refused connection) plus what only `switchyard_metadata` reports: `shownStatus`,
 * the status the client would have seen, and `called`, false when the reservation was refused
 * and no upstream was called.
 */
type AttemptRecord = GenerationAttempt & {
  provider_name: string;
  shownStatus: number;
  called: boolean;
  /** Whether the attempt used the workspace's own credential (BYOK). */
  byok: boolean;
};

const attemptOf = (
  candidate: Candidate,
  shownStatus: number,
  upstreamStatus: number | null,
  errorType: string | null,
  latencyMs: number,
  called = true,
): AttemptRecord => ({
  provider: candidate.endpoint.provider_slug,
  provider_name: candidate.endpoint.provider_name,
  model: candidate.model.id,
  endpoint_id: candidate.endpoint.id,
  status: upstreamStatus,
  error_type: errorType,
  latency_ms: Math.round(latencyMs),
  shownStatus,
  called,
  byok: candidate.byok !== null,
});

/** The last attempt that reached a provider (a refused reservation called none). */
function lastCalled(attempts: readonly AttemptRecord[]): AttemptRecord | undefined {
  for (let index = attempts.length - 1; index >= 0; index -= 1) {
    if (attempts[index]?.called) return attempts[index];
  }
  return undefined;
}

/** The attempts as the generation record keeps them: GenerationAttempt, without the metadata-only fields. */
const storedAttempts = (attempts: AttemptRecord[]): GenerationAttempt[] =>
  attempts.map(({ shownStatus: _shown, called: _called, byok: _byok, ...attempt }) => attempt);

interface PromptSize {
  bytes: number;
  hasMedia: boolean;
  /** Whether it has tools or an output format, which providers frame with prompt text of their own. */
  framed: boolean;
}

/**
 * The prompt's size in UTF-8 bytes (text, function calls and outputs, tools, a JSON schema, plus a
 * small overhead per item) and whether it holds media (images, files, audio), whose token cost
 * the bytes do not tell.
 */
function promptSize(request: Omit<GenerationRequest, 'model'>): PromptSize {
  let bytes = Buffer.byteLength(request.instructions ?? '') + 16;
  let hasMedia = false;
  for (const item of request.input) {
    // Earlier reasoning sent back (Anthropic's thinking blocks) is prompt too; redacted data is
    // encrypted thinking of at most its own length.
    if (item.type !== 'function-call-output' && item.reasoning) {
      for (const block of item.reasoning)
        bytes += Buffer.byteLength(block.text) + (block.redactedData?.length ?? 0) + 8;
    }
    if (item.type === 'message') {
      for (const part of item.content) {
        if (part.type === 'text') bytes += Buffer.byteLength(part.text) + 4;
        else hasMedia = true;
      }
    } else if (item.type === 'function-call') {
      bytes += Buffer.byteLength(item.arguments) + Buffer.byteLength(item.name) + 8;
    } else {
      bytes += Buffer.byteLength(item.output) + 8;
      // Images and files a tool returned cost what media in a message do.
      if (item.media !== undefined) hasMedia = true;
    }
  }
  if (request.tools?.length) bytes += Buffer.byteLength(JSON.stringify(request.tools));
  // A JSON schema travels with the prompt, and providers bill it as prompt tokens.
  if (request.responseFormat?.type === 'json_schema') {
    bytes += Buffer.byteLength(JSON.stringify(request.responseFormat));
  }
  const framed =
    Boolean(request.tools?.length) ||
    (request.responseFormat !== undefined && request.responseFormat.type !== 'text');
  return { bytes, hasMedia, framed };
}

/**
 * Prompt tokens a provider or this gateway adds around tools and output formats, counted in the
 * reservation's bound only: Anthropic's tool-use system prompt (~350 tokens), the one its structured
 * outputs add, and the JSON-only instruction sent where a format has no native form.
 */
const FRAMING_TOKENS = 1024;

/**
 * A conservative upper bound of a request's prompt tokens: a token is never shorter than one byte.
 * An image or file can fill the whole context; nothing smaller is a safe bound for one.
 */
function promptTokenBound(size: PromptSize, contextLength: number): number {
  return size.hasMedia
    ? contextLength
    : Math.min(contextLength, size.bytes + (size.framed ? FRAMING_TOKENS : 0));
}

/** What crossed the wire of an answer: its characters (text, reasoning, tool calls) and its images. */
interface OutputSize {
  chars: number;
  images: number;
}

const NO_OUTPUT: OutputSize = { chars: 0, images: 0 };

/**
 * What a stream that ended without reported usage is billed: rough counts of what crossed the wire
 * (about four bytes a token, and an image its model's count for the size asked for). Media in the
 * prompt are not estimated: nothing that was sent tells their size in tokens, and billing them the
 * whole context would charge for a bound, not a use.
 */
function estimatedUsage(promptBytes: number, output: OutputSize, bounds: UsageBounds): Usage {
  const imageTokens = output.images * bounds.imageTokens;
  // An upstream that streamed past max_tokens (and never said how much) is billed no more than the
  // request allowed, which is what was reserved: 200,000 chunks on a $0.001 key had cost 43× it.
  const outputTokens = Math.min(Math.ceil(output.chars / 4) + imageTokens, bounds.outputTokens);
  const usage: Usage = { ...emptyUsage(), inputTokens: Math.ceil(promptBytes / 4), outputTokens };
  if (imageTokens > 0) usage.imageOutputTokens = Math.min(imageTokens, outputTokens);
  return usage;
}

/** The most tokens a call may bill: what the endpoint's context holds, and the output the request allowed. */
interface UsageBounds {
  contextLength: number;
  /** The output bound the reservation was made for (max output tokens, or the endpoint's maximum). */
  outputTokens: number;
  /**
   * What one image that came through is billed at least (image-token-estimate.ts: its model's
   * count for the size asked for), within the output bound, as the reservation covers it.
   */
  imageTokens: number;
}

/**
 * Usage as the gateway bills and shows it: an upstream's counts are foreign input, so anything that
 * is not a positive number becomes 0, fractions round down, and no count exceeds the endpoint's
 * context length (Infinity, which JSON.parse makes of 1e999, included: counted as 0 it would be a
 * free generation); the parts stay within their wholes (cached and cache-write tokens within the
 * prompt's, reasoning within the output's), as the cost reads them; images that came through are
 * billed at least their estimate each; and a reply with output but no counts at all (a provider
 * ignoring `include_usage`) is billed from what crossed the wire.
 */
function billableUsage(
  reported: Usage | null,
  promptBytes: number,
  output: OutputSize,
  bounds: UsageBounds,
  partial = false,
): Usage {
  if (!reported) return estimatedUsage(promptBytes, output, bounds);
  // No call can read or write more tokens than the endpoint's context holds: a larger count is an
  // upstream bug, and billing it would drain the account. Nor is more output billed than the request
  // allowed and the reservation covered.
  const clean = (value: number, bound = bounds.contextLength) =>
    typeof value === 'number' && value > 0 ? Math.min(Math.floor(value), bound) : 0;
  let inputTokens = clean(reported.inputTokens);
  let outputTokens = clean(reported.outputTokens, bounds.outputTokens);
  // Absent from nearly every generation: no image, nothing to clean.
  let imageTokens = reported.imageOutputTokens === undefined ? 0 : clean(reported.imageOutputTokens);
  if (partial) {
    // A stream that failed reported its counts so far (Anthropic's message_start: the prompt, and
    // one output token): the output that crossed the wire since is billed when it is more.
    const estimate = estimatedUsage(promptBytes, output, bounds);
    outputTokens = Math.max(outputTokens, estimate.outputTokens);
    imageTokens = Math.max(imageTokens, estimate.imageOutputTokens ?? 0);
    if (inputTokens === 0) inputTokens = Math.min(estimate.inputTokens, bounds.contextLength);
  }
  // A reply with output and not one token counted is billed from what crossed the wire.
  if (inputTokens === 0 && outputTokens === 0 && (output.chars > 0 || output.images > 0))
    return estimatedUsage(promptBytes, output, bounds);
  const estimatedImages = Math.min(output.images * bounds.imageTokens, bounds.outputTokens);
  if (imageTokens < estimatedImages) {
    // Images came through, and the usage lacks their count or garbles it (no IMAGE entry in
    // Gemini's candidatesTokensDetails): each is billed its estimate at the image price. The
    // reported output holds them when it is large enough to (Gemini's candidatesTokenCount counts
    // them); a smaller one is raised to hold them, never added to, which would bill twice an output
    // that counted part of them.
    imageTokens = estimatedImages;
    const reasoning = clean(reported.reasoningTokens, outputTokens);
    outputTokens = Math.min(Math.max(outputTokens, reasoning + imageTokens), bounds.outputTokens);
  }
  const cachedInputTokens = clean(reported.cachedInputTokens, inputTokens);
  const usage: Usage = {
    inputTokens,
    outputTokens,
    cachedInputTokens,
    cacheWriteTokens: clean(reported.cacheWriteTokens, inputTokens - cachedInputTokens),
    reasoningTokens: clean(reported.reasoningTokens, outputTokens),
  };
  // Image tokens are answer tokens: within what reasoning leaves of the output.
  const images = Math.min(imageTokens, outputTokens - usage.reasoningTokens);
  if (images > 0) usage.imageOutputTokens = images;
  return usage;
}

/**
 * What a generation is billed: its cost at the endpoint's prices, and never more than its reservation
 * covered. The reservation is the worst case of what the request may cost, so only usage an upstream
 * misreports (100,000 prompt tokens for a 6-byte prompt) goes past it; billed, it would spend past
 * the key's limit and the credits that admitted the request. The output's share is kept first.
 */
function billedCost(candidate: Candidate, usage: Usage, reservation: Reservation): GenerationSummary['cost'] {
  const cost = generationCost(candidate.endpoint.pricing as EndpointPricing, usage);
  const covered = reservation.amountNanos;
  if (cost.totalNanos <= covered) return cost;
  const outputNanos = Math.min(cost.outputNanos, covered);
  return { totalNanos: covered, inputNanos: covered - outputNanos, outputNanos };
}

const contextOf = (candidate: Candidate): number =>
  candidate.endpoint.context_length || candidate.model.record.context_length || Number.MAX_SAFE_INTEGER;

const resultSize = (result: GenerationResult): OutputSize => ({
  chars:
    result.text.length +
    result.reasoning.length +
    (result.refusal?.length ?? 0) +
    result.toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0),
  images: result.images?.length ?? 0,
});

const isOutput = (part: StreamPart): boolean =>
  part.type === 'text-delta' ||
  part.type === 'reasoning-delta' ||
  part.type === 'refusal-delta' ||
  part.type === 'image-output' ||
  part.type === 'tool-call-start';

/**
 * Whether the answer may hold images: the candidate's protocol can return them (Gemini; the others
 * refuse image output), its model makes them (its catalogue output modalities list `image`), and
 * the caller asked for them or named no modalities (an image model's default answer may hold
 * some). The reservation then counts output at the image price where the endpoint has a higher
 * one; an image model behind a protocol that cannot return images (OpenAI's gpt-5-image through the
 * Responses API) is reserved as the text model it is there.
 */
function mayOutputImages(
  generation: ParsedRequest['generation'],
  candidate: Candidate,
  returnsImages: boolean,
): boolean {
  if (!returnsImages) return false;
  if (generation.outputModalities !== undefined && !generation.outputModalities.includes('image'))
    return false;
  return (candidate.model.record.architecture.output_modalities as string[]).includes('image');
}

/**
 * Upstream statuses that say the provider refused this gateway (its credential, its billing, its
 * access rules), not the client: passed through they would read as "your key is invalid" to SDKs.
 */
const PROVIDER_REFUSALS = new Set([401, 402, 403]);

/** Whether an upstream failure is the endpoint's fault, so another endpoint may succeed. */
const isEndpointFault = (error: UpstreamError): boolean =>
  error.retryable || (error.status !== null && (PROVIDER_REFUSALS.has(error.status) || error.status === 404));

function failureFromUpstream(error: UpstreamError, provider: string, isByok = false): GenerationFailure {
  const status = error.kind === 'timeout' ? 504 : error.kind === 'connection' ? 502 : (error.status ?? 502);
  const inRange = Number.isInteger(status) && status >= 400 && status <= 599 ? status : 502;
  const httpStatus = PROVIDER_REFUSALS.has(inRange) ? 502 : inRange;
  const failure: GenerationFailure = {
    status: httpStatus,
    message: error.kind === 'http' ? 'Provider returned error' : error.message,
    errorType: error.kind === 'timeout' ? 'timeout' : errorTypeForStatus(httpStatus),
    metadata: { provider_name: provider, raw: error.raw ?? error.message, is_byok: isByok },
  };
  if (error.retryAfterSeconds !== null) {
    failure.metadata!.retry_after_seconds = error.retryAfterSeconds;
    failure.headers = { 'retry-after': String(Math.ceil(error.retryAfterSeconds)) };
  }
  return failure;
}

export function failureFromAppError(error: AppError): GenerationFailure {
  // `error_type` travels in its own field; the rest of the metadata stays metadata.
  const { error_type: errorType, ...rest } = error.metadata ?? {};
  return {
    status: error.status,
    message: error.message,
    errorType: typeof errorType === 'string' ? errorType : errorKinds[error.kind].errorType,
    ...(Object.keys(rest).length ? { metadata: rest } : {}),
    ...(error.headers ? { headers: error.headers } : {}),
  };
}

/**
 * The embedding request with the content filters' redactions: each text input is replaced by the
 * text of its canonical message (built one message per input, in order). Token-id inputs are not
 * text: a filter that matched the digits of their ids changed nothing real, so they stay as sent.
 */
function redactedEmbeddingInput(
  request: Omit<EmbeddingRequest, 'model'>,
  generation: ParsedRequest['generation'],
): Omit<EmbeddingRequest, 'model'> {
  const input = request.input;
  if (input.length === 0 || typeof input[0] !== 'string') return request;
  let changed = false;
  const texts = (input as string[]).map((text, index) => {
    const item = generation.input[index];
    const part = item?.type === 'message' ? item.content[0] : undefined;
    const redacted = part?.type === 'text' ? part.text : text;
    if (redacted !== text) changed = true;
    return redacted;
  });
  return changed ? { ...request, input: texts } : request;
}

/** 64 random bits per process, then a counter: unique ids without a random draw per request. */
const idPrefix = randomBytes(8).toString('hex');
let idCounter = 0;
const newGenerationId = (nowMs: number): string => {
  idCounter = (idCounter + 1) % 0x1000000;
  return `gen-${Math.floor(nowMs / 1000)}-${idPrefix}${idCounter.toString(16).padStart(6, '0')}`;
};

/**
 * The data plane's core: plans attempts, reserves the worst-case cost, calls the upstream with
 * failover, and settles, records and feeds health once the generation ends. Dialects only
 * translate; nothing here touches the database on the request path.
 */
export function createGenerationService(options: {
  config: Config;
  clock: Clock;
  planner: AttemptPlanner;
  adapters: ReturnType<typeof createAdapters>;
  health: EndpointHealth;
  sessions: SessionRoutes;
  counters: SpendCounters;
  credits: CreditBalance;
  log: GenerationLog;
  addKeyUsage: (hash: string, amount: { usageNanos: number; byokNanos: number; at: Date }) => void;
  /** Workspace policies: budgets, guardrails, BYOK credentials. */
  policies: PolicyCache;
  /** Reports a workspace policy that could not be loaded (the request is refused with a 503). */
  onPolicyError?: (error: unknown) => void;
  /** Sees each content-filter stage that changed or flagged a request (logs and metrics). */
  onContentFilter?: (stage: ContentFilterStage, generationId: string) => void;
  /** The owner id of this instance's broadcast delivery worker; null when it runs none. */
  broadcastWorker?: string | null;
  /** Where large prompts and NLP filters are scanned; null scans every prompt on this thread. */
  contentFilterThreads?: ContentFilterThreads | null;
  /** Reports a content-filter thread that failed (the request is refused with a 503). */
  onContentFilterError?: (error: unknown) => void;
}) {
  const { config, clock, planner, adapters, health, sessions, counters, credits, log, policies } = options;

  function timeoutsFor(candidate: Candidate, streaming: boolean): Timeouts {
    const settings = config.providers[providerBase(candidate.endpoint.provider_slug)];
    const headersMs = settings?.timeout_ms ?? (streaming ? 60_000 : 300_000);
    return {
      headersMs,
      firstTokenMs: settings?.first_token_timeout_ms ?? (streaming ? 60_000 : headersMs),
      idleMs: settings?.idle_timeout_ms ?? 60_000,
    };
  }

  function metadataFor(
    context: GenerationContext,
    strategy: string,
    candidates: Candidate[],
    attempts: AttemptRecord[],
    selected: Candidate | null,
    pipeline: Array<Record<string, unknown>> = [],
  ): Record<string, unknown> | null {
    if (!context.withMetadata) return null;
    return {
      requested: context.parsed.models[0],
      strategy,
      region: 'local',
      summary: selected
        ? `available=${candidates.length}, selected=${selected.endpoint.provider_name}`
        : `available=${candidates.length}`,
      // The answering attempt's 1-based index; on failure 0 when no provider was reached at all.
      attempt: selected || attempts.some((attempt) => attempt.called) ? attempts.length : 0,
      // The answering attempt's credential; on failure the last attempt that reached a provider,
      // as the error's own metadata reports it.
      is_byok: selected ? selected.byok !== null : lastCalled(attempts)?.byok === true,
      endpoints: {
        total: candidates.length,
        available: candidates.map((candidate) => ({
          model: candidate.model.id,
          provider: candidate.endpoint.provider_name,
          selected: candidate === selected,
        })),
      },
      attempts: attempts.map((attempt) => ({
        provider: attempt.provider_name,
        model: attempt.model,
        status: attempt.shownStatus,
      })),
      ...(pipeline.length > 0 ? { pipeline } : {}),
    };
  }

  interface Prepared {
    id: string;
    createdAt: number;
    candidates: Candidate[];
    strategy: string;
    attempts: AttemptRecord[];
    /** The prompt's size, computed once: the reservation bounds and a usage estimate use it. */
    prompt: PromptSize;
    /** The workspace policy that applies to the key; null when the workspace has none to apply. */
    policy: EffectivePolicy | null;
    /** The request as the upstream sees it: content filters may have redacted parts of it. */
    generation: ParsedRequest['generation'];
    /** `switchyard_metadata.pipeline` entries: stages that changed or flagged the request. */
    pipeline: Array<Record<string, unknown>>;
  }

  async function prepare(context: GenerationContext): Promise<Prepared> {
    if (context.principal.isManagement) {
      throw new GenerationError(
        {
          status: 403,
          message:
            'Management keys cannot be used for inference: create an inference key with POST /api/v1/keys',
          errorType: 'permission_denied',
        },
        null,
      );
    }
    const now = clock.now().getTime();
    const { parsed, principal } = context;
    const id = newGenerationId(now);
    let policy: EffectivePolicy | null;
    try {
      policy = await policies.get({
        workspaceId: principal.workspaceId,
        hash: principal.keyHash,
        creatorUserId: principal.key.row.creator_user_id,
      });
    } catch (error) {
      // Without its policy a request cannot be checked against budgets and guardrails: refuse it,
      // as a moment's unavailability the client may retry, not as a server fault.
      options.onPolicyError?.(error);
      throw new GenerationError(
        {
          status: 503,
          message:
            'Service temporarily unavailable: the workspace policy could not be loaded, try again shortly',
          errorType: 'provider_unavailable',
          headers: { 'retry-after': '1' },
        },
        null,
      );
    }
    let generation = parsed.generation;
    const pipeline: Array<Record<string, unknown>> = [];
    // Only the metadata reads this entry: not built for requests that did not ask for it.
    if (policy?.restrictions && context.withMetadata) {
      const restrictions = policy.restrictions;
      const first = policy.guardrails[0];
      pipeline.push({
        type: 'guardrail',
        name: 'routing-restrictions',
        summary: `Models and providers limited by guardrail ${restrictions.names}`,
        ...(first ? { guardrail_id: first.id, guardrail_scope: first.scope } : {}),
        data: {
          allowed_models: restrictions.allowedModels ? [...restrictions.allowedModels] : null,
          ignored_models: [...restrictions.ignoredModels],
          allowed_providers: restrictions.allowedProviders ? [...restrictions.allowedProviders] : null,
          ignored_providers: [...restrictions.ignoredProviders],
          zdr_vendors: [...restrictions.zdrVendors],
        },
      });
    }
    if (policy?.filters) {
      let stage: ContentFilterStage | null;
      try {
        stage = await runContentFilters(policy, generation, options.contentFilterThreads ?? null);
      } catch (error) {
        // The guardrail could not be applied: the prompt is not sent unscanned.
        options.onContentFilterError?.(error);
        throw new GenerationError(
          {
            status: 503,
            message:
              'Service temporarily unavailable: the content filters could not be applied, try again shortly',
            errorType: 'provider_unavailable',
          },
          null,
        );
      }
      if (stage) {
        options.onContentFilter?.(stage, id);
        pipeline.push(stage.entry);
        if (stage.blocked) {
          const metadata = metadataFor(
            context,
            parsed.models.length > 1 ? 'fallback' : 'direct',
            [],
            [],
            null,
            pipeline,
          );
          throw new GenerationError(
            {
              status: 403,
              message: stage.blocked.message,
              errorType: 'content_policy_violation',
              metadata: {
                ...stage.blocked.metadata,
                ...(metadata ? { switchyard_metadata: metadata } : {}),
              },
            },
            null,
          );
        }
        generation = stage.request;
      }
    }
    const stickyKey = parsed.sessionId
      ? `${context.principal.keyHash}:${parsed.sessionId}:${parsed.models.join(',')}`
      : null;
    let plan: ReturnType<AttemptPlanner['plan']>;
    try {
      plan = planner.plan({
        models: parsed.models,
        provider: parsed.provider,
        request: generation,
        outputKind: context.apiType === 'embeddings' ? 'embeddings' : 'text',
        stickyEndpointId: stickyKey ? sessions.get(stickyKey) : null,
        restrictions: policy?.restrictions ?? null,
        byok: policy?.byok ?? null,
      });
    } catch (error) {
      if (error instanceof AppError) {
        const failure = failureFromAppError(error);
        // A guardrail refusal explains itself in the metadata (reference §8), like a block.
        const metadata =
          failure.status === 403
            ? metadataFor(context, parsed.models.length > 1 ? 'fallback' : 'direct', [], [], null, pipeline)
            : null;
        if (metadata) failure.metadata = { ...failure.metadata, switchyard_metadata: metadata };
        throw new GenerationError(failure, null);
      }
      throw error;
    }
    return {
      id,
      createdAt: Math.floor(now / 1000),
      candidates: plan.candidates,
      strategy: plan.strategy,
      attempts: [],
      prompt: promptSize(generation),
      policy,
      generation,
      pipeline,
    };
  }

  /** The token bounds of a call on `candidate`: what its reservation covers and its billing may count. */
  function usageBounds(context: GenerationContext, prepared: Prepared, candidate: Candidate) {
    const contextLength = contextOf(candidate);
    const promptTokens = promptTokenBound(prepared.prompt, contextLength);
    const maxOutputTokens =
      context.apiType === 'embeddings'
        ? 0
        : (context.parsed.generation.maxOutputTokens ??
          candidate.endpoint.max_completion_tokens ??
          candidate.model.record.top_provider.max_completion_tokens ??
          Math.max(1, contextLength - promptTokens));
    // No endpoint produces more than its context holds, whatever max_tokens asks for.
    return {
      contextLength,
      promptTokens,
      outputTokens: Math.min(maxOutputTokens, contextLength),
      imageTokens: estimatedImageTokens(candidate.model.id, prepared.generation.imageConfig?.imageSize),
    };
  }

  function reserveFor(context: GenerationContext, prepared: Prepared, candidate: Candidate) {
    const bounds = usageBounds(context, prepared, candidate);
    const worst = worstCaseCost(candidate.endpoint.pricing as EndpointPricing, {
      promptTokens: bounds.promptTokens,
      maxOutputTokens: bounds.outputTokens,
      mayOutputImages: mayOutputImages(
        prepared.generation,
        candidate,
        adapters.adapterFor(candidate.protocol, candidate.endpoint.provider_slug).returnsImages === true,
      ),
    });
    return {
      worst,
      bounds,
      plan: spendScopes(
        context.principal.key,
        credits,
        clock.now(),
        prepared.policy,
        candidate.byok !== null,
      ),
    };
  }

  /** Ends the request when every attempt failed: the last failure, with the earlier ones in metadata. */
  function exhausted(context: GenerationContext, prepared: Prepared, last: GenerationFailure | null): never {
    const failure: GenerationFailure = last ?? {
      status: 503,
      message: 'No provider could serve the request',
      errorType: 'provider_unavailable',
    };
    if (prepared.attempts.length > 1) {
      failure.metadata = {
        ...failure.metadata,
        previous_errors: prepared.attempts.map((attempt) => ({
          provider: attempt.provider_name,
          status: attempt.shownStatus,
          code: attempt.error_type,
        })),
      };
    }
    const metadata = metadataFor(
      context,
      prepared.strategy,
      prepared.candidates,
      prepared.attempts,
      null,
      prepared.pipeline,
    );
    if (metadata) failure.metadata = { ...failure.metadata, switchyard_metadata: metadata };
    writeRecord(context, prepared, null, {
      usage: emptyUsage(),
      cost: { totalNanos: 0, inputNanos: 0, outputNanos: 0 },
      // A client that went away before any answer cancelled the generation; nothing failed.
      status: context.signal.aborted ? 'cancelled' : 'failed',
      httpStatus: failure.status,
      // Nor is the provider to blame for it: a cancelled record carries no error.
      failure: context.signal.aborted ? null : failure,
      finishReason: null,
      nativeFinishReason: null,
      upstreamId: null,
      streamed: context.parsed.stream,
      cancelled: context.signal.aborted,
      firstTokenMs: null,
      generationMs: 0,
    });
    throw new GenerationError(failure, prepared.id);
  }

  function writeRecord(
    context: GenerationContext,
    prepared: Prepared,
    candidate: Candidate | null,
    outcome: {
      usage: Usage;
      cost: GenerationSummary['cost'];
      status: GenerationRecordInput['status'];
      httpStatus: number;
      failure: GenerationFailure | null;
      finishReason: string | null;
      nativeFinishReason: string | null;
      upstreamId: string | null;
      streamed: boolean;
      cancelled: boolean;
      firstTokenMs: number | null;
      generationMs: number;
    },
    output: CollectedOutput | null = null,
  ) {
    const { parsed, principal } = context;
    const record: GenerationRecordInput = {
      id: prepared.id,
      created_at: new Date(prepared.createdAt * 1000).toISOString(),
      key_hash: principal.keyHash,
      workspace_id: principal.workspaceId,
      api_type: context.apiType,
      requested_model: parsed.models[0] ?? '',
      model: candidate?.model.id ?? null,
      provider_slug: candidate?.endpoint.provider_slug ?? null,
      provider_name: candidate?.endpoint.provider_name ?? null,
      endpoint_id: candidate?.endpoint.id ?? null,
      upstream_id: outcome.upstreamId,
      streamed: outcome.streamed,
      cancelled: outcome.cancelled,
      is_byok: candidate?.byok != null,
      status: outcome.status,
      http_status: outcome.httpStatus,
      error_type: outcome.failure?.errorType ?? null,
      error_message: outcome.failure?.message ?? null,
      finish_reason: outcome.finishReason,
      native_finish_reason: outcome.nativeFinishReason,
      tokens_prompt: outcome.usage.inputTokens,
      tokens_completion: outcome.usage.outputTokens,
      tokens_cached: outcome.usage.cachedInputTokens,
      tokens_cache_write: outcome.usage.cacheWriteTokens,
      tokens_reasoning: outcome.usage.reasoningTokens,
      tokens_completion_images: outcome.usage.imageOutputTokens ?? 0,
      cost_nanos: outcome.cost.totalNanos,
      input_cost_nanos: outcome.cost.inputNanos,
      output_cost_nanos: outcome.cost.outputNanos,
      latency_ms: Math.round(performance.now() - context.startedAt),
      first_token_ms: outcome.firstTokenMs,
      generation_time_ms: Math.round(outcome.generationMs),
      user_id: parsed.user,
      session_id: parsed.sessionId,
      metadata: parsed.metadata,
      trace: parsed.trace,
      app_referer: context.appReferer,
      app_title: context.appTitle,
      attempts: storedAttempts(prepared.attempts),
      member_user_id: principal.key.row.creator_user_id,
    };
    log.record(record, broadcastRows(context, prepared, record, output));
    if (outcome.cost.totalNanos > 0) {
      const isByok = candidate?.byok != null;
      const amount = {
        usageNanos: isByok ? 0 : outcome.cost.totalNanos,
        byokNanos: isByok ? outcome.cost.totalNanos : 0,
        at: clock.now(),
      };
      options.addKeyUsage(principal.keyHash, amount);
      policies.addUsage(
        { workspaceId: principal.workspaceId, creatorUserId: principal.key.row.creator_user_id },
        amount,
      );
    }
  }

  /**
   * The generation's broadcast events, built at the group commit (in the SQLite thread that runs it
   * when there is one, else by the log's writer on this thread) from what is gathered here; undefined
   * when the workspace has no destination (the common case costs one length check).
   */
  function broadcastRows(
    context: GenerationContext,
    prepared: Prepared,
    record: GenerationRecordInput,
    output: CollectedOutput | null,
  ): OutboxRowsBuilder | undefined {
    const targets = prepared.policy?.broadcast;
    if (!targets || targets.length === 0) return undefined;
    const atMs = clock.now().getTime();
    const sources: OutboxSources = {
      targets: [],
      event: {
        record,
        // Only the text travels: media (base64 images, files, audio) is not kept alive until the write.
        request: eventRequestOf(prepared.generation),
        output,
        keyName: context.principal.key.row.name,
        region: config.broadcast.region,
        startedAtMs: atMs - record.latency_ms,
        endedAtMs: atMs,
      },
      lease: options.broadcastWorker
        ? { owner: options.broadcastWorker, ms: config.broadcast.lease_ms }
        : null,
      keepEvent: Boolean(options.broadcastWorker) && !config.broadcast.delivery_thread,
    };
    // Built elsewhere only when every target can be made again from plain data (stored destinations).
    let plain = true;
    for (const target of targets) {
      if (target.source) sources.targets.push(target.source);
      else plain = false;
    }
    return {
      weight: prepared.prompt.bytes + (output?.text.length ?? 0),
      rows: targets.length,
      build: () => buildOutboxRows(sources, clock.now().getTime(), targets),
      sources: plain && !sources.keepEvent ? sources : undefined,
    };
  }

  function infoFor(prepared: Prepared, candidate: Candidate): GenerationInfo {
    return {
      id: prepared.id,
      createdAt: prepared.createdAt,
      model: candidate.model.id,
      providerSlug: candidate.endpoint.provider_slug,
      providerName: candidate.endpoint.provider_name,
    };
  }

  /** What a finished generation reports: usage, cost and, when asked for, the routing metadata. */
  function summaryOf(
    context: GenerationContext,
    prepared: Prepared,
    candidate: Candidate,
    usage: Usage,
    cost: GenerationSummary['cost'],
  ): GenerationSummary {
    return {
      usage,
      cost,
      isByok: candidate.byok !== null,
      metadata: metadataFor(
        context,
        prepared.strategy,
        prepared.candidates,
        prepared.attempts,
        candidate,
        prepared.pipeline,
      ),
    };
  }

  function rememberSession(context: GenerationContext, candidate: Candidate) {
    const { sessionId, models } = context.parsed;
    if (sessionId)
      sessions.set(`${context.principal.keyHash}:${sessionId}:${models.join(',')}`, candidate.endpoint.id);
  }

  /**
   * Tries each candidate in order until one starts: reserves its worst case, calls `start`, and on a
   * retryable failure releases the reservation and moves on. An invalid request stops at once.
   */
  async function firstThatStarts<T>(
    context: GenerationContext,
    prepared: Prepared,
    start: (candidate: Candidate, call: { signal: CancelSignal }) => Promise<T>,
  ): Promise<{
    candidate: Candidate;
    started: T;
    reservation: Reservation;
    /** What the reservation covers: the most the call may bill. */
    bounds: UsageBounds;
    attemptStart: number;
  }> {
    let last: GenerationFailure | null = null;
    let skipModel: string | null = null;
    for (const candidate of prepared.candidates) {
      if (context.signal.aborted) break;
      if (candidate.model.id === skipModel) continue;
      const { worst, bounds, plan } = reserveFor(context, prepared, candidate);
      const reserved = await counters.reserve(plan.scopes, worst);
      if (!reserved.ok) {
        const denial = plan.denials.get(reserved.scopeId);
        last = {
          status: denial?.status ?? 402,
          message: denial
            ? denial.message(worst, reserved.availableNanos)
            : `Spending limit reached (${reserved.scopeId})`,
          errorType: denial?.errorType ?? 'payment_required',
        };
        prepared.attempts.push(attemptOf(candidate, last.status, null, last.errorType, 0, false));
        continue;
      }
      const attemptStart = performance.now();
      try {
        const started = await start(candidate, { signal: context.signal });
        prepared.attempts.push(attemptOf(candidate, 200, 200, null, performance.now() - attemptStart));
        return { candidate, started, reservation: reserved.reservation, bounds, attemptStart };
      } catch (error) {
        await counters.settle(reserved.reservation, 0);
        if (error instanceof UnsupportedRequestError) {
          // This protocol cannot carry the request; another candidate's may.
          const message =
            error.field === 'input'
              ? `Invalid request parameters: ${CONVERSATION_PATHS[context.apiType]} ${error.message}`
              : error.message;
          last = { status: 400, message, errorType: 'invalid_request' };
          prepared.attempts.push(
            attemptOf(candidate, 400, null, 'invalid_request', performance.now() - attemptStart),
          );
          continue;
        }
        if (!(error instanceof UpstreamError)) throw error;
        const failure = failureFromUpstream(error, candidate.endpoint.provider_name, candidate.byok !== null);
        const endpointFault = isEndpointFault(error);
        // A workspace's own credential that the provider refuses says nothing about the endpoint.
        const credentialRefused =
          candidate.byok !== null && error.status !== null && PROVIDER_REFUSALS.has(error.status);
        if (!credentialRefused) {
          health.record(candidate.endpoint.id, {
            ok: false,
            endpointFault,
            retryAfterSeconds: error.retryAfterSeconds,
          });
        }
        prepared.attempts.push(
          attemptOf(
            candidate,
            failure.status,
            error.status,
            failure.errorType,
            performance.now() - attemptStart,
          ),
        );
        last = failure;
        // The upstream refused the request itself: other endpoints of this model would too, but
        // the next model of `models` is a different request and gets its chance (reference §7).
        if (!endpointFault) skipModel = candidate.model.id;
      }
    }
    if (context.signal.aborted) {
      last = { status: 499, message: 'The client closed the request', errorType: 'unmapped' };
    }
    return exhausted(context, prepared, last);
  }

  return {
    /**
     * A non-streamed generation: the whole result, or a GenerationError before anything was sent.
     * Its cost is settled before it resolves; `record` (health, session, the generation record and
     * usage) is left to the caller to run once the answer is written, in the same tick, so the record
     * is queued before the client can ask for it and the answer does not wait for it.
     */
    async generate(context: GenerationContext): Promise<{
      info: GenerationInfo;
      result: GenerationResult;
      summary: GenerationSummary;
      /** Records the generation; the caller runs it once, whether or not the answer could be written. */
      record(): void;
    }> {
      const prepared = await prepare(context);
      const { candidate, started, reservation, bounds, attemptStart } = await firstThatStarts(
        context,
        prepared,
        (target, call) =>
          adapters.adapterFor(target.protocol, target.endpoint.provider_slug).generate({
            request: requestFor(
              prepared.generation,
              target.endpoint,
              target.model.record.architecture.output_modalities,
            ),
            target: target.target,
            signal: call.signal,
            timeouts: timeoutsFor(target, false),
          }),
      );
      const result: GenerationResult = {
        ...started,
        usage: billableUsage(started.usage, prepared.prompt.bytes, resultSize(started), bounds),
      };
      const elapsed = performance.now() - attemptStart;
      const cost = billedCost(candidate, result.usage, reservation);
      await counters.settle(reservation, cost.totalNanos);
      const record = () => {
        health.record(candidate.endpoint.id, {
          ok: true,
          firstTokenMs: elapsed,
          outputTokens: result.usage.outputTokens,
          generationMs: elapsed,
        });
        rememberSession(context, candidate);
        writeRecord(
          context,
          prepared,
          candidate,
          {
            usage: result.usage,
            cost,
            status: result.finishReason === 'length' ? 'incomplete' : 'completed',
            httpStatus: 200,
            failure: null,
            finishReason: result.finishReason,
            nativeFinishReason: result.nativeFinishReason,
            upstreamId: result.id,
            streamed: false,
            cancelled: false,
            // From the request's start (preparation and failed fallbacks included), as clients wait.
            firstTokenMs: Math.round(attemptStart + elapsed - context.startedAt),
            generationMs: elapsed,
          },
          {
            text: result.text + (result.refusal ?? ''),
            toolCalls: result.toolCalls.map((call) => ({
              id: call.callId,
              name: call.name,
              arguments: call.arguments,
            })),
          },
        );
      };
      return {
        info: infoFor(prepared, candidate),
        result,
        summary: summaryOf(context, prepared, candidate, result.usage, cost),
        record,
      };
    },

    /**
     * Embeddings: routed, reserved, failed over and billed like a generation, without output tokens;
     * `record` is the caller's to run once the answer is written, as with `generate`.
     */
    async embed(
      context: GenerationContext,
      request: Omit<EmbeddingRequest, 'model'>,
    ): Promise<{
      info: GenerationInfo;
      result: EmbeddingResult;
      summary: GenerationSummary;
      /** Records the embedding; the caller runs it once, whether or not the answer could be written. */
      record(): void;
    }> {
      const prepared = await prepare(context);
      const upstreamRequest = redactedEmbeddingInput(request, prepared.generation);
      const { candidate, started, reservation, bounds, attemptStart } = await firstThatStarts(
        context,
        prepared,
        (target, call) => {
          const adapter = adapters.adapterFor(target.protocol, target.endpoint.provider_slug);
          if (!adapter.embed) {
            throw new UpstreamError({
              message: `The ${target.protocol} protocol has no embeddings`,
              kind: 'http',
              status: 400,
            });
          }
          return adapter.embed({
            request: { ...upstreamRequest, model: target.endpoint.provider_model_id },
            target: target.target,
            signal: call.signal,
            timeouts: timeoutsFor(target, false),
          });
        },
      );
      const elapsed = performance.now() - attemptStart;
      const counted = billableUsage(started.usage, prepared.prompt.bytes, NO_OUTPUT, bounds);
      const embedded: EmbeddingResult = {
        ...started,
        // An upstream that counts nothing is billed its input from the bytes sent.
        usage:
          counted.inputTokens === 0 && started.vectors.length > 0
            ? { ...counted, inputTokens: Math.ceil(prepared.prompt.bytes / 4) }
            : counted,
      };
      const cost = billedCost(candidate, embedded.usage, reservation);
      await counters.settle(reservation, cost.totalNanos);
      const record = () => {
        health.record(candidate.endpoint.id, { ok: true, firstTokenMs: elapsed });
        writeRecord(context, prepared, candidate, {
          usage: embedded.usage,
          cost,
          status: 'completed',
          httpStatus: 200,
          failure: null,
          finishReason: null,
          nativeFinishReason: null,
          upstreamId: null,
          streamed: false,
          cancelled: false,
          firstTokenMs: null,
          generationMs: elapsed,
        });
      };
      return {
        info: infoFor(prepared, candidate),
        result: embedded,
        summary: summaryOf(context, prepared, candidate, embedded.usage, cost),
        record,
      };
    },

    /**
     * A streamed generation. Resolves once the first output arrived (the stream commits then; until
     * that moment a failure moves on to the next candidate), or rejects with a GenerationError.
     */
    async stream(context: GenerationContext): Promise<StreamOutcome> {
      const prepared = await prepare(context);
      const { candidate, started, reservation, bounds, attemptStart } = await firstThatStarts(
        context,
        prepared,
        async (target, call) => {
          const iterator = adapters
            .adapterFor(target.protocol, target.endpoint.provider_slug)
            .stream({
              request: requestFor(
                prepared.generation,
                target.endpoint,
                target.model.record.architecture.output_modalities,
              ),
              target: target.target,
              signal: call.signal,
              timeouts: timeoutsFor(target, true),
            })
            [Symbol.asyncIterator]();
          // Read up to the first output: anything before it may still fail over.
          const head: StreamPart[] = [];
          for (;;) {
            const next = await iterator.next();
            if (next.done) break;
            if (next.value.type === 'error') {
              await iterator.return?.();
              throw next.value.error;
            }
            head.push(next.value);
            if (isOutput(next.value)) break;
          }
          return { iterator, head, firstTokenAt: performance.now() };
        },
      );
      const firstTokenMs = started.firstTokenAt - attemptStart;
      let usageAtStart: Usage | null = null;
      for (const part of started.head) {
        if (part.type === 'response-metadata' && part.usage !== undefined)
          usageAtStart = billableUsage(part.usage, prepared.prompt.bytes, NO_OUTPUT, bounds);
      }
      let usage: Usage | null = null;
      let finishReason: string | null = null;
      let nativeFinishReason: string | null = null;
      let upstreamId: string | null = null;
      let failure: GenerationFailure | null = null;
      let outputChars = 0;
      let outputImages = 0;
      let ended = false;
      // Output is kept only when a destination will receive it.
      const collector = prepared.policy?.broadcast.length ? createOutputCollector() : null;
      let finishing: Promise<{ summary: GenerationSummary; failure: GenerationFailure | null }> | null = null;

      const observe = (part: StreamPart): boolean => {
        switch (part.type) {
          case 'usage':
            usage = part.usage;
            return false;
          case 'finish':
            finishReason = part.reason;
            nativeFinishReason = part.nativeReason;
            return true;
          case 'response-metadata':
            upstreamId = part.id ?? upstreamId;
            return true;
          case 'error':
            failure = failureFromUpstream(
              part.error,
              candidate.endpoint.provider_name,
              candidate.byok !== null,
            );
            // Images cut in transit were produced: the estimate a failed stream is billed counts them.
            outputImages += part.imagesCut ?? 0;
            return false;
          case 'text-delta':
            outputChars += part.delta.length;
            collector?.text(part.delta);
            return true;
          case 'reasoning-delta':
            outputChars += part.delta.length;
            return true;
          case 'refusal-delta':
            // What the model said, if only to decline: observability destinations see it as output.
            outputChars += part.delta.length;
            collector?.text(part.delta);
            return true;
          case 'image-output':
            // Counted for the estimate a stream without usage is billed; observability
            // destinations get the text alone, the image is not kept for them.
            outputImages += 1;
            return true;
          case 'tool-call-start':
            collector?.toolCallStart(part.index, part.callId, part.name);
            return true;
          case 'tool-call-delta':
            outputChars += part.argumentsDelta.length;
            collector?.toolCallDelta(part.index, part.argumentsDelta);
            return true;
          default:
            return true;
        }
      };

      async function finish() {
        const cancelled = context.signal.aborted;
        // Releasing the upstream must not keep the reservation from being settled.
        if (!ended) await Promise.resolve(started.iterator.return?.()).catch(() => undefined);
        const billed = billableUsage(
          usage as Usage | null,
          prepared.prompt.bytes,
          { chars: outputChars, images: outputImages },
          bounds,
          // Cut short, by a failure or the client: the counts so far may not cover all the output.
          failure !== null || cancelled,
        );
        const cost = billedCost(candidate, billed, reservation);
        await counters.settle(reservation, cost.totalNanos);
        const elapsed = performance.now() - attemptStart;
        const failed = failure as GenerationFailure | null;
        health.record(
          candidate.endpoint.id,
          failed && !cancelled
            ? { ok: false, endpointFault: true }
            : {
                ok: true,
                firstTokenMs,
                outputTokens: billed.outputTokens,
                generationMs: elapsed - firstTokenMs,
              },
        );
        if (!failed) rememberSession(context, candidate);
        writeRecord(
          context,
          prepared,
          candidate,
          {
            usage: billed,
            cost,
            status: cancelled
              ? 'cancelled'
              : failed
                ? 'failed'
                : finishReason === 'length'
                  ? 'incomplete'
                  : 'completed',
            httpStatus: 200,
            // A client that went away ends the upstream call with an abort: not the provider's error.
            failure: cancelled ? null : failed,
            finishReason: failed && !cancelled ? 'error' : finishReason,
            nativeFinishReason,
            upstreamId,
            streamed: true,
            cancelled,
            // From the request's start, as the client waited; the generation from the upstream
            // dispatch to the body's end (the endpoint's health keeps its own measures above).
            firstTokenMs: Math.round(started.firstTokenAt - context.startedAt),
            generationMs: elapsed,
          },
          collector?.result() ?? null,
        );
        return {
          summary: summaryOf(context, prepared, candidate, billed, cost),
          failure: failed,
        };
      }

      return {
        info: infoFor(prepared, candidate),
        parts: new ObservedParts(
          started.head,
          started.iterator,
          observe,
          (error) => {
            failure = failureFromUpstream(error, candidate.endpoint.provider_name, candidate.byok !== null);
          },
          () => {
            ended = true;
          },
        ),
        usageAtStart,
        finish: () => {
          finishing ??= finish();
          return finishing;
        },
      };
    },
  };
}

export type GenerationService = ReturnType<typeof createGenerationService>;
