// Local receivers for the inference benchmark's --broadcast runs: each answers as its destination
// type's ingestion API does on success and counts what it receives. They run in the load generator's
// process (the load CPU), so their work is not charged to the gateway's CPU.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Receiver {
  type: string;
  url: string;
  requests: number;
  bytes: number;
}

export interface BroadcastReceivers {
  list: Receiver[];
  close(): Promise<void>;
}

const SUPPORTED = ['webhook', 'otel-collector', 'langfuse', 'datadog'];

/** What each type's receiver answers on success. */
function answer(type: string): { status: number; body: string } {
  if (type === 'langfuse') return { status: 207, body: '{"successes":[],"errors":[]}' };
  if (type === 'datadog') return { status: 202, body: '{}' };
  return { status: 200, body: '{}' };
}

export async function startBroadcastReceivers(types: string[]): Promise<BroadcastReceivers> {
  for (const type of types) {
    if (!SUPPORTED.includes(type))
      throw new Error(`--broadcast: ${type} is not one of ${SUPPORTED.join(', ')}`);
  }
  const servers: Server[] = [];
  const list: Receiver[] = [];
  for (const type of types) {
    const receiver: Receiver = { type, url: '', requests: 0, bytes: 0 };
    const reply = answer(type);
    const server = createServer((request, response) => {
      request.on('data', (chunk: Buffer) => {
        receiver.bytes += chunk.length;
      });
      request.on('end', () => {
        if (request.headers['x-test-connection'] !== 'true') receiver.requests += 1;
        response.writeHead(reply.status, { 'content-type': 'application/json' });
        response.end(reply.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    servers.push(server);
    list.push(receiver);
  }
  return {
    list,
    close: async () => {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
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
  for (const receiver of receivers.list) {
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
