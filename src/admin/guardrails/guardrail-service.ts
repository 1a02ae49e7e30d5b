import { invalidRequest, notFound } from '../../errors/app-error.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import type { ChangeBus } from '../../platform/change-bus.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { publishPolicyChange, type WorkspaceAccess } from '../workspaces/workspace-access.js';
import { defaultGuardrailId } from './default-guardrail-id.js';
import {
  emptyGuardrailRow,
  type GuardrailRecord,
  type GuardrailRow,
  toGuardrailRecord,
  unstoredDefaultGuardrail,
} from './guardrail-record.js';
import type { GuardrailRepository } from './guardrail-repository.js';
import type { GuardrailInput, GuardrailRules } from './guardrail-rules.js';
import type { PatternChecker } from './regex-safety.js';

const NOT_FOUND = 'Guardrail not found';

/** A guardrail the caller may reach; `stored` is false for a default guardrail never PATCHed. */
export interface LocatedGuardrail {
  row: GuardrailRow;
  stored: boolean;
}

/** Guardrails (spec 2.5, 4.9; reference §4): CRUD and the workspace default guardrail. */
export function createGuardrailService(options: {
  guardrails: GuardrailRepository;
  rules: GuardrailRules;
  patterns: PatternChecker;
  access: WorkspaceAccess;
  bus: ChangeBus;
  clock: Clock;
}) {
  const { guardrails, rules, patterns, access, bus, clock } = options;

  /** By id, within the caller's reach (else 404), including default guardrails not yet stored. */
  async function locate(principal: Principal, id: string): Promise<LocatedGuardrail> {
    const wanted = id.toLowerCase();
    const row = await guardrails.find(wanted);
    if (row) {
      if (!(await access.canAccess(principal, row.workspace_id))) throw notFound(NOT_FOUND);
      return { row, stored: true };
    }
    // Not stored: it may be the default guardrail of a reachable workspace (its id is derived).
    const candidates = (await access.isOrganizationKey(principal))
      ? await guardrails.workspaces()
      : await guardrails.workspaces(principal.workspaceId);
    const workspace = candidates.find((candidate) => defaultGuardrailId(candidate.id) === wanted);
    if (!workspace) throw notFound(NOT_FOUND);
    return { row: unstoredDefaultGuardrail(workspace), stored: false };
  }

  /** The workspace a create or list names, or the caller's own (as for /keys and /byok). */
  const workspaceOf = access.targetWorkspace;

  async function checkPatterns(filters: GuardrailInput['content_filters']): Promise<void> {
    if (!filters) return;
    const refusal = await patterns.firstRefusal(filters.map((filter) => filter.pattern));
    if (refusal) {
      throw invalidRequest(
        `Invalid request parameters: body.content_filters.${refusal.index}.pattern is refused (invalid_regex_pattern): ${refusal.reason}`,
      );
    }
  }

  return {
    locate,

    async list(
      principal: Principal,
      query: { workspace_id?: string; offset: number; limit: number },
    ): Promise<{ data: GuardrailRecord[]; total_count: number }> {
      const workspaceId = await workspaceOf(principal, query.workspace_id, 'querystring.workspace_id');
      const [rows, total] = await Promise.all([
        guardrails.list({ workspaceId, offset: query.offset, limit: query.limit }),
        guardrails.count(workspaceId),
      ]);
      return { data: rows.map(toGuardrailRecord), total_count: total };
    },

    get: async (principal: Principal, id: string): Promise<GuardrailRecord> =>
      toGuardrailRecord((await locate(principal, id)).row),

    async create(
      principal: Principal,
      input: GuardrailInput & { name: string; workspace_id?: string },
    ): Promise<GuardrailRecord> {
      const workspaceId = await workspaceOf(principal, input.workspace_id, 'body.workspace_id');
      const columns = rules.columnsOf(input);
      await checkPatterns(input.content_filters);
      const at = clock.now().toISOString();
      const row: GuardrailRow = {
        ...emptyGuardrailRow({ id: newId(), workspaceId, name: input.name, isWorkspaceDefault: false, at }),
        ...columns,
      };
      await guardrails.insert(row);
      await publishPolicyChange(bus, workspaceId);
      return toGuardrailRecord(row);
    },

    async update(principal: Principal, id: string, input: GuardrailInput): Promise<GuardrailRecord> {
      const { row, stored } = await locate(principal, id);
      if (row.is_workspace_default === 1 && input.name !== undefined && input.name !== row.name) {
        throw invalidRequest(
          'Invalid request parameters: body.name cannot be changed: the workspace default guardrail keeps its name',
        );
      }
      const columns = rules.columnsOf(input);
      await checkPatterns(input.content_filters);
      const changes = { ...columns, updated_at: clock.now().toISOString() };
      // The first PATCH of a default guardrail stores it (reference §4.4).
      const updated = await guardrails.update(row.id, changes, stored ? undefined : row);
      if (!updated) throw notFound(NOT_FOUND);
      await publishPolicyChange(bus, updated.workspace_id);
      return toGuardrailRecord(updated);
    },

    async delete(principal: Principal, id: string): Promise<void> {
      const { row } = await locate(principal, id);
      if (row.is_workspace_default === 1) {
        throw invalidRequest(
          'Invalid request parameters: the workspace default guardrail cannot be deleted; PATCH it to change what it enforces',
        );
      }
      if (!(await guardrails.delete(row.id))) throw notFound(NOT_FOUND);
      await publishPolicyChange(bus, row.workspace_id);
    },
  };
}

export type GuardrailService = ReturnType<typeof createGuardrailService>;
