import type { ObservabilityDestinationTable } from '../../storage/database-schema.js';
import { type FilterRules, readFilterRules } from './filter-rules.js';

/**
 * An `observability_destinations` row. Text formats, as this API writes them (the delivery worker
 * reads rows directly):
 * - `config`: JSON object of the config's non-secret fields, defaults applied.
 * - `secrets_ciphertext`: the secret box's sealing of ONE JSON object holding the type's secret
 *   fields and `headers` (an object of header name → value) when there are any; null when the config
 *   has neither. `openDestinationConfig` (destination-config.ts) joins both into the full config.
 * - `api_key_hashes`: JSON array of distinct 64-hex key hashes (at least one), or null for every key.
 * - `filter_rules`: JSON of `FilterRules` (defaults applied), or null for no rules.
 * - `regions`: JSON array of distinct values of `global`, `europe`, `us` (`eu` already normalized).
 * - `deleted_at`: set by a delete; a deleted row is invisible to the API and counts toward no limit.
 */
export type DestinationRow = ObservabilityDestinationTable;

export const DESTINATION_REGIONS = ['global', 'europe', 'us'] as const;
export type DestinationRegion = (typeof DESTINATION_REGIONS)[number];

/** Spec 2.4. `config` is always the masked form. */
export interface DestinationRecord {
  id: string;
  workspace_id: string;
  name: string;
  type: string;
  config: Record<string, unknown>;
  enabled: boolean;
  api_key_hashes: string[] | null;
  broadcast_generation_cost: boolean;
  broadcast_generation_identity: boolean;
  broadcast_generation_request_context: boolean;
  filter_rules: FilterRules | null;
  privacy_mode: boolean;
  regions: DestinationRegion[];
  sampling_rate: number;
  created_at: string;
  updated_at: string;
}

function readStringArray(text: string, column: string): string[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string')) {
    throw new Error(`observability_destinations.${column} does not hold a JSON array of strings`);
  }
  return parsed;
}

export const readKeyHashes = (text: string | null): string[] | null =>
  text === null ? null : readStringArray(text, 'api_key_hashes');

export const readRegions = (text: string): DestinationRegion[] =>
  readStringArray(text, 'regions') as DestinationRegion[];

/** A row as the API shows it, given its config already masked (the caller holds the secret box). */
export function toDestinationRecord(
  row: DestinationRow,
  maskedConfig: Record<string, unknown>,
): DestinationRecord {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    type: row.type,
    config: maskedConfig,
    enabled: row.enabled === 1,
    api_key_hashes: readKeyHashes(row.api_key_hashes),
    broadcast_generation_cost: row.broadcast_generation_cost === 1,
    broadcast_generation_identity: row.broadcast_generation_identity === 1,
    broadcast_generation_request_context: row.broadcast_generation_request_context === 1,
    filter_rules: readFilterRules(row.filter_rules),
    privacy_mode: row.privacy_mode === 1,
    regions: readRegions(row.regions),
    sampling_rate: Number(row.sampling_rate),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
