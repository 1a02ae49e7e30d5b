import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { pageOf, principalOf, workspaceErrors, workspaceTags } from './route-conventions.js';
import { workspaceBudgetRoutes } from './workspace-budget-routes.js';
import type { WorkspaceBudgetService } from './workspace-budget-service.js';
import { workspaceMemberRoutes } from './workspace-member-routes.js';
import type { WorkspaceMemberService } from './workspace-member-service.js';
import {
  CreateWorkspaceBody,
  PageQuery,
  UpdateWorkspaceBody,
  WorkspaceIdParams,
  WorkspaceRecordSchema,
} from './workspace-schemas.js';
import type { WorkspaceService } from './workspace-service.js';

/**
 * `/workspaces` and its members and budgets (spec 2.6, 4.12; reference §5). Reads take any key of
 * the workspace; changes take a management key; a workspace out of the key's reach is a 404.
 */
export const workspaceRoutes =
  (services: {
    workspaces: WorkspaceService;
    members: WorkspaceMemberService;
    budgets: WorkspaceBudgetService;
  }): FastifyPluginAsync =>
  async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const service = services.workspaces;
    const record = Type.Object({ data: WorkspaceRecordSchema });

    app.get(
      '/workspaces',
      {
        config: { auth: 'any' },
        schema: {
          tags: workspaceTags,
          summary: 'List workspaces: every one for an organization key, otherwise the key’s own',
          querystring: PageQuery,
          response: {
            200: Type.Object({ data: Type.Array(WorkspaceRecordSchema), total_count: Type.Integer() }),
            ...workspaceErrors,
          },
        },
      },
      async (request) => service.list(principalOf(request), pageOf(request.query)),
    );

    app.post(
      '/workspaces',
      {
        config: { auth: 'management' },
        schema: {
          tags: workspaceTags,
          summary: 'Create a workspace (organization management keys only)',
          body: CreateWorkspaceBody,
          response: { 200: record, ...workspaceErrors },
        },
      },
      async (request) => ({ data: await service.create(request.body, principalOf(request)) }),
    );

    app.get(
      '/workspaces/:id',
      {
        config: { auth: 'any' },
        schema: {
          tags: workspaceTags,
          summary: 'Get a workspace by UUID or slug',
          params: WorkspaceIdParams,
          response: { 200: record, ...workspaceErrors },
        },
      },
      async (request) => ({ data: await service.get(request.params.id, principalOf(request)) }),
    );

    app.patch(
      '/workspaces/:id',
      {
        config: { auth: 'management' },
        schema: {
          tags: workspaceTags,
          summary: 'Update a workspace: only the supplied fields change',
          params: WorkspaceIdParams,
          body: UpdateWorkspaceBody,
          response: { 200: record, ...workspaceErrors },
        },
      },
      async (request) => ({
        data: await service.update(request.params.id, request.body, principalOf(request)),
      }),
    );

    app.delete(
      '/workspaces/:id',
      {
        config: { auth: 'management' },
        schema: {
          tags: workspaceTags,
          summary: 'Delete a workspace with no active keys (never the default workspace)',
          params: WorkspaceIdParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true) }), ...workspaceErrors },
        },
      },
      async (request) => {
        await service.delete(request.params.id, principalOf(request));
        return { deleted: true as const };
      },
    );

    await plugin.register(workspaceMemberRoutes(services.members));
    await plugin.register(workspaceBudgetRoutes(services.budgets));
  };
