import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors/app-error.js';

/**
 * Drains the server on close(): requests already in flight finish, new requests get a 503 in the
 * error envelope, and no keep-alive connection holds close() open. Without the last part, a
 * response that finishes after close() began leaves its connection idle until the keep-alive
 * timeout (72 s), past the shutdown timeout; so such responses say `Connection: close` and idle
 * connections are dropped after each one.
 */
export function installGracefulClose(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async () => {
    if (closing) {
      throw new AppError('unavailable', 'Service is shutting down; retry the request', {
        headers: { connection: 'close' },
      });
    }
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) reply.header('connection', 'close');
    return payload;
  });
  app.addHook('onResponse', async () => {
    if (closing) setImmediate(() => app.server.closeIdleConnections());
  });
}
