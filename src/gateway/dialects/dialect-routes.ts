import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { AppError } from '../../errors/app-error.js';
import { renderError } from '../../errors/error-renderer.js';
import { errorTypeForStatus } from '../../errors/error-types.js';
import { Cancellation } from '../../platform/cancellation.js';
import type { InFlight } from '../../platform/in-flight.js';
import type { Principal } from '../pipeline/authenticate.js';
import {
  failureFromAppError,
  type GenerationContext,
  GenerationError,
  type GenerationService,
} from '../pipeline/generation-service.js';
import type { Dialect, GenerationFailure, ParsedRequest } from './dialect.js';
import { type EmbeddingsBody, embeddingsBodySchema } from './embeddings/embeddings-body-schema.js';
import { parseEmbeddingsRequest } from './embeddings/parse-embeddings-request.js';
import { renderEmbeddings } from './embeddings/render-embeddings.js';
import { renderStandardFailure } from './shared/error-envelope.js';

/** Where a request's errors are logged: `request.log` on Fastify's routes, a RequestLogger on the lane. */
export interface ExchangeLog {
  error(object: object, message: string): void;
}

/**
 * One inference request as a surface serves it, whichever way it came in: a Fastify route or the
 * direct lane (src/gateway/direct-lane.ts). Both have authenticated the caller, parsed the JSON and
 * validated it against the surface's body schema before they hand it over.
 */
export interface InferenceExchange {
  /** The body, validated against the surface's schema. */
  readonly body: unknown;
  readonly headers: IncomingHttpHeaders;
  readonly principal: Principal;
  /** The raw response: a stream is written to it, and its `close` tells that the client went away. */
  readonly raw: ServerResponse;
  readonly log: ExchangeLog;
  /** Answers with `payload` as JSON. */
  send(status: number, headers: Record<string, string>, payload: unknown): void;
  /** Takes the raw response over for a stream: from now on only the surface writes to it. */
  takeOver(): void;
}

/** An HTTP answer to a failure before any output: status, headers and the surface's error body. */
export interface FailureAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** One inference surface (`/responses`, `/chat/completions`, `/messages`, `/embeddings`). */
export interface InferenceSurface {
  /** Under the API prefix. */
  path: string;
  tag: string;
  summary: string;
  bodySchema: TSchema;
  /** Serves a validated request to the end: an answer, a stream or a failure, never a throw. */
  serve(exchange: InferenceExchange): Promise<void>;
  /** The answer to a failure, in the surface's own envelope. */
  answerFailure(failure: GenerationFailure, generationId: string | null): FailureAnswer;
}

const METADATA_HEADERS = ['x-switchyard-metadata', 'x-switchyard-experimental-metadata'];

/** `X-Switchyard-Metadata: enabled` (or the legacy name), case-insensitively; anything else is off. */
function wantsMetadata(headers: IncomingHttpHeaders): boolean {
  return METADATA_HEADERS.some((name) => {
    const value = headers[name];
    return typeof value === 'string' && value.trim().toLowerCase() === 'enabled';
  });
}

const headerText = (value: string | string[] | undefined): string | null =>
  typeof value === 'string' && value.length > 0 ? value.slice(0, 512) : null;

/**
 * Writes SSE text, waiting for the socket to drain; resolves false once the client is gone. A client
 * that reads nothing for `stallMs` is dropped, and the write resolves only once the response has
 * closed: by then the request's signal has fired, so the generation is recorded as cancelled.
 */
function createSseWriter(raw: ServerResponse, stallMs: number) {
  let closed = raw.destroyed;
  raw.on('close', () => {
    closed = true;
  });
  return {
    get closed() {
      return closed;
    },
    async write(text: string): Promise<boolean> {
      if (closed) return false;
      if (text.length === 0) return true;
      if (raw.write(text)) return true;
      await new Promise<void>((resolve) => {
        // Destroying emits 'close', which settles this wait after the request's own close listener
        // has aborted its signal; resolving here at once had recorded a dropped client as completed.
        const stalled = setTimeout(() => raw.destroy(), stallMs);
        const done = () => {
          clearTimeout(stalled);
          raw.off('drain', done);
          raw.off('close', done);
          resolve();
        };
        raw.on('drain', done);
        raw.on('close', done);
      });
      return !closed && !raw.destroyed;
    },
  };
}

/** The generation context of one request; its signal fires when the client goes away. */
function contextFor(
  exchange: InferenceExchange,
  apiType: GenerationContext['apiType'],
  parsed: ParsedRequest,
  startedAt: number,
): GenerationContext {
  const abort = new Cancellation();
  const raw = exchange.raw;
  raw.on('close', () => {
    if (!raw.writableFinished) abort.abort();
  });
  const headers = exchange.headers;
  return {
    principal: exchange.principal,
    apiType,
    parsed,
    withMetadata: wantsMetadata(headers),
    signal: abort,
    startedAt,
    appReferer: headerText(headers['http-referer'] ?? headers.referer),
    appTitle: headerText(headers['x-title']),
  };
}

