import { setFlagsFromString } from 'node:v8';
import { givenNodeFlags, givesV8Flag } from './node-flags.js';
import { onWhenCpusAllow, type WhenCpusAllow } from './usable-cpus.js';

/** `auto`: off when the process has one CPU to run on, on otherwise. */
export type ParallelScavenge = WhenCpusAllow;

/**
 * V8 splits each scavenge (young-generation collection) into tasks that its platform workers run
 * beside the collecting thread. With one CPU they cannot run beside it: the collecting thread does
 * its share, then waits for them to be scheduled, and those workers — shared by every isolate of the
 * process — also run the delivery thread's scavenges, at the workers' nice 10 rather than that
 * thread's SCHED_IDLE, taking the core from the request thread for up to a scheduler tick. Off, each
 * isolate scavenges on its own thread: the request thread without waiting on anyone, the delivery
 * thread at its own priority. With several CPUs the tasks do run in parallel and shorten the pause.
 *
 * V8 reads `--parallel-scavenge` at each scavenge, so setting it after start works. A
 * `--parallel-scavenge` or `--no-parallel-scavenge` given to node itself wins. Returns the flag it
 * set, or null.
 */
export function applyParallelScavenge(
  setting: ParallelScavenge,
  options: {
    cpus?: number;
    setFlags?: (flags: string) => void;
    nodeFlags?: readonly string[];
  } = {},
): string | null {
  if (setting !== 'auto' && typeof setting !== 'boolean')
    throw new RangeError(`parallel scavenge is auto, true or false, got ${String(setting)}`);
  const nodeFlags = options.nodeFlags ?? givenNodeFlags();
  if (givesV8Flag(nodeFlags, 'parallel-scavenge')) return null;
  const on = onWhenCpusAllow(setting, options.cpus);
  // V8's default is on: only turning it off needs a flag.
  if (on) return null;
  const flag = '--no-parallel-scavenge';
  (options.setFlags ?? setFlagsFromString)(flag);
  return flag;
}
