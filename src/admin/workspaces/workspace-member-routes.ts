import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { pageOf, principalOf, workspaceErrors, workspaceTags } from './route-conventions.js';
import type { WorkspaceMemberService } from './workspace-member-service.js';
import { PageQuery, UserIdsBody, WorkspaceIdParams, WorkspaceMemberSchema } from './workspace-schemas.js';

/** `/workspaces/{id}/members`, `…/members/add`, `…/members/remove` (reference §5). */
export const workspaceMemberRoutes =
  (service: WorkspaceMemberService): FastifyPluginAsync =>
  async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/workspaces/:id/members',
      {
        config: { auth: 'any' },
        schema: {
          tags: workspaceTags,
          summary: 'List the members of a workspace',
          params: WorkspaceIdParams,
          querystring: PageQuery,
          response: {
            200: Type.Object({ data: Type.Array(WorkspaceMemberSchema), total_count: Type.Integer() }),
            ...workspaceErrors,
          },
        },
      },
      async (request) => service.list(request.params.id, principalOf(request), pageOf(request.query)),
    );

    app.post(
      '/workspaces/:id/members/add',
      {
        config: { auth: 'management' },
        schema: {
          tags: workspaceTags,
          summary: 'Add users to a workspace; users already in it are left as they are',
          params: WorkspaceIdParams,
          body: UserIdsBody,
          response: {
            200: Type.Object({ added_count: Type.Integer(), data: Type.Array(WorkspaceMemberSchema) }),
            ...workspaceErrors,
          },
        },
      },
      async (request) => service.add(request.params.id, principalOf(request), request.body.user_ids),
    );

    app.post(
      '/workspaces/:id/members/remove',
      {
        config: { auth: 'management' },
        schema: {
          tags: workspaceTags,
          summary: 'Remove users from a workspace (refused while one of them has an active key in it)',
          params: WorkspaceIdParams,
          body: UserIdsBody,
          response: { 200: Type.Object({ removed_count: Type.Integer() }), ...workspaceErrors },
        },
      },
      async (request) => service.remove(request.params.id, principalOf(request), request.body.user_ids),
    );
  };
