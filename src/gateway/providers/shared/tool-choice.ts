import type { GenerationRequest } from '../../../spec/generation-request.js';

/**
 * Whether a tool choice changes nothing when the request has no tools (`auto`, `none`): such a
 * choice is left out of a request without tools, which OpenAI and Gemini refuse it in. A choice
 * that demands a tool is kept, for the provider to refuse (the surfaces refuse it first).
 */
export const meansNoTool = (choice: NonNullable<GenerationRequest['toolChoice']>): boolean =>
  choice === 'auto' || choice === 'none';
