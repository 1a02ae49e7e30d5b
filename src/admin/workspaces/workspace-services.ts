import type { ChangeBus } from '../../platform/change-bus.js';
import type { Clock } from '../../platform/clock.js';
import type { Storage } from '../../storage/database.js';
import type { KeyCache } from '../keys/key-cache.js';
import { createWorkspaceAccess } from './workspace-access.js';
import { createWorkspaceBudgetRepository } from './workspace-budget-repository.js';
import { createWorkspaceBudgetService } from './workspace-budget-service.js';
import { createWorkspaceMemberRepository } from './workspace-member-repository.js';
import { createWorkspaceMemberService } from './workspace-member-service.js';
import { createWorkspaceRepository } from './workspace-repository.js';
import { createWorkspaceService } from './workspace-service.js';

/** The workspace, member and budget services, wired over one storage, key cache and change bus. */
export function createWorkspaceServices(options: {
  storage: Storage;
  cache: KeyCache;
  bus: ChangeBus;
  clock: Clock;
}) {
  const { storage, cache, bus, clock } = options;
  const repository = createWorkspaceRepository(storage);
  const workspaces = createWorkspaceService({
    workspaces: repository,
    access: createWorkspaceAccess(repository),
    cache,
    bus,
    clock,
  });
  return {
    workspaces,
    members: createWorkspaceMemberService({
      workspaces,
      members: createWorkspaceMemberRepository(storage),
      clock,
    }),
    budgets: createWorkspaceBudgetService({
      workspaces,
      budgets: createWorkspaceBudgetRepository(storage),
      bus,
      clock,
    }),
  };
}

export type WorkspaceServices = ReturnType<typeof createWorkspaceServices>;
