import type { Usage } from '../../../spec/usage.js';

/**
 * The parts of OpenAI chat-completions replies the adapter reads, checked field by field: a
 * foreign server may omit or mistype any of them, and a wrong type reads as absent.
 */
const asRecord = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
const asString = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
/** A token count; Infinity (what JSON.parse makes of 1e999) is kept: billing caps counts at the context. */
const asCount = (value: unknown): number => (typeof value === 'number' && value > 0 ? value : 0);

export function readOpenAiUsage(value: unknown): Usage | undefined {
  const usage = asRecord(value);
  if (!usage) return undefined;
  const prompt = asRecord(usage.prompt_tokens_details);
  const completion = asRecord(usage.completion_tokens_details);
  return {
    inputTokens: asCount(usage.prompt_tokens),
    outputTokens: asCount(usage.completion_tokens),
    cachedInputTokens: asCount(prompt?.cached_tokens),
    cacheWriteTokens: asCount(prompt?.cache_write_tokens),
    reasoningTokens: asCount(completion?.reasoning_tokens),
  };
}

export interface OpenAiToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments?: string;
}

export interface OpenAiChoiceView {
  content?: string;
  reasoning?: string;
  refusal?: string;
  toolCalls: OpenAiToolCallDelta[];
  finishReason?: string;
}

/**
 * A tool call's arguments as text. The protocol sends a JSON string; some compatible servers send
 * the object itself, which is written out as JSON rather than dropped (the call would read as having
 * no arguments).
 */
function argumentsText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : undefined;
}

/** The first choice of a reply (`message`) or chunk (`delta`). Reasoning arrives under either name. */
/**
 * `content` given as a list of parts, as Mistral's reasoning models answer (whole and in stream
 * deltas): `text` parts are the answer, `thinking` parts (whose `thinking` is itself a list of text
 * parts, or a string) the reasoning. Parts of other types carry nothing to show.
 * https://docs.mistral.ai/capabilities/reasoning/
 */
function contentParts(parts: unknown[]): { text: string; thinking?: string } {
  let text = '';
  let thinking: string | undefined;
  const textOf = (value: unknown): string => {
    if (typeof value === 'string') return value;
    if (!Array.isArray(value)) return '';
    let joined = '';
    for (const entry of value) joined += asString(asRecord(entry)?.text) ?? '';
    return joined;
  };
  for (const raw of parts) {
    const part = asRecord(raw);
    if (!part) continue;
    if (part.type === 'text') text += asString(part.text) ?? '';
    else if (part.type === 'thinking') thinking = (thinking ?? '') + textOf(part.thinking);
  }
  return thinking === undefined ? { text } : { text, thinking };
}

export function readOpenAiChoice(reply: unknown, field: 'message' | 'delta'): OpenAiChoiceView | undefined {
  const choices = asRecord(reply)?.choices;
  const choice = Array.isArray(choices) ? asRecord(choices[0]) : undefined;
  if (!choice) return undefined;
  const body = asRecord(choice[field]) ?? {};
  // The legacy `function_call` (one call, no id) that older compatible servers still answer with,
  // as the first tool call.
  const legacy = asRecord(body.function_call);
  const rawCalls = Array.isArray(body.tool_calls)
    ? body.tool_calls
    : legacy
      ? [{ index: 0, function: legacy }]
      : [];
  const toolCalls: OpenAiToolCallDelta[] = [];
  rawCalls.forEach((raw, position) => {
    const call = asRecord(raw);
    if (!call) return;
    const fn = asRecord(call.function);
    const args = argumentsText(fn?.arguments);
    toolCalls.push({
      index:
        Number.isSafeInteger(call.index) && (call.index as number) >= 0 ? (call.index as number) : position,
      // An empty id is none: some servers repeat `"id": ""` on every continuation chunk.
      ...(asString(call.id) ? { id: asString(call.id) } : {}),
      ...(asString(fn?.name) !== undefined ? { name: asString(fn?.name) } : {}),
      ...(args !== undefined ? { arguments: args } : {}),
    });
  });
  const view: OpenAiChoiceView = { toolCalls };
  let content = asString(body.content);
  let reasoning = asString(body.reasoning_content) ?? asString(body.reasoning);
  if (Array.isArray(body.content)) {
    const parts = contentParts(body.content);
    content = parts.text;
    if (parts.thinking !== undefined) reasoning = (reasoning ?? '') + parts.thinking;
  }
  if (content !== undefined) view.content = content;
  if (reasoning !== undefined) view.reasoning = reasoning;
  const refusal = asString(body.refusal);
  if (refusal !== undefined) view.refusal = refusal;
  const finish = asString(choice.finish_reason);
  if (finish !== undefined) view.finishReason = finish;
  return view;
}

export function readOpenAiIdentity(reply: unknown): { id?: string; model?: string } {
  const record = asRecord(reply) ?? {};
  const identity: { id?: string; model?: string } = {};
  const id = asString(record.id);
  if (id !== undefined) identity.id = id;
  const model = asString(record.model);
  if (model !== undefined) identity.model = model;
  return identity;
}

/** An error object inside a 200 stream (`{"error": {...}}`), as several compatible servers send. */
export function readOpenAiStreamError(chunk: unknown): { message: string; code: number | null } | undefined {
  const error = asRecord(asRecord(chunk)?.error);
  if (!error) return undefined;
  // An HTTP status or nothing: a code like 400.5 would become the reply's status.
  const code = Number.isInteger(error.code) ? (error.code as number) : null;
  return { message: asString(error.message) ?? 'Upstream stream error', code };
}
