import type { ByokCredentialTable } from '../../storage/database-schema.js';

export type ByokRow = ByokCredentialTable;

/** The BYOK credential record of spec 2.10 (plus `updated_at`). The secret is never part of it. */
export interface ByokRecord {
  id: string;
  workspace_id: string;
  name: string;
  /** The provider's base slug, as in `GET /providers`. */
  provider: string;
  /** A masked form of the secret (byok-rules.ts `maskSecret`). */
  label: string;
  disabled: boolean;
  is_fallback: boolean;
  sort_order: number;
  allowed_api_key_hashes: string[] | null;
  /** Canonical slugs of catalogue models. */
  allowed_models: string[] | null;
  allowed_user_ids: string[] | null;
  created_at: string;
  updated_at: string;
}

/**
 * The allow-list columns (`allowed_api_key_hashes`, `allowed_models`, `allowed_user_ids`) hold SQL
 * NULL when the list is not set (no restriction), or the JSON text of a non-empty array of distinct
 * strings, e.g. `["openai/gpt-4o","anthropic/claude-sonnet-4"]`. An empty array is never stored:
 * the API refuses it, and null is how a client clears a list.
 */
export function readListColumn(text: string | null): string[] | null {
  if (text === null) return null;
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string')) {
    throw new Error('a BYOK allow-list column does not hold a JSON array of strings');
  }
  return parsed;
}

export const writeListColumn = (list: readonly string[] | null): string | null =>
  list === null ? null : JSON.stringify(list);

/**
 * A `byok_credentials` row as the API shows it. Pure: routing and billing may call it on rows they
 * read themselves. The secret stays in `row.secret_ciphertext`, sealed; open it with the services'
 * `secretBox.open` only at the moment of use.
 */
export function toByokRecord(row: ByokRow): ByokRecord {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    provider: row.provider,
    label: row.label,
    disabled: row.disabled === 1,
    is_fallback: row.is_fallback === 1,
    sort_order: Number(row.sort_order),
    allowed_api_key_hashes: readListColumn(row.allowed_api_key_hashes),
    allowed_models: readListColumn(row.allowed_models),
    allowed_user_ids: readListColumn(row.allowed_user_ids),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
