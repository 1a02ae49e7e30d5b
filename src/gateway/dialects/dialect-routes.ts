import type { ServerResponse } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors/app-error.js';
import { renderError } from '../../errors/error-renderer.js';
import { errorTypeForStatus } from '../../errors/error-types.js';
import { Cancellation } from '../../platform/cancellation.js';
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

const METADATA_HEADERS = ['x-switchyard-metadata', 'x-switchyard-experimental-metadata'];

/** `X-Switchyard-Metadata: enabled` (or the legacy name), case-insensitively; anything else is off. */
function wantsMetadata(request: FastifyRequest): boolean {
  return METADATA_HEADERS.some((name) => {
    const value = request.headers[name];
    return typeof value === 'string' && value.trim().toLowerCase() === 'enabled';
  });
}

const headerText = (value: string | string[] | undefined): string | null =>
  typeof value === 'string' && value.length > 0 ? value.slice(0, 512) : null;

/**
 * How long a stream waits for a client that stopped reading. Past it the connection is dropped:
 * otherwise one client could hold an upstream connection and its reservation for ever.
 */
const STALLED_CLIENT_MS = 60_000;

/** Writes SSE text, waiting for the socket to drain; resolves false once the client is gone. */
function createSseWriter(raw: ServerResponse) {
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
        const stalled = setTimeout(() => {
          raw.destroy();
          done();
        }, STALLED_CLIENT_MS);
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
  request: FastifyRequest,
  reply: FastifyReply,
  apiType: GenerationContext['apiType'],
  parsed: ParsedRequest,
  startedAt: number,
): GenerationContext {
  const abort = new Cancellation();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) abort.abort();
  });
  return {
    principal: request.principal!,
    apiType,
    parsed,
    withMetadata: wantsMetadata(request),
    signal: abort,
    startedAt,
    appReferer: headerText(request.headers['http-referer'] ?? request.headers.referer),
    appTitle: headerText(request.headers['x-title']),
  };
}

/**
 * Sends a non-streamed answer, then records its generation: after the answer is handed to the
 * socket and in the same tick, so the answer does not wait for the record and the record is queued
 * before the client can ask for it. The record runs even when rendering or sending throws.
 */
function answerThenRecord(
  reply: FastifyReply,
  generationId: string,
  render: () => unknown,
  record: () => void,
): FastifyReply {
  try {
    return reply.header('x-generation-id', generationId).send(render());
  } finally {
    record();
  }
}

/** The standard envelope, which the chat-completions, responses and embeddings surfaces share. */
const envelopeOf = (failure: GenerationFailure) => renderStandardFailure(failure, null);

function sendFailure(
  reply: FastifyReply,
  dialect: Dialect,
  failure: GenerationFailure,
  generationId: string | null,
) {
  if (generationId) reply.header('x-generation-id', generationId);
  return reply
    .code(failure.status === 499 ? 400 : failure.status)
    .headers(failure.headers ?? {})
    .send(dialect.renderFailure(failure, generationId));
}

/**
 * Errors raised before the handler runs (authentication, rate limit, malformed JSON, schema
 * validation) as a failure of the surface: the same status, message and headers the app's renderer
 * gives them, with `error_type`, in the dialect's own envelope (Anthropic's on /messages), so a
 * client's SDK reads every error of one surface the same way.
 */
function surfaceErrorHandler(render: (reply: FastifyReply, failure: GenerationFailure) => FastifyReply) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const rendered = renderError(error);
    if (rendered.status >= 500) request.log.error({ err: error }, 'request failed');
    const { error_type: errorType, ...metadata } = rendered.body.error.metadata ?? {};
    return render(reply, {
      status: rendered.status,
      message: rendered.body.error.message,
      errorType: typeof errorType === 'string' ? errorType : errorTypeForStatus(rendered.status),
      headers: rendered.headers,
      ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    });
  };
}

