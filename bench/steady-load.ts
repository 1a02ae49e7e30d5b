import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

/**
 * An open-loop load at a steady rate: one request every 1000/rate ms, sent when due whether or not
 * the earlier ones have answered (a stall of the server is counted in every request it delays, not
 * hidden by a client that waits for it — coordinated omission). Each is timed from when it was
 * handed to the connection pool: a request that waits for a free connection counts its wait; the
 * lateness of this client's own timer (whole milliseconds, and its event loop's turns) does not,
 * since it says nothing of the server.
 * autocannon's `overallRate` is a quota per second instead: each second's requests go out back to
 * back at its start, then the connections idle, so a "200 req/s" load is a saturating burst of 200
 * every second — which times bursts, not requests arriving at that rate.
 */
export interface SteadyResult {
  /** Per-response times in ms, sorted. */
  latencies: Float64Array;
  sent: number;
  /** Answers other than 2xx, and requests that failed without an answer. */
  failed: number;
}

export async function steadyLoad(options: {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  rate: number;
  seconds: number;
  /** The most requests in flight at once (connections); a request due while all are busy waits. */
  connections?: number;
}): Promise<SteadyResult> {
  const connections = options.connections ?? 32;
  const pool = new Pool(options.origin, { connections, pipelining: 1 });
  const interval = 1000 / options.rate;
  const total = Math.round(options.rate * options.seconds);
  const latencies: number[] = [];
  let failed = 0;
  const inFlight: Promise<void>[] = [];
  const fire = (): Promise<void> => {
    const sentAt = performance.now();
    return pool
      .request({ path: options.path, method: 'POST', headers: options.headers, body: options.body })
      .then(async (response) => {
        await response.body.dump();
        if (response.statusCode >= 200 && response.statusCode < 300)
          latencies.push(performance.now() - sentAt);
        else failed += 1;
      })
      .catch(() => {
        failed += 1;
      });
  };
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((done) => {
    const tick = () => {
      const now = performance.now();
      // Every request due by now goes out (a late timer sends its backlog at once).
      while (sent < total && start + sent * interval <= now) {
        inFlight.push(fire());
        sent += 1;
      }
      if (sent >= total) return done();
      setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
    };
    tick();
  });
  await Promise.all(inFlight);
  await pool.close();
  return { latencies: Float64Array.from(latencies).sort(), sent, failed };
}
