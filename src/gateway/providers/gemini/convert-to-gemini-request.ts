import { pathTooDeepIn } from '../../../platform/json-depth.js';
import type {
  ContentPart,
  GenerationRequest,
  InputItem,
  ReasoningBlock,
} from '../../../spec/generation-request.js';
import { UnsupportedRequestError } from '../../../spec/upstream-error.js';
import { standardBase64 } from '../shared/base64-data.js';
import { argumentsObject } from '../shared/function-arguments.js';
import { thinkingRoom } from '../shared/thinking-room.js';
import { sendsToolChoice } from '../shared/tool-choice.js';
import { mediaAfterResults } from '../shared/tool-result-media.js';

type GeminiPart = (
  | { text: string }
  | { inlineData: { mimeType: string; data: string } }
  | { fileData: { mimeType: string; fileUri: string } }
  | { functionCall: { id: string; name: string; args: Record<string, unknown> } }
  | { functionResponse: { id: string; name: string; response: Record<string, unknown> } }
) & { thoughtSignature?: string };

/**
 * What Gemini takes in place of a function call's thought signature that was never received (a
 * conversation begun with another model, or a client that dropped it): its 3.x models refuse a
 * function call in history without one ("missing a thought_signature"), and the docs name this
 * value as the one that skips the check. https://ai.google.dev/gemini-api/docs/thought-signatures
 */
export const SKIP_SIGNATURE_CHECK = 'skip_thought_signature_validator';

/** Models from before thought signatures were checked, which are sent none that Gemini did not give. */
const UNCHECKED_MODELS = /^(?:models\/)?gemini-(?:1|2)[.-]/i;

/**
 * The Gemini thought signature an item's reasoning carries: the last one, the nearest to the item
 * (earlier ones belong to what came before it). Another provider's is never sent.
 */
function geminiSignature(reasoning: readonly ReasoningBlock[] | undefined): string | undefined {
  if (!reasoning) return undefined;
  for (let index = reasoning.length - 1; index >= 0; index--) {
    const block = reasoning[index] as ReasoningBlock;
    if (block.format === 'google-gemini-v1' && block.signature) return block.signature;
  }
  return undefined;
}

/** A model turn's first function call gets a placeholder signature if none of its calls has one. */
function signFunctionCalls(contents: GeminiContent[]): void {
  for (const content of contents) {
    if (content.role !== 'model') continue;
    let first: GeminiPart | undefined;
    let signed = false;
    for (const part of content.parts) {
      if (!('functionCall' in part)) continue;
      first ??= part;
      if (part.thoughtSignature !== undefined) signed = true;
    }
    if (first && !signed) first.thoughtSignature = SKIP_SIGNATURE_CHECK;
  }
}

interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

/**
 * Sent for a file by URL when the caller gave no media type. Gemini reads the bytes it fetches,
 * but a wrong type can still be refused; callers that know the type should say so.
 */
const UNKNOWN_MEDIA_TYPE = 'application/octet-stream';

/** The largest seed Gemini takes (an int32). */
const MAX_GEMINI_SEED = 2_147_483_647;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A `data:` URL as inline base64; a URL-encoded (non-base64) payload is re-encoded. */
function inlineData(url: string): GeminiPart {
  const match = /^data:([^;,]*)((?:;[^;,]*)*),(.*)$/s.exec(url);
  if (!match) throw new UnsupportedRequestError('Invalid data URL in message content');
  const [, mediaType, parameters = '', payload = ''] = match;
  const base64 = parameters.split(';').includes('base64');
  let text = payload;
  if (!base64) {
    try {
      text = decodeURIComponent(payload);
    } catch {
      throw new UnsupportedRequestError('Invalid data URL in message content: malformed %-encoding');
    }
  }
  return {
    inlineData: {
      mimeType: mediaType || 'text/plain',
      data: base64 ? standardBase64(payload) : Buffer.from(text, 'utf8').toString('base64'),
    },
  };
}

function byUrl(url: string, mediaType: string | undefined): GeminiPart {
  if (url.startsWith('data:')) return inlineData(url);
  return { fileData: { mimeType: mediaType ?? UNKNOWN_MEDIA_TYPE, fileUri: url } };
}

