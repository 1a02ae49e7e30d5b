import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { ValidateFunction } from 'ajv';
import { errorCodes } from 'fastify';
import type { CloseState } from '../platform/graceful-close.js';
import type { JsonBodyParser } from '../platform/json-body.js';
import type { RequestObserver } from '../platform/metrics.js';
import { type LevelledLogger, RequestLogger } from '../platform/request-logger.js';
import type { BodyValidatorCompiler } from '../platform/validation.js';
import { failureOfError, type InferenceExchange, type InferenceSurface } from './dialects/dialect-routes.js';
import type { Authenticator, Principal } from './pipeline/authenticate.js';

/**
 * The direct lane: the inference surfaces served straight from node:http for the requests that make
 * up a gateway's traffic, past Fastify's request lifecycle (its request and reply objects, hook
 * runners, content-type parser and serializer cost ~7% of a chat request's CPU and ~11% of what it
 * allocates; docs/decisions.md, "Inference requests take a direct lane past Fastify").
 *
 * The lane takes a `POST` to a surface's path (a query and one trailing slash allowed, as the
 * router allows them) with a plain JSON Content-Type and no Content-Encoding while the server is not
 * closing; anything else goes to Fastify untouched, whose route for the same surface answers it
 * (another Content-Type, a 415 or the route's own parser) or whose hooks refuse it (the 503 of a
 * closing server). A request
 * it takes, the lane serves as the route would, with the same parts: the authenticator's principal
 * and rate limit, the body limit, the JSON parser, the body's validator (one compiled function for
 * both), the surface, its error envelope for every refusal, the request metrics, and the request
 * lines Fastify logs at `info`. With `direct_lane: false` Fastify serves everything; a test sends the
 * same requests both ways and compares the answers (test/gateway/inference/direct-lane.test.ts).
 */
export interface DirectLaneOptions {
  /** The API prefix the surfaces' paths are under (`/api/v1`). */
  prefix: string;
  surfaces: readonly InferenceSurface[];
  authenticator: Authenticator;
  parseJson: JsonBodyParser;
  compileBodyValidator: BodyValidatorCompiler;
  /** `limits.body_bytes`: Fastify's body limit. */
  bodyLimit: number;
  observeRequest: RequestObserver;
  close: CloseState;
  logger: LevelledLogger;
  /** The request ids Fastify gives its requests (its `genReqId`), so log lines of both read alike. */
  nextRequestId: () => string;
}

/** What the JSON parser reads of a request. */
type JsonRequest = Parameters<JsonBodyParser>[0];

/** Takes a request and answers it, or returns false and leaves it untouched for Fastify. */
export type DirectLane = (request: IncomingMessage, response: ServerResponse) => boolean;

interface LaneRoute {
  surface: InferenceSurface;
  /** The route template, as Fastify's metrics label it. */
  url: string;
  validate: ValidateFunction;
}

/**
 * `application/json`, bare or with a charset parameter alone: the Content-Types whose parser
 * Fastify surely picks. The charset's value is the JSON parser's to judge (a 415 for UTF-16).
 */
const PLAIN_JSON = /^application\/json(?:\s*;\s*charset=(?:"[^"]*"|[^;\s"]*)\s*)?$/i;

/** A request URL's path without its query and without one trailing slash. */
function pathOf(url: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.length > 1 && path.charCodeAt(path.length - 1) === 47 ? path.slice(0, -1) : path;
}

export function createDirectLane(options: DirectLaneOptions): DirectLane {
  const routes = new Map<string, LaneRoute>();
  for (const surface of options.surfaces) {
    const url = `${options.prefix}${surface.path}`;
    routes.set(url, { surface, url, validate: options.compileBodyValidator(surface.bodySchema) });
  }
  return function take(request, response) {
    if (request.method !== 'POST' || options.close.closing) return false;
    const url = request.url;
    if (url === undefined) return false;
    const route = routes.get(pathOf(url));
    if (route === undefined) return false;
    const contentType = request.headers['content-type'];
    if (contentType === undefined || !PLAIN_JSON.test(contentType)) return false;
    // A content coding is refused by the routes' parser (a 415): the lane leaves the request to it.
    if (request.headers['content-encoding'] !== undefined) return false;
    new LaneRequest(options, route, request, response).start();
    return true;
  };
}

/** One request on the lane, from its headers to its answer: the exchange its surface serves. */
class LaneRequest implements InferenceExchange {
  readonly headers: IncomingHttpHeaders;
  body: unknown = undefined;
  /** Set once authenticated, before the surface serves the request. */
  principal!: Principal;
  readonly #arrivedAt = performance.now();
  #chunks: Buffer[] = [];
  #received = 0;
  #log: RequestLogger | null = null;

  constructor(
    private readonly options: DirectLaneOptions,
    private readonly route: LaneRoute,
    private readonly request: IncomingMessage,
    readonly raw: ServerResponse,
  ) {
    this.headers = request.headers;
  }

  /** The request's logger, with its id, made when something is logged (most requests log nothing). */
  get log(): RequestLogger {
    this.#log ??= new RequestLogger(this.options.logger, { reqId: this.options.nextRequestId() });
    return this.#log;
  }

