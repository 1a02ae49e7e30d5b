import type { SnapshotEndpoint } from '../../catalog/snapshot-types.js';
import type { GenerationRequest } from '../../spec/generation-request.js';

/**
 * Sampling parameters an endpoint may not take, by the name the catalogue's `supported_parameters`
 * gives them: those providers refuse outright (OpenAI's gpt-5 and o-series: `temperature`, `top_p`,
 * the penalties; the newest Claude models: `temperature`, `top_p`), which would end the request with
 * a 400 that no fallback follows. The catalogue's lists are reliable for these and not for others:
 * `stop`, `seed` and `top_k` are missing from many endpoints that take them (every Gemini endpoint
 * lacks `top_k`, Gemini 3's lack `stop`), so those always go, as do tools and response formats,
 * without which the answer would be a different one (they are preferences among endpoints instead,
 * plan-attempts.ts).
 */
const SAMPLING: ReadonlyArray<readonly [keyof GenerationRequest, string]> = [
  ['temperature', 'temperature'],
  ['topP', 'top_p'],
  ['frequencyPenalty', 'frequency_penalty'],
  ['presencePenalty', 'presence_penalty'],
];

/**
 * The request as one endpoint is sent it: its upstream model id, and the sampling parameters its
 * catalogue record does not list left out, as the reference's gateway ignores a parameter the
 * chosen provider does not support (`provider.require_parameters` keeps such endpoints out
 * instead). Reasoning options go only where `reasoning` or `include_reasoning` is listed, and a
 * listed `reasoning` marks the model as one that reasons (`reasoningModel`; false where the list
 * leaves it out). A `json_schema` format and strict tools always go, marked `structuredOutputs:
 * false` where `structured_outputs` is not listed, for the adapters that must ask for them another
 * way (or not strictly). An endpoint that lists no parameters at all (one configured without the
 * list) is sent everything. Image options go only to a model whose output modalities (its catalogue
 * record's, `modelOutputModalities`) list `image`, which the request then marks as one that makes
 * images (`imageModel`): clients that send one body to many models send them to text models too,
 * which have no use for them.
 */
export function requestFor(
  generation: Omit<GenerationRequest, 'model'>,
  endpoint: Pick<SnapshotEndpoint, 'provider_model_id' | 'supported_parameters'>,
  modelOutputModalities?: readonly string[],
): GenerationRequest {
  const request: GenerationRequest = { ...generation, model: endpoint.provider_model_id };
  // Set only where it changes something (`imageModel` only on image models): two properties added
  // to every request's copy measured +3% CPU per chat request (session 38, bench:side-by-side).
  if (modelOutputModalities?.includes('image')) request.imageModel = true;
  else if (modelOutputModalities && request.imageConfig !== undefined) request.imageConfig = undefined;
  const supported = endpoint.supported_parameters;
  if (supported.length === 0) return request;
  request.reasoningModel = supported.includes('reasoning');
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
  if (
    (request.responseFormat?.type === 'json_schema' || request.tools?.some((tool) => tool.strict)) &&
    !supported.includes('structured_outputs')
  )
    request.structuredOutputs = false;
  return request;
}