function convertPart(part: ContentPart): GeminiPart {
  switch (part.type) {
    case 'text':
      return { text: part.text };
    case 'image':
      // Gemini has no fidelity hint; `detail` is dropped.
      return byUrl(part.url, undefined);
    case 'file':
      return byUrl(part.url, part.mediaType);
    case 'audio':
      return { inlineData: { mimeType: `audio/${part.format}`, data: standardBase64(part.data) } };
  }
}

/**
 * A JSON object output is sent as is; anything else is wrapped, since `response` must be an object
 * (so is an object nesting deeper than MAX_JSON_DEPTH: as text it is sent whole).
 */
function functionResponseBody(output: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(output);
    if (isObject(parsed) && !pathTooDeepIn(output, parsed)) return parsed;
  } catch {
    // Plain text output.
  }
  return { content: output };
}

/**
 * Input items → Gemini contents. Gemini wants alternating `user`/`model` turns, so consecutive items
 * of one role are merged: function calls join the model turn, their outputs the user turn after it.
 * System and developer messages are left out; they go to `systemInstruction`.
 */
export function convertToGeminiContents(input: InputItem[]): GeminiContent[] {
  const contents: GeminiContent[] = [];
  // A response names its call's function, and carries the call's id (Gemini 3 gives calls ids and
  // matches responses by them: two calls of one function answered out of order would otherwise
  // swap; the Gemini Developer API takes `id` on both, which Vertex AI's own API does not, and
  // Vertex is not reached through this adapter). A later call with the same id (ids a client or another provider gave may repeat across
  // turns) replaces an earlier one.
  const callNames = new Map<string, string>();
  const append = (role: GeminiContent['role'], given: GeminiPart[]) => {
    // Gemini refuses empty text parts and turns without parts ("contents.parts must not be empty").
    const parts = given.filter((part) => !('text' in part && part.text === ''));
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const item of input) {
    if (item.type === 'message') {
      if (item.role === 'system' || item.role === 'developer') continue;
      // A generated image sent back (chat `images`, a Responses image_generation_call) is
      // `inlineData` in the model turn, as Gemini answered it, so a later turn can edit it.
      const parts = item.content.map(convertPart);
      // A text's signature came on the last part Gemini sent that the answer kept, and goes back
      // there: not on a generated image, whose own signature was not kept.
      const signature = item.role === 'assistant' ? geminiSignature(item.reasoning) : undefined;
      if (signature !== undefined) {
        for (let index = parts.length - 1; index >= 0; index--) {
          const part = item.content[index] as ContentPart;
          if ((part.type === 'text' && part.text === '') || (part.type === 'image' && part.generated))
            continue;
          (parts[index] as GeminiPart).thoughtSignature = signature;
          break;
        }
      }
      append(item.role === 'assistant' ? 'model' : 'user', parts);
    } else if (item.type === 'function-call') {
      callNames.set(item.callId, item.name);
      const signature = geminiSignature(item.reasoning);
      append('model', [
        {
          functionCall: { id: item.callId, name: item.name, args: argumentsObject(item) },
          ...(signature !== undefined ? { thoughtSignature: signature } : {}),
        },
      ]);
    } else {
      append('user', [
        {
          functionResponse: {
            id: item.callId,
            name: callNames.get(item.callId) ?? item.callId,
            // A failed tool's output is its error, as Gemini's convention has it.
            response: item.isError ? { error: item.output } : functionResponseBody(item.output),
          },
        },
      ]);
    }
  }
  return contents;
}

/** `instructions` and every system/developer turn, as one text; Gemini takes only text here. */
function systemText(request: GenerationRequest): string | undefined {
  const texts: string[] = request.instructions ? [request.instructions] : [];
  for (const item of request.input) {
    if (item.type !== 'message' || (item.role !== 'system' && item.role !== 'developer')) continue;
    const text = item.content
      .map((part) => {
        if (part.type !== 'text')
          throw new UnsupportedRequestError(`Gemini takes only text in ${item.role} messages`);
        return part.text;
      })
      .join('');
    if (text) texts.push(text);
  }
  return texts.length > 0 ? texts.join('\n\n') : undefined;
}

/**
 * Gemini refuses an OBJECT schema without properties ("should be non-empty for OBJECT type"); a
 * function without arguments is declared without `parameters` instead.
 */
