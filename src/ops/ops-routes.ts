import type { FastifyPluginAsync } from 'fastify';
import type { Registry } from 'prom-client';
import { AppError } from '../errors/app-error.js';
import type { Storage } from '../storage/database.js';

/** Liveness, readiness and Prometheus metrics, at the root (outside `/api/v1`), no authentication. */
export const opsRoutes =
  (options: { storage: Storage; metrics: Registry }): FastifyPluginAsync =>
  async (app) => {
    const hidden = { hide: true };
    app.get('/health', { config: { auth: 'public' }, schema: hidden }, async () => ({ status: 'ok' }));

    app.get('/ready', { config: { auth: 'public' }, schema: hidden }, async (request) => {
      try {
        await options.storage.ping();
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed');
        throw new AppError('unavailable', 'Database is not reachable');
      }
      return { status: 'ready', database: options.storage.kind };
    });

    app.get('/metrics', { config: { auth: 'public' }, schema: hidden }, async (_request, reply) => {
      reply.header('content-type', options.metrics.contentType);
      return options.metrics.metrics();
    });
  };
