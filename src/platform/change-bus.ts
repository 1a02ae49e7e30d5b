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
  /**
   * Runs when messages may have been missed (the subscription was re-established after Redis was
   * away): every cache must then forget what it holds.
   */
  onResync(handler: () => void): void;
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
    onResync: () => {},
    close: async () => {},
  };
}

export function createRedisChangeBus(options: {
  publisher: Redis;
  subscriber: Redis;
  prefix: string;
  onError: (error: unknown) => void;
}): ChangeBus {
  const { publisher, subscriber, prefix } = options;
  const instance = randomUUID();
  const channel = `${prefix}changes`;
  const table = createHandlerTable();
  const resyncs: Array<() => void> = [];
  // (Re)subscribe whenever the connection becomes ready. Anything published while this instance
  // was not listening is lost, so every cache is dropped: the next lookups read the database.
  const listen = () => {
    subscriber.subscribe(channel).then(
      () => {
        for (const resync of resyncs) resync();
      },
      (error: unknown) => options.onError(error),
    );
  };
  subscriber.on('ready', listen);
  if (subscriber.status === 'ready') listen();
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
      // The change is already committed and applied here; a Redis outage must not turn it into a
      // failed request. Other instances catch up through their resync and the cache's time limit.
      try {
        await publisher.publish(channel, JSON.stringify({ from: instance, topic, message }));
      } catch (error) {
        options.onError(error);
      }
    },
    subscribe: (topic, handler) => table.add(topic, handler),
    onResync: (handler) => {
      resyncs.push(handler);
    },
    async close() {
      subscriber.disconnect();
    },
  };
}
