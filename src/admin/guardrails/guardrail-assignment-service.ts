import { invalidRequest } from '../../errors/app-error.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import type { ChangeBus } from '../../platform/change-bus.js';
import type { Clock } from '../../platform/clock.js';
import { publishPolicyChange, type WorkspaceAccess } from '../workspaces/workspace-access.js';
import type {
  AssignmentScope,
  GuardrailAssignmentRepository,
  KeyAssignmentRow,
  MemberAssignmentRow,
} from './guardrail-assignment-repository.js';
import type { GuardrailService, LocatedGuardrail } from './guardrail-service.js';

/**
 * Switchyard serves one organization, so every member assignment carries the same
 * `organization_id` (spec 2.11 has the field; there is no second organization to tell apart).
 */
export const ORGANIZATION_ID = 'default';

interface Page {
  offset: number;
  limit: number;
}

const none = { data: [], total_count: 0 };

/** A default guardrail applies to all its workspace's traffic; assigning it would mean nothing. */
function refuseDefault(guardrail: LocatedGuardrail): void {
  if (guardrail.row.is_workspace_default === 1) {
    throw invalidRequest(
      'Invalid request parameters: the workspace default guardrail applies to every key and member of its workspace and takes no assignments',
    );
  }
}

/** The index of the first element not in `known`, or -1. */
const firstUnknown = (values: string[], known: Set<string>) => values.findIndex((value) => !known.has(value));

/**
 * Key and member assignments (reference §4.3). `assigned_by` is the hash of the management key that
 * made the assignment: keys are the only identity a request carries here.
 */
export function createGuardrailAssignmentService(options: {
  guardrails: GuardrailService;
  assignments: GuardrailAssignmentRepository;
  access: WorkspaceAccess;
  bus: ChangeBus;
  clock: Clock;
}) {
  const { guardrails, assignments, access, bus, clock } = options;

  /** Everything within the caller's reach: every workspace for an organization key, else its own. */
  const reach = async (principal: Principal): Promise<AssignmentScope> =>
    (await access.isOrganizationKey(principal)) ? 'all' : { workspaceId: principal.workspaceId };

  const keyPage = (result: { rows: KeyAssignmentRow[]; total: number }) => ({
    data: result.rows,
    total_count: result.total,
  });
  /** A guardrail deleted while its assignments were being written answers 404, not a foreign-key 500. */
  async function writing<T>(principal: Principal, guardrailId: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      await guardrails.locate(principal, guardrailId);
      throw error;
    }
  }

  const memberPage = (result: { rows: MemberAssignmentRow[]; total: number }) => ({
    data: result.rows,
    total_count: result.total,
  });

  return {
    async listKeys(principal: Principal, guardrailId: string, page: Page) {
      const guardrail = await guardrails.locate(principal, guardrailId);
      if (!guardrail.stored) return none;
      return keyPage(await assignments.listKeys({ guardrailId: guardrail.row.id }, page));
    },

    listAllKeys: async (principal: Principal, page: Page) =>
      keyPage(await assignments.listKeys(await reach(principal), page)),

    async assignKeys(principal: Principal, guardrailId: string, hashes: string[]) {
      const guardrail = await guardrails.locate(principal, guardrailId);
      refuseDefault(guardrail);
      const { row } = guardrail;
      // One message for unknown keys and keys of other workspaces: nothing leaks about either.
      const unknown = firstUnknown(
        hashes,
        await assignments.keysOfWorkspace([...new Set(hashes)], row.workspace_id),
      );
      if (unknown >= 0) {
        throw invalidRequest(
          `Invalid request parameters: body.key_hashes.${unknown} must be the hash of an API key of the guardrail's workspace`,
        );
      }
      const count = await writing(principal, guardrailId, () =>
        assignments.assignKeys({
          guardrailId: row.id,
          hashes: [...new Set(hashes)],
          assignedBy: principal.keyHash,
          at: clock.now().toISOString(),
        }),
      );
      if (count > 0) await publishPolicyChange(bus, row.workspace_id);
      return { assigned_count: count };
    },

    async unassignKeys(principal: Principal, guardrailId: string, hashes: string[]) {
      const guardrail = await guardrails.locate(principal, guardrailId);
      if (!guardrail.stored) return { unassigned_count: 0 };
      const count = await assignments.unassignKeys(guardrail.row.id, [...new Set(hashes)]);
      if (count > 0) await publishPolicyChange(bus, guardrail.row.workspace_id);
      return { unassigned_count: count };
    },

    async listMembers(principal: Principal, guardrailId: string, page: Page) {
      const guardrail = await guardrails.locate(principal, guardrailId);
      if (!guardrail.stored) return none;
      return memberPage(await assignments.listMembers({ guardrailId: guardrail.row.id }, page));
    },

    listAllMembers: async (principal: Principal, page: Page) =>
      memberPage(await assignments.listMembers(await reach(principal), page)),

    async assignMembers(principal: Principal, guardrailId: string, userIds: string[]) {
      const guardrail = await guardrails.locate(principal, guardrailId);
      refuseDefault(guardrail);
      const { row } = guardrail;
      const unique = [...new Set(userIds)];
      const unknown = firstUnknown(userIds, await assignments.usersOfWorkspace(unique, row.workspace_id));
      if (unknown >= 0) {
        throw invalidRequest(
          `Invalid request parameters: body.member_user_ids.${unknown} must be a member of the guardrail's workspace (or the creator_user_id of one of its keys)`,
        );
      }
      const count = await writing(principal, guardrailId, () =>
        assignments.assignMembers({
          guardrailId: row.id,
          workspaceId: row.workspace_id,
          organizationId: ORGANIZATION_ID,
          userIds: unique,
          assignedBy: principal.keyHash,
          at: clock.now().toISOString(),
        }),
      );
      if (count > 0) await publishPolicyChange(bus, row.workspace_id);
      return { assigned_count: count };
    },

    async unassignMembers(principal: Principal, guardrailId: string, userIds: string[]) {
      const guardrail = await guardrails.locate(principal, guardrailId);
      if (!guardrail.stored) return { unassigned_count: 0 };
      const count = await assignments.unassignMembers(guardrail.row.id, [...new Set(userIds)]);
      if (count > 0) await publishPolicyChange(bus, guardrail.row.workspace_id);
      return { unassigned_count: count };
    },
  };
}

export type GuardrailAssignmentService = ReturnType<typeof createGuardrailAssignmentService>;
