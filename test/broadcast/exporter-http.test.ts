import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createExporterHttp } from '../../src/broadcast/exporter-http.js';
import { deliveryFailure } from '../helpers/broadcast-fixtures.js';
import { startFakeUpstream } from '../helpers/fake-upstream.js';

describe('the exporters’ HTTP client against a local receiver', () => {
  let receiver: Awaited<ReturnType<typeof startFakeUpstream>>;
  const http = createExporterHttp({ allowPrivateNetworks: true });

  before(async () => {
    receiver = await startFakeUpstream();
  });
  after(async () => {
    await http.close();
    await receiver.close();
  });

  it('sends the method, path with query, headers and body, and answers status, headers and body', async () => {
    receiver.handle((_request, response) => {
      response.writeHead(201, { 'content-type': 'application/json', 'x-receiver-id': 'r-1' }).end('{"ok":1}');
    });
    const reply = await http.send(`${receiver.url}/v1/traces?tenant=a`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k-1' },
      body: '{"resourceSpans":[]}',
    });
    assert.equal(reply.status, 201);
    assert.equal(reply.body, '{"ok":1}');
    assert.equal(reply.headers['x-receiver-id'], 'r-1');
    const seen = receiver.requests.at(-1);
    assert.equal(seen?.method, 'PUT');
    assert.equal(seen?.url, '/v1/traces?tenant=a');
    assert.equal(seen?.headers['idempotency-key'], 'k-1');
    assert.deepEqual(seen?.body, { resourceSpans: [] });
  });

  it('answers a status the caller accepts, and refuses the others with what the receiver said', async () => {
    receiver.handle((_request, response) => {
      response.writeHead(409).end('already there');
    });
    const accepted = await http.send(`${receiver.url}/runs`, { acceptStatuses: [409] });
    assert.deepEqual([accepted.status, accepted.body], [409, 'already there']);
    const refused = await deliveryFailure(http.send(`${receiver.url}/runs`));
    assert.equal(refused.status, 409);
    assert.equal(refused.retryable, false);
    assert.match(refused.message, /^receiver answered 409: already there$/);
  });

  it('retries 5xx and 429 after their Retry-After, and not other 4xx', async () => {
    receiver.handle((_request, response) => {
      response.writeHead(503, { 'retry-after': '7' }).end();
    });
    const unavailable = await deliveryFailure(http.send(`${receiver.url}/hook`));
    assert.deepEqual(
      [unavailable.status, unavailable.retryable, unavailable.retryAfterMs, unavailable.message],
      [503, true, 7_000, 'receiver answered 503: (empty body)'],
    );
    receiver.handle((_request, response) => {
      response.writeHead(429).end('slow down');
    });
    const limited = await deliveryFailure(http.send(`${receiver.url}/hook`));
    assert.deepEqual([limited.status, limited.retryable, limited.retryAfterMs], [429, true, null]);
    receiver.handle((_request, response) => {
      response.writeHead(400).end('bad span');
    });
    const invalid = await deliveryFailure(http.send(`${receiver.url}/hook`));
    assert.deepEqual([invalid.status, invalid.retryable], [400, false]);
  });

  it('skips an informational 103 before the answer', async () => {
    receiver.handle((_request, response) => {
      response.writeEarlyHints({ link: '</style.css>; rel=preload' });
      response.writeHead(200).end('done');
    });
    const reply = await http.send(`${receiver.url}/hook`, { body: '{}' });
    assert.deepEqual([reply.status, reply.body], [200, 'done']);
  });

  it('keeps the first MiB of a huge answer, stops reading it, and stays usable', async () => {
    const mebibyte = 1 << 20;
    receiver.handle((_request, response) => {
      response.writeHead(500);
      // 4 MiB in 64 KiB writes: far more than the client keeps.
      const block = 'e'.repeat(64 * 1024);
      let left = 64;
      const write = () => {
        while (left > 0) {
          left -= 1;
          if (!response.write(block)) return void response.once('drain', write);
        }
        response.end();
      };
      response.on('error', () => undefined);
      write();
    });
    const failure = await deliveryFailure(http.send(`${receiver.url}/hook`));
    assert.equal(failure.status, 500);
    assert.equal(failure.retryable, true);
    // The message quotes the start of what was kept.
    assert.match(failure.message, /^receiver answered 500: e{300}…$/);
    receiver.handle((_request, response) => {
      response.writeHead(200).end('e'.repeat(mebibyte + 10));
    });
    const cut = await http.send(`${receiver.url}/hook`);
    assert.equal(cut.body.length, mebibyte);
    receiver.handle((_request, response) => {
      response.writeHead(200).end('ok');
    });
    assert.equal((await http.send(`${receiver.url}/hook`)).body, 'ok');
  });

  it('stops when the signal aborts, before a connection and while waiting for the answer', async () => {
    const before = receiver.requests.length;
    const early = await deliveryFailure(http.send(`${receiver.url}/hook`, { signal: AbortSignal.abort() }));
    assert.deepEqual([early.message, early.retryable], ['delivery aborted', true]);
    assert.equal(receiver.requests.length, before, 'an aborted send reaches no receiver');

    receiver.handle(() => undefined); // never answers
    const controller = new AbortController();
    const startedAt = performance.now();
    setTimeout(() => controller.abort(), 50);
    const late = await deliveryFailure(http.send(`${receiver.url}/hook`, { signal: controller.signal }));
    assert.deepEqual([late.message, late.retryable], ['delivery aborted', true]);
    assert.ok(performance.now() - startedAt < 2_000, 'the abort ends the send at once');
  });

  it('calls a receiver that is down, or that closes the connection, unreachable and retryable', async () => {
    const closing = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => closing.listen(0, '127.0.0.1', resolve));
    const { port } = closing.address() as { port: number };
    try {
      const closed = await deliveryFailure(http.send(`http://127.0.0.1:${port}/hook`, { body: '{}' }));
      assert.equal(closed.retryable, true);
      assert.match(closed.message, /^receiver unreachable: /);
    } finally {
      await new Promise<void>((resolve) => closing.close(() => resolve()));
    }
    // The port is free again: nothing listens there.
    const down = await deliveryFailure(http.send(`http://127.0.0.1:${port}/hook`, { body: '{}' }));
    assert.equal(down.retryable, true);
    assert.match(down.message, /^receiver unreachable: .*\(ECONNREFUSED\)$/);
  });

  it('does not retry a request that cannot be sent (a header value with a line break)', async () => {
    const refused = await deliveryFailure(
      http.send(`${receiver.url}/hook`, { headers: { 'x-custom': 'a\r\nInjected: 1' } }),
    );
    assert.equal(refused.retryable, false);
  });

  it('refuses a non-public address unless private networks are allowed', async () => {
    const guarded = createExporterHttp({ allowPrivateNetworks: false });
    try {
      const refused = await deliveryFailure(guarded.send(`${receiver.url}/hook`));
      assert.deepEqual(
        [refused.message, refused.retryable],
        ['destination URL points to a non-public address', false],
      );
    } finally {
      await guarded.close();
    }
  });
});
