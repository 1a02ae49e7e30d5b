import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import {
  claimCpus,
  cpuSeconds,
  type LaunchedGateway,
  launchGateway,
  median,
  peakRssMegabytes,
  percentile,
  startFakeUpstream,
  stopAll,
} from './bench-processes.js';
import { enableBroadcast, startBroadcastReceivers, waitForDrain } from './broadcast-receivers.js';
import { steadyLoad } from './steady-load.js';

/**
 * What broadcast adds to request latency, measured so the host's drift cannot pass for it: gateways
 * of this checkout — one without destinations, one with them (default settings), and one more per
 * `--variant` with them — run side by side on the proxy CPU, and take turns: each round loads one
 * gateway at a time at a steady rate, then waits until its outbox is empty before the next one
 * starts, so no gateway's deliveries overlap another's window. Medians over the rounds are printed,
 * then percentiles over every round's requests together (a round's p99 is its ~10 slowest
 * requests, which one host hiccup decides) with the share over 10 ms, and each gateway's peak RSS.
 *
 * `--arrivals steady` (the default) sends a request every 1000/rate ms without waiting for earlier
 * answers, each timed from when it is handed to the connection pool (bench/steady-load.ts):
 * requests arriving at that rate, as a gateway's clients send them.
 * `--arrivals bursts` is autocannon's `overallRate`: each second's requests back to back on 4
 * connections at the start of the second, then idle — a saturating burst every second.
 *
 *   node --import tsx bench/broadcast-latency.ts [--rounds 5] [--seconds 5] [--rate 200]
 *     [--arrivals steady|bursts] [--control] [--warmup 2] [--base <checkout>]
 *     [--broadcast webhook,otel-collector,langfuse] [--variant "broadcast.delivery_thread=false"]…
 *     [--settings "sqlite_thread=true"] [--gateway-cpus 0,1] [--idle-load 10]
 *
 * `--control` adds a second gateway without destinations, run in turn like the others: the spread
 * between two identical gateways on this host, against which a broadcasting gateway's difference
 * is read. A last table gives each gateway's p50 and p99 minus the first one's, paired by round.
 * `--base <checkout>` adds a broadcasting gateway that runs another build (its `dist/`, e.g. a git
 * worktree of the commit before a change, built with `npx tsc -p tsconfig.build.json`) with this
 * checkout's settings: a change measured side by side, in the same rounds.
 *
 * `--settings` gives every gateway of this checkout (those without destinations too) the same
 * settings, e.g. to read what broadcast adds with SQLite in its thread; a variant's own win.
 *
 * `--idle-load <percent>` adds a gateway without destinations whose windows run beside a busy loop
 * in SCHED_IDLE on the gateways' CPUs, taking that share of a core: what a load of broadcast's size
 * costs the requests when it runs in the lowest class, paired by round like the rest.
 *
 * `--warmup` is each gateway's load before the first round (default 2 s): V8 is still compiling
 * the request path 20 s into a 200 req/s load, so `--warmup 30` measures a long-running instance.
 *
 * Each window's garbage collections on the request thread are read from the gateway's `/metrics`
 * (prom-client's `nodejs_gc_duration_seconds`, observed on the main isolate) before and after it:
 * scavenges per 1,000 requests, their mean pause, and full collections. A scavenge stops the event
 * loop for milliseconds, so at a steady rate the share of requests that meet one sets the p99.
 *
 * `--gateway-cpus` lets the gateways use more CPUs than the proxy CPU (a taskset list): how a
 * deployment without pinning runs, its threads spreading over the cores; the load generator and the
 * receivers stay on the other CPU, so they share it then.
 */
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '5' },
    rate: { type: 'string', default: '200' },
    /** Seconds of load per gateway before the rounds: V8 is still optimizing 20 s into a load. */
    warmup: { type: 'string', default: '2' },
    arrivals: { type: 'string', default: 'steady' },
    broadcast: { type: 'string', default: 'webhook,otel-collector,langfuse' },
    /** `[broadcast.]<key>=<value>[,…]`: the settings of one more broadcasting gateway; repeatable. */
    variant: { type: 'string', multiple: true },
    /** `[broadcast.]<key>=<value>[,…]`: settings every gateway of this checkout runs with (variants win). */
    settings: { type: 'string', default: '' },
    /** Adds a second gateway without destinations: how far two identical gateways differ here. */
    control: { type: 'boolean', default: false },
    /** Another checkout (built, e.g. a git worktree of the commit before a change): one more broadcasting gateway runs it. */
    base: { type: 'string' },
    'gateway-cpus': { type: 'string' },
    /**
     * Adds a gateway without destinations whose load windows run beside a SCHED_IDLE busy loop on
     * the gateways' CPUs taking this percentage of a core (1 ms periods of 10 ms at 10): what an
     * idle-class load of broadcast's size costs the requests by itself, paired by round.
     */
    'idle-load': { type: 'string' },
  },
});