/**
 * Registers one inference surface: validate (schema, then the dialect's own rules), hand the
 * canonical request to the generation service, and write its answer as JSON or as an SSE stream.
 * Before a stream commits every failure is an HTTP error in the dialect's shape; after, it is an
 * in-band event, and a client that goes away aborts the upstream call.
 */
export function registerDialectRoute(
  app: FastifyInstance,
  options: { path: string; dialect: Dialect; service: GenerationService; tag: string; summary: string },
) {
  const { dialect, service } = options;
  app.post(
    options.path,
    {
      config: { auth: 'any' },
      schema: {
        tags: [options.tag],
        summary: options.summary,
        body: dialect.bodySchema,
      },
      errorHandler: surfaceErrorHandler((reply, failure) => sendFailure(reply, dialect, failure, null)),
    },
    async (request, reply) => {
      const startedAt = performance.now();
      let parsed: ReturnType<Dialect['parse']>;
      try {
        parsed = dialect.parse(request.body, request.headers);
      } catch (error) {
        if (error instanceof AppError) return sendFailure(reply, dialect, failureFromAppError(error), null);
        throw error;
      }
      const context = contextFor(request, reply, dialect.name, parsed, startedAt);
      try {
        if (!parsed.stream) {
          const { info, result, summary, record } = await service.generate(context);
          return answerThenRecord(
            reply,
            info.id,
            () => dialect.renderResult(request.body, info, result, summary),
            record,
          );
        }
        const outcome = await service.stream(context);
        reply.hijack();
        const raw = reply.raw;
        raw.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
          'x-generation-id': outcome.info.id,
        });
        const writer = createSseWriter(raw);
        const encoder = dialect.streamEncoder(request.body, outcome.info);
        try {
          await writer.write(encoder.start());
          for await (const part of outcome.parts) {
            if (!(await writer.write(encoder.part(part)))) break;
          }
        } finally {
          let closing: Awaited<ReturnType<typeof outcome.finish>> | null = null;
          try {
            closing = await outcome.finish();
          } catch (error) {
            request.log.error({ err: error }, 'closing a stream failed');
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
        return reply;
      } catch (error) {
        if (error instanceof GenerationError) {
          if (reply.sent || reply.raw.headersSent) return reply;
          return sendFailure(reply, dialect, error.failure, error.generationId);
        }
        throw error;
      }
    },
  );
}

/**
 * `POST /embeddings`: the same routing, limits, failover and accounting as a generation, without a
 * stream. Failures use the standard envelope with `error.metadata.error_type`.
 */
export function registerEmbeddingsRoute(app: FastifyInstance, service: GenerationService) {
  app.post(
    '/embeddings',
    {
      config: { auth: 'any' },
      schema: {
        tags: ['Embeddings'],
        summary: 'Create embeddings for text or token inputs',
        body: embeddingsBodySchema,
      },
      errorHandler: surfaceErrorHandler((reply, failure) =>
        reply
          .code(failure.status)
          .headers(failure.headers ?? {})
          .send(envelopeOf(failure)),
      ),
    },
    async (request, reply) => {
      const startedAt = performance.now();
      const body = request.body as EmbeddingsBody;
      const fail = (failure: GenerationFailure, id: string | null) => {
        if (id) reply.header('x-generation-id', id);
        return reply
          .code(failure.status)
          .headers(failure.headers ?? {})
          .send(envelopeOf(failure));
      };
      try {
        const parsed = parseEmbeddingsRequest(body, request.headers);
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
        const context = contextFor(request, reply, 'embeddings', canonical, startedAt);
        const { info, result, summary, record } = await service.embed(context, parsed.request);
        return answerThenRecord(
          reply,
          info.id,
          () => renderEmbeddings(info, result, summary, body.encoding_format ?? 'float'),
          record,
        );
      } catch (error) {
        if (error instanceof AppError) return fail(failureFromAppError(error), null);
        if (error instanceof GenerationError) return fail(error.failure, error.generationId);
        throw error;
      }
    },
  );
}
