import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { Agent, request } from 'undici';
import {
  claimCpus,
  cpuSeconds,
  freePort,
  launchGateway,
  median,
  peakRssMegabytes,
  percentile,
  startFakeUpstream,
  startPinned,
  stopAll,
  threadCpuSeconds,
  waitUntilReady,
} from './bench-processes.js';
import { enableBroadcast, reportBroadcast, startBroadcastReceivers } from './broadcast-receivers.js';
import { steadyLoad } from './steady-load.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    only: { type: 'string' },
    broadcast: { type: 'string' },
    rounds: { type: 'string', default: '1' },
    floor: { type: 'string', default: 'bare' },
  },
});
const duration = Number(values.duration);
if (!(duration > 0))
  throw new Error(`--duration must be a positive number of seconds, got "${values.duration}"`);
/**
 * Each target is loaded this long before measuring, so connections, JIT and pools are warm. At a
 * steady 200 req/s V8 is still optimizing the gateway's functions 20 s in (their background
 * compiles take the core from requests): `--warmup 30` measures what a long-running instance does.
 */
const WARMUP_SECONDS = Number(values.warmup);
if (!(WARMUP_SECONDS > 0))
  throw new Error(`--warmup must be a positive number of seconds, got "${values.warmup}"`);
/**
 * Rounds per scenario. With more than one, the bare proxy and the gateway take turns (the order
 * alternates every round), each round is paired, and the table shows medians: on a shared host the
 * CPU's speed drifts within a minute, and one window per target measures the drift as well.
 */
const ROUNDS = Number(values.rounds);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error(`--rounds must be a whole number of at least 1, got "${values.rounds}"`);
/**
 * What stands in the floor's column: `bare`, the passthrough proxy (bench/bare-proxy.mjs), or
 * `minimal`, the least a gateway can do (bench/minimal-gateway.mjs: body parsed, key hashed, fields
 * checked, cost reserved and settled, reply translated, a record group-committed to SQLite). The
 * minimal gateway serves non-streamed chat alone, so it is measured in those scenarios.
 */
const FLOORS = { bare: 'bench/bare-proxy.mjs', minimal: 'bench/minimal-gateway.mjs' } as const;
if (!Object.hasOwn(FLOORS, values.floor))
  throw new Error(`--floor must be one of ${Object.keys(FLOORS).join(', ')}, got "${values.floor}"`);
const floor = values.floor as keyof typeof FLOORS;
const only = values.only?.toLowerCase();
const root = fileURLToPath(new URL('..', import.meta.url));

/** Sequential streaming requests timed for the first byte, after a few discarded ones. */
const FIRST_BYTE_SAMPLES = 200;
const FIRST_BYTE_WARMUP = 20;

interface Scenario {
  /** Short name `--only` also matches. */
  key: string;
  title: string;
  connections: number;
  body: string;
  /** Path on the fake upstream; the bare proxy passes paths through unchanged. */
  upstreamPath: string;
  gatewayPath: string;
  streaming: boolean;
  /**
   * Requests per second, evenly spaced and sent whether or not earlier ones have answered
   * (bench/steady-load.ts; at most `connections` in flight); unset means as fast as the target answers.
   */
  overallRate?: number;
}

const chatRequest = {
  model: 'bench/fast',
  messages: [{ role: 'user', content: 'Say hello in fifty words.' }],
  max_tokens: 64,
};

