import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { traceOf } from '../../src/broadcast/build-event.js';
import {
  compileFilterRules,
  compileRule,
  eventForDestination,
  sampled,
  selects,
} from '../../src/broadcast/destination-rules.js';
import { fitPayload, MAX_PAYLOAD_CHARS } from '../../src/broadcast/outbox-events.js';
import { backoffMs } from '../../src/workers/broadcast-worker.js';
import { sampleEvent, sampleTarget } from '../helpers/broadcast-fixtures.js';

const target = sampleTarget;

describe('filter rules', () => {
  const event = sampleEvent();
  const rule = (field: string, operator: string, value?: string | number) =>
    compileRule({ field: field as never, operator, ...(value === undefined ? {} : { value }) })(event);

  it('compares text fields case-sensitively; provider matches slug or name', () => {
    assert.equal(rule('model', 'equals', 'openai/gpt-4o'), true);
    assert.equal(rule('model', 'equals', 'OpenAI/gpt-4o'), false);
    assert.equal(rule('model', 'not_equals', 'openai/gpt-4o'), false);
    assert.equal(rule('provider', 'equals', 'openai'), true);
    assert.equal(rule('provider', 'equals', 'OpenAI'), true);
    assert.equal(rule('provider', 'not_equals', 'OpenAI'), false);
    assert.equal(rule('input', 'contains', 'hello'), true);
    assert.equal(rule('input', 'not_contains', 'hello'), false);
    assert.equal(rule('output', 'starts_with', 'Hello'), true);
    assert.equal(rule('api_key_name', 'ends_with', 'app'), true);
    assert.equal(rule('session_id', 'regex', '^session_[a-z]+$'), true);
    assert.equal(rule('finish_reason', 'exists'), true);
  });

  it('reads a finish_reason rule saved in the spelling events used to carry', () => {
    const called = sampleEvent({ finish_reason: 'tool_calls' });
    const check = (operator: string, value: string) =>
      compileRule({ field: 'finish_reason', operator, value } as never)(called);
    assert.equal(check('equals', 'tool_calls'), true);
    assert.equal(check('equals', 'tool-calls'), true);
    assert.equal(check('not_equals', 'tool-calls'), false);
    assert.equal(check('equals', 'stop'), false);
    // With every operator, not only the equalities.
    assert.equal(check('contains', 'tool-calls'), true);
    assert.equal(check('not_contains', 'tool-calls'), false);
    assert.equal(check('starts_with', 'tool-calls'), true);
    assert.equal(check('ends_with', 'tool-calls'), true);
    assert.equal(check('regex', '^(tool-calls|content-filter)$'), true);
    assert.equal(check('contains', 'content-filter'), false);
    assert.equal(
      compileRule({ field: 'finish_reason', operator: 'contains', value: 'content-filter' } as never)(
        sampleEvent({ finish_reason: 'content_filter' }),
      ),
      true,
    );
    assert.equal(
      compileRule({ field: 'finish_reason', operator: 'equals', value: 'other' } as never)(sampleEvent()),
      true,
    );
  });

  it('treats an absent field as failing positive operators and passing negative ones', () => {
    const none = sampleEvent({ session_id: null, output: [] });
    const check = (field: string, operator: string, value?: string) =>
      compileRule({ field: field as never, operator, ...(value === undefined ? {} : { value }) })(none);
    assert.equal(check('session_id', 'exists'), false);
    assert.equal(check('session_id', 'not_exists'), true);
    assert.equal(check('session_id', 'equals', 'x'), false);
    assert.equal(check('session_id', 'not_equals', 'x'), true);
    assert.equal(check('output', 'contains', 'x'), false);
    assert.equal(check('output', 'not_contains', 'x'), true);
  });

  it('compares numbers', () => {
    assert.equal(rule('total_cost', 'gt', 0.0005), true);
    assert.equal(rule('total_cost', 'lt', 0.0005), false);
    assert.equal(rule('total_tokens', 'gte', 150), true);
    assert.equal(rule('prompt_tokens', 'lte', 99), false);
    assert.equal(rule('completion_tokens', 'equals', 50), true);
    assert.equal(rule('completion_tokens', 'not_equals', 50), false);
  });

  it('ORs groups and combines rules by each group logic; disabled or absent rules pass everything', () => {
    const no = { field: 'model', operator: 'equals', value: 'nope' } as const;
    const yes = { field: 'model', operator: 'equals', value: 'openai/gpt-4o' } as const;
    const match = (groups: Array<{ logic?: 'and' | 'or'; rules: Array<typeof no | typeof yes> }>) =>
      compileFilterRules({ groups: groups as never })?.(event);
    assert.equal(match([{ rules: [yes, no] }]), false);
    assert.equal(match([{ logic: 'or', rules: [yes, no] }]), true);
    assert.equal(match([{ rules: [no] }, { rules: [yes] }]), true);
    assert.equal(match([{ rules: [no] }, { rules: [no] }]), false);
    assert.equal(compileFilterRules({ enabled: false, groups: [{ rules: [no as never] }] }), null);
    assert.equal(compileFilterRules(null), null);
  });
});

