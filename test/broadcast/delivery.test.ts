import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { type BroadcastTarget, sampled } from '../../src/broadcast/destination-rules.js';
import { idempotencyKeyOf } from '../../src/broadcast/idempotency-key.js';
import { sampleEvent } from '../helpers/broadcast-fixtures.js';
import type { TestApp } from '../helpers/test-app.js';
import {
  chat,
  createWebhook,
  inferenceKey,
  outboxRows,
  setBroadcast,
  spanAttributes,
  startBroadcastGateway,
  startHookReceiver,
  waitUntil,
} from './delivery-harness.js';

/**
 * Broadcast end to end: a generation through the gateway reaches a webhook receiver as OTLP JSON,
 * selected by the workspace switch, key allowlist, regions, sampling and filter rules, trimmed by
 * privacy mode and the broadcast flags.
 */
describe('broadcast delivery', () => {
  let gateway: TestApp;
  let app: { key: string; hash: string };
  const receivers: Array<{ close(): Promise<void> }> = [];

  before(async () => {
    gateway = await startBroadcastGateway();
    await setBroadcast(gateway, true);
    app = await inferenceKey(gateway);
  });
  after(async () => {
    await gateway.close();
  });
  afterEach(async () => {
    // Each test's destinations go away with it, so the next test sees only its own.
    const listed = await gateway.request('GET', '/api/v1/observability/destinations');
    for (const destination of listed.body.data) {
      await gateway.request('DELETE', `/api/v1/observability/destinations/${destination.id}`);
    }
    for (const receiver of receivers.splice(0)) await receiver.close();
  });

  const receiver = async (...args: Parameters<typeof startHookReceiver>) => {
    const started = await startHookReceiver(...args);
    receivers.push(started);
    return started;
  };

  it('sends a generation to a webhook as OTLP JSON with the request, usage, user, session and trace metadata', async () => {
    const hook = await receiver();
    const destinationId = await createWebhook(gateway, hook);
    const response = await chat(
      gateway,
      app.key,
      {
        user: 'user_12345',
        session_id: 'session_abc',
        temperature: 0.5,
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'hello there' },
        ],
      },
      {},
    );
    const generationId = response.headers.get('x-generation-id');
    assert.ok(generationId);
    await waitUntil('one delivery', () => hook.deliveries().length === 1);
    const [delivery] = hook.deliveries();
    assert.ok(delivery);
    assert.equal(delivery.method, 'POST');
    assert.equal(delivery.url, '/hook');
    assert.equal(delivery.headers['content-type'], 'application/json');
    assert.equal(delivery.headers['idempotency-key'], idempotencyKeyOf(generationId, destinationId));
    const attributes = spanAttributes(delivery);
    assert.equal(attributes['gen_ai.request.model'], 'switchyard/echo');
    assert.equal(attributes['gen_ai.operation.name'], 'chat');
    assert.equal(attributes['user.id'], 'user_12345');
    assert.equal(attributes['session.id'], 'session_abc');
    assert.equal(attributes['gen_ai.response.id'], generationId);
    assert.equal(attributes['gen_ai.request.temperature'], 0.5);
    const prompt = JSON.parse(String(attributes['gen_ai.prompt']));
    assert.deepEqual(prompt, [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hello there' },
    ]);
    const completion = JSON.parse(String(attributes['gen_ai.completion']));
    assert.equal(completion[0].role, 'assistant');
    assert.ok(completion[0].content.length > 0);
    // Not asked for: no cost breakdown, identity or request context.
    assert.ok(!Object.keys(attributes).some((key) => key.startsWith('switchyard.identity.')));
    assert.ok(!Object.keys(attributes).some((key) => key.startsWith('switchyard.cost.')));
    // The delivered event leaves the outbox (once the worker has recorded the receiver's answer).
    await waitUntil('an empty outbox', async () => (await outboxRows(gateway)).length === 0);
  });

  it('cuts a long text on a whole character: no lone surrogate reaches a receiver', async () => {
    const hook = await receiver();
    await createWebhook(gateway, hook);
    // The emoji's two UTF-16 units straddle the 32,768-unit cut.
    const text = `${'a'.repeat(32_767)}😀${'b'.repeat(100)}`;
    await chat(gateway, app.key, { messages: [{ role: 'user', content: text }] });
    await waitUntil('one delivery', () => hook.deliveries().length === 1);
    const [delivery] = hook.deliveries();
    assert.ok(delivery);
    const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    for (const name of ['gen_ai.prompt', 'gen_ai.completion']) {
      const messages = JSON.parse(String(spanAttributes(delivery)[name]));
      const content = String(messages[0].content);
      assert.ok(content.includes('…[truncated]'), `${name} was cut`);
      assert.ok(!loneSurrogate.test(content), `${name} ends on a whole character`);
      assert.ok(content.startsWith('a'.repeat(32_767)));
    }
  });

  it('passes the trace: its id, names and parent, and other keys as trace.metadata.*', async () => {
    const hook = await receiver();
    await createWebhook(gateway, hook);
    await gateway.request('POST', '/api/v1/responses', {
      key: app.key,
      body: {
        model: 'switchyard/echo',
        input: 'trace me',
        trace: {
          trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
          parent_span_id: '00f067aa0ba902b7',
          generation_name: 'summarize',
          order_id: 'ORD-12345',
        },
      },
    });
    await waitUntil('one delivery', () => hook.deliveries().length === 1);
    const delivery = hook.deliveries()[0];
    assert.ok(delivery);
    const body = delivery.json as any;
    const span = body.resourceSpans[0].scopeSpans[0].spans[0];
    assert.equal(span.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(span.parentSpanId, '00f067aa0ba902b7');
    assert.equal(span.name, 'summarize');
    assert.equal(spanAttributes(delivery)['trace.metadata.order_id'], 'ORD-12345');
  });

  it('streams: the collected output is sent once the stream ends', async () => {
    const hook = await receiver();
    await createWebhook(gateway, hook);
    const response = await gateway.request('POST', '/api/v1/chat/completions', {
      key: app.key,
      body: {
        model: 'switchyard/echo',
        stream: true,
        messages: [{ role: 'user', content: 'stream this back' }],
      },
    });
    assert.equal(response.status, 200);
    await waitUntil('one delivery', () => hook.deliveries().length === 1);
    const attributes = spanAttributes(hook.deliveries()[0] as never);
    const completion = JSON.parse(String(attributes['gen_ai.completion']));
    assert.match(completion[0].content, /stream this back/);
  });

  it('privacy mode withholds bodies; the broadcast flags add cost, identity and request context', async () => {
    const hook = await receiver();
    await createWebhook(gateway, hook, {
      privacy_mode: true,
      broadcast_generation_cost: true,
      broadcast_generation_identity: true,
      broadcast_generation_request_context: true,
    });
    await chat(gateway, app.key, {}, { 'HTTP-Referer': 'https://example.com', 'X-Title': 'Example app' });
    await waitUntil('one delivery', () => hook.deliveries().length === 1);
    const delivery = hook.deliveries()[0];
    assert.ok(delivery);
    assert.ok(!delivery.text.includes('hello there'), 'the prompt must not travel in privacy mode');
    const attributes = spanAttributes(delivery);
    assert.equal(attributes['gen_ai.prompt'], undefined);
    assert.equal(attributes['gen_ai.completion'], undefined);
    assert.ok(Object.keys(attributes).some((key) => key.startsWith('switchyard.cost.')));
    assert.ok(Object.keys(attributes).some((key) => key.startsWith('switchyard.identity.')));
    assert.ok(Object.values(attributes).includes('Example app'));
  });

  it('sends nothing while the workspace broadcast switch is off, or to a disabled destination', async () => {
    const hook = await receiver();
    const id = await createWebhook(gateway, hook);
    await setBroadcast(gateway, false);
    try {
      await chat(gateway, app.key);
      assert.deepEqual(await outboxRows(gateway), []);
    } finally {
      await setBroadcast(gateway, true);
    }
    const disabled = await gateway.request('PATCH', `/api/v1/observability/destinations/${id}`, {
      body: { enabled: false },
    });
    assert.equal(disabled.status, 200);
    await chat(gateway, app.key);
    assert.deepEqual(await outboxRows(gateway), []);
    assert.equal(hook.deliveries().length, 0);
  });

  it('forwards only allowlisted keys, listed regions and events matching a filter group', async () => {
    const hook = await receiver();
    const other = await inferenceKey(gateway, 'other app');
    await createWebhook(gateway, hook, { api_key_hashes: [other.hash] });
    await createWebhook(gateway, hook, { regions: ['europe'] });
    await createWebhook(gateway, hook, {
      filter_rules: {
        groups: [
          { rules: [{ field: 'model', operator: 'equals', value: 'openai/gpt-4o' }] },
          {
            logic: 'and',
            rules: [
              { field: 'input', operator: 'contains', value: 'invoice' },
              { field: 'total_tokens', operator: 'gt', value: 0 },
            ],
          },
        ],
      },
    });
    await chat(gateway, app.key, { messages: [{ role: 'user', content: 'no match here' }] });
    assert.deepEqual(await outboxRows(gateway), [], 'this key is not allowlisted; nothing matches');
    await chat(gateway, other.key, { messages: [{ role: 'user', content: 'hello' }] });
    await chat(gateway, app.key, { messages: [{ role: 'user', content: 'about the invoice' }] });
    await waitUntil('two deliveries', () => hook.deliveries().length === 2);
    const prompts = hook.deliveries().map((delivery) => String(spanAttributes(delivery)['gen_ai.prompt']));
    assert.ok(prompts.some((prompt) => prompt.includes('"hello"')));
    assert.ok(prompts.some((prompt) => prompt.includes('invoice')));
  });

  it('carries the finish reason as the API spells it, so a rule written that way matches', async () => {
    const hook = await receiver();
    await createWebhook(gateway, hook, {
      filter_rules: {
        groups: [{ rules: [{ field: 'finish_reason', operator: 'equals', value: 'tool_calls' }] }],
      },
    });
    await chat(gateway, app.key);
    assert.deepEqual(await outboxRows(gateway), [], 'a plain answer stops, and is not selected');
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];
    const called = await chat(gateway, app.key, { model: 'switchyard/scripted', tools });
    assert.equal(called.body.choices[0].finish_reason, 'tool_calls');
    await waitUntil('the tool-call generation', () => hook.deliveries().length === 1);
    const [delivery] = hook.deliveries();
    assert.ok(delivery);
    assert.deepEqual(spanAttributes(delivery)['gen_ai.response.finish_reasons'], {
      values: [{ stringValue: 'tool_calls' }],
    });
  });

  it('samples whole sessions deterministically per destination', async () => {
    const hook = await receiver();
    const id = await createWebhook(gateway, hook, { sampling_rate: 0.5 });
    const target = { id, samplingRate: 0.5 } as BroadcastTarget;
    const sessions = Array.from({ length: 24 }, (_, index) => `session-${index}`);
    const expected = sessions.filter((session) => sampled(target, sampleEvent({ session_id: session })));
    assert.ok(expected.length > 0 && expected.length < sessions.length, 'the fixture samples some, not all');
    for (const session of sessions) {
      await chat(gateway, app.key, { session_id: session });
      await chat(gateway, app.key, { session_id: session });
    }
    const rows = await outboxRows(gateway);
    await waitUntil('every sampled event', () => hook.deliveries().length === expected.length * 2);
    const seen = hook.deliveries().map((delivery) => String(spanAttributes(delivery)['session.id']));
    assert.deepEqual([...new Set(seen)].sort(), [...expected].sort());
    assert.ok(rows.length <= expected.length * 2);
  });
});
