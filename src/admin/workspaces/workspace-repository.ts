import type { Storage } from '../../storage/database.js';
import type { WorkspaceTable } from '../../storage/database-schema.js';

export type WorkspaceRow = WorkspaceTable;

/** Data access for workspaces. The workspace endpoints arrive in a later issue; keys need lookups now. */
export function createWorkspaceRepository(storage: Storage) {
  const { db } = storage;
  return {
    async findDefault(): Promise<WorkspaceRow | undefined> {
      return db.selectFrom('workspaces').selectAll().where('is_default', '=', 1).executeTakeFirst();
    },
    async findById(id: string): Promise<WorkspaceRow | undefined> {
      return db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();
    },
  };
}

export type WorkspaceRepository = ReturnType<typeof createWorkspaceRepository>;