function takesArguments(parameters: Record<string, unknown>): boolean {
  if (parameters.type !== 'object') return true;
  return isObject(parameters.properties) && Object.keys(parameters.properties).length > 0;
}

function toolConfig(choice: NonNullable<GenerationRequest['toolChoice']>): Record<string, unknown> {
  if (typeof choice === 'object') {
    return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.name] } };
  }
  const mode = { auto: 'AUTO', required: 'ANY', none: 'NONE' }[choice];
  return { functionCallingConfig: { mode } };
}

function generationConfig(request: GenerationRequest): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  if (request.maxOutputTokens !== undefined) config.maxOutputTokens = request.maxOutputTokens;
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.topP !== undefined) config.topP = request.topP;
  if (request.topK !== undefined) config.topK = request.topK;
  if (request.stop?.length) config.stopSequences = request.stop;
  if (request.seed !== undefined) {
    // Gemini reads the seed as a 32-bit integer and refuses a larger one; routing may move on to a
    // protocol that takes it.
    if (request.seed > MAX_GEMINI_SEED || request.seed < -MAX_GEMINI_SEED - 1)
      throw new UnsupportedRequestError(`Gemini takes a 32-bit seed, not ${request.seed}`);
    config.seed = request.seed;
  }
  const format = request.responseFormat;
  if (format?.type === 'json_object' || format?.type === 'json_schema') {
    config.responseMimeType = 'application/json';
  }
  // `responseJsonSchema` takes JSON Schema as clients write it (`additionalProperties`, `$ref`,
  // `const`…), where `responseSchema`, Google's OpenAPI subset, refuses those keywords with a 400.
  // https://ai.google.dev/api/generate-content#generationconfig
  if (format?.type === 'json_schema') config.responseJsonSchema = format.schema;
  const thinking = thinkingConfig(request);
  if (thinking) config.thinkingConfig = thinking;
  if (request.outputModalities || request.imageConfig) outputConfig(request, config);
  return config;
}

/**
 * What the answer may hold, as `responseModalities` (`["TEXT", "IMAGE"]`, `["IMAGE"]`; nothing when
 * the caller named none, which leaves the model's default), and the image options as
 * `imageConfig`. https://ai.google.dev/gemini-api/docs/image-generation
 */
function outputConfig(request: GenerationRequest, config: Record<string, unknown>): void {
  if (request.outputModalities)
    config.responseModalities = request.outputModalities.map((modality) => modality.toUpperCase());
  const image = request.imageConfig;
  if (!image) return;
  const imageConfig: Record<string, string> = {};
  if (image.aspectRatio !== undefined) imageConfig.aspectRatio = image.aspectRatio;
  if (image.imageSize !== undefined) imageConfig.imageSize = image.imageSize;
  if (Object.keys(imageConfig).length > 0) config.imageConfig = imageConfig;
}

/**
 * Gemini 2.5's thinking budgets: Flash and Flash-Lite think 0 (off) to 24,576 tokens, Pro 128 to
 * 32,768 and cannot turn thinking off. https://ai.google.dev/gemini-api/docs/thinking
 */
const BUDGET_RANGE = {
  flash: { min: 0, max: 24_576 },
  pro: { min: 128, max: 32_768 },
} as const;
const FLASH_LITE_MIN = 512;

/**
 * An effort level as Gemini 3's `thinkingLevel`: Flash takes minimal, low, medium and high, Pro low
 * and high (its `medium` and above are high).
 */
function thinkingLevel(effort: string, flash: boolean): string {
  if (effort === 'minimal') return flash ? 'minimal' : 'low';
  if (effort === 'low') return 'low';
  if (effort === 'medium') return flash ? 'medium' : 'high';
  return 'high';
}

/** Effort levels as 2.5 budgets (clamped to the model's range). */
const EFFORT_BUDGETS: Record<string, number> = {
  none: 0,
  minimal: 512,
  low: 1024,
  medium: 8192,
  high: 24_576,
  xhigh: 32_768,
  max: 32_768,
};