function fail(message: string): never {
  console.error(`bench:broadcast-latency: ${message}`);
  process.exit(1);
}

const positive = (name: string, text: string | undefined): number => {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value <= 0) fail(`--${name} must be a positive integer, got "${text}"`);
  return value;
};
const rounds = positive('rounds', values.rounds);
const seconds = positive('seconds', values.seconds);
const rate = positive('rate', values.rate);
const idleLoad = values['idle-load'] === undefined ? undefined : Number(values['idle-load']);
if (idleLoad !== undefined && !(idleLoad > 0 && idleLoad < 100))
  fail(`--idle-load is a percentage of a core between 0 and 100, got "${values['idle-load']}"`);
const warmup = positive('warmup', values.warmup);
if (values.arrivals !== 'steady' && values.arrivals !== 'bursts')
  fail(`--arrivals is steady or bursts, got "${values.arrivals}"`);
const broadcastTypes = values.broadcast.split(',').filter(Boolean);
if (broadcastTypes.length === 0) fail('--broadcast names no destination type');
const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * Settings as a YAML config: `broadcast.<key>=<value>` under `broadcast:` (the bench config ends with
 * that section), `<key>=<value>` at the top level. Values are YAML scalars (true, 3, text). `--settings`
 * first, then the variant's, which win for a key both name.
 */
function configWith(...texts: string[]): string {
  const broadcast = new Map<string, string>();
  const top = new Map<string, string>();
  for (const text of texts) {
    for (const pair of text.split(',').filter(Boolean)) {
      const match = /^(broadcast\.)?([a-z_]+)=([A-Za-z0-9_.-]+)$/.exec(pair.trim());
      if (!match) fail(`--variant and --settings take [broadcast.]<key>=<value>[,…], got "${pair}"`);
      (match[1] ? broadcast : top).set(match[2] as string, match[3] as string);
    }
  }
  return [
    baseConfig.trimEnd(),
    ...[...broadcast].map(([key, value]) => `  ${key}: ${value}`),
    ...[...top].map(([key, value]) => `${key}: ${value}`),
    '',
  ].join('\n');
}

/** A directory holding `bench/inference-config.yaml` with these settings. */
function configRootWith(name: string, ...texts: string[]): string {
  const configRoot = join(scratch, name);
  mkdirSync(join(configRoot, 'bench'), { recursive: true });
  writeFileSync(join(configRoot, 'bench/inference-config.yaml'), configWith(...texts));
  return configRoot;
}

interface Contender {
  name: string;
  broadcast: boolean;
  /** Where its bench/inference-config.yaml is read from. */
  configRoot: string;
  /** The checkout whose build it runs (this one, or `--base`). */
  checkout: string;
  gateway?: LaunchedGateway;
  /** `--idle-load`: the percentage of a core an idle-class busy loop takes during its windows. */
  idleLoad?: number;
  p50: number[];
  p99: number[];
  /** Every round's latencies, for percentiles over the whole run (one round's p99 is ~10 requests). */
  all: Float64Array[];
  cpu: number[];
  /**
   * The main thread's own CPU per request: the request thread, without the delivery, SQLite or GC
   * helper threads (with `broadcast.delivery_thread=false` it includes the deliveries).
   */
  mainCpu: number[];
  /** The request thread's garbage collections during the load windows, summed over the rounds. */
  gc: GcTotals;
  requests: number;
}