  start(): void {
    const { request, raw, options } = this;
    if (options.logger.isLevelEnabled('info')) {
      const socket = request.socket;
      this.log.info(
        {
          req: {
            method: request.method,
            url: request.url,
            host: request.headers.host,
            remoteAddress: socket.remoteAddress,
            remotePort: socket.remotePort,
          },
        },
        'incoming request',
      );
    }
    // As Fastify's reply counts a request: when its answer is finished (or the response fails), so a
    // client that went away before any answer is neither counted nor logged as a 200.
    const answered = (error?: Error) => {
      raw.off('finish', answered);
      raw.off('error', answered);
      this.#answered(error);
    };
    raw.on('finish', answered);
    raw.on('error', answered);
    let principal: Principal | Promise<Principal>;
    try {
      principal = options.authenticator.principalOf(request.headers, request.rawHeaders);
    } catch (error) {
      this.#refuse(error);
      return;
    }
    if (principal instanceof Promise) {
      principal.then(
        (settled) => this.#admit(settled),
        (error: unknown) => this.#refuse(error),
      );
      return;
    }
    this.#admit(principal);
  }

  /** The key's rate limit, as the route's onRequest hook applies it, then the body. */
  #admit(principal: Principal): void {
    this.principal = principal;
    let refusal: ReturnType<Authenticator['rateLimit']>;
    try {
      refusal = this.options.authenticator.rateLimit(principal);
    } catch (error) {
      this.#refuse(error);
      return;
    }
    if (refusal instanceof Promise) {
      refusal.then(
        (settled) => (settled ? this.#refuse(settled) : this.#readBody()),
        (error: unknown) => this.#refuse(error),
      );
      return;
    }
    if (refusal) this.#refuse(refusal);
    else this.#readBody();
  }

  /** Reads the body as Fastify's raw-body reader does: the limit, then the declared length. */
  #readBody(): void {
    const limit = this.options.bodyLimit;
    if (Number(this.request.headers['content-length']) > limit) {
      this.#refuseBody(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      return;
    }
    const request = this.request;
    const onData = (chunk: Buffer) => {
      this.#received += chunk.length;
      if (this.#received > limit) {
        detach();
        this.#chunks = [];
        this.#refuseBody(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
        return;
      }
      this.#chunks.push(chunk);
    };
    const onEnd = (error?: Error & { statusCode?: number }) => {
      detach();
      if (error != null) {
        if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400;
        this.#refuseBody(error);
        return;
      }
      try {
        this.#parse();
      } catch (thrown) {
        // As Fastify's body reader answers a parser that throws: a 500, not a process gone.
        this.#refuseBody(thrown);
      }
    };
    const detach = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onEnd);
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onEnd);
  }

  #parse(): void {
    const declared = Number(this.request.headers['content-length']);
    if (!Number.isNaN(declared) && this.#received !== declared) {
      this.#refuseBody(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
      return;
    }
    const chunks = this.#chunks;
    this.#chunks = [];
    const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.#received);
    // The parser answers synchronously (the route's content-type parser runs it the same way).
    const parsed: { error: Error | null } = { error: null };
    this.options.parseJson(this.request as JsonRequest, bytes, (error, value) => {
      parsed.error = error;
      this.body = value;
    });
    if (parsed.error) {
      this.#refuseBody(parsed.error);
      return;
    }
    const validate = this.route.validate;
    if (!validate(this.body)) {
      // What Fastify's validation error carries, for the app's renderer to describe.
      this.#refuse(
        Object.assign(new Error('validation failed'), {
          validation: validate.errors,
          validationContext: 'body',
        }),
      );
      return;
    }
    // A surface answers its own failures; a rejection here would be a bug, answered as a 500.
    this.route.surface.serve(this).catch((error: unknown) => {
      if (this.raw.headersSent) this.log.error({ err: error }, 'request failed after its answer began');
      else this.#refuse(error);
    });
  }

  /**
   * A body that cannot be read or parsed: refused, and the connection closed with the answer, as
   * Fastify's content-type parser does (the client may still be sending the rest of it).
   */
  #refuseBody(error: unknown): void {
    this.#refuse(error, true);
  }

  /** Answers an error raised before the surface served the request, in the surface's envelope. */
  #refuse(error: unknown, closeConnection = false): void {
    const raw = this.raw;
    if (raw.headersSent) return;
    try {
      const answer = this.route.surface.answerFailure(failureOfError(error, this.log), null);
      this.send(
        answer.status,
        closeConnection ? { ...answer.headers, connection: 'close' } : answer.headers,
        answer.body,
      );
    } catch (thrown) {
      // Nothing can be answered (a header Node refuses, say): the client gets a closed connection.
      this.log.error({ err: thrown }, 'a refusal could not be sent');
      raw.destroy();
    }
  }

  send(status: number, headers: Record<string, string>, payload: unknown): void {
    const text = JSON.stringify(payload);
    // A flat list to writeHead, which renders it as is: no header map is built.
    const list: string[] = [];
    for (const name in headers) list.push(name, headers[name] as string);
    list.push(
      'content-type',
      'application/json; charset=utf-8',
      'content-length',
      String(Buffer.byteLength(text)),
    );
    // As graceful-close's onSend hook does: no keep-alive connection holds a closing server open.
    if (this.options.close.closing && headers.connection === undefined) list.push('connection', 'close');
    this.raw.writeHead(status, list);
    this.raw.end(text);
  }

  takeOver(): void {
    // Nothing else writes to the response on the lane.
  }

  /** The answer is finished (or failed): metrics, Fastify's completion line, a closing server's idle sockets. */
  #answered(error?: Error): void {
    const { options, raw } = this;
    const elapsedMs = performance.now() - this.#arrivedAt;
    options.observeRequest('POST', this.route.url, raw.statusCode, elapsedMs / 1000);
    const res = { statusCode: raw.statusCode };
    if (error) this.log.error({ res, err: error, responseTime: elapsedMs }, 'request errored');
    else if (options.logger.isLevelEnabled('info'))
      this.log.info({ res, responseTime: elapsedMs }, 'request completed');
    options.close.answered();
  }
}
