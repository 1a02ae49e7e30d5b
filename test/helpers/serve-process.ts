import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/**
 * The real `serve` process, for tests that need what only a process shows: its log lines on stdout
 * and stderr, its exit code, a kill mid-work. In-process test apps log nowhere (`silent`).
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
export const SERVE_TIMEOUT_MS = 20_000;

export interface ServeProcess {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output: { text: string };
  /** Settles with the exit code; rejects if the process outlives twice SERVE_TIMEOUT_MS. */
  exited: Promise<number | null>;
}

/** The test runner's environment without the settings a test means to choose itself. */
export function childEnvironment(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of [
    'PORT',
    'HOST',
    'SWITCHYARD_CONFIG',
    'SWITCHYARD_BOOTSTRAP_KEY',
    'SWITCHYARD_MASTER_KEY',
  ])
    delete env[name];
  return { ...env, ...extra };
}

/** Starts `switchyard serve` from the sources, its output collected. */
export function startServe(env: NodeJS.ProcessEnv, children?: Set<ChildProcess>): ServeProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children?.add(child);
  const output = { text: '' };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output.text += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output.text += chunk;
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not exit within ${SERVE_TIMEOUT_MS} ms\n${output.text}`));
    }, SERVE_TIMEOUT_MS * 2);
    child.on('close', (code) => {
      clearTimeout(timer);
      children?.delete(child);
      resolve(code);
    });
  });
  return { child, output, exited };
}

/**
 * A port nothing listens on right now, for a child process to bind. Drawn below the kernel's
 * ephemeral range (/proc/sys/net/ipv4/ip_local_port_range, 32768–60999 by default) where there is
 * room: a port the kernel hands out for `listen(0)` could be taken by another test's server (run
 * in parallel) between this probe and the child's bind, and that server would then answer the
 * child's requests. Falls back to an ephemeral port where the range leaves no room below it.
 */
export async function freePort(): Promise<number> {
  const lowest = ephemeralRangeStart();
  if (lowest > LOWEST_DRAWN_PORT + 1_000) {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const port = LOWEST_DRAWN_PORT + Math.floor(Math.random() * (lowest - LOWEST_DRAWN_PORT));
      if ((await probe(port)) !== null) return port;
    }
  }
  const port = await probe(0);
  if (port === null) throw new Error('no free port');
  return port;
}

/** Where `freePort` draws from when it can: above the well-known and registered low ports. */
const LOWEST_DRAWN_PORT = 20_000;

function ephemeralRangeStart(): number {
  try {
    const lowest = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    return Number.isSafeInteger(lowest) ? lowest : 0;
  } catch {
    return 0;
  }
}

/** Listens on `port` (0: any) on 127.0.0.1 and closes again; the port, or null when it is taken. */
async function probe(port: number): Promise<number | null> {
  const server = createServer();
  server.listen(port, '127.0.0.1');
  try {
    // `once` rejects when the server emits 'error' instead (EADDRINUSE).
    await once(server, 'listening');
  } catch {
    return null;
  }
  const address = server.address();
  server.close();
  await once(server, 'close');
  return address && typeof address !== 'string' ? address.port : null;
}

/**
 * Resolves once `GET /health` answers 200; throws (with the process's output when it is collected)
 * if the process exits first or `timeoutMs` passes.
 */
export async function waitForHealth(
  url: string,
  child: ChildProcess,
  output: { text: string } = { text: '' },
  timeoutMs = SERVE_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`serve exited early with ${child.exitCode ?? child.signalCode}:\n${output.text}`);
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
      await response.text();
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url}/health did not answer 200 in time:\n${output.text}`);
}
