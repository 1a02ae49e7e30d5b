import type { GenerationRequest } from '../../../spec/generation-request.js';
import { UnsupportedRequestError } from '../../../spec/upstream-error.js';

/**
 * Refuses image output on a protocol that cannot return generated images (OpenAI chat completions
 * and Responses as this gateway speaks them, Anthropic Messages, the demo provider): an answer in
 * text alone would silently drop what the caller asked for. Routing already keeps such requests to
 * models that make images; this holds when one of them is served by such a protocol (OpenAI's
 * gpt-5-image through the Responses API), so routing moves on to a candidate that can return them.
 */
export function refuseImageOutput(request: GenerationRequest, protocol: string): void {
  if (request.outputModalities?.includes('image'))
    throw new UnsupportedRequestError(
      `Image output was requested, and the ${protocol} protocol cannot return generated images`,
    );
}
