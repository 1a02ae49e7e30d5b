import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
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
  startFakeUpstream,
  stopAll,
} from './bench-processes.js';
import { enableBroadcast, startBroadcastReceivers, waitForDrain } from './broadcast-receivers.js';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    requests: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '16' },
    path: { type: 'string', default: '/api/v1/chat/completions' },
    stream: { type: 'boolean', default: false },
    /** Destination types (bench/broadcast-receivers.ts) both gateways broadcast to; a round then lasts until both outboxes drain. */
    broadcast: { type: 'string' },
  },
});

function fail(message: string): never {
  console.error(`bench:side-by-side: ${message}`);
  process.exit(1);
}

const positive = (name: string, text: string | undefined): number => {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value <= 0) fail(`--${name} must be a positive integer, got "${text}"`);
  return value;
};
if (!values.base) fail('--base <checkout with a built dist/> is required');
const requests = positive('requests', values.requests);
const rounds = positive('rounds', values.rounds);
const connections = positive('connections', values.connections);
const root = fileURLToPath(new URL('..', import.meta.url));
const builds = [
  { name: 'base', checkout: resolve(values.base) },
  { name: 'this checkout', checkout: root },
];

const body = values.path.endsWith('/responses')
  ? { model: 'bench/fast', input: 'Say hello in fifty words.', max_output_tokens: 64 }
  : {
      model: 'bench/fast',
      messages: [{ role: 'user', content: 'Say hello in fifty words.' }],
      max_tokens: 64,
    };
const payload = JSON.stringify(values.stream ? { ...body, stream: true } : body);

function run(gateway: LaunchedGateway, amount: number): Promise<autocannon.Result> {
  return new Promise((done, reject) => {
    autocannon(
      {
        url: `${gateway.origin}${values.path}`,
        method: 'POST',
        headers: { authorization: `Bearer ${gateway.key}`, 'content-type': 'application/json' },
        body: payload,
        connections,
        amount,
      },
      (error, result) => (error ? reject(error) : done(result)),
    );
  });
}

// This process (the load generator) moves to the load CPU; children start pinned.
const { proxyCpu, loadCpu } = claimCpus(fail);
const directories = builds.map(() => mkdtempSync(join(tmpdir(), 'switchyard-side-by-side-')));
const broadcastTypes = (values.broadcast ?? '').split(',').filter(Boolean);
const receivers = await startBroadcastReceivers(root, broadcastTypes, loadCpu).catch((error: Error) => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  return fail(error.message);
});

