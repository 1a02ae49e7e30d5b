import assert from 'node:assert/strict';
import { type FakeReceiver, type ReceivedRequest, startReceiver } from '../helpers/broadcast-fixtures.js';
import { type IsolatedDatabase, startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * Broadcast settings that make delivery quick to observe: fast polls, short backoffs, and the
 * delivery thread at the process's own priority. The suite runs two files at once on two cores, and
 * a thread at the default nice 19 and SCHED_IDLE gets a core only when nothing else wants it: with
 * three busy loops beside them, test/broadcast/fanout.test.ts failed twice in two runs at the
 * default priority and passed at this one (docs/decisions.md, "The delivery thread lowers its
 * priority after its first batch"). The default priority is tested in
 * test/broadcast/delivery-thread.test.ts.
 */
export const FAST_BROADCAST = {
  allow_private_networks: true,
  delivery_thread_niceness: 0,
  delivery_thread_idle: false,
  poll_interval_ms: 20,
  batch_linger_ms: 20,
  base_backoff_ms: 40,
  max_backoff_ms: 200,
  max_attempts: 4,
};

export async function startBroadcastGateway(
  options: { broadcast?: Record<string, unknown>; database?: IsolatedDatabase; redisPrefix?: string } = {},
): Promise<TestApp> {
  return startTestApp({
    demo: true,
    ...(options.database ? { database: options.database } : {}),
    ...(options.redisPrefix ? { redisPrefix: options.redisPrefix } : {}),
    config: { broadcast: { ...FAST_BROADCAST, ...options.broadcast } },
  });
}

export async function defaultWorkspaceId(gateway: TestApp): Promise<string> {
  const found = await gateway.request('GET', '/api/v1/workspaces/default');
  assert.equal(found.status, 200, found.text);
  return found.body.data.id;
}

export async function setBroadcast(gateway: TestApp, enabled: boolean): Promise<void> {
  const id = await defaultWorkspaceId(gateway);
  const patched = await gateway.request('PATCH', `/api/v1/workspaces/${id}`, {
    body: { is_observability_broadcast_enabled: enabled },
  });
  assert.equal(patched.status, 200, patched.text);
}

/** Creates a webhook destination pointing at the receiver (which must pass the connection test). */
export async function createWebhook(
  gateway: TestApp,
  receiver: FakeReceiver,
  fields: Record<string, unknown> = {},
): Promise<string> {
  const created = await gateway.request('POST', '/api/v1/observability/destinations', {
    body: { type: 'webhook', name: 'hook', config: { url: `${receiver.url}/hook` }, ...fields },
  });
  assert.equal(created.status, 200, created.text);
  return created.body.data.id;
}

/** A receiver that records deliveries (the connection test is answered and left out). */
export async function startHookReceiver(
  reply: FakeReceiver['reply'] = () => ({ status: 200, body: {} }),
): Promise<FakeReceiver & { deliveries(): ReceivedRequest[] }> {
  const receiver = await startReceiver((request) =>
    request.headers['x-test-connection'] === 'true' ? { status: 200, body: {} } : reply(request),
  );
  return Object.assign(receiver, {
    deliveries: () => receiver.requests.filter((request) => request.headers['x-test-connection'] !== 'true'),
  });
}

/** An inference key (management keys cannot call inference). */
export async function inferenceKey(gateway: TestApp, name = 'app'): Promise<{ key: string; hash: string }> {
  const created = await gateway.request('POST', '/api/v1/keys', { body: { name } });
  assert.equal(created.status, 200, created.text);
  return { key: created.body.key, hash: created.body.data.hash };
}

export async function chat(
  gateway: TestApp,
  key: string,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  const response = await gateway.request('POST', '/api/v1/chat/completions', {
    key,
    headers,
    body: { model: 'switchyard/echo', messages: [{ role: 'user', content: 'hello there' }], ...body },
  });
  assert.equal(response.status, 200, response.text);
  return response;
}

/** Flushes the generation log (records and their outbox rows) and returns the outbox rows. */
export async function outboxRows(gateway: TestApp) {
  await gateway.services.generations.flush();
  return gateway.services.storage.db
    .selectFrom('broadcast_outbox')
    .selectAll()
    .orderBy('created_at')
    .execute();
}

/** One span's attributes as a plain object (OTLP JSON `attributes` list). */
export function spanAttributes(request: ReceivedRequest, index = 0): Record<string, unknown> {
  const body = request.json as {
    resourceSpans: Array<{
      scopeSpans: Array<{
        spans: Array<{ attributes: Array<{ key: string; value: Record<string, unknown> }> }>;
      }>;
    }>;
  };
  const spans = body.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans));
  const span = spans[index];
  assert.ok(span, `no span ${index} in ${request.text.slice(0, 300)}`);
  return Object.fromEntries(
    span.attributes.map((attribute) => {
      const value = attribute.value;
      const inner =
        value.stringValue ??
        value.intValue ??
        value.doubleValue ??
        value.boolValue ??
        value.arrayValue ??
        null;
      return [attribute.key, inner];
    }),
  );
}

export const waitUntil = async (what: string, probe: () => boolean | Promise<boolean>, timeoutMs = 8000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};
