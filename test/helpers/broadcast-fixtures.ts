import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import type { BroadcastEvent } from '../../src/broadcast/broadcast-event.js';
import type { BroadcastTarget } from '../../src/broadcast/destination-rules.js';
import { DeliveryError, type ExportContext, type OutboxItem } from '../../src/broadcast/destination-type.js';
import { createExporterHttp, type ExporterHttp } from '../../src/broadcast/exporter-http.js';

/** A complete event as the gateway builds it: bodies, cost, identity and request context included. */
/** A destination as the request path sees it: a webhook taking every event, no flags. */
export function sampleTarget(overrides: Partial<BroadcastTarget> = {}): BroadcastTarget {
  return {
    id: '11111111-2222-4333-8444-555555555555',
    type: 'webhook',
    keyHashes: null,
    regions: new Set(['global']),
    samplingRate: 1,
    matches: null,
    privacyMode: false,
    cost: false,
    identity: false,
    requestContext: false,
    ...overrides,
  };
}

export function sampleEvent(overrides: Partial<BroadcastEvent> = {}): BroadcastEvent {
  return {
    v: 1,
    generation_id: 'gen-1732276800-abcdefghijklmnop',
    trace: {
      trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
      span_id: '00f067aa0ba902b7',
      parent_span_id: null,
      external_trace_id: null,
      trace_name: null,
      span_name: null,
      generation_name: null,
      metadata: { order_id: 'ORD-12345' },
    },
    started_at: '2026-11-22T10:00:00.000Z',
    ended_at: '2026-11-22T10:00:01.250Z',
    start_time_unix_nano: '1795341600000000000',
    end_time_unix_nano: '1795341601250000000',
    operation: 'chat',
    api_type: 'chat-completions',
    requested_model: 'openai/gpt-4o',
    model: 'openai/gpt-4o',
    provider: 'openai',
    provider_name: 'OpenAI',
    status: 'completed',
    finish_reason: 'stop',
    error: null,
    streamed: false,
    usage: {
      prompt_tokens: 100,
      completion_tokens: 50,
      total_tokens: 150,
      cached_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
    },
    total_cost: 0.00075,
    latency_ms: 1250,
    first_token_ms: 300,
    generation_time_ms: 950,
    api_key_name: 'production app',
    user_id: 'user_12345',
    session_id: 'session_abc',
    input: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Say hello.' },
    ],
    output: [{ role: 'assistant', content: 'Hello.' }],
    parameters: { temperature: 0.2, max_output_tokens: 256 },
    tools: { offered: 0, called: 0 },
    cost: { total_usd: 0.00075, input_usd: 0.00025, output_usd: 0.0005, is_byok: false, currency: 'USD' },
    identity: {
      api_key_hash: 'a'.repeat(64),
      workspace_id: '550e8400-e29b-41d4-a716-446655440000',
      member_user_id: null,
    },
    request_context: {
      app_referer: 'https://example.com',
      app_title: 'Example',
      http_status: 200,
      attempts: 1,
      region: 'global',
      request_metadata: null,
    },
    ...overrides,
  };
}

/** The same event as a destination in `privacy_mode` with every `broadcast_*` flag off receives it. */
export function privateEvent(overrides: Partial<BroadcastEvent> = {}): BroadcastEvent {
  return sampleEvent({
    input: null,
    output: null,
    cost: null,
    identity: null,
    request_context: null,
    ...overrides,
  });
}

export function outboxItem(event: BroadcastEvent = sampleEvent(), attempt = 1): OutboxItem {
  return {
    event,
    idempotencyKey: createHash('sha256').update(`${event.generation_id}:dest`).digest('hex').slice(0, 32),
    attempt,
  };
}

export interface ReceivedRequest {
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers: IncomingMessage['headers'];
  /** The body's bytes (gunzipped when sent with `Content-Encoding: gzip`). */
  raw: Buffer;
  /** The body as text. */
  text: string;
  /** The body parsed as JSON when it is JSON; undefined otherwise. */
  json: unknown;
}

