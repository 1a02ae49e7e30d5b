import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** A setting that `auto` decides by the CPUs the process can use; `true`/`false` force it. */
export type WhenCpusAllow = 'auto' | boolean;

/**
 * Whether a setting is on: `auto` is on when the process has more than one CPU to run on (a core to
 * spare for a helper thread), off with one; a boolean is itself.
 */
export function onWhenCpusAllow(setting: WhenCpusAllow, cpus: number = usableCpus()): boolean {
  if (setting !== 'auto' && typeof setting !== 'boolean')
    throw new RangeError(`expected auto, true or false, got ${String(setting)}`);
  return setting === 'auto' ? cpus > 1 : setting;
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