const scenarios: Scenario[] = [
  {
    key: 'chat',
    title: '1. chat, 64 connections',
    connections: 64,
    body: JSON.stringify(chatRequest),
    upstreamPath: '/v1/chat/completions',
    gatewayPath: '/api/v1/chat/completions',
    streaming: false,
  },
  {
    key: 'stream',
    title: '2. chat streaming (50 chunks), 64 connections',
    connections: 64,
    body: JSON.stringify({ ...chatRequest, stream: true }),
    upstreamPath: '/v1/chat/completions',
    gatewayPath: '/api/v1/chat/completions',
    streaming: true,
  },
  {
    // The upstream only speaks chat completions, so the floor for a translating hop is a passthrough of
    // the same Responses body to it: the extra work the gateway does is the translation itself.
    key: 'responses',
    title: '3. responses → chat, 64 connections',
    connections: 64,
    body: JSON.stringify({ model: 'bench/fast', input: 'Say hello in fifty words.', max_output_tokens: 64 }),
    upstreamPath: '/v1/chat/completions',
    gatewayPath: '/api/v1/responses',
    streaming: false,
  },
  {
    key: 'single',
    title: '4. chat, 1 connection',
    connections: 1,
    body: JSON.stringify(chatRequest),
    upstreamPath: '/v1/chat/completions',
    gatewayPath: '/api/v1/chat/completions',
    streaming: false,
  },
  {
    key: 'slow',
    title: '5. chat, 256 connections, upstream answers in 50 ms',
    connections: 256,
    body: JSON.stringify({ ...chatRequest, model: 'bench/slow' }),
    upstreamPath: '/slow/v1/chat/completions',
    gatewayPath: '/api/v1/chat/completions',
    streaming: false,
  },
  {
    // Latency below saturation: what a request waits when the gateway has CPU to spare (the load an
    // instance runs at in practice). The --broadcast comparison reads this row.
    key: 'steady',
    title: '6. chat at a steady 200 req/s (evenly spaced arrivals)',
    connections: 32,
    overallRate: 200,
    body: JSON.stringify(chatRequest),
    upstreamPath: '/v1/chat/completions',
    gatewayPath: '/api/v1/chat/completions',
    streaming: false,
  },
];

type TargetName = 'direct' | 'bare proxy' | 'gateway';

interface Target {
  name: TargetName;
  origin: string;
  /** The process whose CPU and memory are measured; null for the upstream called directly. */
  pid: number | null;
  headers: Record<string, string>;
  path: (scenario: Scenario) => string;
  /** Why the target cannot be measured at all (the gateway did not start, say). */
  unavailable: string | null;
}

interface Measurement {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Microseconds of the proxy process's CPU (user + system) per completed request. */
  cpuMicros: number | null;
  /**
   * Of it, the main (request) thread's own: without V8's GC helpers, libuv's pool or the broadcast
   * delivery thread, whose work a request does not wait for unless they take its core.
   */
  mainCpuMicros: number | null;
  /** Of it, the SCHED_IDLE thread's (the broadcast delivery thread); null when there is none. */
  idleCpuMicros: number | null;
  /** Share of one CPU the proxy used: near 100% means the proxy, not the load core, was the limit. */
  cpuBusy: number | null;
  failures: number;
  /**
   * The slowest first answer on a connection, and the p99 of the other answers. A loaded Node server
   * accepts one new connection per event-loop turn (libuv 1.45+), so the connections a run opens
   * against a saturated proxy wait in the accept queue; these two figures tell that wait apart from
   * the steady state.
   */
  firstOnConnectionMax: number;
  /** Connections that got at least one answer in the window (the others waited all of it). */
  connectionsAnswered: number;
  laterP99: number;
}

type Outcome = Measurement | { unavailable: string };

interface FirstByte {
  byte: number;
  event: number;
}

function fail(message: string): never {
  console.error(`bench:inference: ${message}`);
  process.exit(1);
}

/** An error body's message, short enough for a table cell. */
function describeFailure(status: number, text: string): string {
  let message = text;
  try {
    const parsed = JSON.parse(text) as { error?: { message?: string }; message?: string };
    message = parsed.error?.message ?? parsed.message ?? text;
  } catch {
    // not JSON: keep the text
  }
  const short = message.replace(/\s+/g, ' ').slice(0, 100);
  return status === 404 ? `not available (404: ${short})` : `failed (HTTP ${status}: ${short})`;
}

/**
 * Starts the gateway from dist/ with bench/inference-config.yaml and creates an inference key with the
 * bootstrap management key (management keys are refused on inference routes). Never throws: a gateway
 * that cannot run yet leaves its column "not available" and the floor is still measured.
 */
async function startGateway(cpu: number, upstreamOrigin: string, directory: string): Promise<Target> {
  const target: Target = {
    name: 'gateway',
    origin: '',
    pid: null,
    headers: {},
    path: (scenario) => scenario.gatewayPath,
    unavailable: null,
  };
  // BENCH_GATEWAY_NODE_ARGS adds node flags to the gateway alone, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const nodeArgs = (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  try {
    const gateway = await launchGateway({ checkout: root, cpu, upstreamOrigin, directory, nodeArgs });
    if (broadcastTypes.length > 0) {
      const problem = await enableBroadcast(gateway.origin, gateway.managementKey, broadcastTypes, receivers);
      if (problem) return { ...target, unavailable: `broadcast setup ${problem}` };
    }
    return {
      ...target,
      origin: gateway.origin,
      pid: gateway.child.pid ?? null,
      headers: { authorization: `Bearer ${gateway.key}`, 'content-type': 'application/json' },
    };
  } catch (error) {
    return { ...target, unavailable: `not available (${(error as Error).message})` };
  }
}

