import { MAX_JSON_DEPTH, pathTooDeepIn } from '../../../platform/json-depth.js';
import type { InputItem } from '../../../spec/generation-request.js';
import { UnsupportedRequestError } from '../../../spec/upstream-error.js';

/**
 * A function call's arguments as the JSON object that protocols sending them as an object want
 * (Anthropic's `tool_use.input`, Gemini's `functionCall.args`). Arguments that are not one, or nest
 * deeper than MAX_JSON_DEPTH, are the caller's mistake (the gateway only relays what a model or
 * client wrote), so they fail the request with an UnsupportedRequestError rather than being
 * replaced by `{}`, which would silently change the conversation; routing may still pick a protocol
 * that carries them as text. Empty arguments are the one exception: several models write "" for a
 * call without parameters.
 */
export function argumentsObject(
  item: Extract<InputItem, { type: 'function-call' }>,
): Record<string, unknown> {
  if (item.arguments.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(item.arguments);
  } catch {
    throw new UnsupportedRequestError(
      `Arguments of function call ${item.callId} (${item.name}) are not valid JSON`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UnsupportedRequestError(
      `Arguments of function call ${item.callId} (${item.name}) are not a JSON object`,
    );
  }
  if (pathTooDeepIn(item.arguments, parsed)) {
    throw new UnsupportedRequestError(
      `Arguments of function call ${item.callId} (${item.name}) nest more than ${MAX_JSON_DEPTH} levels deep`,
    );
  }
  return parsed as Record<string, unknown>;
}