/** Count and total seconds of the request thread's collections, by prom-client's `kind` label. */
type GcTotals = Record<'minor' | 'major' | 'incremental', { count: number; seconds: number }>;

const noGc = (): GcTotals => ({
  minor: { count: 0, seconds: 0 },
  major: { count: 0, seconds: 0 },
  incremental: { count: 0, seconds: 0 },
});

/** The gateway's GC totals so far, from its Prometheus text (`switchyard_nodejs_gc_duration_seconds`). */
async function gcTotals(origin: string): Promise<GcTotals> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const totals = noGc();
  const line =
    /^switchyard_nodejs_gc_duration_seconds_(sum|count)\{kind="(minor|major|incremental)"\} (\S+)$/gm;
  for (const [, field, kind, value] of text.matchAll(line)) {
    const entry = totals[kind as keyof GcTotals];
    if (field === 'sum') entry.seconds = Number(value);
    else entry.count = Number(value);
  }
  return totals;
}

function addGc(into: GcTotals, after: GcTotals, before: GcTotals): void {
  for (const kind of Object.keys(into) as Array<keyof GcTotals>) {
    into[kind].count += after[kind].count - before[kind].count;
    into[kind].seconds += after[kind].seconds - before[kind].seconds;
  }
}

const scratch = mkdtempSync(join(tmpdir(), 'switchyard-broadcast-latency-'));
const baseConfig = readFileSync(join(root, 'bench/inference-config.yaml'), 'utf8');
/** A gateway to load in turn, with empty figures. */
const newContender = (
  name: string,
  broadcast: boolean,
  configRoot: string,
  checkout = root,
  extra: Pick<Contender, 'idleLoad'> = {},
): Contender => ({
  name,
  broadcast,
  configRoot,
  checkout,
  ...extra,
  p50: [],
  p99: [],
  all: [],
  cpu: [],
  mainCpu: [],
  gc: noGc(),
  requests: 0,
});
const shared = values.settings;
const contenders: Contender[] = [
  newContender('no destinations', false, configRootWith('plain', shared)),
  ...(values.control
    ? [newContender('no destinations (control)', false, configRootWith('plain', shared))]
    : []),
  ...['', ...(values.variant ?? [])].map((variant, index) =>
    newContender(
      `${broadcastTypes.length} destinations${variant ? ` (${variant})` : ''}`,
      true,
      configRootWith(`variant-${index}`, shared, variant),
    ),
  ),
  ...(idleLoad !== undefined
    ? [
        newContender(
          `no destinations, idle-class load ${idleLoad}%`,
          false,
          configRootWith('plain', shared),
          root,
          {
            idleLoad,
          },
        ),
      ]
    : []),
  // The same settings as the first broadcasting gateway, on the base checkout's build.
  ...(values.base
    ? [
        newContender(
          `${broadcastTypes.length} destinations (base build)`,
          true,
          join(scratch, 'variant-0'),
          values.base,
        ),
      ]
    : []),
];

const payload = JSON.stringify({
  model: 'bench/fast',
  messages: [{ role: 'user', content: 'Say hello in fifty words.' }],
  max_tokens: 64,
});

interface Window {
  requests: number;
  failed: number;
  /** Per-response times in ms, sorted (autocannon's own percentiles are whole milliseconds). */
  latencies: Float64Array;
}

const headersOf = (gateway: LaunchedGateway) => ({
  authorization: `Bearer ${gateway.key}`,
  'content-type': 'application/json',
});

/** `--arrivals steady`: a request every 1000/rate ms, open loop (bench/steady-load.ts). */
async function steady(gateway: LaunchedGateway, duration: number): Promise<Window> {
  const { latencies, sent, failed } = await steadyLoad({
    origin: gateway.origin,
    path: '/api/v1/chat/completions',
    headers: headersOf(gateway),
    body: payload,
    rate,
    seconds: duration,
  });
  return { requests: sent, failed, latencies };
}

