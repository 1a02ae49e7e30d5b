import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';
import { childEnvironment, freePort, startServe, waitForHealth } from '../../helpers/serve-process.js';
import { isolatedDatabase, newSecret, startTestApp } from '../../helpers/test-app.js';

/**
 * SIGTERM waits `shutdown_timeout_ms` for in-flight requests; past it the ones still open are cut.
 * A cut request is not lost: like a client going away, it aborts its upstream call, is billed for
 * what it produced, and its generation is recorded as cancelled before the process exits.
 */

const children = new Set<ChildProcess>();

const chunk = (delta: Record<string, unknown>) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-held',
    object: 'chat.completion.chunk',
    created: 1_780_000_000,
    model: 'held-model',
    choices: [{ index: 0, delta, finish_reason: null }],
  })}\n\n`;

describe('a shutdown whose timeout cuts open requests', () => {
  after(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  it('records each cut request as cancelled, with what it produced, then exits 0', async () => {
    const upstream = await startFakeUpstream();
    let upstreamCalls = 0;
    let upstreamClosed = 0;
    // The upstream starts answering a stream and then holds it; a plain request gets no answer at all.
    upstream.handle((request, response) => {
      upstreamCalls += 1;
      response.on('close', () => {
        upstreamClosed += 1;
      });
      if ((request.body as { stream?: boolean }).stream) {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(chunk({ role: 'assistant', content: 'Hello there, ' }));
        response.write(chunk({ content: 'general Kenobi' }));
      }
    });
    const database = isolatedDatabase();
    const port = await freePort();
    const configPath = join(tmpdir(), `switchyard-shutdown-${randomBytes(6).toString('hex')}.json`);
    writeFileSync(
      configPath,
      JSON.stringify({
        shutdown_timeout_ms: 300,
        catalog: {
          providers: [{ slug: 'held', name: 'Held', base_url: `${upstream.url}/v1` }],
          models: [
            {
              id: 'held/model',
              name: 'Held',
              provider: 'held',
              provider_model_id: 'held-model',
              context_length: 8192,
              pricing: { prompt: '0', completion: '0' },
            },
          ],
        },
        providers: { held: { api_key: 'held-secret' } },
      }),
    );
    const bootstrap = newSecret();
    const serve = startServe(
      childEnvironment({
        ...database.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        SWITCHYARD_CONFIG: configPath,
        SWITCHYARD_BOOTSTRAP_KEY: bootstrap,
        REDIS_PREFIX: `switchyard-test-${randomBytes(6).toString('hex')}:`,
      }),
      children,
    );
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitForHealth(url, serve.child, serve.output);
      const created = await fetch(`${url}/api/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bootstrap}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'cut' }),
      });
      assert.equal(created.status, 200);
      const { key, data } = (await created.json()) as { key: string; data: { hash: string } };
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const messages = [{ role: 'user', content: 'hold on' }];

      const streamed = await fetch(`${url}/api/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'held/model', messages, stream: true, user: 'streamed' }),
      });
      assert.equal(streamed.status, 200);
      const generationId = streamed.headers.get('x-generation-id');
      assert.ok(generationId);
      const reader = streamed.body?.getReader();
      assert.ok(reader);
      let text = '';
      const decoder = new TextDecoder();
      while (!text.includes('general Kenobi')) {
        const next: ReadableStreamReadResult<Uint8Array> = await reader.read();
        assert.equal(next.done, false, `the stream ended early:\n${text}`);
        text += decoder.decode(next.value, { stream: true });
      }
      const plain = fetch(`${url}/api/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'held/model', messages, user: 'plain' }),
      }).then(
        (response) => ({ status: response.status, error: null }),
        (error: Error) => ({ status: null, error }),
      );
      const deadline = Date.now() + 10_000;
      while (upstreamCalls < 2) {
        assert.ok(Date.now() < deadline, 'the second request never reached the upstream');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }

      serve.child.kill('SIGTERM');
      assert.equal(await serve.exited, 0, serve.output.text);
      assert.match(serve.output.text, /shutdown timed out; cutting the connections still open/);
      assert.match(serve.output.text, /"requests":2/);
      // Both clients saw their connection end, and both upstream calls were released.
      await assert.rejects(async () => {
        for (;;) if ((await reader.read()).done) return;
      });
      assert.equal((await plain).status, null);
      assert.equal(upstreamClosed, 2);

      const gateway = await startTestApp({ database });
      try {
        const rows = await gateway.services.storage.db
          .selectFrom('generations')
          .selectAll()
          .where('key_hash', '=', data.hash)
          .orderBy('user_id')
          .execute();
        assert.deepEqual(
          rows.map((row) => [
            row.user_id,
            row.status,
            Number(row.cancelled),
            Number(row.streamed),
            row.error_type,
          ]),
          [
            ['plain', 'cancelled', 1, 0, null],
            ['streamed', 'cancelled', 1, 1, null],
          ],
        );
        const streamedRow = rows[1];
        assert.equal(streamedRow?.id, generationId);
        // The output the client received is what the record counts (estimated: no usage came).
        assert.ok(Number(streamedRow?.tokens_completion) > 0);
        assert.equal(streamedRow?.model, 'held/model');
      } finally {
        await gateway.close();
      }
    } finally {
      serve.child.kill('SIGKILL');
      rmSync(configPath, { force: true });
      await upstream.close();
      await database.drop();
    }
  });
});
