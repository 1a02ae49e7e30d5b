import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { childEnvironment, freePort, startServe, waitForHealth } from '../helpers/serve-process.js';
import { backend, isolatedDatabase, newSecret } from '../helpers/test-app.js';
import { providerSecret } from './byok-helpers.js';

/**
 * The real server process at the most verbose log level: every line it writes to stdout and stderr
 * is searched for the provider secrets sent to it. In-process test apps log nowhere (`silent`), so
 * only a child process shows what an operator's log collector would receive.
 */

const children = new Set<ChildProcess>();
const start = (env: NodeJS.ProcessEnv) => startServe(env, children);

describe('provider secrets never reach a log line or a response body', () => {
  after(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  it('a server logging at trace level writes none of them', async () => {
    const database = isolatedDatabase();
    try {
      const port = await freePort();
      const bootstrap = newSecret();
      const url = `http://127.0.0.1:${port}`;
      const server = start(
        childEnvironment({
          ...database.env,
          PORT: String(port),
          HOST: '127.0.0.1',
          LOG_LEVEL: 'trace',
          SWITCHYARD_BOOTSTRAP_KEY: bootstrap,
          REDIS_PREFIX: `switchyard-test-${randomBytes(6).toString('hex')}:`,
        }),
      );
      await waitForHealth(url, server.child, server.output);

      const secrets: string[] = [];
      const bodies: string[] = [];
      const call = async (method: string, path: string, body?: unknown) => {
        const response = await fetch(`${url}/api/v1${path}`, {
          method,
          headers: {
            authorization: `Bearer ${bootstrap}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        bodies.push(text);
        return { status: response.status, body: JSON.parse(text) };
      };

      const first = providerSecret();
      const second = providerSecret();
      secrets.push(first, second);
      const created = await call('POST', '/byok', { provider: 'openai', key: first, name: 'logged' });
      assert.equal(created.status, 200);
      const id = created.body.data.id;
      assert.equal((await call('GET', `/byok/${id}`)).status, 200);
      assert.equal((await call('GET', '/byok')).status, 200);
      assert.equal((await call('PATCH', `/byok/${id}`, { key: second })).status, 200);
      // Refusals that carry a secret in the body they refuse.
      const refusedSecrets = [providerSecret(), providerSecret(), providerSecret()];
      secrets.push(...refusedSecrets);
      assert.equal(
        (await call('POST', '/byok', { provider: 'openai', key: `${refusedSecrets[0]}\n` })).status,
        400,
      );
      assert.equal((await call('POST', '/byok', { provider: 'nope', key: refusedSecrets[1] })).status, 400);
      assert.equal(
        (await call('POST', '/byok', { provider: 'openai', key: `${refusedSecrets[2]}${'x'.repeat(4096)}` }))
          .status,
        400,
      );
      assert.equal((await call('PATCH', `/byok/${id}`, { key: ` ${first}` })).status, 400);
      assert.equal((await call('DELETE', `/byok/${id}`)).status, 200);

      server.child.kill('SIGTERM');
      assert.equal(await server.exited, 0, server.output.text);

      const lines = server.output.text.split('\n').filter((line) => line.trim() !== '');
      // The scan means something only if the requests were logged.
      assert.ok(
        lines.some((line) => line.includes('/api/v1/byok')),
        `expected request log lines:\n${server.output.text}`,
      );
      for (const secret of secrets) {
        for (const line of lines)
          assert.equal(line.includes(secret), false, `a log line holds a secret: ${line}`);
        for (const body of bodies)
          assert.equal(body.includes(secret), false, `a response holds a secret: ${body}`);
      }

      if (!backend.isPostgres) {
        // The embedded default generated its master key beside the database, readable by its owner only.
        const databasePath = database.settings.database_url.slice('sqlite:'.length);
        const keyFile = statSync(join(dirname(databasePath), 'master.key'));
        if (process.platform !== 'win32') assert.equal(keyFile.mode & 0o777, 0o600);
      }
    } finally {
      await database.drop();
    }
  });

  it('a server on PostgreSQL without SWITCHYARD_MASTER_KEY refuses to start', async () => {
    // Refused before any connection is made, so no PostgreSQL server needs to listen there.
    const server = start(
      childEnvironment({
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
        PORT: '0',
        LOG_LEVEL: 'silent',
        REDIS_URL: '',
      }),
    );
    assert.equal(await server.exited, 1, server.output.text);
    assert.match(
      server.output.text,
      /switchyard: SWITCHYARD_MASTER_KEY \(master_key\) is required with PostgreSQL/,
    );
  });
});