/**
 * Sends a non-streamed answer, then records its generation: after the answer is handed to the
 * socket and in the same tick, so the answer does not wait for the record and the record is queued
 * before the client can ask for it. The record runs even when rendering or sending throws.
 */
function answerThenRecord(
  exchange: InferenceExchange,
  generationId: string,
  render: () => unknown,
  record: () => void,
): void {
  try {
    exchange.send(200, { 'x-generation-id': generationId }, render());
  } finally {
    try {
      record();
    } catch (error) {
      // The answer stands: a record that could not be queued is logged, not turned into a failure.
      exchange.log.error({ err: error }, 'the generation could not be recorded');
    }
  }
}

/** A failure's own headers (Retry-After…), after the generation's id when it has one. */
const failureHeaders = (failure: GenerationFailure, generationId: string | null): Record<string, string> =>
  generationId ? { 'x-generation-id': generationId, ...failure.headers } : (failure.headers ?? {});

function sendFailure(
  exchange: InferenceExchange,
  surface: InferenceSurface,
  failure: GenerationFailure,
  generationId: string | null,
): void {
  const answer = surface.answerFailure(failure, generationId);
  exchange.send(answer.status, answer.headers, answer.body);
}

/**
 * An error raised before a surface serves the request (authentication, rate limit, malformed JSON,
 * schema validation) or one it did not expect, as a failure of the surface: the same status,
 * message and headers the app's renderer gives it, with `error_type`, so a client's SDK reads
 * every error of one surface the same way. A 5xx is logged.
 */
export function failureOfError(error: unknown, log: ExchangeLog): GenerationFailure {
  const rendered = renderError(error);
  if (rendered.status >= 500) log.error({ err: error }, 'request failed');
  const { error_type: errorType, ...metadata } = rendered.body.error.metadata ?? {};
  return {
    status: rendered.status,
    message: rendered.body.error.message,
    errorType: typeof errorType === 'string' ? errorType : errorTypeForStatus(rendered.status),
    headers: rendered.headers,
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
  };
}

/**
 * The end of a request that threw what no surface answers (a bug): a 500 in the surface's envelope
 * when nothing was sent yet; a stream already begun is cut, so the client does not wait for more.
 */
function failUnexpectedly(exchange: InferenceExchange, surface: InferenceSurface, error: unknown): void {
  if (exchange.raw.headersSent) {
    exchange.log.error({ err: error }, 'request failed after its answer began');
    if (!exchange.raw.writableFinished) exchange.raw.destroy();
    return;
  }
  sendFailure(exchange, surface, failureOfError(error, exchange.log), null);
}

/**
 * A generation surface: validate (the schema already has; then the dialect's own rules), hand the
 * canonical request to the generation service, and write its answer as JSON or as an SSE stream.
 * Before a stream commits every failure is an HTTP error in the dialect's shape; after, it is an
 * in-band event, and a client that goes away aborts the upstream call.
 */
export function dialectSurface(options: {
  path: string;
  dialect: Dialect;
  service: GenerationService;
  tag: string;
  summary: string;
  /**
   * How long a stream waits for a client that reads nothing (`limits.client_stall_ms`). Past it the
   * connection is dropped: otherwise one client could hold an upstream connection and its
   * reservation for ever.
   */
  clientStallMs: number;
  /** Counts the request from its start until its record is queued (shutdown waits on it). */
  inFlight: InFlight;
}): InferenceSurface {
  const { dialect, service, inFlight } = options;
  const stallMs = options.clientStallMs;
  const surface: InferenceSurface = {
    path: options.path,
    tag: options.tag,
    summary: options.summary,
    bodySchema: dialect.bodySchema,
    answerFailure: (failure, generationId) => ({
      status: failure.status === 499 ? 400 : failure.status,
      headers: failureHeaders(failure, generationId),
      body: dialect.renderFailure(failure, generationId),
    }),
    async serve(exchange) {
      inFlight.enter();
      try {
        await serveGeneration(exchange);
      } catch (error) {
        failUnexpectedly(exchange, surface, error);
      } finally {
        inFlight.leave();
      }
    },
  };

  async function serveGeneration(exchange: InferenceExchange): Promise<void> {
    const startedAt = performance.now();
    const body = exchange.body;
    let parsed: ReturnType<Dialect['parse']>;
    try {
      parsed = dialect.parse(body, exchange.headers);
    } catch (error) {
      if (error instanceof AppError) return sendFailure(exchange, surface, failureFromAppError(error), null);
      throw error;
    }
    const context = contextFor(exchange, dialect.name, parsed, startedAt);
    try {
      if (!parsed.stream) {
        const { info, result, summary, record } = await service.generate(context);
        answerThenRecord(exchange, info.id, () => dialect.renderResult(body, info, result, summary), record);
        return;
      }
      const outcome = await service.stream(context);
      exchange.takeOver();
      const raw = exchange.raw;
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'x-generation-id': outcome.info.id,
      });
      const writer = createSseWriter(raw, stallMs);
      const encoder = dialect.streamEncoder(body, outcome.info);
      try {
        await writer.write(encoder.start(outcome.usageAtStart));
        for await (const part of outcome.parts) {
          if (!(await writer.write(encoder.part(part)))) break;
        }
      } finally {
        let closing: Awaited<ReturnType<typeof outcome.finish>> | null = null;
        try {
          closing = await outcome.finish();
        } catch (error) {
          exchange.log.error({ err: error }, 'closing a stream failed');
        }
        if (closing && !writer.closed) {
          const { summary, failure } = closing;
          await writer.write(failure ? encoder.fail(failure, summary) : encoder.end(summary));
          raw.end();
        } else if (!closing) {
          // No closing frames to send: break the connection rather than leave the client waiting.
          raw.destroy();
        }
      }
    } catch (error) {
      if (error instanceof GenerationError) {
        if (exchange.raw.headersSent) return;
        return sendFailure(exchange, surface, error.failure, error.generationId);
      }
      throw error;
    }
  }

  return surface;
}

