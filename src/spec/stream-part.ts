import type { FinishReason } from './finish-reason.js';
import type { ReasoningBlock, ReasoningFormat } from './generation-request.js';
import type { UpstreamError } from './upstream-error.js';
import type { Usage } from './usage.js';

/**
 * An image the model generated: its media type (`image/png`) and its bytes in base64, one string
 * as the provider sent it (an image arrives whole, never in pieces).
 */
export interface GeneratedImage {
  mediaType: string;
  data: string;
}

/**
 * One typed part of a generation stream, named noun-verb. Adapters emit them in order; usage and
 * finish come last. Tool calls are identified by `index` within the response.
 */
export type StreamPart =
  /**
   * Upstream identity of the response, when known (its id and the model that answered). `usage`:
   * the counts the upstream reported as it began, when it reports them then (Anthropic's
   * message_start: the prompt, its cache reads and writes, the first output token); the `usage`
   * part at the end is still the generation's.
   */
  | { type: 'response-metadata'; id?: string; model?: string; usage?: Usage }
  | { type: 'text-delta'; delta: string }
  | { type: 'reasoning-delta'; delta: string }
  /** The model declining to answer (OpenAI's `refusal`), as text of its own. */
  | { type: 'refusal-delta'; delta: string }
  /**
   * The signature that closes the reasoning streamed since the last one (Anthropic's signature_delta),
   * or Gemini's `thoughtSignature` of the content it came with: `callId` names the tool call it
   * belongs to (sent just before that call's start), absent for one that came with text.
   */
  | { type: 'reasoning-signature'; signature: string; format: ReasoningFormat; callId?: string }
  /** A reasoning block the provider sent encrypted (Anthropic's redacted_thinking), to be sent back as is. */
  | { type: 'reasoning-redacted'; data: string; format: ReasoningFormat }
  /** A generated image, whole, in its place among the text (Gemini's `inlineData` output parts). */
  | ({ type: 'image-output' } & GeneratedImage)
  | { type: 'tool-call-start'; index: number; callId: string; name: string }
  | { type: 'tool-call-delta'; index: number; argumentsDelta: string }
  | { type: 'tool-call-end'; index: number }
  | { type: 'usage'; usage: Usage }
  /** `stopSequence`: the stop sequence that ended the answer, when the provider names it (Anthropic). */
  | { type: 'finish'; reason: FinishReason; nativeReason: string | null; stopSequence?: string }
  /**
   * A failure after the stream began; before the first output, adapters throw instead.
   * `imagesCut`: images the upstream had begun to send when it failed (an event cut short, or over
   * the size bound), which it produced and bills, though the client never sees them.
   */
  | { type: 'error'; error: UpstreamError; imagesCut?: number };

/** The whole of a non-streamed generation. */
export interface GenerationResult {
  id: string | null;
  model: string | null;
  text: string;
  reasoning: string;
  /** The model's refusal (OpenAI's `refusal`), when it declined; absent or '' otherwise. */
  refusal?: string;
  /**
   * The reasoning as the provider's blocks, with their signatures, when it signs them (Anthropic,
   * Gemini); `reasoning` is their text joined (a Gemini signature's block has no text). A client
   * sends them back with the turn's tool calls, in their place: `beforeToolCall` is the index of the
   * tool call a block came right before (interleaved thinking; a Gemini call's own signature), absent
   * for blocks before the text.
   */
  reasoningBlocks?: Array<ReasoningBlock & { beforeToolCall?: number }>;
  toolCalls: Array<{ callId: string; name: string; arguments: string }>;
  /** The images the model generated, in the order it sent them; absent when there are none. */
  images?: GeneratedImage[];
  usage: Usage;
  finishReason: FinishReason;
  nativeFinishReason: string | null;
  /** The stop sequence that ended the answer, when the provider names it (Anthropic). */
  stopSequence?: string;
}
