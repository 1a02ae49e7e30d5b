import type { FinishReason } from '../../../spec/finish-reason.js';
import type { ReasoningFormat } from '../../../spec/generation-request.js';
import type { GenerationInfo, GenerationSummary } from '../dialect.js';
import { labelled } from '../shared/labelled-reasoning.js';
import { billedCost, costSplit } from '../shared/usage-cost.js';
import type { ResponsesBody } from './responses-body-schema.js';

/**
 * The Response resource (spec §2.7, OpenAPI `OpenResponsesResult`) shared by the JSON result and
 * the stream's lifecycle events, so both always carry the same fields in the same order.
 */

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface OutputTextPart {
  type: 'output_text';
  text: string;
  annotations: unknown[];
}

/** The model declining to answer (OpenAI's `refusal` content). */
export interface RefusalPart {
  type: 'refusal';
  refusal: string;
}

export interface MessageItem {
  type: 'message';
  id: string;
  role: 'assistant';
  status: ItemStatus;
  content: Array<OutputTextPart | RefusalPart>;
}

/** Reasoning travels as `reasoning_text` content (raw reasoning); `summary` stays empty. */
export interface ReasoningItem extends ReasoningSeal {
  type: 'reasoning';
  id: string;
  status: ItemStatus;
  summary: Array<{ type: 'summary_text'; text: string }>;
  content: Array<{ type: 'reasoning_text'; text: string }>;
}

/**
 * What a provider signed in a reasoning item, which the client sends back in the next request's
 * `input` ahead of the item it preceded: Anthropic's thinking `signature`; as `encrypted_content`,
 * Anthropic's redacted thinking or Gemini's thought signature. `format` says whose.
 */
export interface ReasoningSeal {
  signature?: string;
  encrypted_content?: string;
  format?: ReasoningFormat;
}

/**
 * A signed block's seal: Gemini's signature and redacted data are opaque content, Anthropic's a
 * signature. `encrypted_content` is labelled with its format (`google-gemini-v1:…`,
 * ../shared/labelled-reasoning.ts): clients that rebuild items from OpenAI's typed fields keep it
 * and drop `format`, and the label still says whose it is.
 */
export function sealOf(block: {
  signature?: string;
  redactedData?: string;
  format?: ReasoningFormat;
}): ReasoningSeal | undefined {
  const format = block.format ?? 'unknown';
  const opaque = (value: string) => (format === 'unknown' ? value : labelled(value, format));
  if (block.redactedData !== undefined) return { encrypted_content: opaque(block.redactedData), format };
  if (block.signature === undefined) return undefined;
  return format === 'google-gemini-v1'
    ? { encrypted_content: opaque(block.signature), format }
    : { signature: block.signature, format };
}

export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: ItemStatus;
}

/**
 * A generated image (reference `OutputItemImageGenerationCall`, OpenAI's image_generation_call):
 * `result` is its base64 data, which an upstream sends whole, so the item is completed when it
 * is written (its `output_item.added` alone shows it in progress, without the data).
 */
export interface ImageGenerationCallItem {
  type: 'image_generation_call';
  id: string;
  status: 'in_progress' | 'completed';
  result: string | null;
}

export type OutputItem = MessageItem | ReasoningItem | FunctionCallItem | ImageGenerationCallItem;

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  /** `image_tokens` only when the answer held images. */
  output_tokens_details: { reasoning_tokens: number; image_tokens?: number };
  total_tokens: number;
  cost: number;
  is_byok: boolean;
  cost_details: {
    upstream_inference_cost: number | null;
    upstream_inference_input_cost: number;
    upstream_inference_output_cost: number;
  };
}

/** The request settings a Response repeats back. */
export type ResponseEcho = ReturnType<typeof echoRequest>;

export interface ResponseObject extends ResponseEcho {
  id: string;
  object: 'response';
  created_at: number;
  completed_at: number | null;
  status: ResponseStatus;
  model: string;
  output: OutputItem[];
  output_text?: string;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  usage: ResponsesUsage | null;
  error_type?: string;
  switchyard_metadata?: Record<string, unknown>;
}

export function echoRequest(body: ResponsesBody) {
  return {
    instructions: body.instructions ?? null,
    metadata: body.metadata ?? null,
    tools: body.tools ?? [],
    tool_choice: (body.tool_choice ?? 'auto') as 'auto',
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    temperature: body.temperature ?? null,
    top_p: body.top_p ?? null,
    presence_penalty: body.presence_penalty ?? null,
    frequency_penalty: body.frequency_penalty ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: body.max_tool_calls ?? null,
    reasoning: body.reasoning ?? null,
    text: body.text ?? { format: { type: 'text' as const } },
    truncation: body.truncation ?? null,
    service_tier: body.service_tier ?? null,
    store: false as const,
    background: false as const,
    previous_response_id: null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    safety_identifier: body.safety_identifier ?? null,
    user: body.user ?? null,
  };
}

