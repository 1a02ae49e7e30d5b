import type { EmbeddingResult } from '../../../spec/embedding.js';
import type { GenerationInfo, GenerationSummary } from '../dialect.js';
import { billedCost } from '../shared/usage-cost.js';

/**
 * A vector as OpenAI's `encoding_format: "base64"` sends it: the bytes of little-endian float32
 * values, base64-encoded. Clients (the OpenAI SDKs ask for base64 by default) decode exactly that.
 */
export function encodeFloat32Base64(vector: number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (const [index, value] of vector.entries()) bytes.writeFloatLE(value, index * 4);
  return bytes.toString('base64');
}

/**
 * The `POST /embeddings` reply. `model` is the catalogue model that answered (it may be a fallback),
 * usage and cost come from the billed summary.
 */
export function renderEmbeddings(
  info: GenerationInfo,
  result: EmbeddingResult,
  summary: GenerationSummary,
  encodingFormat: 'float' | 'base64' = 'float',
) {
  const promptTokens = summary.usage.inputTokens;
  return {
    id: info.id,
    object: 'list' as const,
    data: result.vectors.map((vector, index) => ({
      object: 'embedding' as const,
      embedding: encodingFormat === 'base64' ? encodeFloat32Base64(vector) : vector,
      index,
    })),
    model: info.model,
    provider: info.providerName,
    usage: {
      prompt_tokens: promptTokens,
      total_tokens: promptTokens + summary.usage.outputTokens,
      ...billedCost(summary),
    },
    ...(summary.metadata ? { switchyard_metadata: summary.metadata } : {}),
  };
}