/** One request before loading a target: a missing route or a refusal is reported, not measured. */
async function probe(
  url: string,
  scenario: Scenario,
  headers: Record<string, string>,
): Promise<string | null> {
  const response = await request(url, { method: 'POST', headers, body: scenario.body });
  const text = await response.body.text();
  return response.statusCode < 300 ? null : describeFailure(response.statusCode, text);
}

function runAutocannon(
  options: autocannon.Options,
  onResponse?: (status: number, milliseconds: number, client: unknown) => void,
): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(options, (error, result) => (error ? reject(error) : resolve(result)));
    // autocannon's own percentiles are whole milliseconds; the per-response times are not.
    if (onResponse)
      instance.on('response', (client, status, _bytes, time) => onResponse(status, time, client));
  });
}

/**
 * Waits (at most 10 s) until a process uses under 5% of a CPU over 200 ms: what a load left queued
 * (requests on connections autocannon already dropped) is served before the next window starts.
 */
async function untilIdle(pid: number): Promise<void> {
  const deadline = performance.now() + 10_000;
  let before = cpuSeconds(pid);
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = cpuSeconds(pid);
    if (now - before < 0.01) return;
    before = now;
  }
}

/** A measuring window's rate, percentiles (of sorted latencies) and the target's CPU per request. */
function windowFigures(
  target: Target,
  window: {
    startedAt: number;
    cpuBefore: number;
    threadsBefore: ReturnType<typeof threadCpuSeconds> | null;
    completed: number;
    latencies: Float64Array;
    failures: number;
  },
): Pick<
  Measurement,
  | 'requestsPerSecond'
  | 'p50'
  | 'p99'
  | 'cpuMicros'
  | 'mainCpuMicros'
  | 'idleCpuMicros'
  | 'cpuBusy'
  | 'failures'
> {
  const seconds = (performance.now() - window.startedAt) / 1000;
  const cpu = target.pid === null ? null : cpuSeconds(target.pid) - window.cpuBefore;
  const threads = target.pid === null ? null : threadCpuSeconds(target.pid);
  const spent = (tid: number, now: number) => now - (window.threadsBefore?.get(tid)?.seconds ?? 0);
  const mainCpu = target.pid === null ? null : spent(target.pid, threads?.get(target.pid)?.seconds ?? 0);
  const idle = [...(threads ?? [])].filter(([, thread]) => thread.idle);
  const idleCpu =
    idle.length === 0 ? null : idle.reduce((sum, [tid, thread]) => sum + spent(tid, thread.seconds), 0);
  const perRequest = (cpuTime: number | null) =>
    cpuTime === null || window.completed === 0 ? null : (cpuTime * 1e6) / window.completed;
  return {
    requestsPerSecond: window.completed / seconds,
    p50: percentile(window.latencies, 0.5),
    p99: percentile(window.latencies, 0.99),
    cpuMicros: perRequest(cpu),
    mainCpuMicros: perRequest(mainCpu),
    idleCpuMicros: perRequest(idleCpu),
    cpuBusy: cpu === null ? null : (cpu / seconds) * 100,
    failures: window.failures,
  };
}

async function load(target: Target, scenario: Scenario): Promise<Measurement> {
  if (scenario.overallRate) return loadSteadily(target, scenario, scenario.overallRate);
  const options: autocannon.Options = {
    url: `${target.origin}${target.path(scenario)}`,
    method: 'POST',
    headers: target.headers,
    body: scenario.body,
    connections: scenario.connections,
  };
  await runAutocannon({ ...options, duration: WARMUP_SECONDS });
  // The warm-up's dropped connections may still be queued at a saturated target, their requests
  // sent: measuring starts once it has served them.
  if (target.pid !== null) await untilIdle(target.pid);
  const latencies: number[] = [];
  const later: number[] = [];
  /** TCP connections seen: autocannon keeps a client object across reconnects, its socket changes. */
  const connections = new Set<unknown>();
  let firstOnConnectionMax = Number.NEGATIVE_INFINITY;
  let completed = 0;
  const cpuBefore = target.pid === null ? 0 : cpuSeconds(target.pid);
  const threadsBefore = target.pid === null ? null : threadCpuSeconds(target.pid);
  const startedAt = performance.now();
  const result = await runAutocannon({ ...options, duration }, (status, milliseconds, client) => {
    completed += 1;
    const connection = (client as { conn?: object }).conn ?? client;
    const first = !connections.has(connection);
    connections.add(connection);
    if (status < 200 || status >= 300) return;
    latencies.push(milliseconds);
    if (first) firstOnConnectionMax = Math.max(firstOnConnectionMax, milliseconds);
    else later.push(milliseconds);
  });
  return {
    ...windowFigures(target, {
      startedAt,
      cpuBefore,
      threadsBefore,
      completed,
      latencies: Float64Array.from(latencies).sort(),
      failures: result.errors + result.non2xx,
    }),
    firstOnConnectionMax,
    connectionsAnswered: connections.size,
    laterP99: percentile(Float64Array.from(later).sort(), 0.99),
  };
}

