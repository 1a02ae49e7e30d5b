import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { ErrorSchema } from '../../errors/error-schema.js';
import {
  CreateKeyBody,
  CurrentKeySchema,
  KeyHashParams,
  KeyRecordSchema,
  ListKeysQuery,
  UpdateKeyBody,
} from './key-schemas.js';
import type { KeyService } from './key-service.js';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 429: ErrorSchema };
const tags = ['API Keys'];

/**
 * `/keys` and `/key` (spec 2.3, 4.3, 4.4). Every `/keys` operation needs a management key; a
 * management key of a workspace other than the default one reaches only its own workspace's keys.
 */
export const keyRoutes =
  (service: KeyService): FastifyPluginAsync =>
  async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const management = { auth: 'management' as const };

    app.post(
      '/keys',
      {
        config: management,
        schema: {
          tags,
          summary: 'Create an API key; the secret is returned once, in `key`',
          body: CreateKeyBody,
          response: { 200: Type.Object({ data: KeyRecordSchema, key: Type.String() }), ...errors },
        },
      },
      async (request) => service.create(request.body, request.principal ?? undefined),
    );

    app.get(
      '/keys',
      {
        config: management,
        schema: {
          tags,
          summary: 'List API keys of a workspace, most recent first, in pages of 100',
          querystring: ListKeysQuery,
          response: { 200: Type.Object({ data: Type.Array(KeyRecordSchema) }), ...errors },
        },
      },
      async (request) => ({
        data: await service.list(
          {
            workspace_id: request.query.workspace_id,
            include_disabled: request.query.include_disabled === 'true',
            offset: request.query.offset ?? 0,
          },
          request.principal ?? undefined,
        ),
      }),
    );

    app.get(
      '/keys/:hash',
      {
        config: management,
        schema: {
          tags,
          summary: 'Get one API key',
          params: KeyHashParams,
          response: { 200: Type.Object({ data: KeyRecordSchema }), ...errors },
        },
      },
      async (request) => ({ data: await service.get(request.params.hash, request.principal ?? undefined) }),
    );

    app.patch(
      '/keys/:hash',
      {
        config: management,
        schema: {
          tags,
          summary: 'Update an API key: only the supplied fields change',
          params: KeyHashParams,
          body: UpdateKeyBody,
          response: { 200: Type.Object({ data: KeyRecordSchema }), ...errors },
        },
      },
      async (request) => ({
        data: await service.update(request.params.hash, request.body, request.principal ?? undefined),
      }),
    );

    app.delete(
      '/keys/:hash',
      {
        config: management,
        schema: {
          tags,
          summary: 'Delete an API key',
          params: KeyHashParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true) }), ...errors },
        },
      },
      async (request) => {
        await service.delete(request.params.hash, request.principal ?? undefined);
        return { deleted: true as const };
      },
    );

    app.get(
      '/key',
      {
        config: { auth: 'any' },
        schema: {
          tags,
          summary: 'The calling API key, with its usage and kind',
          response: { 200: Type.Object({ data: CurrentKeySchema }), 401: ErrorSchema, 429: ErrorSchema },
        },
      },
      async (request) => {
        if (!request.principal) throw new Error('authenticated route without a principal');
        return { data: service.current(request.principal.key) };
      },
    );
  };
