import type { GenerationRequest } from '../../../spec/generation-request.js';

export const hasTools = (request: GenerationRequest): boolean => (request.tools?.length ?? 0) > 0;

/**
 * Whether the request's tool choice goes to the provider. OpenAI and Gemini refuse one in a request
 * without tools; there `auto` and `none` change nothing and are left out. A choice that demands a
 * tool is kept, for the provider to refuse (the surfaces refuse it first).
 */
export const sendsToolChoice = (
  request: GenerationRequest,
): request is GenerationRequest & { toolChoice: NonNullable<GenerationRequest['toolChoice']> } =>
  request.toolChoice !== undefined &&
  (hasTools(request) || (request.toolChoice !== 'auto' && request.toolChoice !== 'none'));
