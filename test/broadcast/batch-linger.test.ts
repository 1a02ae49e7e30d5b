import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestApp } from '../helpers/test-app.js';
import {
  chat,
  inferenceKey,
  outboxRows,
  setBroadcast,
  startBroadcastGateway,
  startHookReceiver,
  waitUntil,
} from './delivery-harness.js';

const LINGER_MS = 600;

/**
 * `broadcast.batch_linger_ms`: the events a group commit hands the worker wait for more of the same
 * destination, so several generations go to a batching receiver in one request.
 */
describe('broadcast batch linger', () => {
  let gateway: TestApp;
  let key: string;

  before(async () => {
    gateway = await startBroadcastGateway({ broadcast: { batch_linger_ms: LINGER_MS } });
    await setBroadcast(gateway, true);
    key = (await inferenceKey(gateway)).key;
  });
  after(async () => {
    await gateway.close();
  });

  it('sends the generations of several commits to an OTLP collector in one request, after the linger', async () => {
    const collector = await startHookReceiver();
    try {
      const created = await gateway.request('POST', '/api/v1/observability/destinations', {
        body: {
          type: 'otel-collector',
          name: 'collector',
          config: { endpoint: `${collector.url}/v1/traces` },
        },
      });
      assert.equal(created.status, 200, created.text);
      const first = Date.now();
      for (let index = 0; index < 3; index += 1) {
        await chat(gateway, key, { messages: [{ role: 'user', content: `turn ${index}` }] });
        // Each generation in its own group commit.
        assert.equal((await outboxRows(gateway)).length, index + 1);
      }
      await waitUntil('the batch', () => collector.deliveries().length > 0);
      const waited = Date.now() - first;
      assert.ok(waited >= LINGER_MS - 50, `sent after ${waited} ms, before the ${LINGER_MS} ms linger`);
      // Nothing else follows: all three went in that one request.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const deliveries = collector.deliveries();
      assert.equal(deliveries.length, 1);
      const body = deliveries[0]?.json as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: unknown[] }> }>;
      };
      const spans = body.resourceSpans.flatMap((resource) =>
        resource.scopeSpans.flatMap((scope) => scope.spans),
      );
      assert.equal(spans.length, 3);
      await waitUntil('the outbox emptied', async () => (await outboxRows(gateway)).length === 0);
    } finally {
      await collector.close();
    }
  });
});
