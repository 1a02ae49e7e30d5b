// Process plumbing shared by the benchmarks that pin a proxy to one CPU and its load to another
// (bench/inference.ts, bench/side-by-side.ts): CPU planning, pinned children, CPU time and peak
// memory read from /proc, free ports, readiness.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/** The CPUs this process may use, from Cpus_allowed_list (e.g. "0-3,6"): a container may not own CPU 0. */
export function allowedCpus(): number[] {
  const list = /^Cpus_allowed_list:\s*(.+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '';
  return list.split(',').flatMap((range) => {
    const [first, last = first] = range.split('-').map(Number);
    if (first === undefined || last === undefined || Number.isNaN(first)) return [];
    return Array.from({ length: last - first + 1 }, (_, offset) => first + offset);
  });
}

export function planCpus(): { proxyCpu: number; loadCpu: number } {
  if (process.platform !== 'linux') throw new Error('reads /proc and pins processes to CPUs: Linux only');
  try {
    execFileSync('taskset', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('taskset not found (it is part of util-linux)');
  }
  const [proxyCpu, loadCpu] = allowedCpus();
  if (proxyCpu === undefined || loadCpu === undefined)
    throw new Error(
      'needs two CPUs: one for the proxy under test, one for the load generator and the upstream',
    );
  return { proxyCpu, loadCpu };
}

const clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/**
 * The fields of a `/proc/.../stat` file after the command name (field 2, parenthesised, may hold
 * spaces): utime and stime (fields 14 and 15) are [11] and [12], the scheduling policy (41) [38].
 */
function statFields(path: string): string[] {
  const stat = readFileSync(path, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

const cpuOf = (fields: string[]) => (Number(fields[11]) + Number(fields[12])) / clockTicks;

/** User + system CPU seconds of a process (all threads), or of one of its threads. */
export function cpuSeconds(pid: number, thread?: number): number {
  // A process's figures count every thread; `/proc/<pid>/task/<tid>/stat` one thread's (the main
  // thread's tid is the pid).
  return cpuOf(statFields(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`));
}

/**
 * CPU seconds of each thread of a process, and whether it runs SCHED_IDLE (the broadcast delivery
 * thread); a thread that ended between the listing and the read is left out.
 */
export function threadCpuSeconds(pid: number): Map<number, { seconds: number; idle: boolean }> {
  const threads = new Map<number, { seconds: number; idle: boolean }>();
  for (const entry of readdirSync(`/proc/${pid}/task`)) {
    let fields: string[];
    try {
      fields = statFields(`/proc/${pid}/task/${entry}/stat`);
    } catch {
      continue;
    }
    threads.set(Number(entry), { seconds: cpuOf(fields), idle: Number(fields[38]) === 5 });
  }
  return threads;
}

/** Peak resident memory; undefined once the process has gone. */
export function peakRssMegabytes(pid: number): number | undefined {
  try {
    const kilobytes = /^VmHWM:\s*(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kilobytes === undefined ? undefined : Number(kilobytes) / 1024;
  } catch {
    return undefined;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const started: Array<{ child: ChildProcess; exited: Promise<unknown> }> = [];

// A bench that stops on an error (process.exit) must not leave its gateways running: they would
// hold the terminal's pipe open, and a `| tail` after the bench would wait for them.
process.on('exit', () => {
  for (const { child } of started)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
});
// Nor when it is stopped by a signal (Ctrl-C reaches the whole process group; `kill` does not).
for (const signal of ['SIGTERM', 'SIGHUP'] as const) process.once(signal, () => process.exit(1));

/**
 * Starts node on one CPU (or a taskset list: "0,1"). taskset (and `nice`, when `niceness` is given)
 * exec node in place, so the child's pid is node's, and every thread it starts inherits the niceness.
 */
export function startPinned(
  cpu: number | string,
  args: string[],
  env: Record<string, string>,
  niceness?: number,
): ChildProcess {
  const pinned = ['taskset', '-c', String(cpu), process.execPath, ...args];
  const command = niceness === undefined ? pinned : ['nice', '-n', String(niceness), ...pinned];
  const child = spawn(command[0] as string, command.slice(1), {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  started.push({ child, exited: new Promise((resolve) => child.once('exit', resolve)) });
  return child;
}

/** Stops one started child (SIGTERM) and settles once it has exited. */
export async function stop(child: ChildProcess): Promise<void> {
  const entry = started.find((candidate) => candidate.child === child);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await entry?.exited;
}

export async function stopAll(): Promise<void> {
  await Promise.all(started.map(({ child }) => stop(child)));
}

export async function waitUntilReady(url: string, child: ChildProcess, name: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${name} exited (${child.exitCode ?? child.signalCode})`);
    try {
      const response = await fetch(url);
      await response.text();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${name} did not answer ${url} within 20 s`);
}

/** A gateway started from a build's dist/, with an inference key created through its bootstrap key. */
export interface LaunchedGateway {
  child: ChildProcess;
  origin: string;
  managementKey: string;
  /** An inference key (management keys are refused on inference routes). */
  key: string;
}

/**
 * Starts `<checkout>/dist/main.js serve` pinned to `cpu`, with SQLite in `directory` (or PostgreSQL
 * at BENCH_DATABASE_URL) and
 * bench/inference-config.yaml pointing at `upstreamOrigin`, and creates an inference key. Throws with
 * a short reason when the gateway does not start or refuses the key.
 */
export async function launchGateway(options: {
  checkout: string;
  cpu: number | string;
  upstreamOrigin: string;
  directory: string;
  nodeArgs?: string[];
  /** Where bench/inference-config.yaml is read from (the checkout under test by default). */
  configRoot?: string;
}): Promise<LaunchedGateway> {
  const main = join(options.checkout, 'dist/main.js');
  if (!existsSync(main)) throw new Error(`no ${main}: run npm run build there`);
  const port = await freePort();
  const managementKey = `sk-sy-v1-${randomBytes(32).toString('hex')}`;
  // BENCH_DATABASE_URL (postgres://…): each gateway in a schema of its own, `bench_<port>`, left
  // behind for a look afterwards (drop them with `drop schema … cascade`).
  const postgres = process.env.BENCH_DATABASE_URL;
  const database: Record<string, string> = postgres
    ? {
        DATABASE_URL: postgres,
        DATABASE_SCHEMA: `bench_${port}`,
        SWITCHYARD_MASTER_KEY: randomBytes(32).toString('hex'),
      }
    : { DATABASE_URL: `sqlite:${join(options.directory, 'bench.db')}` };
  const child = startPinned(options.cpu, [...(options.nodeArgs ?? []), main, 'serve'], {
    PORT: String(port),
    HOST: '127.0.0.1',
    ...database,
    SWITCHYARD_BOOTSTRAP_KEY: managementKey,
    SWITCHYARD_CONFIG: join(options.configRoot ?? options.checkout, 'bench/inference-config.yaml'),
    LOG_LEVEL: 'warn',
    BENCH_UPSTREAM: options.upstreamOrigin,
  });
  const origin = `http://127.0.0.1:${port}`;
  await waitUntilReady(`${origin}/health`, child, 'gateway');
  const created = await fetch(`${origin}/api/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const text = await created.text();
  if (!created.ok) throw new Error(`key creation failed (HTTP ${created.status}: ${text.slice(0, 100)})`);
  const { key } = JSON.parse(text) as { key: string };
  return { child, origin, managementKey, key };
}

/**
 * Plans the two CPUs (the proxy's, the load's) and moves every thread of this process, the load
 * generator, to the load CPU; children are started pinned. `fail` reports a machine that cannot.
 */
export function claimCpus(fail: (message: string) => never): { proxyCpu: number; loadCpu: number } {
  let planned: { proxyCpu: number; loadCpu: number };
  try {
    planned = planCpus();
  } catch (error) {
    fail((error as Error).message);
  }
  execFileSync('taskset', ['-a', '-p', '-c', String(planned.loadCpu), String(process.pid)], {
    stdio: 'ignore',
  });
  return planned;
}

/** Starts bench/fake-upstream.ts of `root` pinned to `cpu`; resolves to its origin once it answers. */
export async function startFakeUpstream(root: string, cpu: number): Promise<string> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const upstream = startPinned(
    cpu,
    ['--import', 'tsx', join(root, 'bench/fake-upstream.ts'), '--port', String(port)],
    {},
  );
  await waitUntilReady(`${origin}/health`, upstream, 'fake upstream');
  return origin;
}

/** The middle figure (the upper of the two middle ones for an even count); NaN for none. */
export function median(figures: readonly number[]): number {
  return [...figures].sort((a, b) => a - b)[Math.floor(figures.length / 2)] ?? Number.NaN;
}

/** The value at `quantile` (0–1) of ascending figures; NaN when there are none. */
export function percentile(sorted: Float64Array, quantile: number): number {
  if (sorted.length === 0) return Number.NaN;
  return (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(quantile * sorted.length) - 1))] ?? Number.NaN
  );
}
