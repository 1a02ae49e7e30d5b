import type {
  ContentPart,
  GenerationRequest,
  InputItem,
  ReasoningOptions,
} from '../../../spec/generation-request.js';
import { UnsupportedRequestError } from '../../../spec/upstream-error.js';
import { argumentsObject } from '../shared/function-arguments.js';

type AnthropicSource =
  | { type: 'url'; url: string }
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'text'; media_type: 'text/plain'; data: string };

type AnthropicContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: AnthropicSource }
  | { type: 'document'; source: AnthropicSource; title?: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string };

interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: AnthropicContentBlock[];
}

/**
 * Anthropic requires `max_tokens` on every request, where the canonical request leaves it optional.
 * 4096 is the largest output every current Claude model accepts (Claude 3 Haiku tops out there),
 * so the default never turns a valid request into a 400.
 */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * Thinking budgets for effort levels, since Anthropic takes a token budget rather than an effort.
 * 1024 is Anthropic's minimum budget; `medium` is near the 10k its extended-thinking guide starts
 * from; `max` is the largest budget that, plus the default answer room, stays within 32k output
 * tokens, the lowest limit among the thinking models (Claude Opus 4).
 */
const EFFORT_BUDGETS: Record<Exclude<ReasoningOptions['effort'], 'none' | undefined>, number> = {
  minimal: 1024,
  low: 4096,
  medium: 10_000,
  high: 16_000,
  xhigh: 24_000,
  max: 32_000 - DEFAULT_MAX_TOKENS,
};
const MIN_THINKING_BUDGET = 1024;

/** `data:<media type>;base64,<data>`; other data URLs (percent-encoded) are not accepted. */
function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+)(?:;[^;,]+)*;base64,(.*)$/s.exec(url);
  if (!match) return undefined;
  return { mediaType: match[1] as string, data: match[2] as string };
}

function sourceFor(url: string, what: string): AnthropicSource {
  if (!url.startsWith('data:')) return { type: 'url', url };
  const parsed = parseDataUrl(url);
  if (!parsed) throw new UnsupportedRequestError(`The ${what} data URL is not base64-encoded`);
  return { type: 'base64', media_type: parsed.mediaType, data: parsed.data };
}

function convertPart(part: ContentPart): AnthropicContentBlock | undefined {
  switch (part.type) {
    case 'text':
      // Anthropic rejects empty text blocks ("text content blocks must be non-empty").
      return part.text === '' ? undefined : { type: 'text', text: part.text };
    case 'image':
      return { type: 'image', source: sourceFor(part.url, 'image') };
    case 'file': {
      let source = sourceFor(part.url, 'file');
      // Plain-text documents travel as text, not base64: Anthropic's base64 documents are PDF only.
      if (source.type === 'base64' && (part.mediaType ?? source.media_type) === 'text/plain') {
        source = {
          type: 'text',
          media_type: 'text/plain',
          data: Buffer.from(source.data, 'base64').toString(),
        };
      } else if (source.type === 'base64' && part.mediaType) {
        source = { ...source, media_type: part.mediaType };
      }
      return { type: 'document', source, ...(part.filename ? { title: part.filename } : {}) };
    }
    case 'audio':
      throw new UnsupportedRequestError('Anthropic Messages does not accept audio input');
  }
}

/**
 * Input items → the system prompt and user/assistant turns. Anthropic has no system role inside
 * `messages`, so system and developer turns join `instructions` (their text only); it also wants
 * turns to alternate, so consecutive blocks of one role merge into one turn. Tool calls belong to
 * the assistant, tool results to the user.
 */
