import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { UpstreamError } from '../../../spec/upstream-error.js';
import { toUpstreamError, type UpstreamResponse } from './upstream-http.js';

/**
 * The events of an SSE body, as an async iterator over plain objects (no web streams). Parsing is
 * eventsource-parser's; a body that ends mid-event just ends, and the adapter decides whether the
 * stream was complete.
 */
/** Largest single SSE event accepted from an upstream. */
const MAX_EVENT_BYTES = 4 * 1024 * 1024;

export async function* readServerSentEvents(
  body: UpstreamResponse['body'],
  signal: AbortSignal,
): AsyncGenerator<EventSourceMessage> {
  const pending: EventSourceMessage[] = [];
  const parser = createParser({
    onEvent: (event) => pending.push(event),
    // An upstream that sends megabytes without an event boundary is broken (or hostile); without a
    // bound the buffer would grow for as long as it keeps sending.
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
  try {
    for await (const chunk of body) {
      parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
      while (pending.length > 0) yield pending.shift() as EventSourceMessage;
    }
  } catch (error) {
    if (error instanceof UpstreamError) throw error;
    throw toUpstreamError(error, signal);
  } finally {
    // Stopping early (client gone, first-token timeout) must release the upstream connection.
    if (!body.destroyed) body.destroy();
  }
}

/** JSON.parse for foreign input: a parse failure is the upstream's fault, reported as such. */
export function parseUpstreamJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError({
      message: 'Upstream sent invalid JSON',
      kind: 'invalid-response',
      raw: text.slice(0, 500),
    });
  }
}
