import type { EmbeddingRequest } from '../../../spec/embedding.js';
import type { ProviderPreferences } from '../dialect.js';
import { invalidParameter } from '../shared/invalid-parameter.js';
import { toProviderPreferences } from '../shared/provider-preferences.js';
import { requestedModels, sessionId } from '../shared/request-rules.js';
import type { EmbeddingsBody, EmbeddingsInput } from './embeddings-body-schema.js';

/** What the embeddings dialect extracts from a body; the embeddings counterpart of `ParsedRequest`. */
export interface ParsedEmbeddingsRequest {
  /** The canonical request without the upstream model id, which routing fills in per attempt. */
  request: Omit<EmbeddingRequest, 'model'>;
  /** Requested catalogue models in fallback order: `model` first, then `models`, without repeats. */
  models: string[];
  provider: ProviderPreferences | null;
  /** Sticky-routing key: the body's `session_id`, else the `x-session-id` header. */
  sessionId: string | null;
  user: string | null;
}

/**
 * Every input form as a list of entries, one per vector. A flat list of integers is one token
 * list (OpenAI's reading), not many one-token inputs.
 */
function normalizeInput(input: EmbeddingsInput): string[] | number[][] {
  if (typeof input === 'string') {
    if (input.length === 0) throw invalidParameter('body.input', 'must not be empty');
    return [input];
  }
  if (input.length === 0) throw invalidParameter('body.input', 'must not be empty');
  const entries: unknown[] = input;
  if (entries.every((entry) => typeof entry === 'string')) return entries as string[];
  if (entries.every((entry) => typeof entry === 'number')) return [entries as number[]];
  if (entries.every((entry) => Array.isArray(entry))) return entries as number[][];
  throw invalidParameter(
    'body.input',
    'must be a string, a list of strings, a token list or a list of token lists, not a mix',
  );
}

/**
 * Cross-field rules and conversion after the schema has passed. Throws AppError('invalid_request')
 * naming the field and the rule.
 */
export function parseEmbeddingsRequest(
  body: EmbeddingsBody,
  headers: Record<string, string | string[] | undefined>,
): ParsedEmbeddingsRequest {
  const input = normalizeInput(body.input);
  const models = requestedModels({ model: body.model, fallbacks: body.models });
  const user = body.user || null;
  const request: Omit<EmbeddingRequest, 'model'> = { input };
  if (body.dimensions !== undefined) request.dimensions = body.dimensions;
  if (body.encoding_format !== undefined) request.encodingFormat = body.encoding_format;
  if (user !== null) request.user = user;
  if (body.input_type !== undefined) request.inputType = body.input_type;
  return {
    request,
    models,
    provider: toProviderPreferences(body.provider),
    sessionId: sessionId(body.session_id, headers),
    user,
  };
}
