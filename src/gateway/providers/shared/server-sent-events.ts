import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { MAX_JSON_DEPTH, pathTooDeepIn } from '../../../platform/json-depth.js';
import { UpstreamError } from '../../../spec/upstream-error.js';

/** Largest single SSE event accepted from an upstream, unless a call sets its own bound. */
export const MAX_EVENT_BYTES = 4 * 1024 * 1024;

/** An SSE body's reader: `feed` takes its bytes, `unfinished` tells how far the event under way got. */
export interface ServerSentEventReader {
  feed(chunk: Buffer): void;
  /**
   * The characters received of an event not yet ended (0 at an event boundary), also after `feed`
   * threw for an event over the bound: what a stream that failed was in the middle of sending.
   * Always 0 unless the reader was made to track it (a call with its own event bound).
   */
  unfinished(): number;
}

/**
 * An SSE body's bytes in, its events out, chunk by chunk (eventsource-parser's parsing; UTF-8
 * sequences split across chunks are joined). `feed` throws an UpstreamError for an event over
 * `maxEventBytes` (MAX_EVENT_BYTES unless the call needs larger ones, such as Gemini's images): an
 * upstream that sends megabytes without an event boundary is broken (or hostile), and without a
 * bound the buffer would grow for as long as it keeps sending.
 */
export function createServerSentEventReader(
  onEvent: (event: EventSourceMessage) => void,
  maxEventBytes = MAX_EVENT_BYTES,
  /** Whether `unfinished` is wanted (a call that may carry images); others skip the count. */
  trackUnfinished = false,
): ServerSentEventReader {
  const parser = createParser({
    onEvent,
    maxBufferSize: maxEventBytes,
    onError: (error) => {
      if (error.type === 'max-buffer-size-exceeded') {
        throw new UpstreamError({
          message: `Upstream sent an event larger than ${maxEventBytes} bytes`,
          kind: 'invalid-response',
        });
      }
    },
  });
  const decoder = new TextDecoder();
  let unfinished = 0;
  return {
    feed(chunk) {
      const text = decoder.decode(chunk, { stream: true });
      if (!trackUnfinished) {
        parser.feed(text);
        return;
      }
      // Counted before parsing, which throws for an event over the bound. A chunk that ends an
      // event (nearly every one of a text stream) costs one look at its last characters.
      if (endsEvent(text)) unfinished = 0;
      else {
        const start = afterLastBlankLine(text);
        unfinished = start === -1 ? unfinished + text.length : text.length - start;
      }
      parser.feed(text);
    },
    unfinished: () => unfinished,
  };
}

const endsEvent = (text: string): boolean =>
  text.endsWith('\n\n') || text.endsWith('\r\n\r\n') || text.endsWith('\r\r');

/** Where the text after the last blank line (an event's end) begins; -1 when it has none. */
function afterLastBlankLine(text: string): number {
  const lf = text.lastIndexOf('\n\n');
  const crlf = text.lastIndexOf('\r\n\r\n');
  const cr = text.lastIndexOf('\r\r');
  return Math.max(lf === -1 ? -1 : lf + 2, crlf === -1 ? -1 : crlf + 4, cr === -1 ? -1 : cr + 2);
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
