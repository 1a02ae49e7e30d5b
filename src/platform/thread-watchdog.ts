import { threadStatFields } from './idle-scheduling.js';

/** A thread's state and CPU time, from `/proc/self/task/<tid>/stat`. */
export interface ThreadSample {
  /** The scheduler's state letter: R running or waiting for a CPU, S sleeping, D in uninterruptible I/O… */
  state: string;
  /** User and system CPU time so far, in milliseconds. */
  cpuMs: number;
}

/** Clock ticks per second of the stat file's CPU times (USER_HZ, 100 on every Linux build in use). */
const TICKS_PER_SECOND = 100;

/** The thread's sample, or null when it cannot be read (not Linux, or the thread has ended). */
export function readThreadSample(tid: number): ThreadSample | null {
  try {
    // State is field 3, utime and stime fields 14 and 15.
    const fields = threadStatFields(tid);
    const ticks = Number(fields[11]) + Number(fields[12]);
    if (!fields[0] || !Number.isFinite(ticks)) return null;
    return { state: fields[0], cpuMs: (ticks * 1000) / TICKS_PER_SECOND };
  } catch {
    return null;
  }
}

/** Why a thread was judged hung. */
export type HangReason = 'busy' | 'blocked';

/**
 * Above this share of one CPU since the unanswered ping was sent, the thread is busy in code that
 * never returns to its event loop (a loop that does not end).
 */
const BUSY_SHARE = 0.5;

/**
 * Watches a worker thread that answers pings from its event loop: every `intervalMs` a ping is
 * sent (`ping(id)`; the caller passes the answer to `answered(id, tid)`), and a ping unanswered for
 * `hangAfterMs` is judged from the thread's scheduler statistics, so a thread merely starved of the
 * CPU — a SCHED_IDLE thread on a saturated core runs seldom, and answers late — is not taken for a
 * hung one:
 * - busy: its CPU time grew by more than half the time since the ping, without an answer: it runs
 *   code that never yields (judged at once);
 * - blocked: it is not runnable (sleeping or in I/O, outside its event loop, which would have
 *   answered) at two checks in a row, its CPU time not growing;
 * - waiting for a CPU (runnable, little CPU): starved, not hung; it is looked at again next time.
 * Without the statistics (not Linux, no thread id answered yet) nothing is judged. `onHang` is
 * called once; the caller ends the thread (`terminate()` stops running JavaScript at once).
 */
export function watchThread(options: {
  intervalMs: number;
  hangAfterMs: number;
  ping: (id: number) => void;
  onHang: (reason: HangReason, detail: { unansweredMs: number; cpuShare: number; state: string }) => void;
  /** Tests substitute the statistics; by default `/proc/self/task/<tid>/stat`. */
  sample?: (tid: number) => ThreadSample | null;
  now?: () => number;
}) {
  const sample = options.sample ?? readThreadSample;
  const now = options.now ?? Date.now;
  let tid: number | null = null;
  let nextId = 1;
  /** The oldest ping not answered yet, with the thread's CPU time when it was sent. */
  let pending: { id: number; sentAt: number; cpuMs: number | null } | null = null;
  /** A check found the thread not runnable and its ping unanswered: the next one decides. */
  let suspect = false;
  let done = false;

  function check(): void {
    if (done) return;
    const at = now();
    if (pending && pending.cpuMs === null && tid !== null) {
      // Sent before the thread's id was known: its age counts from the first statistics.
      const first = sample(tid);
      if (first) pending = { id: pending.id, sentAt: at, cpuMs: first.cpuMs };
      return;
    }
    if (pending && at - pending.sentAt >= options.hangAfterMs && tid !== null) {
      const current = sample(tid);
      if (current && pending.cpuMs !== null) {
        const unansweredMs = at - pending.sentAt;
        const cpuShare = (current.cpuMs - pending.cpuMs) / Math.max(1, unansweredMs);
        const detail = { unansweredMs, cpuShare, state: current.state };
        if (cpuShare > BUSY_SHARE) {
          hang('busy', detail);
          return;
        }
        if (current.state !== 'R') {
          if (suspect) {
            hang('blocked', detail);
            return;
          }
          suspect = true;
        } else suspect = false;
      }
      // Still unanswered: no new ping on top of it, so its age keeps counting.
      return;
    }
    if (pending) return;
    const cpuMs = tid === null ? null : (sample(tid)?.cpuMs ?? null);
    pending = { id: nextId++, sentAt: at, cpuMs };
    options.ping(pending.id);
  }

  function hang(reason: HangReason, detail: Parameters<typeof options.onHang>[1]): void {
    stop();
    options.onHang(reason, detail);
  }

  const timer = setInterval(check, options.intervalMs);
  timer.unref();
  function stop(): void {
    done = true;
    clearInterval(timer);
  }
  check();

  return {
    /** The thread answered ping `id` (and told its thread id, for the statistics). */
    answered(id: number, threadId: number | null): void {
      if (threadId !== null) tid = threadId;
      if (pending && pending.id === id) {
        pending = null;
        suspect = false;
      }
    },
    /** Stops watching (the thread ended, or is being stopped). */
    stop,
  };
}
