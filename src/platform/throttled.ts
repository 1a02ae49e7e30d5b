/** Calls `action` at most once per `intervalMs`; calls in between are dropped. */
export function throttled<T extends unknown[]>(
  intervalMs: number,
  action: (...args: T) => void,
): (...args: T) => void {
  let last = Number.NEGATIVE_INFINITY;
  return (...args: T) => {
    const now = Date.now();
    if (now - last < intervalMs) return;
    last = now;
    action(...args);
  };
}
