import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { principalOf, workspaceErrors, workspaceTags } from './route-conventions.js';
import type { WorkspaceBudgetService } from './workspace-budget-service.js';
import { BudgetParams, BudgetRecordSchema, PutBudgetBody, WorkspaceIdParams } from './workspace-schemas.js';

const byokFlag = Type.Boolean({
  description: 'Whether BYOK spend counts toward every budget of the workspace',
});
const oneBudget = Type.Object({ data: BudgetRecordSchema, include_byok_in_budgets: byokFlag });

/** `/workspaces/{id}/budgets` and `/workspaces/{id}/budgets/{interval}` (reference §5). */
export const workspaceBudgetRoutes =
  (service: WorkspaceBudgetService): FastifyPluginAsync =>
  async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/workspaces/:id/budgets',
      {
        config: { auth: 'any' },
        schema: {
          tags: workspaceTags,
          summary: 'List a workspace’s budgets, with the spend of each one’s current window',
          params: WorkspaceIdParams,
          response: {
            200: Type.Object({ data: Type.Array(BudgetRecordSchema), include_byok_in_budgets: byokFlag }),
            ...workspaceErrors,
          },
        },
      },
      async (request) => service.list(request.params.id, principalOf(request)),
    );

    app.get(
      '/workspaces/:id/budgets/:interval',
      {
        config: { auth: 'any' },
        schema: {
          tags: workspaceTags,
          summary: 'Get the budget of one interval',
          params: BudgetParams,
          response: { 200: oneBudget, ...workspaceErrors },
        },
      },
      async (request) => service.get(request.params.id, request.params.interval, principalOf(request)),
    );

    app.put(
      '/workspaces/:id/budgets/:interval',
      {
        config: { auth: 'management' },
        schema: {
          tags: workspaceTags,
          summary: 'Create or replace the budget of one interval',
          params: BudgetParams,
          body: PutBudgetBody,
          response: { 200: oneBudget, ...workspaceErrors },
        },
      },
      async (request) =>
        service.put(request.params.id, request.params.interval, request.body, principalOf(request)),
    );

    app.delete(
      '/workspaces/:id/budgets/:interval',
      {
        config: { auth: 'management' },
        schema: {
          tags: workspaceTags,
          summary: 'Delete the budget of one interval; `deleted: true` even when there was none',
          params: BudgetParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true) }), ...workspaceErrors },
        },
      },
      async (request) => service.delete(request.params.id, request.params.interval, principalOf(request)),
    );
  };
