import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { ErrorSchema } from '../../errors/error-schema.js';
import { principalOf } from '../workspaces/route-conventions.js';
import {
  CreateDestinationBody,
  DeliveryRecordSchema,
  DestinationIdParams,
  DestinationRecordSchema,
  ListDeliveriesQuery,
  ListDestinationsQuery,
  UpdateDestinationBody,
} from './destination-schemas.js';
import type { DestinationService } from './destination-service.js';

const errors = {
  400: ErrorSchema,
  401: ErrorSchema,
  403: ErrorSchema,
  404: ErrorSchema,
  409: ErrorSchema,
  429: ErrorSchema,
};
const tags = ['Observability'];
const Data = Type.Object({ data: DestinationRecordSchema });
const management = { auth: 'management' as const };
const any = { auth: 'any' as const };
const collection = '/observability/destinations';
const item = `${collection}/:id`;

/**
 * `/observability/destinations` (spec 2.4, 4.5; reference §3). Reading is open to any key of the
 * workspace, like /byok (the spec lists no 403 for reads, and configs are masked); changes, the
 * connection test and the delivery listings need a management key.
 */
export const observabilityRoutes =
  (service: DestinationService): FastifyPluginAsync =>
  async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      collection,
      {
        config: any,
        schema: {
          tags,
          summary:
            "List a workspace's observability destinations (the caller's own by default), newest first",
          querystring: ListDestinationsQuery,
          response: {
            200: Type.Object({ data: Type.Array(DestinationRecordSchema), total_count: Type.Integer() }),
            ...errors,
          },
        },
      },
      async (request) => service.list(principalOf(request), request.query),
    );

    app.post(
      collection,
      {
        config: management,
        schema: {
          tags,
          summary: 'Add a destination for copies of generation traffic (at most 5 per type)',
          body: CreateDestinationBody,
          response: { 200: Data, ...errors },
        },
      },
      async (request) => ({ data: await service.create(principalOf(request), request.body) }),
    );

    app.get(
      item,
      {
        config: any,
        schema: {
          tags,
          summary: 'Get one destination (secrets masked)',
          params: DestinationIdParams,
          response: { 200: Data, ...errors },
        },
      },
      async (request) => ({ data: await service.get(principalOf(request), request.params.id) }),
    );

    app.patch(
      item,
      {
        config: management,
        schema: {
          tags,
          summary: 'Update a destination: only supplied fields change; masked config values are ignored',
          params: DestinationIdParams,
          body: UpdateDestinationBody,
          response: { 200: Data, ...errors },
        },
      },
      async (request) => ({
        data: await service.update(principalOf(request), request.params.id, request.body),
      }),
    );

    app.delete(
      item,
      {
        config: management,
        schema: {
          tags,
          summary: 'Delete a destination (it stops receiving traffic at once)',
          params: DestinationIdParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true) }), ...errors },
        },
      },
      async (request) => {
        await service.delete(principalOf(request), request.params.id);
        return { deleted: true as const };
      },
    );

    app.post(
      `${item}/test`,
      {
        config: management,
        schema: {
          tags,
          summary: "Check the destination's connection with its stored config (nothing is stored there)",
          params: DestinationIdParams,
          response: {
            200: Type.Object({
              data: Type.Object({ ok: Type.Boolean(), error: Type.Optional(Type.String()) }),
            }),
            ...errors,
          },
        },
      },
      async (request) => ({ data: await service.test(principalOf(request), request.params.id) }),
    );

    app.get(
      `${item}/deliveries`,
      {
        config: management,
        schema: {
          tags,
          summary: 'List deliveries of a destination by status: the dead letters by default, or pending ones',
          params: DestinationIdParams,
          querystring: ListDeliveriesQuery,
          response: {
            200: Type.Object({ data: Type.Array(DeliveryRecordSchema), total_count: Type.Integer() }),
            ...errors,
          },
        },
      },
      async (request) => service.deliveries(principalOf(request), request.params.id, request.query),
    );

    app.post(
      `${item}/deliveries/retry`,
      {
        config: management,
        schema: {
          tags,
          summary: "Queue a destination's dead letters for delivery again, now",
          params: DestinationIdParams,
          response: { 200: Type.Object({ data: Type.Object({ requeued: Type.Integer() }) }), ...errors },
        },
      },
      async (request) => ({ data: await service.retryDeliveries(principalOf(request), request.params.id) }),
    );
  };
