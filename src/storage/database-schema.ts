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
  workspace_members: WorkspaceMemberTable;
  workspace_budgets: WorkspaceBudgetTable;
  workspace_usage_daily: WorkspaceUsageDailyTable;
  member_usage_daily: MemberUsageDailyTable;
  guardrails: GuardrailTable;
  guardrail_key_assignments: GuardrailKeyAssignmentTable;
  guardrail_member_assignments: GuardrailMemberAssignmentTable;
  byok_credentials: ByokCredentialTable;
  observability_destinations: ObservabilityDestinationTable;
  broadcast_outbox: BroadcastOutboxTable;
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
  /** Whether BYOK spend counts toward the workspace's budgets (every interval). */
  include_byok_in_budgets: number;
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
  /** Output tokens of generated images; null on records written before they were counted. */
  tokens_completion_images: number | null;
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
  /** The key's creator (an organization member), or null; member guardrail limits bill it. */
  member_user_id: string | null;
}

export interface WorkspaceMemberTable {
  id: string;
  workspace_id: string;
  user_id: string;
  role: 'admin' | 'member';
  created_at: string;
}

export type BudgetInterval = 'daily' | 'weekly' | 'monthly' | 'lifetime';

/** At most one budget per workspace and interval. */
export interface WorkspaceBudgetTable {
  id: string;
  workspace_id: string;
  interval: BudgetInterval;
  limit_nanos: number;
  created_at: string;
  updated_at: string;
}

/** Workspace spend per UTC day; windows (day, week, month, lifetime) are sums of rows. */
export interface WorkspaceUsageDailyTable {
  workspace_id: string;
  day: string;
  usage_nanos: ColumnType<number, number, number>;
  byok_usage_nanos: ColumnType<number, number, number>;
}

/** Spend of an organization member's keys per workspace and UTC day (member guardrail limits). */
export interface MemberUsageDailyTable {
  workspace_id: string;
  user_id: string;
  day: string;
  usage_nanos: ColumnType<number, number, number>;
  byok_usage_nanos: ColumnType<number, number, number>;
}

/**
 * Spec 2.5. List fields and filters are JSON array text or null; the per-vendor ZDR flags are 0/1 or
 * null (not set). `is_workspace_default` marks the one default guardrail of a workspace.
 */
export interface GuardrailTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  limit_nanos: number | null;
  reset_interval: 'daily' | 'weekly' | 'monthly' | null;
  allowed_models: string | null;
  allowed_providers: string | null;
  ignored_models: string | null;
  ignored_providers: string | null;
  enforce_zdr_anthropic: number | null;
  enforce_zdr_openai: number | null;
  enforce_zdr_google: number | null;
  enforce_zdr_other: number | null;
  /** JSON array of `{ slug, action, label?, scan_scope? }`, or null. */
  content_filter_builtins: string | null;
  /** JSON array of `{ pattern, action, label? }`, or null. */
  content_filters: string | null;
  is_workspace_default: number;
  created_at: string;
  updated_at: string;
}

export interface GuardrailKeyAssignmentTable {
  id: string;
  guardrail_id: string;
  key_hash: string;
  assigned_by: string;
  created_at: string;
}

export interface GuardrailMemberAssignmentTable {
  id: string;
  guardrail_id: string;
  /** The guardrail's workspace, kept here so that a member holds one guardrail per workspace. */
  workspace_id: string;
  user_id: string;
  organization_id: string;
  assigned_by: string;
  created_at: string;
}

/** Spec 2.10. The secret is AES-256-GCM ciphertext (platform/secret-box); lists are JSON text or null. */
export interface ByokCredentialTable {
  id: string;
  workspace_id: string;
  name: string;
  provider: string;
  label: string;
  secret_ciphertext: string;
  disabled: number;
  is_fallback: number;
  sort_order: number;
  allowed_api_key_hashes: string | null;
  allowed_models: string | null;
  allowed_user_ids: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * Spec 2.4. `config` is JSON text of the non-secret fields; the secret fields (and custom `headers`)
 * are one JSON object sealed with the secret box in `secrets_ciphertext`. Lists and rules are JSON
 * text or null. A deleted destination keeps its row with `deleted_at` set (soft delete).
 */
export interface ObservabilityDestinationTable {
  id: string;
  workspace_id: string;
  name: string;
  type: string;
  config: string;
  secrets_ciphertext: string | null;
  enabled: number;
  api_key_hashes: string | null;
  broadcast_generation_cost: number;
  broadcast_generation_identity: number;
  broadcast_generation_request_context: number;
  filter_rules: string | null;
  privacy_mode: number;
  regions: string;
  sampling_rate: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

/**
 * One event for one destination (or, a fan-out row, for several: see `fanout`), written in the
 * generation's group commit and deleted once delivered. `status` is `pending` (due at `next_attempt_at`; a row whose `lease_until` is in the
 * future is being delivered by `leased_by`) or `dead` (gave up: attempts exhausted or refused).
 * Times are ISO 8601 text, compared as text.
 */
export interface BroadcastOutboxTable {
  id: string;
  destination_id: string;
  workspace_id: string;
  generation_id: string;
  idempotency_key: string;
  /** JSON text of the BroadcastEvent as this destination receives it. */
  payload: string;
  /** `fanout` is a fan-out row (see `fanout`), pending as a whole. */
  status: 'pending' | 'dead' | 'fanout';
  attempts: number;
  next_attempt_at: string;
  lease_until: string | null;
  leased_by: string | null;
  last_error: string | null;
  last_status: number | null;
  created_at: string;
  dead_at: string | null;
  /**
   * A fan-out row (`status` `fanout`): the ids of the destinations it goes to, comma-separated (its
   * `destination_id` is then `*<n>`, no destination's, and its `idempotency_key` empty). Null for a
   * row of one destination.
   */
  fanout: string | null;
}
