/**
 * The canonical generation request: what every ingress dialect produces and every provider
 * adapter consumes. It imports nothing else from src/; wire formats live at the edges.
 */

/**
 * A prompt-cache breakpoint (Anthropic's `cache_control`): the prompt up to and including what carries
 * it is cached, and read back at a tenth of the input price by later requests that start the same
 * way. Providers that cache on their own (OpenAI, Gemini) ignore it.
 */
export interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

/** A piece of message content. */
export type ContentPart = (
  | { type: 'text'; text: string }
  /**
   * An image by URL (https: or data:). `detail` is OpenAI's fidelity hint. `generated`: an image a
   * model generated, sent back in its assistant turn (chat `images`, a Responses
   * `image_generation_call`), which Gemini takes back in the model turn (image editing over several
   * turns) and protocols that take no image in an assistant turn leave out.
   */
  | { type: 'image'; url: string; detail?: 'auto' | 'low' | 'high'; generated?: true }
  /** A file (PDF and the like) as a data URL or https URL. */
  | { type: 'file'; url: string; mediaType?: string; filename?: string }
  /** Base64 audio with its container format (wav, mp3…). */
  | { type: 'audio'; data: string; format: string }
) & { cacheControl?: CacheControl };

/**
 * Whose reasoning a signature or opaque data is: only the provider family that made it can read it
 * (Anthropic refuses a Gemini signature, Gemini fails to decode an Anthropic one). The names are the
 * API's `reasoning_details[].format` values.
 */
export const REASONING_FORMATS = [
  'unknown',
  'openai-responses-v1',
  'azure-openai-responses-v1',
  'bedrock-openai-responses-v1',
  'bedrock-xai-responses-v1',
  'xai-responses-v1',
  'meta-responses-v1',
  'anthropic-claude-v1',
  'google-gemini-v1',
] as const;
export type ReasoningFormat = (typeof REASONING_FORMATS)[number];

export const isReasoningFormat = (name: string): name is ReasoningFormat =>
  (REASONING_FORMATS as readonly string[]).includes(name);

/** A format a client sent back; a name the gateway does not know is `unknown`, never a provider's. */
export function reasoningFormatOf(name: string | null | undefined): ReasoningFormat | undefined {
  if (name === undefined || name === null) return undefined;
  return isReasoningFormat(name) ? name : 'unknown';
}

/**
 * Reasoning an earlier assistant turn carried, kept for the provider that made it: Anthropic wants a
 * turn's thinking blocks back, unchanged and with their signatures, when that turn called tools
 * with extended thinking on; Gemini wants the `thoughtSignature` of each function call back (its 3.x
 * models refuse the turn without it). `redactedData` is a redacted_thinking block's opaque data.
 * `format` says whose it is; a block without one is nobody's, and no provider is sent it.
 */
export interface ReasoningBlock {
  text: string;
  signature?: string;
  redactedData?: string;
  format?: ReasoningFormat;
}

export type InputItem =
  /**
   * A conversation turn. System and developer turns carry instructions. `reasoning`: the assistant's
   * reasoning that came before this content in its turn (adapters that cannot send it back drop it).
   */
  | {
      type: 'message';
      role: 'system' | 'developer' | 'user' | 'assistant';
      content: ContentPart[];
      reasoning?: ReasoningBlock[];
    }
  /**
   * A function call the model made in an earlier turn. `arguments` is JSON text as the model wrote
   * it; `reasoning`, the reasoning that came before the call in its turn.
   */
  | {
      type: 'function-call';
      callId: string;
      name: string;
      arguments: string;
      reasoning?: ReasoningBlock[];
      cacheControl?: CacheControl;
    }
  /**
   * The caller's answer to a function call: its text, and `media`, the images and files it returned
   * (a screenshot, a file read), which Anthropic takes inside the result and other providers in a
   * user message right after it. `isError`: the tool failed (Anthropic's `is_error`).
   */
  | {
      type: 'function-call-output';
      callId: string;
      output: string;
      media?: ContentPart[];
      isError?: boolean;
      cacheControl?: CacheControl;
    };

