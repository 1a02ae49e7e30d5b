// Local receivers for the benchmarks' --broadcast runs: each answers as its destination type's
// ingestion API does on success and counts what it receives. They run in a process of their own on
// the load CPU (broadcast-receivers-process.ts): their work is not charged to the gateway's CPU, and
// it does not delay the load generator's event loop, which times the responses (receivers sharing
// that loop added their request handling to the latencies measured for broadcasting gateways only).
// They run at the lowest priority (nice 19): they stand in for services on other machines, so on the
// shared load CPU the load generator and the fake upstream go first (at default priority a webhook
// receiver's 200 requests/s delayed the timing of the broadcasting gateway's requests only).
import { join } from 'node:path';
import { freePort, startPinned, stop, waitUntilReady } from './bench-processes.js';

export interface Receiver {
  type: string;
  url: string;
  requests: number;
  bytes: number;
}

export interface BroadcastReceivers {
  /** Type and URL of each receiver (their counts as they were at the start). */
  list: Receiver[];
  /** What each receiver has received so far. */
  counts(): Promise<Receiver[]>;
  close(): Promise<void>;
}

const SUPPORTED = ['webhook', 'otel-collector', 'langfuse', 'datadog'];

/** What each type's receiver answers on success. */
export function receiverAnswer(type: string): { status: number; body: string } {
  if (type === 'langfuse') return { status: 207, body: '{"successes":[],"errors":[]}' };
  if (type === 'datadog') return { status: 202, body: '{}' };
  return { status: 200, body: '{}' };
}

/** Starts the receivers' process on `cpu` (the load CPU), at nice 19. */
export async function startBroadcastReceivers(
  root: string,
  types: string[],
  cpu: number,
): Promise<BroadcastReceivers> {
  for (const type of types) {
    if (!SUPPORTED.includes(type))
      throw new Error(`--broadcast: ${type} is not one of ${SUPPORTED.join(', ')}`);
  }
  if (types.length === 0) return { list: [], counts: async () => [], close: async () => undefined };
  const port = await freePort();
  const control = `http://127.0.0.1:${port}`;
  const child = startPinned(
    cpu,
    [
      '--import',
      'tsx',
      join(root, 'bench/broadcast-receivers-process.ts'),
      '--types',
      types.join(','),
      '--control-port',
      String(port),
    ],
    {},
    19,
  );
  await waitUntilReady(`${control}/health`, child, 'broadcast receivers');
  let exited: string | null = null;
  child.once('exit', (code, signal) => {
    exited = `the broadcast receivers' process exited (${code ?? signal})`;
  });
  const counts = async () => {
    if (exited !== null) throw new Error(exited);
    return (await (await fetch(`${control}/receivers`)).json()) as Receiver[];
  };
  return {
    list: await counts(),
    counts,
    close: () => stop(child),
  };
}

function configFor(receiver: Receiver): Record<string, unknown> {
  switch (receiver.type) {
    case 'webhook':
      return { url: `${receiver.url}/hook` };
    case 'otel-collector':
      return { endpoint: `${receiver.url}/v1/traces` };
    case 'langfuse':
      return { baseUrl: receiver.url, publicKey: 'pk-lf-bench', secretKey: 'sk-lf-bench-secret' };
    default:
      return { url: receiver.url, apiKey: 'bench-datadog-api-key', mlApp: 'bench' };
  }
}

/** Turns broadcast on for the default workspace and creates one destination per receiver; returns a problem or null. */
export async function enableBroadcast(
  origin: string,
  managementKey: string,
  types: string[],
  receivers: BroadcastReceivers,
): Promise<string | null> {
  const headers = { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' };
  const patched = await fetch(`${origin}/api/v1/workspaces/default`, {
    method: 'PATCH',
    headers,
    body: JSON.stringify({ is_observability_broadcast_enabled: true }),
  });
  if (!patched.ok) return `failed: workspace PATCH ${patched.status} ${await patched.text()}`;
  for (const receiver of receivers.list.filter((entry) => types.includes(entry.type))) {
    const created = await fetch(`${origin}/api/v1/observability/destinations`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        type: receiver.type,
        name: `bench ${receiver.type}`,
        config: configFor(receiver),
      }),
    });
    if (!created.ok) return `failed: ${receiver.type} destination ${created.status} ${await created.text()}`;
  }
  return null;
}

async function metric(origin: string, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    const match = pattern.exec(line);
    if (match?.[1]) total += Number(match[1]);
  }
  return total;
}

/** Waits until the gateway's outbox holds no pending event (at most `limitMs`); returns how many still are. */
export async function waitForDrain(origin: string, limitMs = 60_000, pollMs = 500): Promise<number> {
  const started = Date.now();
  let pending = await metric(origin, /^switchyard_broadcast_outbox_events\{status="pending"\} (\d+)/);
  while (pending > 0 && Date.now() - started < limitMs) {
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    pending = await metric(origin, /^switchyard_broadcast_outbox_events\{status="pending"\} (\d+)/);
  }
  return pending;
}

/** Waits for the outbox to drain (at most 60 s), then prints what each destination received. */
export async function reportBroadcast(origin: string, receivers: BroadcastReceivers): Promise<void> {
  const started = Date.now();
  const pending = await waitForDrain(origin);
  const dead = await metric(origin, /^switchyard_broadcast_outbox_events\{status="dead"\} (\d+)/);
  console.log('');
  console.log(
    `Broadcast: outbox drained ${((Date.now() - started) / 1000).toFixed(1)} s after the last scenario; ` +
      `${pending} pending, ${dead} dead letters`,
  );
  console.log('');
  console.log('| destination | events delivered | requests | MB received |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const receiver of await receivers.counts()) {
    const delivered = await metric(
      origin,
      new RegExp(
        `^switchyard_broadcast_events_total\\{type="${receiver.type}",outcome="delivered"\\} (\\d+)`,
      ),
    );
    console.log(
      `| ${receiver.type} | ${delivered} | ${receiver.requests} | ${(receiver.bytes / 1e6).toFixed(1)} |`,
    );
  }
}
