import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { MAX_JSON_DEPTH, pathTooDeepIn } from '../../../platform/json-depth.js';
import { UpstreamError } from '../../../spec/upstream-error.js';

/** Largest single SSE event accepted from an upstream. */
const MAX_EVENT_BYTES = 4 * 1024 * 1024;

/**
 * An SSE body's bytes in, its events out, chunk by chunk (eventsource-parser's parsing; UTF-8
 * sequences split across chunks are joined). `feed` throws an UpstreamError for an event over
 * MAX_EVENT_BYTES: an upstream that sends megabytes without an event boundary is broken (or
 * hostile), and without a bound the buffer would grow for as long as it keeps sending.
 */
export function createServerSentEventReader(onEvent: (event: EventSourceMessage) => void) {
  const parser = createParser({
    onEvent,
    maxBufferSize: MAX_EVENT_BYTES,
    onError: (error) => {
      if (error.type === 'max-buffer-size-exceeded') {
        throw new UpstreamError({
          message: `Upstream sent an event larger than ${MAX_EVENT_BYTES} bytes`,
          kind: 'invalid-response',
        });
      }
    },
  });
  const decoder = new TextDecoder();
  return (chunk: Buffer) => parser.feed(decoder.decode(chunk, { stream: true }));
}

/**
 * JSON.parse for foreign input: a parse failure is the upstream's fault, reported as such, and so are
 * `null` and JSON nesting deeper than MAX_JSON_DEPTH (what the gateway makes of it could not be
 * serialized).
 */
export function parseUpstreamJson(text: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UpstreamError({
      message: 'Upstream sent invalid JSON',
      kind: 'invalid-response',
      raw: text.slice(0, 500),
    });
  }
  // Every protocol answers with objects; readers look fields up on what they get, and only `null`
  // (of all that JSON can be) makes a lookup throw.
  if (parsed === null) {
    throw new UpstreamError({
      message: 'Upstream sent JSON null where an object was expected',
      kind: 'invalid-response',
      raw: text.slice(0, 500),
    });
  }
  if (pathTooDeepIn(text, parsed)) {
    throw new UpstreamError({
      message: `Upstream sent JSON nesting more than ${MAX_JSON_DEPTH} levels deep`,
      kind: 'invalid-response',
      raw: text.slice(0, 500),
    });
  }
  return parsed;
}