/**
 * A load at a steady rate (autocannon's `overallRate` would send each second's requests in a burst
 * at its start): the figures are those of requests arriving at that rate.
 */
async function loadSteadily(target: Target, scenario: Scenario, rate: number): Promise<Measurement> {
  const options = {
    origin: target.origin,
    path: target.path(scenario),
    headers: target.headers,
    body: scenario.body,
    rate,
    connections: scenario.connections,
  };
  await steadyLoad({ ...options, seconds: WARMUP_SECONDS });
  if (target.pid !== null) await untilIdle(target.pid);
  const cpuBefore = target.pid === null ? 0 : cpuSeconds(target.pid);
  const threadsBefore = target.pid === null ? null : threadCpuSeconds(target.pid);
  const startedAt = performance.now();
  const { latencies, sent, failed } = await steadyLoad({ ...options, seconds: duration });
  return {
    ...windowFigures(target, {
      startedAt,
      cpuBefore,
      threadsBefore,
      completed: sent,
      latencies,
      failures: failed,
    }),
    firstOnConnectionMax: Number.NEGATIVE_INFINITY,
    connectionsAnswered: 0,
    laterP99: Number.NaN,
  };
}

/**
 * Time to the first body chunk and to the first `data:` event of a streamed answer, one request at a
 * time on one connection, so the figure is the hop's own and not a queue's: a proxy that buffers
 * before it relays shows here even when its throughput looks fine.
 */
async function firstByte(target: Target, scenario: Scenario): Promise<FirstByte> {
  const agent = new Agent({ connections: 1 });
  const bytes: number[] = [];
  const events: number[] = [];
  try {
    for (let index = 0; index < FIRST_BYTE_WARMUP + FIRST_BYTE_SAMPLES; index += 1) {
      const startedAt = performance.now();
      const response = await request(`${target.origin}${target.path(scenario)}`, {
        method: 'POST',
        headers: target.headers,
        body: scenario.body,
        dispatcher: agent,
      });
      let byteAt: number | undefined;
      let eventAt: number | undefined;
      let seen = '';
      for await (const chunk of response.body) {
        const at = performance.now() - startedAt;
        byteAt ??= at;
        if (eventAt === undefined) {
          seen += (chunk as Buffer).toString('utf8');
          if (/^data:/m.test(seen)) eventAt = at;
        }
      }
      if (index < FIRST_BYTE_WARMUP || byteAt === undefined || eventAt === undefined) continue;
      bytes.push(byteAt);
      events.push(eventAt);
    }
  } finally {
    await agent.close();
  }
  return {
    byte: percentile(Float64Array.from(bytes).sort(), 0.5),
    event: percentile(Float64Array.from(events).sort(), 0.5),
  };
}

const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : '–');
const isMeasured = (outcome: Outcome | undefined): outcome is Measurement =>
  outcome !== undefined && !('unavailable' in outcome);

function row(cells: Array<string | number>): void {
  console.log(`| ${cells.join(' | ')} |`);
}

interface Check {
  name: string;
  figure: string;
  target: string;
  met: boolean | null;
}

/** One window of load on a target; a target that cannot be measured gets the reason instead. */
async function measure(target: Target, scenario: Scenario): Promise<Outcome> {
  try {
    const unavailable =
      target.unavailable ??
      (await probe(`${target.origin}${target.path(scenario)}`, scenario, target.headers));
    return unavailable ? { unavailable } : await load(target, scenario);
  } catch (error) {
    // A target that dies or refuses connections mid-run loses its cells, not the whole run.
    return { unavailable: `failed (${(error as Error).message})` };
  }
}