export interface FunctionTool {
  type: 'function';
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
  strict?: boolean;
  cacheControl?: CacheControl;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      name: string;
      schema: Record<string, unknown>;
      strict?: boolean;
      description?: string;
    };

export interface ReasoningOptions {
  /** An effort level: how much the model reasons, or, with `effortAsksReasoning: false`, spends. */
  effort?: 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';
  /**
   * False when `effort` does not ask for reasoning: Anthropic's `output_config.effort` sent without
   * `thinking` (or with it disabled) governs how many tokens the whole answer spends and turns no
   * thinking on. Absent, an effort asks for reasoning at its level (the chat and Responses
   * surfaces' effort, and `/messages` effort beside `thinking`).
   */
  effortAsksReasoning?: false;
  /** A token budget for providers that take one instead of an effort level. */
  maxTokens?: number;
  /** Whether reasoning text should be returned when the provider can return it. */
  include?: boolean;
  /** How detailed a summary of the reasoning, for providers that return summaries (OpenAI). */
  summary?: 'auto' | 'concise' | 'detailed';
  /** Reasoning asked for (true) or turned off (false); absent, the other fields say. */
  enabled?: boolean;
}

/** What the answer may hold (the chat and Responses `modalities`). */
export type OutputModality = 'text' | 'image';

/**
 * How generated images are shaped (the reference's `image_config`, Gemini's `imageConfig`): an
 * aspect ratio such as `16:9`, and a size tier such as `1K`, `2K` or `4K`. Each is the provider's
 * to accept or refuse.
 */
export interface ImageConfig {
  aspectRatio?: string;
  imageSize?: string;
}

export interface GenerationRequest {
  /** The upstream's own model id: the endpoint's `provider_model_id`. */
  model: string;
  /** Top-level instructions (a system prompt), sent before `input`. */
  instructions?: string;
  /**
   * The instructions as the sections the client sent, when one carries a cache breakpoint
   * (Anthropic's system blocks); `instructions` is their text joined, for providers without one.
   */
  instructionSections?: Array<{ text: string; cacheControl?: CacheControl }>;
  /** A breakpoint for the whole request (Anthropic's top-level `cache_control`: its last block). */
  cacheControl?: CacheControl;
  input: InputItem[];
  tools?: FunctionTool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  stop?: string[];
  seed?: number;
  responseFormat?: ResponseFormat;
  /**
   * False when the endpoint's catalogue record lists its parameters without `structured_outputs`
   * (endpoint-request.ts): its model cannot be held to a `json_schema` format or a strict tool's
   * schema. An adapter whose provider refuses the schema then (Anthropic's models without
   * structured outputs) asks for the format in the instructions instead and sends tools without
   * `strict`; the others send the format and tools as they do anyway.
   */
  structuredOutputs?: false;
  reasoning?: ReasoningOptions;
  /**
   * Whether the endpoint's model reasons (its catalogue record lists `reasoning`), whether or not
   * this request asks for reasoning options; unknown (absent) for an endpoint configured without a
   * parameter list. Set per endpoint (endpoint-request.ts), never by a dialect.
   */
  reasoningModel?: boolean;
  /**
   * The kinds of output the caller asked for (`modalities`), each once; absent when it named none,
   * which leaves the provider's default (an image model may then answer with images too). A
   * request that includes `image` goes only to models that make images, and an adapter whose
   * protocol cannot return them refuses it rather than answer in text.
   */
  outputModalities?: OutputModality[];
  /**
   * Whether the endpoint's model makes images (its catalogue output modalities list `image`), so
   * that its default answer may hold some; unknown (absent) where the pipeline was not told. Set
   * per endpoint (endpoint-request.ts), never by a dialect.
   */
  imageModel?: boolean;
  /**
   * Image options, given where the answer may hold images (`image` in `outputModalities`, or none
   * named); an endpoint whose model makes no images is sent none (endpoint-request.ts).
   */
  imageConfig?: ImageConfig;
  /** End-user identifier, forwarded where the provider accepts one. */
  user?: string;
}
