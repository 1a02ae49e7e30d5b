import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { childEnvironment, freePort, startServe, waitForHealth } from '../../helpers/serve-process.js';
import { isolatedDatabase, newSecret } from '../../helpers/test-app.js';

/**
 * An operator's log collector sees the same lines whichever path served a request: two real `serve`
 * processes at `info`, one with the direct lane and one with `direct_lane: false`, get the same
 * requests, and their request lines must match once the clocks, ports and process ids are set aside.
 */

const children = new Set<ChildProcess>();

interface LogLine {
  [field: string]: unknown;
}

/** A line as it reads in both processes: what differs between two runs of one server is dropped. */
function comparable(line: LogLine): LogLine {
  const { time: _time, pid: _pid, hostname: _hostname, responseTime, ...rest } = line;
  const req = rest.req as Record<string, unknown> | undefined;
  if (req) {
    const { remotePort: _port, ...fields } = req;
    // The Host header names each process's own port.
    rest.req = { ...fields, host: String(fields.host).replace(/:\d+$/, ':<port>') };
  }
  // A duration must be there, as a number; its value is the clock's.
  if (responseTime !== undefined) rest.responseTime = typeof responseTime;
  return rest;
}

/** The request lines of one process, in the order written, for `/api/v1/` inference paths. */
function requestLines(output: string, ids: Set<string>): LogLine[] {
  const lines: LogLine[] = [];
  // Ids count every request, health checks included: each becomes its order among these requests.
  const ordinals = new Map<string, number>();
  for (const text of output.split('\n')) {
    if (!text.startsWith('{')) continue;
    const line = JSON.parse(text) as LogLine;
    if (typeof line.reqId !== 'string' || !ids.has(line.reqId)) continue;
    if (!ordinals.has(line.reqId)) ordinals.set(line.reqId, ordinals.size);
    lines.push({ ...comparable(line), reqId: ordinals.get(line.reqId) });
  }
  return lines;
}

async function serveWith(directLane: boolean) {
  const database = isolatedDatabase();
  const port = await freePort();
  const configPath = join(tmpdir(), `switchyard-direct-lane-logs-${randomBytes(6).toString('hex')}.json`);
  writeFileSync(configPath, JSON.stringify({ direct_lane: directLane }));
  const bootstrap = newSecret();
  const serve = startServe(
    childEnvironment({
      ...database.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SWITCHYARD_CONFIG: configPath,
      SWITCHYARD_BOOTSTRAP_KEY: bootstrap,
      REDIS_PREFIX: `switchyard-test-${randomBytes(6).toString('hex')}:`,
    }),
    children,
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, serve.child, serve.output);
  return {
    serve,
    url,
    bootstrap,
    async stop() {
      serve.child.kill('SIGTERM');
      const code = await serve.exited;
      rmSync(configPath, { force: true });
      await database.drop();
      return code;
    },
  };
}

describe('the direct lane’s log lines', () => {
  after(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  it('are the lines Fastify writes for the same requests', async () => {
    const servers = await Promise.all([serveWith(true), serveWith(false)]);
    const outputs: string[] = [];
    try {
      for (const server of servers) {
        const created = await fetch(`${server.url}/api/v1/keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${server.bootstrap}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'logged' }),
        });
        assert.equal(created.status, 200);
        const { key } = (await created.json()) as { key: string };
        const json = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
        const chat = { model: 'switchyard/echo', messages: [{ role: 'user', content: 'log me' }] };
        const requests: Array<{
          path: string;
          headers: Record<string, string>;
          body: string;
          status: number;
        }> = [
          { path: '/chat/completions', headers: json, body: JSON.stringify(chat), status: 200 },
          {
            path: '/chat/completions',
            headers: json,
            body: JSON.stringify({ ...chat, stream: true }),
            status: 200,
          },
          {
            path: '/responses',
            headers: json,
            body: JSON.stringify({ model: 'switchyard/echo', input: 'hi' }),
            status: 200,
          },
          { path: '/chat/completions', headers: json, body: JSON.stringify({ model: 7 }), status: 400 },
          { path: '/messages', headers: json, body: '{"model":', status: 400 },
          {
            path: '/chat/completions',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(chat),
            status: 401,
          },
        ];
        for (const request of requests) {
          const response = await fetch(`${server.url}/api/v1${request.path}`, {
            method: 'POST',
            headers: request.headers,
            body: request.body,
          });
          await response.text();
          assert.equal(response.status, request.status, request.path);
        }
        assert.equal(await server.stop(), 0, server.serve.output.text);
        outputs.push(server.serve.output.text);
      }
    } finally {
      for (const server of servers) if (server.serve.child.exitCode === null) await server.stop();
    }
    // The inference requests' ids: those of every line naming one of the four paths.
    const idsOf = (output: string) =>
      new Set(
        output
          .split('\n')
          .filter((text) => text.startsWith('{'))
          .map((text) => JSON.parse(text) as LogLine)
          .filter((line) =>
            /^\/api\/v1\/(chat\/completions|responses|messages)/.test(
              String((line.req as { url?: string } | undefined)?.url),
            ),
          )
          .map((line) => String(line.reqId)),
      );
    const [lane, routes] = outputs.map((output) => requestLines(output, idsOf(output)));
    // Two lines per request (incoming, completed): the comparison means something only if they are there.
    assert.equal(routes?.length, 12, outputs[1]);
    assert.deepEqual(lane, routes);
  });
});
