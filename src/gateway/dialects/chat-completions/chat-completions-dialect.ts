import type { Dialect } from '../dialect.js';
import { renderStandardFailure } from '../shared/error-envelope.js';
import { type ChatCompletionsBody, ChatCompletionsBodySchema } from './chat-completions-schema.js';
import { createChatCompletionsStreamEncoder } from './chat-completions-stream-encoder.js';
import { parseChatCompletionsRequest } from './parse-chat-completions-request.js';
import { renderChatCompletion } from './render-chat-completion.js';

/**
 * `POST /chat/completions`: the OpenAI Chat Completions wire format with the reference gateway's
 * additions (`models` fallbacks, `provider` preferences, `usage.cost`, in-band stream errors).
 */
export const chatCompletionsDialect: Dialect<ChatCompletionsBody> = {
  name: 'chat-completions',
  bodySchema: ChatCompletionsBodySchema,
  parse: parseChatCompletionsRequest,
  renderResult: (body, info, result, summary) => renderChatCompletion(body, info, result, summary),
  streamEncoder: createChatCompletionsStreamEncoder,
  renderFailure: renderStandardFailure,
};
