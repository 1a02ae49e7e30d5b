import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../src/platform/clock.js';
import { newId } from '../../src/platform/ids.js';
import type { BroadcastOutboxTable } from '../../src/storage/database-schema.js';
import { type FakeReceiver, type ReceivedRequest, startReceiver } from '../helpers/broadcast-fixtures.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

export { addWorkspace } from './byok-helpers.js';

export const DESTINATIONS = '/api/v1/observability/destinations';

/**
 * A gateway whose destinations may point at 127.0.0.1 (the fake receivers), without the per-key
 * rate limit (a fixed clock would put every request of a suite in one window), and without the
 * delivery worker: these tests write outbox rows themselves and read them back as written.
 */
export function startObservabilityGateway(
  options: { clock?: Clock; allowPrivateNetworks?: boolean } = {},
): Promise<TestApp> {
  return startTestApp({
    config: {
      broadcast: { allow_private_networks: options.allowPrivateNetworks ?? true, worker_enabled: false },
      limits: { rate_limit: { requests: 0, window_seconds: 60 } },
    },
    ...(options.clock ? { clock: options.clock } : {}),
  });
}

/** A credential shaped like a vendor's, unique per call so a scan can look for it. */
export const vendorSecret = (prefix: string) => `${prefix}${randomBytes(18).toString('base64url')}`;

/** A Langfuse config (its two keys are secret fields; Langfuse is not tested on save). */
export const langfuseConfig = () => ({
  publicKey: vendorSecret('pk-lf-'),
  secretKey: vendorSecret('sk-lf-'),
});

/** The masked form the API shows: first and last 4 characters, or `****` below 12 characters. */
export const masked = (secret: string) =>
  secret.length < 12 ? '****' : `${secret.slice(0, 4)}...${secret.slice(-4)}`;

/**
 * A webhook endpoint as a user would run it. The gateway's connection test (reference §3.3) is an
 * empty OTLP JSON payload sent with `X-Test-Connection: true` to the configured URL and method;
 * anything else arriving here is a delivery. `status` is what it answers to tests.
 */
export interface WebhookEndpoint {
  receiver: FakeReceiver;
  url: string;
  status: number;
  /** The connection tests received so far. */
  tests(): ReceivedRequest[];
}

export async function startWebhookEndpoint(status = 200): Promise<WebhookEndpoint> {
  const endpoint: WebhookEndpoint = {
    receiver: undefined as unknown as FakeReceiver,
    url: '',
    status,
    tests: () =>
      endpoint.receiver.requests.filter((request) => request.headers['x-test-connection'] === 'true'),
  };
  endpoint.receiver = await startReceiver((request) => {
    if (request.headers['x-test-connection'] !== 'true') return { status: 202, body: {} };
    const body = request.json as { resourceSpans?: unknown } | undefined;
    if (
      !request.headers['content-type']?.startsWith('application/json') ||
      !Array.isArray(body?.resourceSpans)
    ) {
      return { status: 422, body: { error: 'expected an OTLP JSON traces payload' } };
    }
    return {
      status: endpoint.status,
      body: endpoint.status < 300 ? {} : { error: `answered ${endpoint.status}` },
    };
  });
  endpoint.url = `${endpoint.receiver.url}/hooks/switchyard`;
  return endpoint;
}

/** Creates a destination and asserts it was stored; returns the record. */
export async function createDestination(
  gateway: TestApp,
  body: Record<string, unknown>,
  key?: string,
): Promise<Record<string, any>> {
  const created = await gateway.request('POST', DESTINATIONS, { body, ...(key ? { key } : {}) });
  assert.equal(created.status, 200, created.text);
  return created.body.data;
}

/** Every column of every destination row (deleted ones too), as one text to search. */
export async function storedDestinationsText(gateway: TestApp): Promise<string> {
  return JSON.stringify(
    await gateway.services.storage.db.selectFrom('observability_destinations').selectAll().execute(),
  );
}

export async function destinationRow(gateway: TestApp, id: string) {
  return gateway.services.storage.db
    .selectFrom('observability_destinations')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

/** Writes an outbox row directly, as the delivery path would have left it. */
export async function insertDelivery(
  gateway: TestApp,
  row: Partial<BroadcastOutboxTable> & Pick<BroadcastOutboxTable, 'destination_id' | 'workspace_id'>,
): Promise<BroadcastOutboxTable> {
  const generationId = `gen-${randomBytes(8).toString('hex')}`;
  const full: BroadcastOutboxTable = {
    id: newId(),
    generation_id: generationId,
    idempotency_key: randomBytes(16).toString('hex'),
    payload: '{}',
    status: 'dead',
    attempts: 8,
    next_attempt_at: '2030-01-01T00:00:00.000Z',
    lease_until: null,
    leased_by: null,
    last_error: 'receiver answered 500: boom',
    last_status: 500,
    created_at: '2030-01-01T00:00:00.000Z',
    dead_at: '2030-01-01T00:05:00.000Z',
    fanout: null,
    ...row,
  };
  await gateway.services.storage.db.insertInto('broadcast_outbox').values(full).execute();
  return full;
}
