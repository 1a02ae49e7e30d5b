import type { Dialect } from '../dialect.js';
import { type MessagesBody, messagesBodySchema } from './messages-body-schema.js';
import { renderMessagesFailure } from './messages-errors.js';
import { createMessagesStreamEncoder } from './messages-stream-encoder.js';
import { parseMessagesRequest } from './parse-messages-request.js';
import { renderMessagesResult } from './render-messages-result.js';

/**
 * `POST /messages`: the Anthropic Messages surface. Anthropic wire in (the official SDKs work
 * unmodified), canonical request out; canonical results back as Anthropic messages, named SSE
 * events and Anthropic's error envelope.
 */
export const messagesDialect: Dialect<MessagesBody> = {
  name: 'messages',
  bodySchema: messagesBodySchema,
  parse: parseMessagesRequest,
  renderResult: renderMessagesResult,
  streamEncoder: createMessagesStreamEncoder,
  renderFailure: renderMessagesFailure,
};
