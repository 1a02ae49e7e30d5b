import type { Dialect } from '../dialect.js';
import { renderStandardFailure } from '../shared/error-envelope.js';
import { parseResponsesRequest } from './parse-responses-request.js';
import { renderResponsesResult } from './render-responses-result.js';
import { type ResponsesBody, ResponsesBodySchema } from './responses-body-schema.js';
import { createResponsesStreamEncoder } from './responses-stream-encoder.js';

/** `POST /responses`: the OpenAI Responses wire format (spec §4.6, reference §1.3), stateless. */
export const responsesDialect: Dialect<ResponsesBody> = {
  name: 'responses',
  bodySchema: ResponsesBodySchema,
  parse: parseResponsesRequest,
  renderResult: renderResponsesResult,
  streamEncoder: createResponsesStreamEncoder,
  renderFailure: renderStandardFailure,
};
