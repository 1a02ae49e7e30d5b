import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Diagnostics } from 'recheck';

/** Analyses running at once per instance; more wait their turn (their time limit keeps running). */
const MAX_CONCURRENT = 2;
/** Past its own time limit, the analyser gets this long to answer before it is killed. */
const GRACE_MS = 250;

const OS_NAMES: Record<string, string> = { darwin: 'macos', linux: 'linux', win32: 'windows' };

/** recheck's native build for this platform (an optional dependency), or null. */
function nativeBinary(): string | null {
  const os = OS_NAMES[process.platform];
  if (!os || (process.arch !== 'x64' && process.arch !== 'arm64')) return null;
  try {
    const manifest = createRequire(import.meta.url).resolve(`recheck-${os}-${process.arch}/package.json`);
    return join(dirname(manifest), os === 'windows' ? 'recheck.exe' : 'recheck');
  } catch {
    return null;
  }
}

const gaveUp = (source: string, flags: string): Diagnostics => ({
  source,
  flags,
  status: 'unknown',
  error: { kind: 'timeout' },
});

/**
 * One analysis in a process of its own, killed at the deadline whatever it is doing. recheck's
 * shared agent keeps computing after it has answered "timeout" or "cancel" (a 20,000-branch
 * alternation held one core and a gigabyte for minutes), so a long-lived agent would let each save
 * leave work behind; a killed process cannot.
 */
function inOwnProcess(
  binary: string,
  source: string,
  flags: string,
  timeoutMs: number,
): Promise<Diagnostics> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['agent'], { stdio: ['pipe', 'pipe', 'ignore'], windowsHide: true });
    const timer = setTimeout(() => settle(() => resolve(gaveUp(source, flags))), timeoutMs + GRACE_MS);
    function settle(outcome: () => void): void {
      clearTimeout(timer);
      child.kill('SIGKILL');
      outcome();
    }
    child.on('error', (error) => settle(() => reject(error)));
    child.on('close', () => settle(() => reject(new Error('recheck exited without an answer'))));
    // Writing to a process that already died fails here, not as an uncaught exception.
    child.stdin.on('error', () => {});
    let pending = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      pending += chunk;
      for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 1);
        let message: { id?: number; result?: Diagnostics };
        try {
          message = JSON.parse(line);
        } catch {
          continue;
        }
        if (message.id === 0 && message.result) {
          const { result } = message;
          settle(() => resolve(result));
        }
      }
    });
    // The request (JSON-RPC over lines); stdin stays open: at end of input the agent cancels.
    const params = { source, flags, params: { timeout: timeoutMs } };
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0+push', id: 0, method: 'check', params })}\n`);
  });
}

/** Runs recheck analyses one process each, at most MAX_CONCURRENT at a time. */
export function createRecheckRunner(options: { binary?: string | null } = {}) {
  const binary = options.binary === undefined ? nativeBinary() : options.binary;
  let running = 0;
  const waiting: Array<() => void> = [];

  async function acquire(): Promise<void> {
    if (running < MAX_CONCURRENT) {
      running += 1;
      return;
    }
    // The releasing caller hands its slot over, so `running` does not change.
    await new Promise<void>((resolve) => waiting.push(resolve));
  }

  function release(): void {
    const next = waiting.shift();
    if (next) next();
    else running -= 1;
  }

  return {
    /** The analysis of `source`, or an `unknown` (timeout) verdict once `timeoutMs` has passed. */
    async check(source: string, flags: string, timeoutMs: number): Promise<Diagnostics> {
      const started = performance.now();
      await acquire();
      try {
        const left = Math.floor(timeoutMs - (performance.now() - started));
        if (left <= 0) return gaveUp(source, flags);
        // Without a native build (no package for this platform), recheck's own fallback: a Java
        // agent when `java` is installed, else its pure-JavaScript build in a worker thread.
        if (!binary) {
          // recheck's module takes ~33 MB of memory: loaded only when this fallback is needed.
          const { check } = await import('recheck');
          return await check(source, flags, { timeout: left, signal: AbortSignal.timeout(left + GRACE_MS) });
        }
        return await inOwnProcess(binary, source, flags, left);
      } finally {
        release();
      }
    },
  };
}

export type RecheckRunner = ReturnType<typeof createRecheckRunner>;
