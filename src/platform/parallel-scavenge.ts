import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { givenNodeFlags } from './node-flags.js';

/** `auto`: off when the process has one CPU to run on, on otherwise. */
export type ParallelScavenge = 'auto' | boolean;

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
  if (nodeFlags.some((flag) => /^--(no[-_])?parallel[-_]scavenge$/.test(flag))) return null;
  const on = setting === 'auto' ? (options.cpus ?? usableCpus()) > 1 : setting;
  // V8's default is on: only turning it off needs a flag.
  if (on) return null;
  const flag = '--no-parallel-scavenge';
  (options.setFlags ?? setFlagsFromString)(flag);
  return flag;
}

/**
 * The CPUs this process can use: its affinity mask (`taskset`, cpusets), and on Linux the cgroup v2
 * CPU quota a container limit sets (`cpu.max`, "<quota> <period>"), whichever is fewer; at least 1.
 */
export function usableCpus(
  affinity: number = availableParallelism(),
  readCpuMax: () => string | null = readCgroupCpuMax,
): number {
  const quota = quotaCpus(readCpuMax());
  return Math.max(1, quota === null ? affinity : Math.min(affinity, quota));
}

/** CPUs a cgroup v2 `cpu.max` text allows (rounded up), or null when unlimited or unreadable. */
export function quotaCpus(cpuMax: string | null): number | null {
  if (cpuMax === null) return null;
  const match = /^(\d+|max)\s+(\d+)\s*$/.exec(cpuMax);
  if (!match || match[1] === 'max') return null;
  const quota = Number(match[1]);
  const period = Number(match[2]);
  if (!(quota > 0) || !(period > 0)) return null;
  return Math.ceil(quota / period);
}

function readCgroupCpuMax(): string | null {
  if (process.platform !== 'linux') return null;
  try {
    return readFileSync('/sys/fs/cgroup/cpu.max', 'utf8');
  } catch {
    return null;
  }
}
