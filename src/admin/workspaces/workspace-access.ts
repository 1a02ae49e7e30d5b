import { invalidRequest, notFound } from '../../errors/app-error.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import type { ChangeBus } from '../../platform/change-bus.js';
import type { WorkspaceRepository } from './workspace-repository.js';

/**
 * Who may reach which workspace. A management key of the default workspace acts for the whole
 * organization and reaches every workspace; a key of any other workspace reaches only its own.
 * Anything outside a key's reach answers 404, never 403, so that ids of other workspaces do not leak.
 */
export function createWorkspaceAccess(workspaces: WorkspaceRepository) {
  let defaultId: string | null = null;

  async function defaultWorkspaceId(): Promise<string> {
    // The default workspace can be neither deleted nor replaced, so its id is read once.
    if (defaultId === null) defaultId = (await workspaces.findDefault())?.id ?? null;
    if (defaultId === null) throw new Error('the default workspace is missing');
    return defaultId;
  }

  return {
    defaultWorkspaceId,
    /** True for a management key of the default workspace. */
    async isOrganizationKey(principal: Principal): Promise<boolean> {
      return principal.isManagement && principal.workspaceId === (await defaultWorkspaceId());
    },
    async canAccess(principal: Principal, workspaceId: string): Promise<boolean> {
      if (principal.workspaceId === workspaceId) return true;
      return principal.isManagement && principal.workspaceId === (await defaultWorkspaceId());
    },
    /**
     * The workspace a create or list acts on: the caller's own unless it names another. Only an
     * organization key may name another workspace (one that does not exist is a 400 naming `field`);
     * any other key naming another workspace gets the 404 of something out of reach.
     */
    async targetWorkspace(
      principal: Principal,
      requested: string | undefined,
      field: string,
    ): Promise<string> {
      const id = requested?.toLowerCase();
      if (id === undefined || id === principal.workspaceId) return principal.workspaceId;
      const organization = principal.isManagement && principal.workspaceId === (await defaultWorkspaceId());
      if (!organization) throw notFound('Workspace not found');
      if (!(await workspaces.findById(id))) {
        throw invalidRequest(`Invalid request parameters: ${field} names no existing workspace`);
      }
      return id;
    },
    /** Throws the 404 of a resource the principal cannot see. */
    async assertAccess(
      principal: Principal,
      workspaceId: string,
      message = 'Resource not found',
    ): Promise<void> {
      const allowed =
        principal.workspaceId === workspaceId ||
        (principal.isManagement && principal.workspaceId === (await defaultWorkspaceId()));
      if (!allowed) throw notFound(message);
    },
  };
}

export type WorkspaceAccess = ReturnType<typeof createWorkspaceAccess>;

/**
 * Change-bus topic for a workspace's policy (budgets, guardrails and their assignments, BYOK
 * credentials, the workspace row itself); the message is the workspace id. The gateway's policy
 * cache drops that workspace on every instance when it hears it.
 */
export const POLICY_TOPIC = 'workspace-policy';

export const publishPolicyChange = (bus: ChangeBus, workspaceId: string): Promise<void> =>
  bus.publish(POLICY_TOPIC, workspaceId);
