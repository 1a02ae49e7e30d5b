// Load benchmark of the gateway's request path. Starts the gateway as a child process on an
// ephemeral SQLite database, then drives it from this process with autocannon over loopback.
// Usage: npm run bench [-- --duration 10 --connections 50]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { freePort } from './bench-processes.js';

const { values } = parseArgs({
  options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '50' } },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const root = fileURLToPath(new URL('..', import.meta.url));

async function waitForHealth(url: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('gateway did not start');
}

const directory = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
const port = await freePort();
const managementKey = `sk-sy-v1-${randomBytes(32).toString('hex')}`;
const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src/main.ts'), 'serve'], {
  env: {
    PATH: process.env.PATH,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite:${join(directory, 'bench.db')}`,
    SWITCHYARD_BOOTSTRAP_KEY: managementKey,
    LOG_LEVEL: 'warn',
    SWITCHYARD_CONFIG: join(root, 'bench/bench-config.yaml'),
  },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const url = `http://127.0.0.1:${port}`;

try {
  await waitForHealth(url);
  const created = await fetch(`${url}/api/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const { key } = (await created.json()) as { key: string };

  const fiveFilters =
    '/api/v1/models?supported_parameters=tools&input_modalities=image&max_price=5&context=100000&model_authors=openai,anthropic,google&sort=pricing-low-to-high';
  let distinct = 0;
  const scenarios: Array<{ name: string; path: string; headers: Record<string, string>; vary?: boolean }> = [
    { name: 'GET /health (no auth)', path: '/health', headers: {} },
    {
      name: 'GET /api/v1/key (bearer auth + rate limit, from memory)',
      path: '/api/v1/key',
      headers: { authorization: `Bearer ${key}` },
    },
    {
      name: 'GET /api/v1/keys (management, database read)',
      path: '/api/v1/keys',
      headers: { authorization: `Bearer ${managementKey}` },
    },
    { name: 'GET /api/v1/models (unfiltered, identity, ~650 KB)', path: '/api/v1/models', headers: {} },
    {
      name: 'GET /api/v1/models (unfiltered, brotli)',
      path: '/api/v1/models',
      headers: { 'accept-encoding': 'br, gzip' },
    },
    {
      name: 'GET /api/v1/models (unfiltered, gzip)',
      path: '/api/v1/models',
      headers: { 'accept-encoding': 'gzip' },
    },
    { name: 'GET /api/v1/models five filters + sort (prepared)', path: fiveFilters, headers: {} },
    {
      name: 'GET /api/v1/models five filters + sort (uncached: distinct min_price each time)',
      path: fiveFilters,
      headers: {},
      vary: true,
    },
    {
      name: 'GET /api/v1/models?use_rss=true (RSS feed, identity)',
      path: '/api/v1/models?use_rss=true',
      headers: {},
    },
    { name: 'GET /api/v1/models/count', path: '/api/v1/models/count', headers: {} },
  ];
  const only = process.env.BENCH_ONLY;
  console.log(
    `switchyard bench: ${duration}s per scenario, ${connections} connections, node ${process.version}`,
  );
  console.log('scenario | requests/s | p50 ms | p99 ms | MB/s | non-2xx');
  for (const scenario of scenarios) {
    if (only && !scenario.name.includes(only)) continue;
    const result = await autocannon({
      url: `${url}${scenario.path}`,
      headers: scenario.headers,
      connections,
      duration,
      ...(scenario.vary
        ? {
            requests: [
              {
                // A fresh, tiny min_price per request defeats the prepared-body cache while selecting the same
                // models: this measures filtering, sorting and joining the body.
                setupRequest: (request: autocannon.Request) => ({
                  ...request,
                  path: `${scenario.path}&min_price=${((distinct++ % 100000) + 1) / 1e9}`,
                }),
              } as autocannon.Request,
            ],
          }
        : {}),
    });
    console.log(
      `${scenario.name} | ${Math.round(result.requests.average)} | ${result.latency.p50} | ${result.latency.p99} | ${(result.throughput.average / 1e6).toFixed(1)} | ${result.non2xx}`,
    );
  }
} finally {
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  rmSync(directory, { recursive: true, force: true });
}
