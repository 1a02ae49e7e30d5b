import type { ColumnType } from 'kysely';

/**
 * Table shapes shared by SQLite and PostgreSQL. Portable column types only: timestamps are
 * ISO 8601 UTC text, booleans are 0/1 integers, money is integer nano-dollars (bigint).
 */
export interface Database {
  meta: MetaTable;
  workspaces: WorkspaceTable;
  api_keys: ApiKeyTable;
  key_usage_daily: KeyUsageDailyTable;
  credit_ledger: CreditLedgerTable;
  generations: GenerationTable;
}

export interface MetaTable {
  key: string;
  value: string;
}

export interface WorkspaceTable {
  id: string;
  name: string;
  slug: string;
  description: string;
  created_by: string;
  default_text_model: string;
  default_image_model: string;
  default_provider_sort: string;
  /** JSON array text, or null. */
  io_logging_api_key_ids: string | null;
  io_logging_sampling_rate: number;
  is_data_discount_logging_enabled: number;
  is_observability_broadcast_enabled: number;
  is_observability_io_logging_enabled: number;
  is_default: number;
  created_at: string;
  updated_at: string;
}

export interface ApiKeyTable {
  hash: string;
  name: string;
  label: string;
  is_management: number;
  disabled: number;
  limit_nanos: number | null;
  limit_reset: 'daily' | 'weekly' | 'monthly' | null;
  include_byok_in_limit: number;
  expires_at: string | null;
  creator_user_id: string | null;
  workspace_id: string;
  created_at: string;
  updated_at: string | null;
}

/** One row per key per UTC day with spend; windows (day, week, month, all) are sums of rows. */
export interface KeyUsageDailyTable {
  key_hash: string;
  day: string;
  usage_nanos: ColumnType<number, number, number>;
  byok_usage_nanos: ColumnType<number, number, number>;
}

export interface CreditLedgerTable {
  id: string;
  kind: 'grant' | 'usage';
  amount_nanos: number;
  note: string | null;
  created_at: string;
}

/**
 * One row per inference request (Responses, Chat Completions, Messages, Embeddings), written in
 * group commits by billing/generation-log. JSON fields are text; `attempts` is an array of
 * `{ provider, provider_name, model, endpoint_id, status, error_type, latency_ms }`.
 */
export interface GenerationTable {
  /** `gen-…`, the id clients read from `X-Generation-Id`. */
  id: string;
  created_at: string;
  key_hash: string;
  workspace_id: string;
  api_type: 'responses' | 'chat-completions' | 'messages' | 'embeddings';
  requested_model: string | null;
  /** The catalogue id that answered; null when no upstream answered. */
  model: string | null;
  provider_slug: string | null;
  provider_name: string | null;
  endpoint_id: string | null;
  upstream_id: string | null;
  streamed: number;
  cancelled: number;
  is_byok: number;
  status: 'completed' | 'incomplete' | 'failed' | 'cancelled';
  http_status: number;
  error_type: string | null;
  error_message: string | null;
  /** The canonical finish reason (spec/finish-reason.ts). */
  finish_reason: string | null;
  native_finish_reason: string | null;
  tokens_prompt: number;
  tokens_completion: number;
  tokens_cached: number;
  tokens_cache_write: number;
  tokens_reasoning: number;
  cost_nanos: number;
  input_cost_nanos: number;
  output_cost_nanos: number;
  latency_ms: number;
  first_token_ms: number | null;
  generation_time_ms: number | null;
  /** The request's end-user `user`. */
  user_id: string | null;
  session_id: string | null;
  metadata: string | null;
  trace: string | null;
  app_referer: string | null;
  app_title: string | null;
  attempts: string;
}
