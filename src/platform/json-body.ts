import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import { AppError, invalidRequest } from '../errors/app-error.js';
import { describeDeepPath, MAX_JSON_DEPTH, pathTooDeepIn } from './json-depth.js';

/** Charsets a JSON body may declare: JSON travels as UTF-8 (RFC 8259), and ASCII is a subset of it. */
const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);

/** The `charset` parameter of a Content-Type header, unquoted, or null when there is none. */
function declaredCharset(contentType: string | undefined): string | null {
  // Parameter names are case-insensitive (RFC 9110): `Charset=` counts too.
  if (contentType === undefined || !contentType.includes(';')) return null;
  return /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType)?.[1] ?? null;
}

/** Whether a Content-Type declares a charset other than UTF-8 (or ASCII), which a JSON body may not. */
export function declaresOtherCharset(contentType: string | undefined): boolean {
  const charset = declaredCharset(contentType);
  return charset !== null && !UTF8_CHARSETS.has(charset.toLowerCase());
}

type Done = (error: Error | null, value: unknown) => void;

/** Reads one JSON request body's bytes (UTF-8) as its value, or the error that refuses it. */
export type JsonBodyParser = (
  request: {
    method: string;
    headers: { 'content-type'?: string | undefined; 'content-encoding'?: string | undefined };
  },
  body: Buffer,
  done: Done,
) => void;

/**
 * How every route reads a JSON body: Fastify's JSON parser (prototype poisoning refused), with three
 * changes. Many HTTP clients send `Content-Type: application/json` on every request, DELETE
 * included, with no body: Fastify refuses an empty JSON body, and a DELETE has nothing to parse, so
 * it gets no body instead. A body nesting more than MAX_JSON_DEPTH levels is refused with a 400
 * naming where (src/platform/json-depth.ts): serializing it, or any recursive walk of it, would
 * overflow the stack. A body declared in a charset other than UTF-8 is a 415: it is read as UTF-8.
 * So is a body with a Content-Encoding (other than `identity`): nothing decodes it. Bytes that are
 * not UTF-8 are a 400: decoded, each would become U+FFFD, and the request would go on (and be
 * stored, and sent upstream) with text the client never sent.
 * Fastify's routes and the direct lane (src/gateway/direct-lane.ts) both parse with it.
 */
export function createJsonBodyParser(app: FastifyInstance): JsonBodyParser {
  const parse = app.getDefaultJsonParser('error', 'error');
  return (request, body, done) => {
    const contentType = request.headers['content-type'];
    if (declaresOtherCharset(contentType)) {
      // The body is read as UTF-8: another charset's bytes would become other text, or U+FFFD.
      done(
        new AppError(
          'unsupported_media_type',
          `Content-Type charset ${declaredCharset(contentType)} is not supported: send the JSON body as UTF-8`,
        ),
        undefined,
      );
      return;
    }
    if (request.method === 'DELETE' && body.length === 0) {
      done(null, undefined);
      return;
    }
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      // Nothing decodes a content coding: gzip bytes would be read as text (a 400 for malformed JSON),
      // and plain JSON labelled gzip would be taken as if the label were not there. RFC 9110 §8.4.1: 415.
      const shown = encoding.length > 64 ? `${encoding.slice(0, 64)}…` : encoding;
      done(
        new AppError(
          'unsupported_media_type',
          `Content-Encoding "${shown}" is not supported: send the JSON body without a content coding`,
        ),
        undefined,
      );
      return;
    }
    if (!isUtf8(body)) {
      done(
        invalidRequest(
          'Invalid request parameters: body must be valid UTF-8 (RFC 8259): it holds a byte sequence that is not',
        ),
        undefined,
      );
      return;
    }
    const text = body.toString('utf8');
    // Fastify's parser reads neither the request nor anything but the text.
    parse(request as never, text, (error, value) => {
      if (error && isValidJson(text)) {
        // Fastify's parser refuses prototype poisoning with the same error as malformed JSON: the
        // JSON is valid, so the answer says which rule it broke.
        done(
          invalidRequest(
            'Invalid request parameters: body must not hold a "__proto__" key, nor a "constructor" key holding "prototype" (prototype poisoning is refused)',
          ),
          undefined,
        );
        return;
      }
      const tooDeep = error ? null : pathTooDeepIn(text, value);
      if (tooDeep) {
        done(
          invalidRequest(
            `Invalid request parameters: ${describeDeepPath('body', tooDeep)} nests more than ${MAX_JSON_DEPTH} levels deep`,
          ),
          undefined,
        );
        return;
      }
      // Walked only within the depth limit just checked.
      const overflow = error ? null : overflowingNumberIn(text, value);
      if (overflow) {
        done(
          invalidRequest(
            `Invalid request parameters: ${describeDeepPath('body', overflow)} must be a finite number (it overflows a double)`,
          ),
          undefined,
        );
        return;
      }
      done(error, value);
    });
  };
}

/**
 * Text that may hold a number too large for a double: an exponent of three digits or more, or 309
 * digits in a row. JSON.parse reads `1e400` as Infinity, which passes an `integer` schema (Ajv's
 * check is `x % 1` is not truthy) and then means "no limit" to whatever reads it.
 */
const MAYBE_OVERFLOWING = /\d[eE]\+?\d{3}|\d{309}/;

/** The path to the first infinite number in a parsed body, or null (only walked when the text may hold one). */
export function overflowingNumberIn(text: string, value: unknown): string[] | null {
  if (!MAYBE_OVERFLOWING.test(text)) return null;
  const path: string[] = [];
  const walk = (node: unknown): boolean => {
    if (typeof node === 'number') return !Number.isFinite(node);
    if (typeof node !== 'object' || node === null) return false;
    for (const [key, child] of Object.entries(node)) {
      path.push(key);
      if (walk(child)) return true;
      path.pop();
    }
    return false;
  };
  return walk(value) ? path : null;
}

/** Whether `text` parses as JSON at all (asked only of a body the parser refused). */
function isValidJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Registers the parser as Fastify's for `application/json`. */
export function parseJsonBodies(app: FastifyInstance, parser: JsonBodyParser): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) =>
    parser(request, body as Buffer, done),
  );
}
