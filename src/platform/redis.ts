import type { Redis } from 'ioredis';

/**
 * A Redis connection that fails fast while Redis is away: commands are refused at once instead of
 * queueing (callers fall back or log), and ioredis keeps reconnecting in the background. The client
 * library is loaded only when Redis is configured: the embedded default never pays its memory.
 */
export async function connectRedis(url: string, onError: (error: Error) => void = () => {}): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000 });
  // Without a listener each failed reconnect attempt is printed as an unhandled error event.
  redis.on('error', onError);
  return redis;
}

/** Waits until the connection is ready, or gives up after `timeoutMs` (the gateway runs degraded). */
export function whenReady(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      resolve(false);
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    redis.once('ready', onReady);
  });
}

export type { Redis };