/**
 * The thinking settings: a budget the caller gave, or one for the effort level they named, or
 * thinking off when they turned reasoning off, each held to the model's range (Gemini refuses a
 * budget outside it); whether thought summaries come back. Gemini 3 takes levels instead of
 * budgets: an effort level becomes its `thinkingLevel`, and reasoning turned off asks its Flash
 * models for the `minimal` level (its Pro models cannot think less than `low`, and are sent none).
 * An effort that asks for no reasoning is the thinking's level only on models that think anyway.
 */
function thinkingConfig(request: GenerationRequest): Record<string, unknown> | undefined {
  const reasoning = request.reasoning;
  if (!reasoning) return undefined;
  const config: Record<string, unknown> = {};
  const off = reasoning.enabled === false || reasoning.effort === 'none';
  const model = request.model.replace(/^models\//, '').toLowerCase();
  if (/^gemini-2\.5-/.test(model)) {
    const range = model.includes('flash') ? BUDGET_RANGE.flash : BUDGET_RANGE.pro;
    let wanted = off ? 0 : reasoning.maxTokens;
    // An effort that asks for no reasoning (Anthropic's, without thinking) turns none on: Flash-Lite,
    // which thinks only when given a budget, gets none for it; the others think anyway.
    const wouldTurnOn = model.includes('flash-lite') && reasoning.effortAsksReasoning === false;
    if (wanted === undefined && reasoning.effort !== undefined && !wouldTurnOn) {
      wanted = Math.min(EFFORT_BUDGETS[reasoning.effort] ?? 0, thinkingRoom(request.maxOutputTokens));
    }
    if (wanted !== undefined) {
      let budget = Math.min(range.max, Math.max(range.min, wanted));
      // Flash-Lite thinks at least 512 tokens when it thinks at all.
      if (model.includes('flash-lite') && budget > 0) budget = Math.max(budget, FLASH_LITE_MIN);
      config.thinkingBudget = budget;
    }
  } else if (/^gemini-3/.test(model)) {
    const flash = model.includes('flash');
    if (off) {
      if (flash) config.thinkingLevel = 'minimal';
    } else if (reasoning.effort !== undefined) {
      config.thinkingLevel = thinkingLevel(reasoning.effort, flash);
    } else if (reasoning.maxTokens !== undefined) config.thinkingBudget = reasoning.maxTokens;
  } else if (reasoning.maxTokens !== undefined) {
    config.thinkingBudget = reasoning.maxTokens;
  }
  if (reasoning.include !== undefined) config.includeThoughts = off ? false : reasoning.include;
  return Object.keys(config).length > 0 ? config : undefined;
}

/**
 * The canonical request as a Gemini `generateContent` body; the model and the stream/non-stream
 * choice are in the URL. Gemini has no field for `parallelToolCalls`, the penalties or `user`.
 * https://ai.google.dev/api/generate-content#request-body
 */
export function convertToGeminiRequest(request: GenerationRequest): Record<string, unknown> {
  const contents = convertToGeminiContents(mediaAfterResults(request.input));
  if (!UNCHECKED_MODELS.test(request.model)) signFunctionCalls(contents);
  if (contents.length === 0) {
    throw new UnsupportedRequestError(
      'The conversation has no user or model content: Gemini needs at least one turn besides the system instruction',
    );
  }
  const body: Record<string, unknown> = { contents };
  const system = systemText(request);
  if (system !== undefined) body.systemInstruction = { parts: [{ text: system }] };
  if (request.tools?.length) {
    body.tools = [
      {
        // `parametersJsonSchema` takes JSON Schema as clients write it (zod's and OpenAI strict
        // tools' `additionalProperties: false`, `$schema`, `const`…), which `parameters`, Google's
        // OpenAPI subset, refuses with a 400. https://ai.google.dev/api/caching#FunctionDeclaration
        functionDeclarations: request.tools.map((tool) => ({
          name: tool.name,
          ...(tool.description !== undefined ? { description: tool.description } : {}),
          ...(takesArguments(tool.parameters) ? { parametersJsonSchema: tool.parameters } : {}),
        })),
      },
    ];
  }
  // Gemini refuses a function calling config without function declarations.
  if (sendsToolChoice(request)) body.toolConfig = toolConfig(request.toolChoice);
  const config = generationConfig(request);
  if (Object.keys(config).length > 0) body.generationConfig = config;
  return body;
}
