import { execFile } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/** Linux's SCHED_IDLE policy number (sched.h), as `/proc/<pid>/task/<tid>/stat` reports it. */
export const SCHED_IDLE = 5;

/** The calling thread's id: `/proc/thread-self` links to `<pid>/task/<tid>`. Null off Linux. */
export function currentThreadId(): number | null {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isSafeInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/**
 * The fields of `/proc/self/task/<tid>/stat` after the command name (which may hold spaces and
 * parentheses): index 0 is field 3 (the state), index n field n + 3. Throws when the thread is gone.
 */
export function threadStatFields(tid: number): string[] {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** A thread's scheduling policy (0 normal, 5 SCHED_IDLE …), from `/proc/self/task/<tid>/stat`. */
export function threadPolicy(tid: number): number {
  // Policy is field 41.
  return Number(threadStatFields(tid)[38]);
}

type Run = (file: string, args: string[]) => Promise<void>;

const runFile: Run = (file, args) =>
  new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 5_000, windowsHide: true }, (error) =>
      error ? reject(error) : resolve(),
    );
  });

/**
 * Puts thread `tid` in Linux's SCHED_IDLE class, through `chrt --idle` (util-linux): Node has no
 * binding for sched_setscheduler(), and an unprivileged thread may always move itself there (not
 * back). A SCHED_IDLE thread runs when nothing of normal priority wants the CPU: a waking normal
 * thread preempts it at once, and while one runs it gets the CPU far more seldom than even a nice-19
 * thread — which, picked at a scheduler tick, keeps the CPU until the next one (4 ms at the common
 * 250 Hz). Returns true once set, or why it could not be (no chrt, not Linux, refused): the caller
 * keeps its nice value then.
 */
export async function scheduleIdle(tid: number, run: Run = runFile): Promise<true | string> {
  if (process.platform !== 'linux') return 'SCHED_IDLE is a Linux policy';
  try {
    await run('chrt', ['--idle', '--pid', '0', String(tid)]);
    return true;
  } catch (error) {
    return (error as Error).message;
  }
}

/** What a thread lowered itself to: its nice value and SCHED_IDLE (false: not asked), or why not. */
export interface LoweredPriority {
  niceness: number | string;
  idle: boolean | string;
}

/**
 * Lowers the calling thread's priority: the SCHED_IDLE policy (when asked), then its nice value.
 * Linux schedules threads one by one, so the process's other threads keep theirs. `chrt` runs
 * first, while this thread still has its normal priority: the process it starts inherits the
 * thread's class and nice value.
 */
export async function lowerThreadPriority(niceness: number, idle: boolean): Promise<LoweredPriority> {
  const tid = currentThreadId();
  if (tid === null) return { niceness: 'no thread id', idle: idle ? 'no thread id' : false };
  const idleSet = idle ? await scheduleIdle(tid) : false;
  let set: number | string = 0;
  try {
    // setpriority() on a tid concerns that thread.
    if (niceness !== 0) setPriority(tid, niceness);
    set = niceness;
  } catch (error) {
    set = (error as Error).message;
  }
  return { niceness: set, idle: idleSet };
}

/** Logs what a thread could not lower itself to (`thread` names it in the lines). */
export function reportLoweredPriority(
  logger: {
    info(details: Record<string, unknown>, message: string): void;
    warn(details: Record<string, unknown>, message: string): void;
  },
  thread: string,
  { niceness, idle }: LoweredPriority,
): void {
  if (typeof niceness === 'string') {
    logger.warn({ reason: niceness }, `${thread} runs at normal priority (it could not be lowered)`);
  }
  if (typeof idle === 'string') {
    logger.info({ reason: idle, niceness }, `${thread} not moved to SCHED_IDLE; it keeps its nice value`);
  }
}
