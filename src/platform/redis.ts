import { Redis } from 'ioredis';

/** A Redis connection that fails fast instead of queueing commands forever while Redis is down. */
export function connectRedis(url: string, onError: (error: Error) => void = () => {}): Redis {
  const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
  // ioredis reconnects by itself; without a listener each failed attempt is printed as unhandled.
  redis.on('error', onError);
  return redis;
}

export type { Redis };