/** How a generation ended, in Response terms. */
export interface Outcome {
  status: Exclude<ResponseStatus, 'in_progress'>;
  incompleteDetails: ResponseObject['incomplete_details'];
  error: ResponseObject['error'];
  errorType?: string;
}

export const COMPLETED: Outcome = { status: 'completed', incompleteDetails: null, error: null };
export const CUT_AT_MAX_OUTPUT_TOKENS: Outcome = {
  status: 'incomplete',
  incompleteDetails: { reason: 'max_output_tokens' },
  error: null,
};

export function outcomeOfFinish(reason: FinishReason | null): Outcome {
  switch (reason) {
    case 'length':
      return CUT_AT_MAX_OUTPUT_TOKENS;
    case 'content-filter':
      return { status: 'incomplete', incompleteDetails: { reason: 'content_filter' }, error: null };
    case 'error':
      return {
        status: 'failed',
        incompleteDetails: null,
        error: { code: 'server_error', message: 'The model stopped with an error' },
        errorType: 'server',
      };
    default:
      return COMPLETED;
  }
}

/** The status of the item that was still being written when the response ended this way. */
export const lastItemStatus = (outcome: Outcome): ItemStatus =>
  outcome.status === 'completed' ? 'completed' : 'incomplete';

export function responsesUsage(summary: GenerationSummary): ResponsesUsage {
  const { usage } = summary;
  const split = costSplit(summary);
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: {
      cached_tokens: usage.cachedInputTokens,
      cache_write_tokens: usage.cacheWriteTokens,
    },
    output_tokens: usage.outputTokens,
    output_tokens_details: {
      reasoning_tokens: usage.reasoningTokens,
      ...(usage.imageOutputTokens ? { image_tokens: usage.imageOutputTokens } : {}),
    },
    total_tokens: usage.inputTokens + usage.outputTokens,
    ...billedCost(summary),
    cost_details: {
      upstream_inference_cost: null,
      upstream_inference_input_cost: split.input,
      upstream_inference_output_cost: split.output,
    },
  };
}

/** A response that has not finished: what `response.created` and `response.in_progress` carry. */
export function inProgressResponse(info: GenerationInfo, echo: ResponseEcho): ResponseObject {
  return {
    id: info.id,
    object: 'response',
    created_at: info.createdAt,
    completed_at: null,
    status: 'in_progress',
    model: info.model,
    output: [],
    error: null,
    incomplete_details: null,
    ...echo,
    usage: null,
  };
}

/** A finished response: completed, incomplete or failed, with usage and cost. */
export function finishedResponse(options: {
  info: GenerationInfo;
  echo: ResponseEcho;
  outcome: Outcome;
  output: OutputItem[];
  outputText: string;
  summary: GenerationSummary;
}): ResponseObject {
  const { info, outcome, summary } = options;
  const response: ResponseObject = {
    id: info.id,
    object: 'response',
    created_at: info.createdAt,
    completed_at: outcome.status === 'failed' ? null : Math.max(info.createdAt, nowSeconds()),
    status: outcome.status,
    model: info.model,
    output: options.output,
    output_text: options.outputText,
    error: outcome.error,
    incomplete_details: outcome.incompleteDetails,
    ...options.echo,
    usage: responsesUsage(summary),
  };
  if (outcome.errorType) response.error_type = outcome.errorType;
  if (summary.metadata) response.switchyard_metadata = summary.metadata;
  return response;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * Item ids derived from the generation id (`gen-123-abc` → `msg_123-abc`), so a response's items
 * can be traced back to its generation. Later items of the same kind get a counter suffix.
 */
export function itemIds(generationId: string) {
  const base = generationId.startsWith('gen-') ? generationId.slice(4) : generationId;
  const numbered = (prefix: string, count: number) =>
    count === 0 ? `${prefix}_${base}` : `${prefix}_${base}_${count}`;
  return {
    message: (count: number) => numbered('msg', count),
    reasoning: (count: number) => numbered('rs', count),
    functionCall: (index: number) => `fc_${base}_${index}`,
    imageGeneration: (count: number) => numbered('ig', count),
  };
}
