import { type ChildProcess, spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { planCpus } from './bench-processes.js';

/**
 * What an idle-class neighbour costs a lone normal-priority thread on the same core: a probe pinned
 * to the proxy CPU sleeps 2 ms (a timer), then times a fixed computation of ~0.5 ms, `--samples`
 * times, and reports how late its timers fired and how long the computation took. It runs in turn
 * with no neighbour, beside a SCHED_IDLE busy loop taking `--percent` of the core (the shape
 * bench/broadcast-latency.ts's `--idle-load` uses: that share of every 10 ms spent spinning), and
 * beside one that spins all the time, `--rounds` times.
 *
 * It is the control for broadcast-latency's idle-load gateway (docs/observability.md, "Speed",
 * session 48): there a load of broadcast's size in the lowest class costs the requests' p99 about
 * what broadcast does; here, with one thread and no hand-offs, it does not.
 *
 *   node --import tsx bench/idle-neighbour.ts [--rounds 3] [--samples 3000] [--percent 15]
 */
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    samples: { type: 'string', default: '3000' },
    percent: { type: 'string', default: '15' },
  },
});
const rounds = Number(values.rounds);
const samples = Number(values.samples);
const percent = Number(values.percent);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be a positive integer`);
if (!Number.isInteger(samples) || samples < 100) throw new Error(`--samples must be an integer ≥ 100`);
if (!(percent > 0 && percent < 100)) throw new Error(`--percent must be between 0 and 100`);

/** Runs in the pinned child: prints one JSON line of the two distributions' percentiles (ms). */
const PROBE = `
const n = ${samples};
const late = [], work = [];
const cells = new Float64Array(4096);
const compute = () => { let sum = 0; for (let r = 0; r < 60; r++) for (let i = 0; i < cells.length; i++) { cells[i] = cells[i] * 0.5 + i; sum += cells[i]; } return sum; };
for (let i = 0; i < 200; i++) compute();
const at = (values, p) => { const sorted = [...values].sort((a, b) => a - b); return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]; };
const summary = (values) => ({ p50: at(values, 0.5), p99: at(values, 0.99), p999: at(values, 0.999) });
const step = () => {
  const due = performance.now() + 2;
  setTimeout(() => {
    late.push(performance.now() - due);
    const start = performance.now();
    compute();
    work.push(performance.now() - start);
    if (late.length < n) step();
    else process.stdout.write(JSON.stringify({ late: summary(late), work: summary(work) }) + '\\n');
  }, 2);
};
step();
`;

const spinLoop = (share: number) =>
  share >= 100
    ? 'for (;;) {}'
    : `const busy = ${share / 10}; const tick = () => { const end = performance.now() + busy; while (performance.now() < end); setTimeout(tick, Math.max(0, 10 - busy)); }; tick();`;

interface Percentiles {
  p50: number;
  p99: number;
  p999: number;
}

function run(command: string, args: string[]): ChildProcess {
  return spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
}

async function probe(cpu: number): Promise<{ late: Percentiles; work: Percentiles }> {
  const child = run('taskset', ['-c', String(cpu), process.execPath, '-e', PROBE]);
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`the probe exited with ${code}`);
  return JSON.parse(out) as { late: Percentiles; work: Percentiles };
}

async function withNeighbour<T>(cpu: number, share: number | null, body: () => Promise<T>): Promise<T> {
  if (share === null) return body();
  const loop = run('chrt', [
    '-i',
    '0',
    'taskset',
    '-c',
    String(cpu),
    process.execPath,
    '-e',
    spinLoop(share),
  ]);
  await new Promise((resolve) => setTimeout(resolve, 500));
  try {
    return await body();
  } finally {
    loop.kill('SIGKILL');
    await new Promise((resolve) => loop.on('exit', resolve));
  }
}

const { proxyCpu } = planCpus();
const neighbours: { name: string; share: number | null }[] = [
  { name: 'no neighbour', share: null },
  { name: `idle-class loop ${percent}%`, share: percent },
  { name: 'idle-class loop 100%', share: 100 },
];
const f = (ms: number) => ms.toFixed(3);
console.log(
  `idle neighbour on CPU ${proxyCpu}: ${samples} timer wake-ups (2 ms) and computations (~0.5 ms) per run, ${rounds} rounds\n`,
);
console.log(
  '| round | neighbour | wake-up lateness ms: p50 / p99 / p99.9 | computation ms: p50 / p99 / p99.9 |',
);
console.log('| ---: | --- | --- | --- |');
for (let round = 1; round <= rounds; round++) {
  for (const neighbour of neighbours) {
    const { late, work } = await withNeighbour(proxyCpu, neighbour.share, () => probe(proxyCpu));
    console.log(
      `| ${round} | ${neighbour.name} | ${f(late.p50)} / ${f(late.p99)} / ${f(late.p999)} | ${f(work.p50)} / ${f(work.p99)} / ${f(work.p999)} |`,
    );
  }
}
