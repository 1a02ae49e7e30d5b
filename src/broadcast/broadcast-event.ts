/**
 * What one generation looks like to an observability destination: the payload stored in the
 * broadcast outbox and handed to exporters, which turn it into each tool's wire format. It is built
 * once per generation (bodies included); per destination, `privacy_mode` sets `input`/`output` to
 * null and the three `broadcast_generation_*` flags decide whether `cost`, `identity` and
 * `request_context` are filled. Exporters send what is here and nothing else.
 */
export interface BroadcastEvent {
  /** Payload format version; bump it when a field changes meaning. */
  v: 1;
  /** The generation id (`gen-…`), also the `X-Generation-Id` the client saw. */
  generation_id: string;
  trace: BroadcastTrace;
  /** ISO 8601 with milliseconds. */
  started_at: string;
  ended_at: string;
  /** The same instants in Unix nanoseconds, as decimal strings (OTLP's representation). */
  start_time_unix_nano: string;
  end_time_unix_nano: string;
  /** `chat` for text generations (every dialect), `embeddings` for embeddings. */
  operation: 'chat' | 'embeddings';
  api_type: 'responses' | 'chat-completions' | 'messages' | 'embeddings';
  /** The model the client named. */
  requested_model: string | null;
  /** The catalogue model that answered (`openai/gpt-4o`); null when none did. */
  model: string | null;
  /** Provider slug (`openai`) and display name (`OpenAI`); null when none answered. */
  provider: string | null;
  provider_name: string | null;
  /** `completed`, `incomplete`, `failed` or `cancelled`. */
  status: string;
  finish_reason: string | null;
  error: { type: string | null; message: string | null } | null;
  streamed: boolean;
  usage: BroadcastUsage;
  /** Total cost in USD (decimal); always present (reference §3.3 lists it with the contents). */
  total_cost: number;
  latency_ms: number;
  first_token_ms: number | null;
  generation_time_ms: number | null;
  /** The API key's name: filter rules match it and the S3 path template may use it. */
  api_key_name: string;
  /** The request's `user` (end user) and session; null when not given. */
  user_id: string | null;
  session_id: string | null;
  /** Input messages, text only (media parts are stripped); null when withheld (`privacy_mode`). */
  input: BroadcastMessage[] | null;
  /** Output messages (text, tool calls); null when withheld (`privacy_mode`). */
  output: BroadcastMessage[] | null;
  /** Sampling and length parameters the request set (temperature, top_p, max_output_tokens, …). */
  parameters: Record<string, string | number | boolean>;
  /** How many tools the request offered and how many calls the output made. */
  tools: { offered: number; called: number };
  /** With `broadcast_generation_cost`: the bill in detail. */
  cost: BroadcastCost | null;
  /** With `broadcast_generation_identity`: who made the request. */
  identity: BroadcastIdentity | null;
  /** With `broadcast_generation_request_context`: how the request arrived and was routed. */
  request_context: BroadcastRequestContext | null;
}

/**
 * The request's `trace` object (reference §3.3): `trace_id`, `trace_name`, `span_name`,
 * `generation_name` and `parent_span_id` have special meaning; every other key is custom metadata.
 */
export interface BroadcastTrace {
  /** 32 lowercase hex. The client's `trace_id` when it is one; otherwise derived from it (or the generation id). */
  trace_id: string;
  /** 16 lowercase hex, derived from the generation id (stable across retries). */
  span_id: string;
  /** The client's `parent_span_id` when it is 16 hex; otherwise derived from it; null when absent. */
  parent_span_id: string | null;
  /** The client's `trace_id` as given (any string), or null. */
  external_trace_id: string | null;
  trace_name: string | null;
  span_name: string | null;
  generation_name: string | null;
  /** The other keys of `trace`, values as strings (objects JSON-encoded). */
  metadata: Record<string, string>;
}

export interface BroadcastUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
}

export interface BroadcastMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  /** Text content; long texts are cut (see MAX_BROADCAST_TEXT_CHARS). */
  content: string;
  tool_calls?: Array<{ id: string; name: string; arguments: string }>;
  /** For `tool` messages: the call this output answers. */
  tool_call_id?: string;
}

export interface BroadcastCost {
  total_usd: number;
  input_usd: number;
  output_usd: number;
  /** True when the generation ran on the workspace's own provider key (not billed to credits). */
  is_byok: boolean;
  currency: 'USD';
}

export interface BroadcastIdentity {
  api_key_hash: string;
  workspace_id: string;
  /** The key's creator, an organization member; null when the key names none. */
  member_user_id: string | null;
}

export interface BroadcastRequestContext {
  /** `HTTP-Referer` and `X-Title` of the request. */
  app_referer: string | null;
  app_title: string | null;
  http_status: number;
  /** How many upstream attempts were made (failover). */
  attempts: number;
  /** The gateway region that served the request (`global`, `europe`, `us`). */
  region: string;
  /** The request's `metadata` pairs (Responses API). */
  request_metadata: Record<string, string> | null;
}

/** Longest text kept per message; beyond it the text is cut and `…[truncated]` appended. */
export const MAX_BROADCAST_TEXT_CHARS = 32_768;
