import {
  isReasoningFormat,
  type ReasoningBlock,
  type ReasoningFormat,
} from '../../../spec/generation-request.js';

/**
 * An opaque reasoning value (a signature, redacted data) with its format written ahead of it,
 * `google-gemini-v1:<value>`, where the wire has no field to say whose it is or clients drop the
 * one it has (typed Responses clients keep `encrypted_content` and lose `format`). The value finds
 * its way back to the provider that made it and no other. Anthropic's and Gemini's values are
 * base64 and never hold a colon, so a value read back without a known label is taken as it is.
 */
export function labelled(value: string, format: ReasoningFormat): string {
  return `${format}:${value}`;
}

/** A value as sent back: its label's format and the value behind it, or the value alone. */
export function readLabelled(value: string): { value: string; format?: ReasoningFormat } {
  const colon = value.indexOf(':');
  if (colon > 0) {
    const format = value.slice(0, colon);
    if (isReasoningFormat(format)) return { value: value.slice(colon + 1), format };
  }
  return { value };
}

/**
 * An opaque reasoning value a client sent back (Responses `encrypted_content`, chat
 * `reasoning.encrypted`) as its block: Gemini's is a thought signature, anyone else's redacted
 * reasoning.
 */
export function opaqueBlock(value: string, format: ReasoningFormat): ReasoningBlock {
  return format === 'google-gemini-v1'
    ? { text: '', signature: value, format }
    : { text: '', redactedData: value, format };
}