/** The standard envelope, which the chat-completions, responses and embeddings surfaces share. */
const envelopeOf = (failure: GenerationFailure) => renderStandardFailure(failure, null);

/**
 * `POST /embeddings`: the same routing, limits, failover and accounting as a generation, without a
 * stream. Failures use the standard envelope with `error.metadata.error_type`.
 */
export function embeddingsSurface(service: GenerationService, inFlight: InFlight): InferenceSurface {
  const surface: InferenceSurface = {
    path: '/embeddings',
    tag: 'Embeddings',
    summary: 'Create embeddings for text or token inputs',
    bodySchema: embeddingsBodySchema,
    answerFailure: (failure, generationId) => ({
      status: failure.status,
      headers: failureHeaders(failure, generationId),
      body: envelopeOf(failure),
    }),
    async serve(exchange) {
      const startedAt = performance.now();
      const body = exchange.body as EmbeddingsBody;
      inFlight.enter();
      try {
        const parsed = parseEmbeddingsRequest(body, exchange.headers);
        const texts = parsed.request.input.map((entry) =>
          typeof entry === 'string' ? entry : entry.join(' '),
        );
        const canonical: ParsedRequest = {
          generation: {
            input: texts.map((text) => ({
              type: 'message',
              role: 'user',
              content: [{ type: 'text', text }],
            })),
          },
          models: parsed.models,
          provider: parsed.provider,
          stream: false,
          sessionId: parsed.sessionId,
          user: parsed.user,
          metadata: null,
          trace: null,
        };
        const context = contextFor(exchange, 'embeddings', canonical, startedAt);
        const { info, result, summary, record } = await service.embed(context, parsed.request);
        answerThenRecord(
          exchange,
          info.id,
          () => renderEmbeddings(info, result, summary, body.encoding_format ?? 'float'),
          record,
        );
      } catch (error) {
        if (error instanceof AppError)
          return sendFailure(exchange, surface, failureFromAppError(error), null);
        if (error instanceof GenerationError)
          return sendFailure(exchange, surface, error.failure, error.generationId);
        failUnexpectedly(exchange, surface, error);
      } finally {
        inFlight.leave();
      }
    },
  };
  return surface;
}

/** A Fastify request and its reply as an exchange. */
class FastifyExchange implements InferenceExchange {
  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
  ) {}

  get body(): unknown {
    return this.request.body;
  }
  get headers(): IncomingHttpHeaders {
    return this.request.headers;
  }
  get principal(): Principal {
    // The route's onRequest hook set it (auth: 'any'), or the request never reached the handler.
    return this.request.principal as Principal;
  }
  get raw(): ServerResponse {
    return this.reply.raw;
  }
  get log(): ExchangeLog {
    return this.request.log;
  }
  send(status: number, headers: Record<string, string>, payload: unknown): void {
    this.reply.code(status).headers(headers).send(payload);
  }
  takeOver(): void {
    this.reply.hijack();
  }
}

/**
 * Registers a surface as a Fastify route: it documents the surface in the OpenAPI document, and
 * serves what the direct lane leaves to Fastify (a Content-Type other than plain JSON, a server
 * closing) or everything when the lane is off (`direct_lane: false`).
 */
export function registerSurfaceRoute(app: FastifyInstance, surface: InferenceSurface): void {
  app.post(
    surface.path,
    {
      config: { auth: 'any' },
      schema: { tags: [surface.tag], summary: surface.summary, body: surface.bodySchema },
      errorHandler: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
        sendFailure(new FastifyExchange(request, reply), surface, failureOfError(error, request.log), null);
        return reply;
      },
    },
    async (request, reply) => {
      await surface.serve(new FastifyExchange(request, reply));
      return reply;
    },
  );
}
