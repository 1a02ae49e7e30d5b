import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  BAIDU,
  chatCompletion,
  createKey,
  DEEPSEEK,
  generationId,
  generationRecord,
  NOVITA,
  offsetClock,
} from './harness.js';

/**
 * Sticky sessions (`session_id` in the body, else `x-session-id`) and the live endpoint figures
 * the calls leave behind. Baidu is the cheaper endpoint, so `sort: price` always picks it first
 * unless a session says otherwise.
 */
describe('session_id keeps a session on its endpoint', () => {
  const clock = offsetClock();
  let fakeA: Awaited<ReturnType<typeof startFakeUpstream>>;
  let fakeB: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  const answerAs = (text: string) => (_request: unknown, response: import('node:http').ServerResponse) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion(text));
  };

  before(async () => {
    [fakeA, fakeB] = await Promise.all([startFakeUpstream(), startFakeUpstream()]);
    fakeA.handle(answerAs('baidu'));
    fakeB.handle(answerAs('novita'));
    gateway = await startTestApp({
      clock,
      config: {
        credits: { initial: 100 },
        providers: {
          baidu: { api_key: 'k', base_url: `${fakeA.url}/v1` },
          novita: { api_key: 'k', base_url: `${fakeB.url}/v1` },
        },
      },
    });
    key = (await createKey(gateway)).key;
  });
  after(async () => {
    await gateway.close();
    await Promise.all([fakeA.close(), fakeB.close()]);
  });

  const chat = async (
    options: {
      session?: string;
      header?: string;
      provider?: Record<string, unknown>;
      requestKey?: string;
    } = {},
  ) => {
    const response = await gateway.request('POST', '/api/v1/chat/completions', {
      key: options.requestKey ?? key,
      headers: options.header ? { 'x-session-id': options.header } : {},
      body: {
        model: DEEPSEEK,
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 50,
        provider: options.provider ?? { sort: 'price' },
        ...(options.session ? { session_id: options.session } : {}),
      },
    });
    assert.equal(response.status, 200, response.text);
    return response;
  };
  const servedBy = async (options: Parameters<typeof chat>[0]) =>
    (await chat(options)).body.choices[0].message.content as string;

  it('sends a session back to the endpoint that served it, over the price order', async () => {
    assert.equal(await servedBy({}), 'baidu', 'by price, Baidu goes first');
    // The first request of session s1 lands on Novita (by `order`)…
    assert.equal(await servedBy({ session: 's1', provider: { order: ['novita'] } }), 'novita');
    // …and the next ones stay there although the price order puts Baidu first.
    assert.equal(await servedBy({ session: 's1' }), 'novita');
    assert.equal(await servedBy({ session: 's1', provider: { order: ['baidu'] } }), 'novita');
    // Another session, and requests without one, follow the price order.
    assert.equal(await servedBy({ session: 's2' }), 'baidu');
    assert.equal(await servedBy({}), 'baidu');
  });

  it('reads x-session-id when the body has none; the body wins when both are given', async () => {
    const response = await chat({ header: 's1' });
    assert.equal(response.body.choices[0].message.content, 'novita');
    const record = await generationRecord(gateway, key, generationId(response));
    assert.equal(record.session_id, 's1');
    assert.equal(await servedBy({ session: 's2', header: 's1' }), 'baidu');
  });

  it('is scoped to the key: the same session id of another key is a different session', async () => {
    const other = (await createKey(gateway, { name: 'other' })).key;
    assert.equal(await servedBy({ session: 's1', requestKey: other }), 'baidu');
  });

  it('works on /responses too', async () => {
    const ask = (provider: Record<string, unknown>) =>
      gateway.request('POST', '/api/v1/responses', {
        key,
        body: { model: DEEPSEEK, input: 'hi', session_id: 'r1', provider },
      });
    assert.equal((await ask({ order: ['novita'] })).body.output_text, 'novita');
    assert.equal((await ask({ sort: 'price' })).body.output_text, 'novita');
  });

  it('leaves an endpoint that fails: the session moves to the one that answered', async () => {
    fakeB.handle((_request, response) => {
      response.writeHead(503).end();
    });
    try {
      assert.equal(await servedBy({ session: 's1' }), 'baidu');
      // Novita is back, but the session now belongs to Baidu.
      fakeB.handle(answerAs('novita'));
      clock.advance(10 * 60_000); // past Novita's cool-down
      assert.equal(await servedBy({ session: 's1', provider: { order: ['novita'] } }), 'baidu');
    } finally {
      fakeB.handle(answerAs('novita'));
    }
  });

  it('shows live uptime for the endpoints it called', async () => {
    clock.advance(10 * 60_000);
    await servedBy({ session: 'fresh-a', provider: { order: ['baidu'] } });
    await servedBy({ session: 'fresh-b', provider: { order: ['novita'] } });
    const response = await gateway.request('GET', `/api/v1/models/${DEEPSEEK}/endpoints`, { key });
    assert.equal(response.status, 200, response.text);
    const byProvider = new Map<string, any>(
      response.body.data.endpoints.map((endpoint: any) => [endpoint.provider_name, endpoint]),
    );
    for (const name of [BAIDU.name, NOVITA.name]) {
      const endpoint = byProvider.get(name);
      assert.equal(endpoint.uptime_last_5m, 100, name);
      assert.equal(typeof endpoint.uptime_last_30m, 'number', name);
      assert.equal(typeof endpoint.uptime_last_1d, 'number', name);
      assert.equal(typeof endpoint.latency_last_30m?.p50, 'number', name);
    }
    assert.equal(byProvider.get('DigitalOcean').uptime_last_5m, null);
  });
});