try {
  const upstreamOrigin = await startFakeUpstream(root, loadCpu);
  const gateways = await Promise.all(
    builds.map((build, index) =>
      launchGateway({
        checkout: build.checkout,
        cpu: proxyCpu,
        upstreamOrigin,
        directory: directories[index]!,
        // Both read this checkout's bench config, so a difference is the code's, not the setup's.
        configRoot: root,
      }).catch((error: Error) => fail(`${build.name} (${build.checkout}): ${error.message}`)),
    ),
  );
  if (broadcastTypes.length > 0) {
    for (const [index, gateway] of gateways.entries()) {
      const problem = await enableBroadcast(gateway.origin, gateway.managementKey, broadcastTypes, receivers);
      if (problem) fail(`${builds[index]!.name}: broadcast setup ${problem}`);
    }
  }
  console.log(
    `side by side on CPU ${proxyCpu}: POST ${values.path}${values.stream ? ' (streaming)' : ''}, ` +
      `${requests} requests × ${connections} connections per build and round` +
      (broadcastTypes.length > 0
        ? `, each generation broadcast to ${broadcastTypes.join(', ')} (a round ends when both outboxes are empty)`
        : ''),
  );
  // Warm-up: JIT, pools and caches of both builds.
  await Promise.all(gateways.map((gateway) => run(gateway, Math.min(requests, 3000))));
  // The warm-up's events are delivered before the first round, not charged to it.
  if (broadcastTypes.length > 0) await Promise.all(gateways.map((gateway) => waitForDrain(gateway.origin)));

  const figures = builds.map(() => [] as number[]);
  /** The main (request) thread's own CPU: without the delivery, SQLite and GC helper threads. */
  const mainFigures = builds.map(() => [] as number[]);
  /**
   * The same two, read when the build's last response arrived: what the requests cost while both
   * builds were loaded, without what is left to deliver after (a worker that yields to requests,
   * SCHED_IDLE, delivers most of a round's events then — and the drain's polls of /metrics, which
   * count the outbox, land on the main thread).
   */
  const loadFigures = builds.map(() => [] as number[]);
  const mainLoadFigures = builds.map(() => [] as number[]);
  for (let round = 1; round <= rounds; round += 1) {
    const before = gateways.map((gateway) => cpuSeconds(gateway.child.pid!));
    const mainBefore = gateways.map((gateway) => cpuSeconds(gateway.child.pid!, gateway.child.pid!));
    const atLoadEnd = gateways.map(() => ({ all: 0, main: 0 }));
    const results = await Promise.all(
      gateways.map(async (gateway, index) => {
        const result = await run(gateway, requests);
        atLoadEnd[index] = {
          all: cpuSeconds(gateway.child.pid!),
          main: cpuSeconds(gateway.child.pid!, gateway.child.pid!),
        };
        return result;
      }),
    );
    // Records are written just after their responses: the group commit belongs to the round, and so
    // does delivering the round's broadcast events.
    await new Promise((settle) => setTimeout(settle, 500));
    if (broadcastTypes.length > 0) {
      const left = await Promise.all(gateways.map((gateway) => waitForDrain(gateway.origin, 120_000, 250)));
      if (left.some((pending) => pending > 0))
        fail(`outbox not drained after 120 s: ${left.join(', ')} pending`);
    }
    const cells = gateways.map((gateway, index) => {
      const result = results[index]!;
      const failed = result.non2xx + result.errors;
      const micros = ((cpuSeconds(gateway.child.pid!) - before[index]!) * 1e6) / requests;
      const mainMicros =
        ((cpuSeconds(gateway.child.pid!, gateway.child.pid!) - mainBefore[index]!) * 1e6) / requests;
      const loadMicros = ((atLoadEnd[index]!.all - before[index]!) * 1e6) / requests;
      const mainLoadMicros = ((atLoadEnd[index]!.main - mainBefore[index]!) * 1e6) / requests;
      figures[index]!.push(micros);
      mainFigures[index]!.push(mainMicros);
      loadFigures[index]!.push(loadMicros);
      mainLoadFigures[index]!.push(mainLoadMicros);
      return (
        `${builds[index]!.name} ${micros.toFixed(1)} µs/req (main thread ${mainMicros.toFixed(1)}; ` +
        `under load ${loadMicros.toFixed(1)}, main ${mainLoadMicros.toFixed(1)})` +
        (failed > 0 ? ` (${failed} failed)` : '')
      );
    });
    console.log(`round ${round}: ${cells.join(', ')}`);
  }
  const [base, current] = figures.map(median) as [number, number];
  console.log(
    `median CPU per request: base ${base.toFixed(1)} µs, this checkout ${current.toFixed(1)} µs ` +
      `(${(((current - base) / base) * 100).toFixed(1)}%)`,
  );
  const [mainBase, mainCurrent] = mainFigures.map(median) as [number, number];
  console.log(
    `median main-thread CPU per request: base ${mainBase.toFixed(1)} µs, this checkout ${mainCurrent.toFixed(1)} µs ` +
      `(${(((mainCurrent - mainBase) / mainBase) * 100).toFixed(1)}%)`,
  );
  if (broadcastTypes.length > 0) {
    const [loadBase, loadCurrent] = loadFigures.map(median) as [number, number];
    const [mainLoadBase, mainLoadCurrent] = mainLoadFigures.map(median) as [number, number];
    console.log(
      `under load only (until the last response): median CPU per request base ${loadBase.toFixed(1)} µs, ` +
        `this checkout ${loadCurrent.toFixed(1)} µs (${(((loadCurrent - loadBase) / loadBase) * 100).toFixed(1)}%); ` +
        `main thread base ${mainLoadBase.toFixed(1)} µs, this checkout ${mainLoadCurrent.toFixed(1)} µs ` +
        `(${(((mainLoadCurrent - mainLoadBase) / mainLoadBase) * 100).toFixed(1)}%)`,
    );
  }
  console.log(
    `peak RSS: ${gateways
      .map(
        (gateway, index) => `${builds[index]!.name} ${peakRssMegabytes(gateway.child.pid!)?.toFixed(0)} MB`,
      )
      .join(', ')}`,
  );
} finally {
  await receivers.close();
  await stopAll();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
}
