import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ErrorSchema } from '../../errors/error-schema.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import {
  CreateGuardrailBody,
  GuardrailIdParams,
  GuardrailRecordSchema,
  KeyAssignmentSchema,
  KeyHashesBody,
  ListGuardrailsQuery,
  MemberAssignmentSchema,
  MemberUserIdsBody,
  PageQuery,
  UpdateGuardrailBody,
} from './guardrail-schemas.js';
import type { GuardrailServices } from './guardrail-services.js';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 429: ErrorSchema };
const tags = ['Guardrails'];
const management = { auth: 'management' as const };
const Guardrail = Type.Object({ data: GuardrailRecordSchema });
const KeyAssignments = Type.Object({ data: Type.Array(KeyAssignmentSchema), total_count: Type.Integer() });
const MemberAssignments = Type.Object({
  data: Type.Array(MemberAssignmentSchema),
  total_count: Type.Integer(),
});
const Assigned = Type.Object({ assigned_count: Type.Integer() });
const Unassigned = Type.Object({ unassigned_count: Type.Integer() });

function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('authenticated route without a principal');
  return request.principal;
}

/** Lists default to 50 items (spec 8: `limit` 1–100). */
const pageOf = (query: { offset?: number; limit?: number }) => ({
  offset: query.offset ?? 0,
  limit: query.limit ?? 50,
});

/** `/guardrails` and their assignments (spec 2.5, 4.9, 4.10; reference §4). Management keys only. */
export const guardrailRoutes =
  ({ guardrails, assignments }: GuardrailServices): FastifyPluginAsync =>
  async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/guardrails',
      {
        config: management,
        schema: {
          tags,
          summary: "List a workspace's guardrails (default: the key's workspace), newest first",
          querystring: ListGuardrailsQuery,
          response: {
            200: Type.Object({ data: Type.Array(GuardrailRecordSchema), total_count: Type.Integer() }),
            ...errors,
          },
        },
      },
      async (request) =>
        guardrails.list(principalOf(request), {
          workspace_id: request.query.workspace_id,
          ...pageOf(request.query),
        }),
    );

    app.post(
      '/guardrails',
      {
        config: management,
        schema: {
          tags,
          summary: 'Create a guardrail; it enforces nothing until keys or members are assigned',
          body: CreateGuardrailBody,
          response: { 200: Guardrail, ...errors },
        },
      },
      async (request) => ({ data: await guardrails.create(principalOf(request), request.body) }),
    );

    app.get(
      '/guardrails/:id',
      {
        config: management,
        schema: {
          tags,
          summary: 'Get a guardrail (a workspace default guardrail exists before its first PATCH)',
          params: GuardrailIdParams,
          response: { 200: Guardrail, ...errors },
        },
      },
      async (request) => ({ data: await guardrails.get(principalOf(request), request.params.id) }),
    );

    app.patch(
      '/guardrails/:id',
      {
        config: management,
        schema: {
          tags,
          summary: 'Update a guardrail: supplied fields change, lists are replaced, null clears',
          params: GuardrailIdParams,
          body: UpdateGuardrailBody,
          response: { 200: Guardrail, ...errors },
        },
      },
      async (request) => ({
        data: await guardrails.update(principalOf(request), request.params.id, request.body),
      }),
    );

    app.delete(
      '/guardrails/:id',
      {
        config: management,
        schema: {
          tags,
          summary: 'Delete a guardrail and its assignments',
          params: GuardrailIdParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true) }), ...errors },
        },
      },
      async (request) => {
        await guardrails.delete(principalOf(request), request.params.id);
        return { deleted: true as const };
      },
    );

    app.get(
      '/guardrails/assignments/keys',
      {
        config: management,
        schema: {
          tags,
          summary: 'Every key assignment within the key’s reach',
          querystring: PageQuery,
          response: { 200: KeyAssignments, ...errors },
        },
      },
      async (request) => assignments.listAllKeys(principalOf(request), pageOf(request.query)),
    );

    app.get(
      '/guardrails/assignments/members',
      {
        config: management,
        schema: {
          tags,
          summary: 'Every member assignment within the key’s reach (spec 4.10)',
          querystring: PageQuery,
          response: { 200: MemberAssignments, ...errors },
        },
      },
      async (request) => assignments.listAllMembers(principalOf(request), pageOf(request.query)),
    );

    app.get(
      '/guardrails/:id/assignments/keys',
      {
        config: management,
        schema: {
          tags,
          summary: "A guardrail's key assignments",
          params: GuardrailIdParams,
          querystring: PageQuery,
          response: { 200: KeyAssignments, ...errors },
        },
      },
      async (request) => assignments.listKeys(principalOf(request), request.params.id, pageOf(request.query)),
    );

    app.post(
      '/guardrails/:id/assignments/keys',
      {
        config: management,
        schema: {
          tags,
          summary: 'Assign keys to a guardrail; a key holds one guardrail, so this replaces its previous one',
          params: GuardrailIdParams,
          body: KeyHashesBody,
          response: { 200: Assigned, ...errors },
        },
      },
      async (request) =>
        assignments.assignKeys(principalOf(request), request.params.id, request.body.key_hashes),
    );

    app.post(
      '/guardrails/:id/assignments/keys/remove',
      {
        config: management,
        schema: {
          tags,
          summary: 'Remove key assignments from a guardrail',
          params: GuardrailIdParams,
          body: KeyHashesBody,
          response: { 200: Unassigned, ...errors },
        },
      },
      async (request) =>
        assignments.unassignKeys(principalOf(request), request.params.id, request.body.key_hashes),
    );

    app.get(
      '/guardrails/:id/assignments/members',
      {
        config: management,
        schema: {
          tags,
          summary: "A guardrail's member assignments",
          params: GuardrailIdParams,
          querystring: PageQuery,
          response: { 200: MemberAssignments, ...errors },
        },
      },
      async (request) =>
        assignments.listMembers(principalOf(request), request.params.id, pageOf(request.query)),
    );

    app.post(
      '/guardrails/:id/assignments/members',
      {
        config: management,
        schema: {
          tags,
          summary: 'Assign members to a guardrail; a member holds one guardrail per workspace',
          params: GuardrailIdParams,
          body: MemberUserIdsBody,
          response: { 200: Assigned, ...errors },
        },
      },
      async (request) =>
        assignments.assignMembers(principalOf(request), request.params.id, request.body.member_user_ids),
    );

    app.post(
      '/guardrails/:id/assignments/members/remove',
      {
        config: management,
        schema: {
          tags,
          summary: 'Remove member assignments from a guardrail',
          params: GuardrailIdParams,
          body: MemberUserIdsBody,
          response: { 200: Unassigned, ...errors },
        },
      },
      async (request) =>
        assignments.unassignMembers(principalOf(request), request.params.id, request.body.member_user_ids),
    );
  };
