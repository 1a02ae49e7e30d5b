import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors/app-error.js';

/**
 * Drains the server on close(): requests already in flight finish, new requests get a 503 in the
 * error envelope, and no keep-alive connection holds close() open. Without the last part, a
 * response that finishes after close() began leaves its connection idle until the keep-alive
 * timeout (72 s), past the shutdown timeout; so such responses say `Connection: close` and idle
 * connections are dropped after each one.
 */
export interface CloseState {
  /** True once close() began: new requests get a 503, answers close their connection. */
  readonly closing: boolean;
  /** After an answer finished while closing: drops the connections left idle. */
  answered(): void;
}

export function installGracefulClose(app: FastifyInstance): CloseState {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Callback style, not async: an async hook costs every request a promise, and an async onSend
  // puts the response's write behind a microtask.
  app.addHook('onRequest', (_request, _reply, done) => {
    if (!closing) return done();
    done(
      new AppError('unavailable', 'Service is shutting down; retry the request', {
        headers: { connection: 'close' },
      }),
    );
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  const state: CloseState = {
    get closing() {
      return closing;
    },
    answered() {
      if (closing) setImmediate(() => app.server.closeIdleConnections());
    },
  };
  app.addHook('onResponse', (_request, _reply, done) => {
    state.answered();
    done();
  });
  return state;
}
