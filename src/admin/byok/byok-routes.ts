import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ErrorSchema } from '../../errors/error-schema.js';
import type { Principal } from '../../gateway/pipeline/authenticate.js';
import {
  ByokIdParams,
  ByokRecordSchema,
  CreateByokBody,
  ListByokQuery,
  UpdateByokBody,
} from './byok-schemas.js';
import type { ByokService } from './byok-service.js';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 429: ErrorSchema };
const tags = ['BYOK'];
const Data = Type.Object({ data: ByokRecordSchema });

function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('authenticated route without a principal');
  return request.principal;
}

/**
 * `/byok` (spec 2.10, 4.13; reference §10). Reading is open to any key of the workspace (the spec
 * lists no 403 for GET /byok/{id}, and the record holds no secret); changes need a management key.
 */
export const byokRoutes =
  (service: ByokService): FastifyPluginAsync =>
  async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const management = { auth: 'management' as const };
    const any = { auth: 'any' as const };

    app.get(
      '/byok',
      {
        config: any,
        schema: {
          tags,
          summary: "List a workspace's BYOK credentials (the caller's own workspace by default)",
          querystring: ListByokQuery,
          response: {
            200: Type.Object({ data: Type.Array(ByokRecordSchema), total_count: Type.Integer() }),
            ...errors,
          },
        },
      },
      async (request) => service.list(principalOf(request), request.query),
    );

    app.post(
      '/byok',
      {
        config: management,
        schema: {
          tags,
          summary: 'Add a provider credential; the secret is stored encrypted and never returned',
          body: CreateByokBody,
          response: { 200: Data, ...errors },
        },
      },
      async (request) => ({ data: await service.create(principalOf(request), request.body) }),
    );

    app.get(
      '/byok/:id',
      {
        config: any,
        schema: {
          tags,
          summary: 'Get one BYOK credential',
          params: ByokIdParams,
          response: { 200: Data, ...errors },
        },
      },
      async (request) => ({ data: await service.get(principalOf(request), request.params.id) }),
    );

    app.patch(
      '/byok/:id',
      {
        config: management,
        schema: {
          tags,
          summary: 'Update a BYOK credential: only the supplied fields change; `key` rotates the secret',
          params: ByokIdParams,
          body: UpdateByokBody,
          response: { 200: Data, ...errors },
        },
      },
      async (request) => ({
        data: await service.update(principalOf(request), request.params.id, request.body),
      }),
    );

    app.delete(
      '/byok/:id',
      {
        config: management,
        schema: {
          tags,
          summary: 'Delete a BYOK credential and its stored secret',
          params: ByokIdParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true) }), ...errors },
        },
      },
      async (request) => {
        await service.delete(principalOf(request), request.params.id);
        return { deleted: true as const };
      },
    );
  };
