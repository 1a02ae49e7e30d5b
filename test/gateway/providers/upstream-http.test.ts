import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createUpstreamHttp,
  openUpstream,
  requestUpstreamJson,
  type UpstreamPost,
} from '../../../src/gateway/providers/shared/upstream-http.js';
import { UpstreamError } from '../../../src/spec/upstream-error.js';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';

const timeouts = { headersMs: 5_000, firstTokenMs: 5_000, idleMs: 5_000 };

describe('the upstream HTTP client against a fake upstream', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  // One connection per origin: a call that did not give its connection back blocks the next one.
  const http = createUpstreamHttp({ connectionsPerOrigin: 1 });
  const post = (overrides: Partial<UpstreamPost> = {}): UpstreamPost => ({
    url: `${upstream.url}/v1/chat/completions?alt=sse`,
    headers: { authorization: 'Bearer test' },
    body: '{"model":"m"}',
    signal: new AbortController().signal,
    headersTimeoutMs: 5_000,
    idleTimeoutMs: 5_000,
    ...overrides,
  });

  before(async () => {
    upstream = await startFakeUpstream();
  });
  after(async () => {
    await http.close();
    await upstream.close();
  });

  it('sends the path with its query, the headers and the body', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    const reply = await http.postForText(post());
    assert.deepEqual({ status: reply.status, text: reply.text }, { status: 200, text: '{"ok":true}' });
    const seen = upstream.requests.at(-1);
    assert.equal(seen?.url, '/v1/chat/completions?alt=sse');
    assert.equal(seen?.headers.authorization, 'Bearer test');
    assert.equal(seen?.headers['content-type'], 'application/json');
    assert.deepEqual(seen?.body, { model: 'm' });
  });

  it('reads a stream read slower than it arrives whole and in order (the socket pauses and resumes)', async () => {
    const count = 20_000; // ~300 KB: many socket reads, each past the queue's bound
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      let text = '';
      for (let index = 0; index < count; index += 1) text += `data: {"n":${index}}\n\n`;
      response.end(text);
    });
    // A socket left paused would stall the stream: the signal fails it instead of hanging the test.
    const events = await openUpstream(http, { timeouts }, post({ signal: AbortSignal.timeout(5_000) }));
    const seen: number[] = [];
    for await (const event of events) {
      seen.push((JSON.parse(event.data) as { n: number }).n);
      if (seen.length % 1_000 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    assert.equal(seen.length, count);
    assert.ok(
      seen.every((n, index) => n === index),
      'events in order',
    );
  });

  it('joins an event and a UTF-8 character split across chunks', async () => {
    upstream.handle(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const bytes = Buffer.from('data: {"text":"héllo ✓"}\n\n', 'utf8');
      const cut = bytes.indexOf(0xc3) + 1; // inside the two bytes of "é"
      response.write(bytes.subarray(0, cut));
      await new Promise((resolve) => setTimeout(resolve, 20));
      response.end(bytes.subarray(cut));
    });
    const events = await openUpstream(http, { timeouts }, post());
    const data: string[] = [];
    for await (const event of events) data.push(event.data);
    assert.deepEqual(data, ['{"text":"héllo ✓"}']);
  });

  it('gives the connection back when the reader stops early', async () => {
    upstream.handle((request, response) => {
      if (request.url.startsWith('/endless')) {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        const timer = setInterval(() => response.write('data: {}\n\n'), 5);
        response.on('close', () => clearInterval(timer));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"after":true}');
    });
    const events = await openUpstream(http, { timeouts }, post({ url: `${upstream.url}/endless` }));
    let read = 0;
    for await (const _event of events) {
      read += 1;
      if (read === 3) break;
    }
    // With one connection per origin, this waits until it times out unless the stream's connection
    // was freed.
    const json = await requestUpstreamJson(http, { timeouts }, post({ signal: AbortSignal.timeout(2_000) }));
    assert.deepEqual(json, { after: true });
  });

  it('answers every read after the end or a failure with done, once the events are read', async () => {
    upstream.handle((request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      if (request.url.startsWith('/cut')) {
        response.write('data: {"n":1}\n\n');
        setTimeout(() => response.socket?.destroy(), 20);
        return;
      }
      response.end('data: {"n":1}\n\ndata: {"n":2}\n\n');
    });
    const ended = await openUpstream(http, { timeouts }, post());
    assert.deepEqual(await ended.next(), {
      done: false,
      value: { event: undefined, id: undefined, data: '{"n":1}' },
    });
    assert.equal((await ended.next()).value?.data, '{"n":2}');
    assert.deepEqual(await ended.next(), { done: true, value: undefined });
    assert.deepEqual(await ended.next(), { done: true, value: undefined }, 'the end is answered again');

    const cut = await openUpstream(http, { timeouts }, post({ url: `${upstream.url}/cut` }));
    assert.equal((await cut.next()).value?.data, '{"n":1}');
    const failed = await cut.next().catch((caught: unknown) => caught);
    assert.ok(failed instanceof UpstreamError && failed.retryable, String(failed));
    assert.deepEqual(await cut.next(), { done: true, value: undefined }, 'a failure is thrown once');
  });

  it('ends a read still waiting when the reader stops, and gives the connection back', {
    timeout: 5_000,
  }, async () => {
    upstream.handle((request, response) => {
      if (request.url.startsWith('/quiet')) {
        // One event, then nothing until the client goes away.
        response.writeHead(200, { 'content-type': 'text/event-stream' }).write('data: {}\n\n');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"after":true}');
    });
    const events = await openUpstream(http, { timeouts }, post({ url: `${upstream.url}/quiet` }));
    assert.equal((await events.next()).value?.data, '{}');
    const waiting = events.next();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await events.return?.();
    assert.deepEqual(await waiting, { done: true, value: undefined });
    assert.deepEqual(await events.next(), { done: true, value: undefined });
    const json = await requestUpstreamJson(http, { timeouts }, post({ signal: AbortSignal.timeout(2_000) }));
    assert.deepEqual(json, { after: true });
  });

  it('gives the events queued before a failure first, and nothing after the reader stopped', async () => {
    upstream.handle((request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n":3}\n\n');
      if (request.url.startsWith('/cut')) setTimeout(() => response.socket?.destroy(), 10);
      else response.on('close', () => response.end());
    });
    const settle = () => new Promise((resolve) => setTimeout(resolve, 60));

    // Read only once all three events and the cut have arrived.
    const cut = await openUpstream(http, { timeouts }, post({ url: `${upstream.url}/cut` }));
    await settle();
    const data: string[] = [];
    const failed = await (async () => {
      for await (const event of cut) data.push(event.data);
    })().catch((caught: unknown) => caught);
    assert.deepEqual(data, ['{"n":1}', '{"n":2}', '{"n":3}']);
    assert.ok(failed instanceof UpstreamError && failed.retryable, String(failed));

    const stopped = await openUpstream(http, { timeouts }, post());
    await settle();
    assert.equal((await stopped.next()).value?.data, '{"n":1}');
    await stopped.return?.();
    assert.deepEqual(await stopped.next(), { done: true, value: undefined }, 'queued events are let go');
  });

  it('refuses a second read while one waits, and still settles the first', { timeout: 5_000 }, async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
      setTimeout(() => response.end('data: {"late":true}\n\n'), 30);
    });
    const events = await openUpstream(http, { timeouts }, post());
    const first = events.next();
    const second = await events.next().catch((caught: unknown) => caught);
    assert.ok(second instanceof Error && /already waiting/.test(second.message), String(second));
    assert.equal((await first).value?.data, '{"late":true}');
    assert.deepEqual(await events.next(), { done: true, value: undefined });
  });

  it('fails a call still waiting for a connection as soon as it is aborted', async () => {
    upstream.handle((request, response) => {
      if (request.url.startsWith('/hang')) return; // never answers
      response.writeHead(200).end('{}');
    });
    const hanging = new AbortController();
    const first = http.postForText(post({ url: `${upstream.url}/hang`, signal: hanging.signal }));
    const waiting = new AbortController();
    const second = http.postForText(post({ signal: waiting.signal }));
    const startedAt = performance.now();
    setTimeout(() => waiting.abort(), 20);
    const failed = await second.catch((caught: unknown) => caught);
    assert.ok(failed instanceof UpstreamError && failed.kind === 'aborted', String(failed));
    assert.ok(performance.now() - startedAt < 1_000, 'failed without waiting for the connection');
    hanging.abort();
    assert.equal(((await first.catch((caught: unknown) => caught)) as UpstreamError).kind, 'aborted');
    // The pool still works afterwards.
    assert.equal((await http.postForText(post())).status, 200);
  });

  it('turns a non-2xx answer to a streamed call into an UpstreamError with its message and retry hint', async () => {
    upstream.handle((_request, response) => {
      response
        .writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' })
        .end('{"error":{"message":"slow down"}}');
    });
    const failed = await openUpstream(http, { timeouts }, post()).catch((caught: unknown) => caught);
    assert.ok(failed instanceof UpstreamError, String(failed));
    assert.deepEqual(
      {
        message: failed.message,
        status: failed.status,
        retry: failed.retryAfterSeconds,
        retryable: failed.retryable,
      },
      { message: 'slow down', status: 429, retry: 7, retryable: true },
    );
  });

  it('reads past an informational 103 to the real answer, streamed or not, success or error', async () => {
    upstream.handle((request, response) => {
      response.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      if (request.url.startsWith('/refused')) {
        response.writeHead(429, { 'retry-after': '3' }).end('{"error":{"message":"later"}}');
      } else if (request.url.startsWith('/stream')) {
        response.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: {"n":1}\n\n');
      } else {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":1}');
      }
    });
    const signal = () => AbortSignal.timeout(2_000);
    assert.deepEqual(await requestUpstreamJson(http, { timeouts }, post({ signal: signal() })), { ok: 1 });
    const events = await openUpstream(
      http,
      { timeouts },
      post({ url: `${upstream.url}/stream`, signal: signal() }),
    );
    const data: string[] = [];
    for await (const event of events) data.push(event.data);
    assert.deepEqual(data, ['{"n":1}']);
    for (const read of [
      () => openUpstream(http, { timeouts }, post({ url: `${upstream.url}/refused`, signal: signal() })),
      () =>
        requestUpstreamJson(http, { timeouts }, post({ url: `${upstream.url}/refused`, signal: signal() })),
    ]) {
      const failed = await read().catch((caught: unknown) => caught);
      assert.ok(failed instanceof UpstreamError, String(failed));
      assert.deepEqual([failed.status, failed.message, failed.retryAfterSeconds], [429, 'later', 3]);
    }
  });

  it('keeps the status and Retry-After of an error answer whose body is cut', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(503, {
        'content-type': 'application/json',
        'content-length': '400',
        'retry-after': '9',
      });
      response.write('{"error":{"mess');
      setTimeout(() => response.socket?.destroy(), 20);
    });
    for (const read of [
      () => openUpstream(http, { timeouts }, post()),
      () => requestUpstreamJson(http, { timeouts }, post()),
    ]) {
      const failed = await read().catch((caught: unknown) => caught);
      assert.ok(failed instanceof UpstreamError && failed.kind === 'http', String(failed));
      assert.deepEqual([failed.status, failed.retryAfterSeconds, failed.raw], [503, 9, '']);
    }
  });

  it('refuses a non-streamed reply over its cap and an SSE event over its cap', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      // 5 MB without an event boundary.
      const block = 'x'.repeat(1024 * 1024);
      response.write('data: ');
      for (let index = 0; index < 5; index += 1) response.write(block);
      response.end('\n\n');
    });
    const events = await openUpstream(http, { timeouts }, post());
    const failed = await (async () => {
      for await (const _event of events) {
        // nothing arrives before the failure
      }
    })().catch((caught: unknown) => caught);
    assert.ok(failed instanceof UpstreamError && failed.kind === 'invalid-response', String(failed));
    assert.match(failed.message, /larger than/);
    // The connection was given back.
    upstream.handle((_request, response) => {
      response.writeHead(200).end('{"fine":1}');
    });
    assert.deepEqual(
      await requestUpstreamJson(http, { timeouts }, post({ signal: AbortSignal.timeout(2_000) })),
      { fine: 1 },
    );
  });

  it("takes a call's own size bounds for a reply and an event, in place of the defaults", async () => {
    const big = 'x'.repeat(5 * 1024 * 1024);
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(`data: ${big}\n\n`);
    });
    // 5 MB in one event, over the default bound of 4 MiB, within the call's.
    const events = await openUpstream(http, { timeouts }, { ...post(), maxEventBytes: 8 * 1024 * 1024 });
    const data: string[] = [];
    for await (const event of events) data.push(event.data);
    assert.equal(data.length, 1);
    assert.equal(data[0]?.length, big.length);
    // A call's bound may be lower too: the reply and the event over it fail as over the default.
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(`{"text":"${'y'.repeat(2048)}"}`);
    });
    const reply = await requestUpstreamJson(http, { timeouts }, { ...post(), maxReplyBytes: 1024 }).catch(
      (caught: unknown) => caught,
    );
    assert.ok(reply instanceof UpstreamError && /exceeds 1024 bytes/.test(reply.message), String(reply));
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      // The bound holds what waits for its event's end: an event read whole in one chunk is not held.
      response.write(`data: ${'z'.repeat(2048)}`);
      setTimeout(() => response.end('\n\n'), 20);
    });
    const small = await openUpstream(http, { timeouts }, { ...post(), maxEventBytes: 1024 });
    const failed = await (async () => {
      for await (const _event of small) {
        // nothing arrives before the failure
      }
    })().catch((caught: unknown) => caught);
    assert.ok(
      failed instanceof UpstreamError && /larger than 1024 bytes/.test(failed.message),
      String(failed),
    );
    assert.ok(small.unfinishedEventLength() > 1024, 'the event over the bound was under way');
  });

  it('says how much of the event under way a stream cut mid-event had received, for a call with its own event bound', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: {"n":1}\r\n\r\n');
      setTimeout(() => response.write(`data: {"image":"${'A'.repeat(100_000)}`), 10);
      setTimeout(() => response.socket?.destroy(), 40);
    });
    // Only a call that sets its own event bound (Gemini's that may carry images) counts it: the
    // count costs a look at every chunk's end, which no other stream needs.
    const events = await openUpstream(http, { timeouts }, post({ maxEventBytes: 64 * 1024 * 1024 }));
    const data: string[] = [];
    const failed = await (async () => {
      for await (const event of events) data.push(event.data);
    })().catch((caught: unknown) => caught);
    assert.deepEqual(data, ['{"n":1}']);
    assert.ok(failed instanceof UpstreamError, String(failed));
    assert.equal(events.unfinishedEventLength(), 'data: {"image":"'.length + 100_000);
    // A stream that ends at an event's end has none under way.
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end('data: {"n":1}\n\ndata: {"n":2}\n\n');
    });
    const whole = await openUpstream(http, { timeouts }, post({ maxEventBytes: 64 * 1024 * 1024 }));
    for await (const _event of whole) {
      // read to the end
    }
    assert.equal(whole.unfinishedEventLength(), 0);
  });

  it('maps a reply cut mid-stream to a retryable connection failure', async () => {
    upstream.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: {"n":1}\n\ndata: {"n":');
      setTimeout(() => response.socket?.destroy(), 20);
    });
    const events = await openUpstream(http, { timeouts }, post());
    const data: string[] = [];
    const failed = await (async () => {
      for await (const event of events) data.push(event.data);
    })().catch((caught: unknown) => caught);
    assert.deepEqual(data, ['{"n":1}'], 'the whole event before the cut arrives');
    assert.ok(failed instanceof UpstreamError && failed.retryable, String(failed));
  });

  it('maps an unreachable upstream and an unsupported URL to connection failures', async () => {
    const refused = await http
      .postForText(post({ url: 'http://127.0.0.1:1/v1' }))
      .catch((caught: unknown) => caught);
    assert.ok(refused instanceof UpstreamError && refused.kind === 'connection', String(refused));
    const unsupported = await http
      .postForText(post({ url: 'ftp://example.com/v1' }))
      .catch((caught: unknown) => caught);
    assert.ok(unsupported instanceof UpstreamError && unsupported.kind === 'connection', String(unsupported));
  });
});
