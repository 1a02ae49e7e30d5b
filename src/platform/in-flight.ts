/**
 * Counts requests still being served, so that shutdown can wait for the last of them to settle its
 * reservation and queue its generation record before the record log closes. A server's `close()`
 * only waits for connections: once a connection is cut (the shutdown timeout), its request still
 * has an upstream call to abort, a reservation to settle and a record to write.
 */
export interface InFlight {
  /** Requests entered and not yet left. */
  readonly count: number;
  enter(): void;
  leave(): void;
  /** Resolves true once nothing is in flight, or false after `timeoutMs` with some still there. */
  drained(timeoutMs: number): Promise<boolean>;
}

export function createInFlight(): InFlight {
  let count = 0;
  let waiters: Array<() => void> = [];
  return {
    get count() {
      return count;
    },
    enter() {
      count += 1;
    },
    leave() {
      count -= 1;
      if (count > 0 || waiters.length === 0) return;
      const woken = waiters;
      waiters = [];
      for (const wake of woken) wake();
    },
    drained(timeoutMs) {
      if (count === 0) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          waiters = waiters.filter((waiter) => waiter !== wake);
          resolve(false);
        }, timeoutMs);
        waiters.push(wake);
      });
    },
  };
}
