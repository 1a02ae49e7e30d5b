import type { FunctionTool } from '../../../spec/generation-request.js';
import { invalidParameter } from './invalid-parameter.js';

/**
 * Rules on tools of the OpenAI-shaped surfaces: OpenAI's custom (freeform) tools, which no provider
 * protocol here can carry (both surfaces), and `tool_choice` of type `allowed_tools` (chat
 * completions; `/responses` takes `auto` alone, spec 4.6).
 */

/** The 400 for a custom tool (OpenAI's freeform-input tools) at `field` (its `type`). */
export const customToolRefused = (field: string) =>
  invalidParameter(field, '"custom": custom tools are not supported (only function tools are)');

/**
 * `tool_choice: {type: "allowed_tools"}`: the declared tools narrowed to the listed ones, kept in
 * their declared order. Every listed name must be a declared tool; `field` names where each is.
 * The canonical request has no such choice: the narrowed list is what reaches the provider, with
 * the mode (`auto` or `required`) as the choice.
 */
export function allowedTools(
  declared: FunctionTool[] | undefined,
  listed: Array<{ name: string; field: string }>,
): FunctionTool[] {
  // A set, so that a long list against many tools stays linear.
  const declaredNames = new Set((declared ?? []).map((tool) => tool.name));
  for (const { name, field } of listed) {
    if (!declaredNames.has(name)) throw invalidParameter(field, `names no tool of body.tools: '${name}'`);
  }
  const names = new Set(listed.map((entry) => entry.name));
  return (declared ?? []).filter((tool) => names.has(tool.name));
}