/** A target's rounds as one measurement: the median of each figure (the worst of the accept-queue ones). */
function combined(outcomes: Outcome[]): Outcome {
  const missing = outcomes.find((outcome) => !isMeasured(outcome));
  if (missing) return missing;
  const measured = outcomes as Measurement[];
  const of = (figure: (measurement: Measurement) => number | null) => {
    const figures = measured.map(figure);
    return figures.some((value) => value === null) ? null : median(figures as number[]);
  };
  return {
    requestsPerSecond: of((m) => m.requestsPerSecond) as number,
    p50: of((m) => m.p50) as number,
    p99: of((m) => m.p99) as number,
    cpuMicros: of((m) => m.cpuMicros),
    mainCpuMicros: of((m) => m.mainCpuMicros),
    idleCpuMicros: of((m) => m.idleCpuMicros),
    cpuBusy: of((m) => m.cpuBusy),
    failures: measured.reduce((sum, m) => sum + m.failures, 0),
    firstOnConnectionMax: Math.max(...measured.map((m) => m.firstOnConnectionMax)),
    connectionsAnswered: Math.min(...measured.map((m) => m.connectionsAnswered)),
    laterP99: of((m) => m.laterP99) as number,
  };
}

/** A scenario's rounds compared within each round, where the bare proxy and the gateway both ran. */
interface Paired {
  /** Gateway req/s over the bare proxy's. */
  throughput: number[];
  /** The bare proxy's CPU per request over the gateway's. */
  cpu: number[];
  /** Whether the bare proxy used ≥ 90% of its CPU: if not, its req/s was held back by something else. */
  bareSaturated: boolean[];
  /** p50 minus the direct call's, of the gateway and of the bare proxy. */
  gatewayAdded: number[];
  bareAdded: number[];
  /** Gateway p99 minus the bare proxy's. */
  p99Gap: number[];
}

function pairedFigures(rounds: Array<Map<TargetName, Outcome>>): Paired {
  const pairs: Paired = {
    throughput: [],
    cpu: [],
    bareSaturated: [],
    gatewayAdded: [],
    bareAdded: [],
    p99Gap: [],
  };
  for (const round of rounds) {
    const [direct, bare, gateway] = (['direct', 'bare proxy', 'gateway'] as const).map((name) =>
      round.get(name),
    );
    if (isMeasured(direct) && isMeasured(bare)) pairs.bareAdded.push(bare.p50 - direct.p50);
    if (isMeasured(direct) && isMeasured(gateway)) pairs.gatewayAdded.push(gateway.p50 - direct.p50);
    if (!isMeasured(bare) || !isMeasured(gateway)) continue;
    pairs.throughput.push(gateway.requestsPerSecond / bare.requestsPerSecond);
    if (gateway.cpuMicros && bare.cpuMicros) pairs.cpu.push(bare.cpuMicros / gateway.cpuMicros);
    pairs.bareSaturated.push(bare.cpuBusy !== null && bare.cpuBusy >= 90);
    pairs.p99Gap.push(gateway.p99 - bare.p99);
  }
  return pairs;
}

/** The median of paired figures, with their range when there are several rounds: "53% [41–61]". */
function spread(figures: number[], scale: number, unit: string, digits = 0): string {
  const value = (figure: number) => fixed(figure * scale, digits);
  if (figures.length === 0) return '–';
  if (figures.length === 1) return `${value(figures[0] as number)}${unit}`;
  return `${value(median(figures))}${unit} [${value(Math.min(...figures))}–${value(Math.max(...figures))}]`;
}

// ---------------------------------------------------------------------------------------------------

// This process (the load generator) moves to the load CPU; children start pinned.
const { proxyCpu, loadCpu } = claimCpus(fail);

const selected = scenarios.filter(
  (scenario) =>
    (!only || scenario.key.includes(only) || scenario.title.toLowerCase().includes(only)) &&
    (floor === 'bare' || (!scenario.streaming && scenario.gatewayPath.endsWith('/chat/completions'))),
);
if (selected.length === 0) fail(`--only ${values.only} matches no scenario`);

const broadcastTypes = (values.broadcast ?? '').split(',').filter(Boolean);
const receivers = await startBroadcastReceivers(root, broadcastTypes, loadCpu);
const directory = mkdtempSync(join(tmpdir(), 'switchyard-bench-inference-'));
const results = new Map<string, Map<TargetName, Outcome>>();
const firstBytes = new Map<TargetName, FirstByte>();
const paired = new Map<string, Paired>();

