import {
  type InputItem,
  type ReasoningBlock,
  type ReasoningFormat,
  reasoningFormatOf,
} from '../../../spec/generation-request.js';
import type { GenerationResult, StreamPart } from '../../../spec/stream-part.js';
import { opaqueBlock } from '../shared/labelled-reasoning.js';

/**
 * `reasoning_details` on chat messages (the reference's `ChatReasoningDetails`): the reasoning a
 * provider signed, which the client sends back with the turn so that the next request carries it
 * to the same provider. Anthropic refuses a tool-using turn without its signed thinking while
 * thinking is on; Gemini's 3.x models refuse a function call without its thought signature.
 *
 * - Anthropic's signed thinking is `reasoning.text` with its `signature`; redacted thinking is
 *   `reasoning.encrypted` with its `data`.
 * - A Gemini thought signature is `reasoning.encrypted` whose `data` is the signature, with the `id`
 *   of the tool call it belongs to (none for one that came with text).
 *
 * Only what must travel back is listed; plain reasoning text is the message's `reasoning`. With
 * reasoning left out (`reasoning.exclude`) only Gemini's signatures, which hold no text, are listed:
 * Anthropic's thinking goes back whole or not at all, and a turn sent back without it is sent to
 * Anthropic without thinking (convert-to-anthropic-messages-request.ts).
 */
export type ReasoningDetail =
  | {
      type: 'reasoning.text';
      text: string;
      signature: string | null;
      id?: string;
      format: ReasoningFormat;
      index: number;
    }
  | { type: 'reasoning.encrypted'; data: string; id?: string; format: ReasoningFormat; index: number };

const GEMINI: ReasoningFormat = 'google-gemini-v1';

/**
 * One block as its entry, or nothing when it cannot be shown. `callId`: the tool call it came right
 * before (Gemini's call signature, or Anthropic's thinking between two calls), which it goes back with.
 */
function detailOf(
  block: ReasoningBlock,
  callId: string | undefined,
  index: number,
  shown: boolean,
): ReasoningDetail | undefined {
  const format = block.format ?? 'unknown';
  // Left out whole: a turn's thinking goes back complete or not at all (Anthropic refuses a part).
  if (!shown && format !== GEMINI) return undefined;
  const id = callId !== undefined ? { id: callId } : {};
  if (block.redactedData !== undefined)
    return { type: 'reasoning.encrypted', data: block.redactedData, ...id, format, index };
  if (block.signature === undefined) return undefined;
  if (format === GEMINI) return { type: 'reasoning.encrypted', data: block.signature, ...id, format, index };
  return { type: 'reasoning.text', text: block.text, signature: block.signature, ...id, format, index };
}

/** A whole generation's entries, in the order its blocks came; undefined when there are none. */
export function renderReasoningDetails(
  result: GenerationResult,
  shown: boolean,
): ReasoningDetail[] | undefined {
  const details: ReasoningDetail[] = [];
  for (const block of result.reasoningBlocks ?? []) {
    const callId =
      block.beforeToolCall !== undefined ? result.toolCalls[block.beforeToolCall]?.callId : undefined;
    const detail = detailOf(block, callId, details.length, shown);
    if (detail) details.push(detail);
  }
  return details.length > 0 ? details : undefined;
}

/**
 * The streamed form: each entry whole, in the chunk where its signature (or redacted block) arrived;
 * the thinking text an Anthropic signature covers is what streamed as `reasoning` since the last one.
 * Thinking that follows a tool call (interleaved) waits for the next call's start, to carry its id
 * as the non-streamed entries do; what no call follows goes out at the end.
 */
export class StreamedReasoningDetails {
  #text = '';
  #count = 0;
  #sawCall = false;
  #waiting: ReasoningDetail[] = [];

  constructor(private readonly shown: boolean) {}

  /** Notes a reasoning part; returns the entries to send now. */
  next(part: StreamPart): ReasoningDetail[] {
    if (part.type === 'reasoning-delta') {
      // Only Anthropic's entries hold text, and only when reasoning is shown.
      if (this.shown) this.#text += part.delta;
      return [];
    }
    let block: ReasoningBlock;
    if (part.type === 'reasoning-signature')
      block = { text: this.#text, signature: part.signature, format: part.format };
    else if (part.type === 'reasoning-redacted')
      block = { text: '', redactedData: part.data, format: part.format };
    else return [];
    this.#text = '';
    const callId = part.type === 'reasoning-signature' ? part.callId : undefined;
    const detail = detailOf(block, callId, this.#count, this.shown);
    if (!detail) return [];
    this.#count += 1;
    if (callId === undefined && this.#sawCall) {
      this.#waiting.push(detail);
      return [];
    }
    return [detail];
  }

  /** A tool call starts: the entries waiting for it, with its id. */
  callStarts(callId: string): ReasoningDetail[] {
    this.#sawCall = true;
    return this.#release(callId);
  }

  /** The stream ends: whatever still waits. */
  flush(): ReasoningDetail[] {
    return this.#release(undefined);
  }

  #release(callId: string | undefined): ReasoningDetail[] {
    if (this.#waiting.length === 0) return [];
    const released = this.#waiting;
    this.#waiting = [];
    if (callId !== undefined) for (const detail of released) detail.id = callId;
    return released;
  }
}

/** What a client may send back: the reference's entry types checked by the schema, others passed. */
export interface ReasoningDetailBody {
  type: string;
  text?: string | null;
  signature?: string | null;
  data?: string;
  summary?: string;
  format?: string | null;
  id?: string | null;
}

/**
 * One entry sent back as a block; summaries, server tool calls, entries of types the gateway does
 * not know and empty values carry nothing a provider reads back. An entry without a `format` is
 * nobody's: no provider is sent it.
 */
function blockOf(detail: ReasoningDetailBody): ReasoningBlock | undefined {
  const format = reasoningFormatOf(detail.format) ?? 'unknown';
  if (detail.type === 'reasoning.encrypted' && typeof detail.data === 'string' && detail.data !== '')
    return opaqueBlock(detail.data, format);
  if (detail.type === 'reasoning.text' && detail.signature) {
    return { text: detail.text ?? '', signature: detail.signature, format };
  }
  return undefined;
}

/**
 * An assistant turn's `reasoning_details` onto its items: an entry whose `id` is one of the turn's
 * tool call ids travels with that call; the rest with the turn's first item (reasoning comes
 * before what it led to). `items` are the turn's message and function calls, in order.
 */
export function attachReasoningDetails(details: readonly ReasoningDetailBody[], items: InputItem[]): void {
  const first = items[0];
  if (!first || first.type === 'function-call-output') return;
  const byCall = new Map<string, ReasoningBlock[]>();
  const leading: ReasoningBlock[] = [];
  const callIds = new Set(items.flatMap((item) => (item.type === 'function-call' ? [item.callId] : [])));
  for (const detail of details) {
    const block = blockOf(detail);
    if (!block) continue;
    const id = detail.id ?? undefined;
    if (id !== undefined && callIds.has(id)) {
      const list = byCall.get(id) ?? [];
      list.push(block);
      byCall.set(id, list);
    } else leading.push(block);
  }
  items.forEach((item, position) => {
    if (item.type === 'function-call-output') return;
    const own = item.type === 'function-call' ? (byCall.get(item.callId) ?? []) : [];
    const blocks = position === 0 ? [...leading, ...own] : own;
    if (item.type === 'function-call') byCall.delete(item.callId);
    if (blocks.length > 0) item.reasoning = blocks;
  });
}