/** `--arrivals bursts`: autocannon's per-second quota, i.e. each second's requests back to back on 4 connections. */
function bursts(gateway: LaunchedGateway, duration: number): Promise<Window> {
  const latencies: number[] = [];
  return new Promise((done, reject) => {
    const instance = autocannon(
      {
        url: `${gateway.origin}/api/v1/chat/completions`,
        method: 'POST',
        headers: headersOf(gateway),
        body: payload,
        connections: 4,
        overallRate: rate,
        duration,
      },
      (error, result) =>
        error
          ? reject(error)
          : done({
              requests: result.requests.total,
              failed: result.non2xx + result.errors,
              latencies: Float64Array.from(latencies).sort(),
            }),
    );
    instance.on('response', (_client, status, _bytes, time) => {
      if (status >= 200 && status < 300) latencies.push(time);
    });
  });
}

const load = values.arrivals === 'bursts' ? bursts : steady;

const { proxyCpu, loadCpu } = claimCpus(fail);
const gatewayCpus = values['gateway-cpus'] ?? proxyCpu;
if (!/^\d+(,\d+)*$/.test(String(gatewayCpus)))
  fail(`--gateway-cpus takes a CPU list such as 0,1, got "${gatewayCpus}"`);
const receivers = await startBroadcastReceivers(root, broadcastTypes, loadCpu).catch((error: Error) => {
  rmSync(scratch, { recursive: true, force: true });
  return fail(error.message);
});
try {
  const upstreamOrigin = await startFakeUpstream(root, loadCpu);
  for (const contender of contenders) {
    const directory = join(scratch, `db-${contenders.indexOf(contender)}`);
    mkdirSync(directory);
    contender.gateway = await launchGateway({
      checkout: contender.checkout,
      cpu: gatewayCpus,
      upstreamOrigin,
      directory,
      configRoot: contender.configRoot,
      // BENCH_GATEWAY_NODE_ARGS adds node flags to every gateway, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
      nodeArgs: (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(/\s+/).filter(Boolean),
    }).catch((error: Error) => fail(`${contender.name}: ${error.message}`));
    if (contender.broadcast) {
      const problem = await enableBroadcast(
        contender.gateway.origin,
        contender.gateway.managementKey,
        broadcastTypes,
        receivers,
      );
      if (problem) fail(`${contender.name}: broadcast setup ${problem}`);
    }
  }
  console.log(
    `broadcast latency on CPU ${gatewayCpus}: chat at ${rate} req/s (${values.arrivals === 'bursts' ? "autocannon's per-second bursts, 4 connections" : 'steady arrivals'}), ${seconds} s per gateway ` +
      `and round, ${rounds} rounds after ${warmup} s of warm-up each; destinations: ${broadcastTypes.join(', ')}`,
  );
  // Warm-up: JIT, pools, the receivers' connections.
  for (const contender of contenders) {
    const gateway = contender.gateway as LaunchedGateway;
    await load(gateway, warmup);
    await waitForDrain(gateway.origin, 120_000, 250);
  }
  for (let round = 1; round <= rounds; round += 1) {
    const cells: string[] = [];
    for (const contender of contenders) {
      const gateway = contender.gateway as LaunchedGateway;
      const pid = gateway.child.pid as number;
      const before = cpuSeconds(pid);
      const mainBefore = cpuSeconds(pid, pid);
      const gcBefore = await gcTotals(gateway.origin);
      const spinner = contender.idleLoad === undefined ? undefined : await startIdleLoad(contender.idleLoad);
      const { requests, failed, latencies } = await load(gateway, seconds).finally(() =>
        spinner?.kill('SIGKILL'),
      );
      addGc(contender.gc, await gcTotals(gateway.origin), gcBefore);
      contender.requests += requests;
      const p50 = percentile(latencies, 0.5);
      const p99 = percentile(latencies, 0.99);
      const micros = ((cpuSeconds(pid) - before) * 1e6) / Math.max(1, requests);
      contender.p50.push(p50);
      contender.p99.push(p99);
      contender.all.push(latencies);
      // Delivering the window's events belongs to it: the next gateway starts on an idle CPU.
      const left = await waitForDrain(gateway.origin, 120_000, 250);
      if (left > 0) fail(`${contender.name}: outbox not drained after 120 s (${left} pending)`);
      contender.cpu.push(((cpuSeconds(pid) - before) * 1e6) / Math.max(1, requests));
      contender.mainCpu.push(((cpuSeconds(pid, pid) - mainBefore) * 1e6) / Math.max(1, requests));
      cells.push(
        `${contender.name} p50 ${p50.toFixed(2)} ms p99 ${p99.toFixed(2)} ms ` +
          `(${micros.toFixed(0)} µs CPU/req in the window)${failed > 0 ? `, ${failed} failed` : ''}`,
      );
    }
    console.log(`round ${round}: ${cells.join('; ')}`);
  }
  console.log(
    '\n| gateway | p50 ms | p99 ms | all rounds: p99 ms | p99.9 ms | over 10 ms | CPU µs per request (deliveries included) | of it, main thread | scavenges per 1,000 requests | mean scavenge ms | full GCs | peak RSS MB |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const contender of contenders) {
    const all = Float64Array.from(contender.all.flatMap((round) => [...round])).sort();
    const slow = all.filter((latency) => latency > 10).length;
    console.log(
      `| ${contender.name} | ${median(contender.p50).toFixed(2)} | ${median(contender.p99).toFixed(2)} | ` +
        `${percentile(all, 0.99).toFixed(2)} | ${percentile(all, 0.999).toFixed(2)} | ` +
        `${((slow / Math.max(1, all.length)) * 100).toFixed(2)}% | ` +
        `${median(contender.cpu).toFixed(0)} | ${median(contender.mainCpu).toFixed(0)} | ` +
        `${((contender.gc.minor.count * 1000) / Math.max(1, contender.requests)).toFixed(1)} | ` +
        `${contender.gc.minor.count === 0 ? '–' : ((contender.gc.minor.seconds * 1000) / contender.gc.minor.count).toFixed(2)} | ` +
        `${contender.gc.major.count} | ${peakRssMegabytes(contender.gateway?.child.pid as number)?.toFixed(0) ?? '–'} |`,
    );
  }
  printPairedDifferences(contenders);
} finally {
  await receivers.close();
  await stopAll();
  rmSync(scratch, { recursive: true, force: true });
}

/**
 * A busy loop in SCHED_IDLE on the gateways' CPUs (`chrt -i 0`, `taskset`): `percent` of each 10 ms
 * spent spinning, the rest asleep. Resolves once it has started spinning.
 */
async function startIdleLoad(percent: number): Promise<ChildProcess> {
  const busy = percent / 10;
  const loop = `const busy=${busy};const tick=()=>{const end=performance.now()+busy;while(performance.now()<end);setTimeout(tick,Math.max(0,10-busy))};process.stdout.write('spinning\\n');tick();`;
  const child = spawn(
    'chrt',
    ['-i', '0', 'taskset', '-c', String(gatewayCpus), process.execPath, '-e', loop],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((started, failed) => {
    child.once('error', failed);
    child.once('exit', (code) =>
      failed(new Error(`the idle-class load exited (${code}); chrt is part of util-linux`)),
    );
    child.stdout?.once('data', () => started());
  });
  child.removeAllListeners('exit');
  return child;
}

/**
 * Each gateway's p50 and p99 minus the first gateway's, round by round: the gateways of a round ran
 * back to back, so the host's slow drift cancels out of each difference. With `--control`, the
 * control's differences are how far two identical gateways differ here; a broadcasting gateway's
 * differences within that spread are not measurable on this host.
 */
function printPairedDifferences(contenders: readonly Contender[]): void {
  const [reference, ...others] = contenders;
  if (!reference || others.length === 0) return;
  const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(2)}`;
  console.log(
    `\n| paired by round, minus "${reference.name}" | p50 ms: median (min … max) | p99 ms: median (min … max) | rounds with a higher p99 |`,
  );
  console.log('| --- | --- | --- | ---: |');
  for (const contender of others) {
    const p50 = contender.p50.map((value, round) => value - (reference.p50[round] ?? Number.NaN));
    const p99 = contender.p99.map((value, round) => value - (reference.p99[round] ?? Number.NaN));
    const spread = (values: number[]) =>
      `${signed(median(values))} (${signed(Math.min(...values))} … ${signed(Math.max(...values))})`;
    console.log(
      `| ${contender.name} | ${spread(p50)} | ${spread(p99)} | ${p99.filter((value) => value > 0).length} of ${p99.length} |`,
    );
  }
}
