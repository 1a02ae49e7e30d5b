import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

export type ChangeHandler = (message: string) => void;

/**
 * Tells every instance that cached state changed (a key was updated, say). Handlers of this
 * instance run before `publish` returns, so the next request here already sees the change;
 * other instances hear it through Redis pub/sub when Redis is configured.
 */
export interface ChangeBus {
  publish(topic: string, message: string): Promise<void>;
  subscribe(topic: string, handler: ChangeHandler): void;
  close(): Promise<void>;
}

function createHandlerTable() {
  const handlers = new Map<string, ChangeHandler[]>();
  return {
    add(topic: string, handler: ChangeHandler) {
      handlers.set(topic, [...(handlers.get(topic) ?? []), handler]);
    },
    run(topic: string, message: string) {
      for (const handler of handlers.get(topic) ?? []) handler(message);
    },
  };
}

export function createLocalChangeBus(): ChangeBus {
  const table = createHandlerTable();
  return {
    publish: async (topic, message) => table.run(topic, message),
    subscribe: (topic, handler) => table.add(topic, handler),
    close: async () => {},
  };
}

export function createRedisChangeBus(options: {
  publisher: Redis;
  subscriber: Redis;
  prefix: string;
}): ChangeBus {
  const { publisher, subscriber, prefix } = options;
  const instance = randomUUID();
  const channel = `${prefix}changes`;
  const table = createHandlerTable();
  // A failed subscribe is retried by ioredis on reconnect; it must not become an unhandled rejection.
  subscriber.subscribe(channel).catch(() => {});
  subscriber.on('message', (_channel: string, raw: string) => {
    let parsed: { from?: unknown; topic?: unknown; message?: unknown };
    try {
      parsed = JSON.parse(raw);
    } catch {
      return;
    }
    if (parsed.from === instance || typeof parsed.topic !== 'string' || typeof parsed.message !== 'string')
      return;
    table.run(parsed.topic, parsed.message);
  });
  return {
    async publish(topic, message) {
      table.run(topic, message);
      await publisher.publish(channel, JSON.stringify({ from: instance, topic, message }));
    },
    subscribe: (topic, handler) => table.add(topic, handler),
    async close() {
      subscriber.disconnect();
    },
  };
}