export function convertToAnthropicMessages(
  instructions: string | undefined,
  input: InputItem[],
): { system: string | undefined; messages: AnthropicMessage[] } {
  const system: string[] = instructions ? [instructions] : [];
  const messages: AnthropicMessage[] = [];
  const append = (role: AnthropicMessage['role'], blocks: AnthropicContentBlock[]) => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const item of input) {
    if (item.type === 'message') {
      if (item.role === 'system' || item.role === 'developer') {
        const text = item.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
        if (text) system.push(text);
      } else {
        append(
          item.role,
          item.content.flatMap((part) => convertPart(part) ?? []),
        );
      }
    } else if (item.type === 'function-call') {
      append('assistant', [
        { type: 'tool_use', id: item.callId, name: item.name, input: argumentsObject(item) },
      ]);
    } else {
      append('user', [{ type: 'tool_result', tool_use_id: item.callId, content: item.output }]);
    }
  }
  return { system: system.length > 0 ? system.join('\n\n') : undefined, messages };
}

/**
 * The thinking budget and the `max_tokens` that goes with it. Anthropic counts thinking inside
 * `max_tokens` and requires budget < max_tokens. A budget the caller gave is sent as is (a
 * conflict is theirs to hear about from Anthropic); one derived from an effort level is ours, so
 * it is clamped below the caller's `maxOutputTokens`, and dropped when that leaves less than the
 * 1024 minimum. With no `maxOutputTokens`, the default answer room comes on top of the budget.
 */
function planThinking(request: GenerationRequest): { budget: number | undefined; maxTokens: number } {
  const explicitMax = request.maxOutputTokens;
  const budget = thinkingBudget(request.reasoning, explicitMax);
  return { budget, maxTokens: explicitMax ?? DEFAULT_MAX_TOKENS + (budget ?? 0) };
}

function thinkingBudget(reasoning: ReasoningOptions | undefined, explicitMax: number | undefined) {
  if (!reasoning || reasoning.enabled === false || reasoning.effort === 'none') return undefined;
  if (reasoning.maxTokens !== undefined) return reasoning.maxTokens;
  // `enabled: true` with neither budget nor effort asks for reasoning at a default level.
  const effort = reasoning.effort ?? (reasoning.enabled ? 'medium' : undefined);
  if (effort === undefined) return undefined;
  const budget = Math.min(EFFORT_BUDGETS[effort], (explicitMax ?? Number.POSITIVE_INFINITY) - 1);
  return budget < MIN_THINKING_BUDGET ? undefined : budget;
}

function convertToolChoice(request: GenerationRequest): Record<string, unknown> | undefined {
  const choice = request.toolChoice;
  if (choice === 'none') return { type: 'none' };
  const base =
    choice === undefined || choice === 'auto'
      ? { type: 'auto' }
      : choice === 'required'
        ? { type: 'any' }
        : { type: 'tool', name: choice.name };
  if (request.parallelToolCalls === false) return { ...base, disable_parallel_tool_use: true };
  return choice === undefined ? undefined : base;
}

/**
 * The canonical request as an Anthropic Messages body. Fields Anthropic has no counterpart for
 * (seed, frequency and presence penalties, response format) are left out rather than rejected,
 * as other adapters do with unsupported sampling fields.
 */
export function convertToAnthropicMessagesRequest(
  request: GenerationRequest,
  options: { stream: boolean },
): Record<string, unknown> {
  const { system, messages } = convertToAnthropicMessages(request.instructions, request.input);
  const thinking = planThinking(request);
  const body: Record<string, unknown> = { model: request.model, max_tokens: thinking.maxTokens };
  if (system !== undefined) body.system = system;
  body.messages = messages;
  if (options.stream) body.stream = true;
  if (request.tools?.length) {
    body.tools = request.tools.map((tool) => ({
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      input_schema: tool.parameters,
    }));
    // Anthropic rejects tool_choice without tools.
    const toolChoice = convertToolChoice(request);
    if (toolChoice) body.tool_choice = toolChoice;
  }
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.topK !== undefined) body.top_k = request.topK;
  if (request.stop?.length) body.stop_sequences = request.stop;
  if (request.user !== undefined) body.metadata = { user_id: request.user };
  if (thinking.budget !== undefined) body.thinking = { type: 'enabled', budget_tokens: thinking.budget };
  return body;
}
