import type { Usage } from '../../../spec/usage.js';

/**
 * The parts of Gemini `GenerateContentResponse` bodies the adapter reads, checked field by field:
 * a wrong type reads as absent. Non-streamed replies and stream chunks share this shape; a chunk
 * carries only the parts that are new since the previous one.
 * https://ai.google.dev/api/generate-content#generatecontentresponse
 */
const asRecord = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
const asString = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
/** A token count; Infinity (what JSON.parse makes of 1e999) is kept: billing caps counts at the context. */
const asCount = (value: unknown): number => (typeof value === 'number' && value > 0 ? value : 0);

const IMAGE_MEDIA_TYPE = /^image\/[a-z0-9.+-]{1,40}$/;

/**
 * One content part of the first candidate, in the order Gemini sent them. `signature` is the part's
 * `thoughtSignature`, which the next turn must carry back on the same part (a text part may hold
 * nothing but a signature).
 */
export type GeminiPartView = (
  | { type: 'text'; text: string }
  /** A part marked `thought: true`: a thought summary, sent only with `includeThoughts`. */
  | { type: 'reasoning'; text: string }
  | { type: 'function-call'; id?: string; name: string; args: Record<string, unknown> }
  /** A generated image (`inlineData` in an answer): its media type and base64 data, whole. */
  | { type: 'image'; mediaType: string; data: string }
) & { signature?: string };

export interface GeminiCandidateView {
  parts: GeminiPartView[];
  finishReason?: string;
}

/** The first candidate; undefined when there is none (a blocked prompt, or a usage-only chunk). */
export function readGeminiCandidate(reply: unknown): GeminiCandidateView | undefined {
  const candidates = asRecord(reply)?.candidates;
  const candidate = Array.isArray(candidates) ? asRecord(candidates[0]) : undefined;
  if (!candidate) return undefined;
  const rawParts = asRecord(candidate.content)?.parts;
  const parts: GeminiPartView[] = [];
  for (const raw of Array.isArray(rawParts) ? rawParts : []) {
    const part = asRecord(raw);
    if (!part) continue;
    const signature = asString(part.thoughtSignature) || undefined;
    const call = asRecord(part.functionCall);
    if (call) {
      const id = asString(call.id);
      const view: GeminiPartView = {
        type: 'function-call',
        name: asString(call.name) ?? '',
        args: asRecord(call.args) ?? {},
      };
      if (id !== undefined) view.id = id;
      if (signature !== undefined) view.signature = signature;
      parts.push(view);
      continue;
    }
    const inline = asRecord(part.inlineData);
    if (inline) {
      // Gemini 3 Pro Image thinks in draft images (`thought: true`): what it answers with comes
      // after them. An image's signature is not kept: the surfaces have no place for it, a
      // generated image sent back goes without it, and that model does not refuse a turn
      // without its signatures.
      const data = asString(inline.data);
      const mediaType = asString(inline.mimeType);
      if (part.thought !== true && data)
        parts.push({
          type: 'image',
          // Spliced into data URLs by the surfaces: anything but a plain image type is not trusted.
          mediaType: mediaType !== undefined && IMAGE_MEDIA_TYPE.test(mediaType) ? mediaType : 'image/png',
          data,
        });
      continue;
    }
    const text = asString(part.text) ?? '';
    // A thought's own signature is left out: thoughts are never sent back, and a call's or a
    // text's signature is the one Gemini checks.
    if (part.thought === true) {
      if (text) parts.push({ type: 'reasoning', text });
    } else if (text || signature !== undefined) {
      parts.push(signature !== undefined ? { type: 'text', text, signature } : { type: 'text', text });
    }
  }
  const view: GeminiCandidateView = { parts };
  const finish = asString(candidate.finishReason);
  if (finish !== undefined) view.finishReason = finish;
  return view;
}

/**
 * `usageMetadata` in canonical terms. Gemini's `candidatesTokenCount` excludes thinking tokens,
 * which it counts (and bills as output) in `thoughtsTokenCount`; canonical `outputTokens` includes
 * reasoning, so the two are added. The answer's image tokens, which Google prices apart, are its
 * `candidatesTokensDetails` entry of modality `IMAGE`.
 */
export function readGeminiUsage(value: unknown): Usage | undefined {
  const usage = asRecord(value);
  if (!usage) return undefined;
  const thoughts = asCount(usage.thoughtsTokenCount);
  const read: Usage = {
    inputTokens: asCount(usage.promptTokenCount),
    outputTokens: asCount(usage.candidatesTokenCount) + thoughts,
    cachedInputTokens: asCount(usage.cachedContentTokenCount),
    cacheWriteTokens: 0,
    reasoningTokens: thoughts,
  };
  const details = usage.candidatesTokensDetails;
  if (Array.isArray(details)) {
    let images = 0;
    for (const entry of details) {
      const detail = asRecord(entry);
      if (detail?.modality === 'IMAGE') images += asCount(detail.tokenCount);
    }
    if (images > 0) read.imageOutputTokens = images;
  }
  return read;
}

export function readGeminiIdentity(reply: unknown): { id?: string; model?: string } {
  const record = asRecord(reply) ?? {};
  const identity: { id?: string; model?: string } = {};
  const id = asString(record.responseId);
  if (id !== undefined) identity.id = id;
  const model = asString(record.modelVersion);
  if (model !== undefined) identity.model = model;
  return identity;
}

/** `promptFeedback.blockReason`: set when the prompt itself was refused and no candidate follows. */
export function readGeminiBlockReason(reply: unknown): string | undefined {
  return asString(asRecord(asRecord(reply)?.promptFeedback)?.blockReason);
}

/** Google's error object (`{"error": {"code", "message", "status"}}`) inside a 200 body or stream. */
export function readGeminiError(reply: unknown): { message: string; code: number | null } | undefined {
  const error = asRecord(asRecord(reply)?.error);
  if (!error) return undefined;
  // An HTTP status or nothing: a code like 400.5 would become the reply's status.
  const code = Number.isInteger(error.code) ? (error.code as number) : null;
  return { message: asString(error.message) ?? asString(error.status) ?? 'Upstream error', code };
}

/**
 * The retry hint of a Google error body. Google sends no `Retry-After` header on a 429; the delay
 * is a `google.rpc.RetryInfo` entry of `error.details`, as a duration string such as `"37s"`.
 */
export function readGeminiRetryDelaySeconds(raw: string | null): number | null {
  if (!raw) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return null;
  }
  const details = asRecord(asRecord(parsed)?.error)?.details;
  for (const entry of Array.isArray(details) ? details : []) {
    const detail = asRecord(entry);
    if (detail?.['@type'] !== 'type.googleapis.com/google.rpc.RetryInfo') continue;
    const delay = /^(\d+(?:\.\d+)?)s$/.exec(asString(detail.retryDelay) ?? '');
    if (delay) return Math.ceil(Number(delay[1]));
  }
  return null;
}
