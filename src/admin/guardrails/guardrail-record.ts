import { nanosToUsd } from '../../billing/money.js';
import type { GuardrailTable } from '../../storage/database-schema.js';
import type { BuiltinFilter, CustomFilter } from './builtin-filter-catalog.js';
import { defaultGuardrailId, defaultGuardrailName } from './default-guardrail-id.js';

/**
 * A `guardrails` row. Text formats, as this API writes them (the gateway's policy loader reads rows
 * directly; `toGuardrailRecord` is the one parser):
 * - `allowed_models`, `ignored_models`: JSON array of catalogue canonical slugs (`"openai/gpt-4o"`
 *   resolved from an id or a canonical slug; a variant such as `:free` names its model), deduplicated,
 *   at least one element; null when not set.
 * - `allowed_providers`, `ignored_providers`: JSON array of lowercase provider base slugs (`deepinfra`;
 *   an endpoint `deepinfra/fp4` belongs to it, see catalog/provider-base.ts), deduplicated, non-empty;
 *   null.
 * - `enforce_zdr_anthropic|openai|google|other`: 1, 0, or null (not set).
 * - `content_filter_builtins`: JSON array of `BuiltinFilter` (`{ slug, action, label, scan_scope? }`,
 *   `label` always the catalogue's, one element per slug, actions already checked); null.
 * - `content_filters`: JSON array of `CustomFilter` (`{ pattern, action, label }`, `label` a string or
 *   null, `pattern` proved safe at save time and compiled with flags `gu`); null.
 * - `limit_nanos`: integer nano-dollars (> 0) or null; `reset_interval` daily|weekly|monthly or null
 *   (null with a limit: the limit never resets).
 * - `is_workspace_default`: 1 for the workspace's default guardrail, whose id is
 *   `defaultGuardrailId(workspace_id)`; it applies to all the workspace's traffic without assignment.
 */
export type GuardrailRow = GuardrailTable;

/** Spec 2.5 and reference §4.1. `enforce_zdr` is deprecated: accepted on input, always null here. */
export interface GuardrailRecord {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  limit_usd: number | null;
  reset_interval: 'daily' | 'weekly' | 'monthly' | null;
  allowed_models: string[] | null;
  allowed_providers: string[] | null;
  ignored_models: string[] | null;
  ignored_providers: string[] | null;
  enforce_zdr: null;
  enforce_zdr_anthropic: boolean | null;
  enforce_zdr_openai: boolean | null;
  enforce_zdr_google: boolean | null;
  enforce_zdr_other: boolean | null;
  content_filter_builtins: BuiltinFilter[] | null;
  /** `label` is always present here: null when the filter has none. */
  content_filters: Array<Required<CustomFilter>> | null;
  created_at: string;
  updated_at: string;
}

const list = <T>(text: string | null): T[] | null => (text === null ? null : (JSON.parse(text) as T[]));
const flag = (value: number | null): boolean | null => (value === null ? null : value === 1);

export function toGuardrailRecord(row: GuardrailRow): GuardrailRecord {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    description: row.description,
    limit_usd: row.limit_nanos === null ? null : nanosToUsd(Number(row.limit_nanos)),
    reset_interval: row.reset_interval,
    allowed_models: list<string>(row.allowed_models),
    allowed_providers: list<string>(row.allowed_providers),
    ignored_models: list<string>(row.ignored_models),
    ignored_providers: list<string>(row.ignored_providers),
    enforce_zdr: null,
    enforce_zdr_anthropic: flag(row.enforce_zdr_anthropic),
    enforce_zdr_openai: flag(row.enforce_zdr_openai),
    enforce_zdr_google: flag(row.enforce_zdr_google),
    enforce_zdr_other: flag(row.enforce_zdr_other),
    content_filter_builtins: list<BuiltinFilter>(row.content_filter_builtins),
    content_filters:
      list<CustomFilter>(row.content_filters)?.map((filter) => ({
        ...filter,
        label: filter.label ?? null,
      })) ?? null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** A guardrail row that enforces nothing: every rule null. */
export function emptyGuardrailRow(options: {
  id: string;
  workspaceId: string;
  name: string;
  isWorkspaceDefault: boolean;
  at: string;
}): GuardrailRow {
  return {
    id: options.id,
    workspace_id: options.workspaceId,
    name: options.name,
    description: null,
    limit_nanos: null,
    reset_interval: null,
    allowed_models: null,
    allowed_providers: null,
    ignored_models: null,
    ignored_providers: null,
    enforce_zdr_anthropic: null,
    enforce_zdr_openai: null,
    enforce_zdr_google: null,
    enforce_zdr_other: null,
    content_filter_builtins: null,
    content_filters: null,
    is_workspace_default: options.isWorkspaceDefault ? 1 : 0,
    created_at: options.at,
    updated_at: options.at,
  };
}

/**
 * The row of a workspace's default guardrail before it is stored (reference §4.4): it exists from
 * the workspace's creation, enforces nothing, and is written on its first PATCH.
 */
export const unstoredDefaultGuardrail = (workspace: { id: string; created_at: string }): GuardrailRow =>
  emptyGuardrailRow({
    id: defaultGuardrailId(workspace.id),
    workspaceId: workspace.id,
    name: defaultGuardrailName(workspace.id),
    isWorkspaceDefault: true,
    at: workspace.created_at,
  });