try {
  const upstreamOrigin = await startFakeUpstream(root, loadCpu);

  const barePort = await freePort();
  const bare = startPinned(
    proxyCpu,
    [
      ...(process.env.BENCH_BARE_NODE_ARGS ?? '').split(/\s+/).filter(Boolean),
      join(root, FLOORS[floor]),
      '--port',
      String(barePort),
      '--upstream',
      upstreamOrigin,
    ],
    {},
  );
  // The bare proxy passes GET /health through to the upstream: an answer means both hops work.
  await waitUntilReady(`http://127.0.0.1:${barePort}/health`, bare, 'bare proxy');

  const headers = { 'content-type': 'application/json' };
  const direct: Target = {
    name: 'direct',
    origin: upstreamOrigin,
    pid: null,
    headers,
    path: (scenario) => scenario.upstreamPath,
    unavailable: null,
  };
  const bareTarget: Target = {
    name: 'bare proxy',
    origin: `http://127.0.0.1:${barePort}`,
    pid: bare.pid ?? null,
    headers,
    path: (scenario) => scenario.upstreamPath,
    unavailable: null,
  };
  const gatewayTarget = await startGateway(proxyCpu, upstreamOrigin, directory);

  console.log(
    `switchyard inference bench: ${duration}s per target after ${WARMUP_SECONDS}s warm-up` +
      `${ROUNDS > 1 ? `, ${ROUNDS} rounds per scenario (the bare proxy and the gateway in turns; medians, paired figures with their range)` : ''}` +
      `, node ${process.version}; ` +
      `proxies on CPU ${proxyCpu}, load generator and fake upstream on CPU ${loadCpu}`,
  );
  // Pinning keeps the two CPUs apart but cannot keep other work off them.
  const [oneMinuteLoad = 0] = loadavg();
  if (oneMinuteLoad > cpus().length / 2)
    console.log(
      `warning: load average ${oneMinuteLoad.toFixed(1)} on ${cpus().length} CPUs; other processes share the CPUs, so the figures will be noisy`,
    );
  if (floor === 'minimal')
    console.log(
      'floor: the minimal gateway (bench/minimal-gateway.mjs) stands in the "bare proxy" rows and columns; non-streamed chat scenarios only',
    );
  console.log(
    'added p50 = p50 minus calling the fake upstream directly; proxy CPU % = share of its one CPU (100% = proxy-bound)',
  );
  console.log('');
  row([
    'scenario',
    'target',
    'req/s',
    'p50 ms',
    'p99 ms',
    'added p50 ms',
    'CPU µs/req',
    'of it, main thread',
    'delivery thread',
    'proxy CPU %',
    'vs bare',
    'errors',
  ]);
  row(['---', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']);
  for (const scenario of selected) {
    const rounds: Array<Map<TargetName, Outcome>> = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const proxies = round % 2 === 0 ? [bareTarget, gatewayTarget] : [gatewayTarget, bareTarget];
      const outcomes = new Map<TargetName, Outcome>();
      for (const target of [direct, ...proxies]) outcomes.set(target.name, await measure(target, scenario));
      rounds.push(outcomes);
    }
    const outcomes = new Map<TargetName, Outcome>();
    for (const target of [direct, bareTarget, gatewayTarget])
      outcomes.set(target.name, combined(rounds.map((round) => round.get(target.name) as Outcome)));
    results.set(scenario.key, outcomes);
    const pairs = pairedFigures(rounds);
    paired.set(scenario.key, pairs);
    for (const target of [direct, bareTarget, gatewayTarget]) {
      const outcome = outcomes.get(target.name) as Outcome;
      if (!isMeasured(outcome)) {
        row([scenario.title, target.name, outcome.unavailable, '', '', '', '', '', '', '', '', '']);
        continue;
      }
      const added = target.name === 'gateway' ? pairs.gatewayAdded : pairs.bareAdded;
      row([
        scenario.title,
        target.name,
        Math.round(outcome.requestsPerSecond),
        fixed(outcome.p50, 2),
        fixed(outcome.p99, 2),
        target.name === 'direct' ? '–' : fixed(median(added), 2),
        outcome.cpuMicros === null ? '–' : fixed(outcome.cpuMicros, 1),
        outcome.mainCpuMicros === null ? '–' : fixed(outcome.mainCpuMicros, 1),
        outcome.idleCpuMicros === null ? '–' : fixed(outcome.idleCpuMicros, 1),
        outcome.cpuBusy === null ? '–' : fixed(outcome.cpuBusy, 0),
        target.name === 'gateway' && pairs.throughput.length > 0 ? spread(pairs.throughput, 100, '%') : '–',
        outcome.failures,
      ]);
    }
  }

  // A floor that did not saturate its CPU was held back by something else (the load CPU, the upstream's
  // delay, other processes on its CPU): the gateway/bare ratio then flatters the gateway, and CPU per
  // request is the fairer comparison.
  const heldBack = [...results].filter(([, outcomes]) => {
    const bare = outcomes.get('bare proxy');
    return isMeasured(bare) && bare.cpuBusy !== null && bare.cpuBusy < 90;
  });
  if (heldBack.length > 0) {
    console.log('');
    console.log(
      `Note: the bare proxy used < 90% of its CPU in ${heldBack.map(([key]) => key).join(', ')}; its req/s there ` +
        'is bounded by the load CPU, the upstream delay or other processes on CPU ' +
        `${proxyCpu}, so compare CPU µs/req rather than the throughput ratio.`,
    );
  }

  const stream = selected.find((scenario) => scenario.streaming);
  if (stream) {
    console.log('');
    console.log(
      `Time to the first streamed byte and to the first data event (${stream.title}, sequential, p50 of ${FIRST_BYTE_SAMPLES})`,
    );
    console.log('');
    row(['target', 'first byte ms', 'first data event ms']);
    row(['---', '---:', '---:']);
    for (const target of [direct, bareTarget, gatewayTarget]) {
      const outcome = results.get(stream.key)?.get(target.name);
      if (!isMeasured(outcome)) {
        row([target.name, outcome && 'unavailable' in outcome ? outcome.unavailable : 'not measured', '']);
        continue;
      }
      try {
        const figures = await firstByte(target, stream);
        firstBytes.set(target.name, figures);
        row([target.name, fixed(figures.byte, 2), fixed(figures.event, 2)]);
      } catch (error) {
        row([target.name, `failed (${(error as Error).message})`, '']);
      }
    }
  }

  // Only a process that carried load has a peak worth reporting (a gateway that answered 404 has not).
  const peakRss = new Map<TargetName, number>();
  for (const target of [bareTarget, gatewayTarget]) {
    const carriedLoad = [...results.values()].some((outcomes) => isMeasured(outcomes.get(target.name)));
    const peak = target.pid !== null && carriedLoad ? peakRssMegabytes(target.pid) : undefined;
    if (peak !== undefined) peakRss.set(target.name, peak);
  }
  printChecks(peakRss);
  if (broadcastTypes.length > 0 && gatewayTarget.unavailable === null) {
    await reportBroadcast(gatewayTarget.origin, receivers);
  }
} finally {
  await receivers.close();
  await stopAll();
  rmSync(directory, { recursive: true, force: true });
}

/** The issue's targets beside the measured figures. */
function printChecks(peakRss: Map<TargetName, number>): void {
  const measured = (key: string, name: TargetName) => {
    const outcome = results.get(key)?.get(name);
    return isMeasured(outcome) ? outcome : undefined;
  };
  const checks: Check[] = [];
  const notMeasured = (name: string, target: string) =>
    checks.push({ name, figure: 'not measured', target, met: null });

  for (const [key, label, share] of [
    ['chat', '1. chat', 70],
    ['stream', '2. streaming', 60],
    ['responses', '3. responses', 70],
  ] as const) {
    if (!results.has(key)) continue;
    const gateway = measured(key, 'gateway');
    const bare = measured(key, 'bare proxy');
    const pairs = paired.get(key);
    const target = `≥ ${share}% of bare`;
    if (!gateway || !bare || !pairs || pairs.throughput.length === 0)
      notMeasured(`${label} throughput`, target);
    else {
      // Paired round by round, then the median (one round: that round's figure).
      const ratio = median(pairs.throughput) * 100;
      // What the ratio would be were both proxies held back by their own CPU alone. A floor that did not
      // saturate its CPU (the load CPU kept up with neither, say) makes the req/s ratio flatter the
      // gateway; then this one is the verdict.
      const cpuRatio = pairs.cpu.length > 0 ? median(pairs.cpu) * 100 : Number.NaN;
      const bareSaturated = pairs.bareSaturated.filter(Boolean).length * 2 > pairs.bareSaturated.length;
      checks.push({
        name: `${label} throughput`,
        figure:
          `${spread(pairs.throughput, 100, '%')} (${Math.round(gateway.requestsPerSecond)} vs ${Math.round(bare.requestsPerSecond)} req/s)` +
          `; by CPU per request ${spread(pairs.cpu, 100, '%')}${bareSaturated ? '' : ' (judged on this: the floor was not CPU-bound)'}`,
        target,
        met: (bareSaturated ? ratio : cpuRatio) >= share,
      });
    }
    if (key === 'stream') continue;
    if (gateway?.cpuMicros == null) notMeasured(`${label} CPU per request`, '≤ 90 µs');
    else
      checks.push({
        name: `${label} CPU per request`,
        figure: `${fixed(gateway.cpuMicros, 1)} µs (bare ${bare?.cpuMicros == null ? '–' : fixed(bare.cpuMicros, 1)} µs)`,
        target: '≤ 90 µs',
        met: gateway.cpuMicros <= 90,
      });
  }

  if (results.has('stream')) {
    const gateway = firstBytes.get('gateway');
    const bare = firstBytes.get('bare proxy');
    // "No fixed delay" read as: the gateway's first event comes within a millisecond of the floor's.
    const target = 'no fixed delay (≤ bare + 1 ms)';
    if (!gateway || !bare) notMeasured('2. first streamed event', target);
    else
      checks.push({
        name: '2. first streamed event',
        figure: `${fixed(gateway.event, 2)} ms vs bare ${fixed(bare.event, 2)} ms`,
        target,
        met: gateway.event - bare.event <= 1,
      });
  }

  if (results.has('single')) {
    const pairs = paired.get('single');
    if (!pairs || pairs.gatewayAdded.length === 0) notMeasured('4. added p50, one connection', '≤ 0.35 ms');
    else
      checks.push({
        name: '4. added p50, one connection',
        figure: `${spread(pairs.gatewayAdded, 1, ' ms', 2)} (bare ${spread(pairs.bareAdded, 1, ' ms', 2)})`,
        target: '≤ 0.35 ms',
        met: median(pairs.gatewayAdded) <= 0.35,
      });
  }

  if (results.has('slow')) {
    const gateway = measured('slow', 'gateway');
    const bare = measured('slow', 'bare proxy');
    const gaps = paired.get('slow')?.p99Gap ?? [];
    if (!gateway || !bare || gaps.length === 0) notMeasured('5. p99, 256 slow connections', '≤ bare + 30 ms');
    else
      checks.push({
        name: '5. p99, 256 slow connections',
        figure: `${fixed(gateway.p99, 2)} ms vs bare ${fixed(bare.p99, 2)} ms; paired gap ${spread(gaps, 1, ' ms', 2)}`,
        target: '≤ bare + 30 ms',
        met: median(gaps) <= 30,
      });
    if (gateway && bare)
      console.log(
        `\n5. diagnosis: slowest first answer on a connection ${fixed(gateway.firstOnConnectionMax, 0)} ms ` +
          `(bare ${fixed(bare.firstOnConnectionMax, 0)} ms; connections answered ${gateway.connectionsAnswered} ` +
          `and ${bare.connectionsAnswered}); p99 of the other answers ${fixed(gateway.laterP99, 2)} ms ` +
          `(bare ${fixed(bare.laterP99, 2)} ms). A saturated Node server accepts one connection per event-loop ` +
          'turn, so new connections wait in the accept queue (docs/performance.md, session 9).',
      );
  }

  const gatewayRss = peakRss.get('gateway');
  const bareRss = peakRss.get('bare proxy');
  checks.push({
    name: 'peak RSS (VmHWM)',
    figure: `${gatewayRss === undefined ? 'not measured' : `${fixed(gatewayRss, 1)} MB`} (bare ${bareRss === undefined ? '–' : fixed(bareRss, 1)} MB)`,
    target: '≤ 200 MB',
    met: gatewayRss === undefined ? null : gatewayRss <= 200,
  });

  console.log('');
  console.log('Targets (gateway figures)');
  console.log('');
  row(['check', 'measured', 'target', 'met']);
  row(['---', '---', '---', '---']);
  for (const check of checks)
    row([check.name, check.figure, check.target, check.met === null ? '–' : check.met ? 'yes' : 'NO']);
}
