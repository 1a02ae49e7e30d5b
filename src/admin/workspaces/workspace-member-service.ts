import { invalidRequest, notFound } from '../../errors/app-error.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { WorkspaceMemberRepository, WorkspaceMemberRow } from './workspace-member-repository.js';
import { toMemberRecord } from './workspace-record.js';
import type { WorkspaceService } from './workspace-service.js';

/**
 * Workspace members (reference §5). There are no organization roles here to copy, so every member
 * is added with role `member`.
 */
export function createWorkspaceMemberService(options: {
  workspaces: WorkspaceService;
  members: WorkspaceMemberRepository;
  clock: Clock;
}) {
  const { workspaces, members, clock } = options;
  return {
    async list(idOrSlug: string, principal: Principal, page: { offset: number; limit: number }) {
      const workspace = await workspaces.resolve(idOrSlug, principal);
      const [rows, total] = await Promise.all([
        members.list({ workspaceId: workspace.id, ...page }),
        members.count(workspace.id),
      ]);
      return { data: rows.map(toMemberRecord), total_count: total };
    },

    /** Adds the users that are not members yet; `added_count` counts only those. */
    async add(idOrSlug: string, principal: Principal, userIds: string[]) {
      const workspace = await workspaces.resolve(idOrSlug, principal);
      const at = clock.now().toISOString();
      const rows: WorkspaceMemberRow[] = [...new Set(userIds)].map((userId) => ({
        id: newId(),
        workspace_id: workspace.id,
        user_id: userId,
        role: 'member',
        created_at: at,
      }));
      const added = await members.add(rows);
      return { added_count: added.length, data: added.map(toMemberRecord) };
    },

    /** Refuses (and removes nobody) while any of the users holds an active key in the workspace. */
    async remove(idOrSlug: string, principal: Principal, userIds: string[]) {
      const workspace = await workspaces.resolve(idOrSlug, principal);
      const result = await members.remove({ workspaceId: workspace.id, userIds: [...new Set(userIds)] });
      if ('missing' in result) throw notFound('Workspace not found');
      if ('blocked' in result) {
        throw invalidRequest(
          `Invalid request parameters: these members still have active API keys in this workspace and cannot be removed: ${result.blocked.join(', ')}`,
        );
      }
      return { removed_count: result.removed };
    },
  };
}

export type WorkspaceMemberService = ReturnType<typeof createWorkspaceMemberService>;