describe('destination selection', () => {
  it('applies the key allowlist, regions, sampling and rules', () => {
    const event = sampleEvent();
    assert.equal(selects(target(), event, 'k', 'global'), true);
    assert.equal(selects(target({ keyHashes: new Set(['other']) }), event, 'k', 'global'), false);
    assert.equal(selects(target({ keyHashes: new Set(['k']) }), event, 'k', 'global'), true);
    assert.equal(selects(target({ regions: new Set(['europe']) }), event, 'k', 'global'), false);
    assert.equal(selects(target({ regions: new Set(['europe']) }), event, 'k', 'europe'), true);
    assert.equal(selects(target({ matches: () => false }), event, 'k', 'global'), false);
  });

  it('samples by session: one session is always in or out, and the rate holds over many', () => {
    const half = target({ samplingRate: 0.5 });
    let kept = 0;
    for (let index = 0; index < 2000; index += 1) {
      const first = sampled(half, sampleEvent({ session_id: `s-${index}`, generation_id: `gen-a-${index}` }));
      const second = sampled(
        half,
        sampleEvent({ session_id: `s-${index}`, generation_id: `gen-b-${index}` }),
      );
      assert.equal(first, second, 'two generations of one session are sampled alike');
      if (first) kept += 1;
    }
    assert.ok(kept > 900 && kept < 1100, `kept ${kept} of 2000 at rate 0.5`);
    // Without a session, the generation decides; a rate of 1 keeps everything.
    assert.equal(sampled(target(), sampleEvent({ session_id: null })), true);
  });

  it('withholds bodies in privacy mode and adds the optional parts only by flag', () => {
    const full = sampleEvent();
    const stripped = eventForDestination(target({ privacyMode: true }), full);
    assert.equal(stripped.input, null);
    assert.equal(stripped.output, null);
    assert.equal(stripped.cost, null);
    assert.equal(stripped.identity, null);
    assert.equal(stripped.request_context, null);
    assert.equal(stripped.total_cost, full.total_cost);
    const flagged = eventForDestination(target({ cost: true, identity: true, requestContext: true }), full);
    assert.deepEqual(flagged, full);
  });
});

describe('event building', () => {
  it('keeps 32/16-hex trace and parent ids, hashes other ids into that shape, and keeps other keys as metadata', () => {
    const given = traceOf('gen-1', {
      trace_id: '4BF92F3577B34DA6A3CE929D0E0E4736',
      parent_span_id: '00f067aa0ba902b7',
      trace_name: 'checkout',
      order_id: 'ORD-1',
      nested: { a: 1 },
    });
    assert.equal(given.trace_id, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(given.parent_span_id, '00f067aa0ba902b7');
    assert.equal(given.trace_name, 'checkout');
    assert.deepEqual(given.metadata, { order_id: 'ORD-1', nested: '{"a":1}' });
    const hashed = traceOf('gen-1', { trace_id: 'my-trace', parent_span_id: 'step-2' });
    assert.match(hashed.trace_id, /^[0-9a-f]{32}$/);
    assert.match(hashed.parent_span_id ?? '', /^[0-9a-f]{16}$/);
    assert.equal(hashed.external_trace_id, 'my-trace');
    assert.equal(traceOf('gen-1', { trace_id: 'my-trace' }).trace_id, hashed.trace_id, 'stable');
    // All zeros is W3C Trace Context's invalid id, which receivers drop: hashed like any other text.
    const zeros = traceOf('gen-1', { trace_id: '0'.repeat(32), parent_span_id: '0'.repeat(16) });
    assert.match(zeros.trace_id, /^[0-9a-f]{32}$/);
    assert.notEqual(zeros.trace_id, '0'.repeat(32));
    assert.match(zeros.parent_span_id ?? '', /^[0-9a-f]{16}$/);
    assert.notEqual(zeros.parent_span_id, '0'.repeat(16));
    assert.equal(zeros.external_trace_id, '0'.repeat(32));
    const none = traceOf('gen-1', null);
    assert.equal(none.span_id, traceOf('gen-1', null).span_id);
    assert.notEqual(none.span_id, traceOf('gen-2', null).span_id);
  });

  it('fits a huge event under the payload limit, newest input first', () => {
    const turns = Array.from({ length: 40 }, (_, index) => ({
      role: 'user' as const,
      content: `${index}:${'x'.repeat(30_000)}`,
    }));
    const text = fitPayload(sampleEvent({ input: turns }));
    assert.ok(text.length <= MAX_PAYLOAD_CHARS, `${text.length} chars`);
    const fitted = JSON.parse(text);
    assert.match(fitted.input[0].content, /earlier messages omitted/);
    assert.match(fitted.input.at(-1).content, /^39:/, 'the latest turn is kept');
    assert.equal(fitted.output[0].content, 'Hello.');
  });
});

describe('retry backoff', () => {
  it('doubles per attempt with equal jitter, capped, and yields to a longer Retry-After', () => {
    const settings = { base: 1000, max: 8000 };
    assert.equal(
      backoffMs(1, settings, null, () => 0),
      500,
    );
    assert.equal(
      backoffMs(1, settings, null, () => 1),
      1000,
    );
    assert.equal(
      backoffMs(3, settings, null, () => 1),
      4000,
    );
    assert.equal(
      backoffMs(10, settings, null, () => 1),
      8000,
    );
    assert.equal(
      backoffMs(10, settings, null, () => 0),
      4000,
    );
    assert.equal(
      backoffMs(1, settings, 30_000, () => 0.5),
      30_000,
    );
    assert.equal(
      backoffMs(4, settings, 100, () => 1),
      8000,
    );
  });
});
