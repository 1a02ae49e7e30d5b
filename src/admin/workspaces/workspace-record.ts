import type { Static } from 'typebox';
import { defaultGuardrailId } from '../guardrails/default-guardrail-id.js';
import type { WorkspaceMemberRow } from './workspace-member-repository.js';
import type { WorkspaceRow } from './workspace-repository.js';
import type { WorkspaceMemberSchema, WorkspaceRecordSchema } from './workspace-schemas.js';

export type WorkspaceRecord = Static<typeof WorkspaceRecordSchema>;
export type WorkspaceMemberRecord = Static<typeof WorkspaceMemberSchema>;

function keyIds(text: string | null): string[] | null {
  if (text === null) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === 'string') : null;
  } catch {
    return null;
  }
}

/** The workspace record of spec 2.6, with the reference's `default_guardrail_id` and BYOK flag. */
export function toWorkspaceRecord(row: WorkspaceRow): WorkspaceRecord {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    created_by: row.created_by,
    default_text_model: row.default_text_model,
    default_image_model: row.default_image_model,
    default_provider_sort: row.default_provider_sort,
    default_guardrail_id: defaultGuardrailId(row.id),
    include_byok_in_budgets: row.include_byok_in_budgets === 1,
    io_logging_api_key_ids: keyIds(row.io_logging_api_key_ids),
    io_logging_sampling_rate: Number(row.io_logging_sampling_rate),
    is_data_discount_logging_enabled: row.is_data_discount_logging_enabled === 1,
    is_observability_broadcast_enabled: row.is_observability_broadcast_enabled === 1,
    is_observability_io_logging_enabled: row.is_observability_io_logging_enabled === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export const toMemberRecord = (row: WorkspaceMemberRow): WorkspaceMemberRecord => ({
  id: row.id,
  workspace_id: row.workspace_id,
  user_id: row.user_id,
  role: row.role,
  created_at: row.created_at,
});
