import type { EmbedCall, EmbeddingRequest, EmbeddingResult } from '../../../spec/embedding.js';
import { UpstreamError } from '../../../spec/upstream-error.js';
import { emptyUsage } from '../../../spec/usage.js';
import { baseUrlOf, perTarget } from '../shared/per-target.js';
import { requestUpstreamJson, type UpstreamHttp } from '../shared/upstream-http.js';
import { readOpenAiStreamError, readOpenAiUsage } from './openai-chat-api.js';

export interface OpenAiEmbeddingsOptions {
  /**
   * Whether the server reads `input_type` (NVIDIA NIM, Voyage-style servers do). OpenAI's own API
   * refuses any field it does not know with a 400, so its adapter must not send it.
   */
  embeddingInputType: boolean;
}

/**
 * The canonical request as an OpenAI `/embeddings` body. `encoding_format` is never sent: the
 * default is floats everywhere, and base64 for the client is encoded at ingress.
 */
export function convertToOpenAiEmbeddingsRequest(
  request: EmbeddingRequest,
  options: OpenAiEmbeddingsOptions,
): Record<string, unknown> {
  const body: Record<string, unknown> = { model: request.model, input: request.input };
  if (request.dimensions !== undefined) body.dimensions = request.dimensions;
  if (request.user !== undefined) body.user = request.user;
  if (request.inputType !== undefined && options.embeddingInputType) body.input_type = request.inputType;
  return body;
}

const asRecord = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;

const invalid = (message: string) => new UpstreamError({ message, kind: 'invalid-response' });

/**
 * Reads the vectors of an OpenAI embeddings reply into input order (by each item's `index`, which
 * servers are free to send out of order). Anything but exactly one list of numbers per input is
 * the upstream's fault: a silently short or misplaced vector would corrupt a client's index.
 */
export function readOpenAiEmbeddings(reply: unknown, inputCount: number): EmbeddingResult {
  const record = asRecord(reply);
  const data = record?.data;
  if (!Array.isArray(data)) throw invalid('Upstream reply has no embeddings data');
  if (data.length !== inputCount) {
    throw invalid(`Upstream returned ${data.length} embeddings for ${inputCount} inputs`);
  }
  const vectors: Array<number[] | undefined> = new Array(inputCount).fill(undefined);
  data.forEach((raw, position) => {
    const item = asRecord(raw);
    const index = item?.index === undefined ? position : item.index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= inputCount) {
      throw invalid(`Upstream embedding ${position} has an invalid index`);
    }
    if (vectors[index] !== undefined) throw invalid(`Upstream returned embedding ${index} twice`);
    const embedding = item?.embedding;
    if (
      !Array.isArray(embedding) ||
      embedding.length === 0 ||
      // JSON.parse reads 1e999 as Infinity, which JSON cannot carry back (it would become null).
      !embedding.every((value) => typeof value === 'number' && Number.isFinite(value))
    ) {
      throw invalid(`Upstream embedding ${index} is not a list of finite numbers`);
    }
    vectors[index] = embedding as number[];
  });
  const usage = readOpenAiUsage(record?.usage) ?? emptyUsage();
  // Some compatible servers report only `total_tokens`; for embeddings it is the same number.
  const total = asRecord(record?.usage)?.total_tokens;
  if (usage.inputTokens === 0 && typeof total === 'number' && Number.isFinite(total) && total > 0) {
    usage.inputTokens = total;
  }
  return {
    model: typeof record?.model === 'string' ? record.model : null,
    vectors: vectors as number[][],
    usage: { ...usage, outputTokens: 0, reasoningTokens: 0 },
  };
}

const embeddingsUrlOf = perTarget((target) => `${baseUrlOf(target)}/embeddings`);

/**
 * One `POST {baseUrl}/embeddings` call, read whole like a non-streamed generation.
 */
export async function embedWithOpenAi(options: {
  http: UpstreamHttp;
  call: EmbedCall;
  headers: Record<string, string>;
  settings: OpenAiEmbeddingsOptions;
}): Promise<EmbeddingResult> {
  const { call } = options;
  const reply = await requestUpstreamJson(options.http, call, {
    url: embeddingsUrlOf(call.target),
    headers: options.headers,
    body: JSON.stringify(convertToOpenAiEmbeddingsRequest(call.request, options.settings)),
    signal: call.signal,
  });
  const error = readOpenAiStreamError(reply);
  if (error) throw new UpstreamError({ message: error.message, kind: 'http', status: error.code ?? 502 });
  return readOpenAiEmbeddings(reply, call.request.input.length);
}
