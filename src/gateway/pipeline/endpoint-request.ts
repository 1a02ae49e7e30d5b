import type { SnapshotEndpoint } from '../../catalog/snapshot-types.js';
import type { GenerationRequest } from '../../spec/generation-request.js';

/**
 * Sampling parameters an endpoint may not take, by the name the catalogue's `supported_parameters`
 * gives them. A provider refuses some of them outright (OpenAI's gpt-5 family: `temperature`,
 * `top_p`; gpt-4o: `reasoning_effort`), which would end the request with a 400 that no fallback
 * follows. Tools and response formats are not among them: without those the answer would be a
 * different one, so they are preferences among endpoints instead (plan-attempts.ts).
 */
const SAMPLING: ReadonlyArray<readonly [keyof GenerationRequest, string]> = [
  ['temperature', 'temperature'],
  ['topP', 'top_p'],
  ['topK', 'top_k'],
  ['frequencyPenalty', 'frequency_penalty'],
  ['presencePenalty', 'presence_penalty'],
  ['seed', 'seed'],
  ['stop', 'stop'],
];

/**
 * The request as one endpoint is sent it: its upstream model id, and the sampling parameters its
 * catalogue record does not list left out, as the reference's gateway ignores a parameter the
 * chosen provider does not support (`provider.require_parameters` keeps such endpoints out
 * instead). Reasoning options go only where `reasoning` or `include_reasoning` is listed. An
 * endpoint that lists no parameters at all (one configured without the list) is sent everything.
 */
export function requestFor(
  generation: Omit<GenerationRequest, 'model'>,
  endpoint: Pick<SnapshotEndpoint, 'provider_model_id' | 'supported_parameters'>,
): GenerationRequest {
  const request: GenerationRequest = { ...generation, model: endpoint.provider_model_id };
  const supported = endpoint.supported_parameters;
  if (supported.length === 0) return request;
  for (const [field, name] of SAMPLING) {
    if (request[field] !== undefined && !supported.includes(name)) request[field] = undefined as never;
  }
  if (
    request.reasoning !== undefined &&
    !supported.includes('reasoning') &&
    !supported.includes('include_reasoning')
  ) {
    request.reasoning = undefined;
  }
  return request;
}
