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