export type ReceiverReply =
  | { status: number; headers?: Record<string, string>; body?: string | object }
  | 'close'
  | 'hang';

export interface FakeReceiver {
  url: string;
  requests: ReceivedRequest[];
  /**
   * Decides each answer (after the request is recorded). Default: 200 `{}`. `close` destroys the
   * socket without answering; `hang` never answers (until the receiver closes).
   */
  reply: (request: ReceivedRequest) => ReceiverReply | Promise<ReceiverReply>;
  close(): Promise<void>;
}

/**
 * A local HTTP server standing in for a destination's ingestion API. Each test's `reply` checks the
 * request the way the real service would (path, auth header, body shape) and answers accordingly.
 */
export async function startReceiver(
  reply: FakeReceiver['reply'] = () => ({ status: 200, body: {} }),
): Promise<FakeReceiver> {
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const receiver: FakeReceiver = {
    url: '',
    requests,
    reply,
    close: async () => {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      let raw = Buffer.concat(chunks);
      if (request.headers['content-encoding'] === 'gzip' && raw.length > 0) raw = gunzipSync(raw);
      const text = raw.toString('utf8');
      let json: unknown;
      try {
        json = text.length > 0 ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      const received: ReceivedRequest = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        raw,
        text,
        json,
      };
      requests.push(received);
      let answer: ReceiverReply;
      try {
        answer = await receiver.reply(received);
      } catch (error) {
        answer = { status: 599, body: { error: String(error) } };
      }
      if (answer === 'close') {
        request.socket.destroy();
        return;
      }
      if (answer === 'hang') {
        hanging.add(response);
        return;
      }
      const body =
        answer.body === undefined
          ? ''
          : typeof answer.body === 'string'
            ? answer.body
            : JSON.stringify(answer.body);
      response.writeHead(answer.status, {
        'content-type': typeof answer.body === 'string' ? 'text/plain' : 'application/json',
        ...answer.headers,
      });
      response.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}

/** An export context for calling an exporter directly in a test (private addresses allowed). */
export function exportContext<C>(
  config: C,
  http: ExporterHttp = createExporterHttp({ allowPrivateNetworks: true }),
): ExportContext<C> {
  return {
    config,
    destination: {
      id: '11111111-2222-4333-8444-555555555555',
      name: 'test destination',
      workspace_id: '550e8400-e29b-41d4-a716-446655440000',
    },
    http,
    signal: new AbortController().signal,
    now: new Date('2026-11-22T10:00:02.000Z'),
  };
}

/** The failure a delivery rejects with, checked to be a DeliveryError (fails when it resolves). */
export async function deliveryFailure(sending: Promise<unknown>): Promise<DeliveryError> {
  try {
    await sending;
  } catch (error) {
    assert.ok(error instanceof DeliveryError, `expected a DeliveryError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the delivery to fail');
}

/** `assert.rejects` check: a delivery failure with this status that is not retried. */
export const finalFailure =
  (status: number) =>
  (error: unknown): boolean =>
    error instanceof DeliveryError && error.status === status && !error.retryable;

/** `assert.rejects` check: a delivery failure with this status that is retried. */
export const retryableFailure =
  (status: number) =>
  (error: unknown): boolean =>
    error instanceof DeliveryError && error.retryable && error.status === status;

/** Asserts that `sending` fails as retryable, waiting `retryAfterMs` (the receiver's Retry-After). */
export async function assertRetryAfter(sending: Promise<unknown>, retryAfterMs: number): Promise<void> {
  await assert.rejects(sending, (error: unknown) => {
    assert.ok(error instanceof DeliveryError);
    assert.equal(error.retryable, true);
    assert.equal(error.retryAfterMs, retryAfterMs);
    return true;
  });
}
