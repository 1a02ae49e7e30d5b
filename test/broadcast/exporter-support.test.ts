import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeliveryError } from '../../src/broadcast/destination-type.js';
import { DESTINATION_TYPES } from '../../src/broadcast/destination-types.js';
import {
  errorText,
  headerProblems,
  jsonObject,
  mergeHeaders,
  observationName,
  packBySize,
  sendInGroups,
  spanName,
  toOpenAiChoices,
  urlProblems,
  uuidFromSeed,
  uuidV7,
  withoutNulls,
} from '../../src/broadcast/exporters/exporter-support.js';
import { traceDocument } from '../../src/broadcast/trace-document.js';
import { sampleEvent } from '../helpers/broadcast-fixtures.js';

const KEY = '0123456789abcdef0123456789abcdef';
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('urlProblems', () => {
  it('accepts http(s) URLs and skips absent fields', () => {
    assert.deepEqual(
      urlProblems({ baseUrl: 'https://cloud.langfuse.com/', url: 'http://127.0.0.1:8080' }),
      [],
    );
    assert.deepEqual(urlProblems({ baseUrl: undefined }), []);
  });

  it('names the field and the rule each bad URL breaks', () => {
    assert.deepEqual(
      urlProblems({
        a: 'cloud.langfuse.com',
        b: 'ftp://cloud.langfuse.com',
        c: 'https://pk:sk@cloud.langfuse.com',
        d: 'https://cloud.langfuse.com/?project=x',
        e: 'https://cloud.langfuse.com/#top',
      }),
      [
        { field: 'a', message: 'must be an absolute http or https URL' },
        { field: 'b', message: 'must be an http or https URL' },
        { field: 'c', message: 'must not carry credentials in the URL' },
        { field: 'd', message: 'must not carry a query or a fragment' },
        { field: 'e', message: 'must not carry a query or a fragment' },
      ],
    );
  });

  it('lets a URL called as given keep its query, never its credentials', () => {
    assert.deepEqual(urlProblems({ url: 'https://hooks.example.com/in?token=abc' }, { verbatim: true }), []);
    assert.deepEqual(urlProblems({ url: 'https://u:p@hooks.example.com/in' }, { verbatim: true }), [
      { field: 'url', message: 'must not carry credentials in the URL' },
    ]);
  });
});

describe('headers', () => {
  it('headerProblems refuses names and values the HTTP client would refuse', () => {
    assert.deepEqual(headerProblems(undefined), []);
    assert.deepEqual(headerProblems({ 'X-Ok': 'tab\tis fine' }), []);
    assert.deepEqual(headerProblems({ 'Bad Name': 'x', 'X-Ok': 'a\r\nInjected: 1' }), [
      { field: 'headers', message: '"Bad Name" is not a valid header name' },
      { field: 'headers', message: 'the value of "X-Ok" contains control characters' },
    ]);
  });

  it('mergeHeaders keeps custom headers under the own ones, whatever their case', () => {
    const merged = mergeHeaders(
      { 'X-Team': 'ml', authorization: 'Bearer stolen', 'CONTENT-TYPE': 'text/plain', Accept: 'text/html' },
      { Authorization: 'Basic real', 'content-type': 'application/json' },
      ['accept'],
    );
    assert.deepEqual(merged, {
      'X-Team': 'ml',
      Authorization: 'Basic real',
      'content-type': 'application/json',
    });
    assert.deepEqual(Object.keys(merged), ['X-Team', 'Authorization', 'content-type']);
    assert.deepEqual(mergeHeaders(undefined, { a: '1' }), { a: '1' });
  });
});

describe('ids derived from the idempotency key', () => {
  it('uuidFromSeed gives the ids the exporters always gave (a change would duplicate retried items)', () => {
    // The values the Langfuse (v4 layout) and Weave/PostHog (v8) exporters produced before sharing it.
    assert.equal(uuidFromSeed(`${KEY}:trace-create`), 'bc40f0da-b8a7-4bb8-8f93-a03f3e7dfc6b');
    assert.equal(uuidFromSeed(KEY, 8), '3eb1bd43-9947-8b76-a998-e566ccc2e099');
    assert.match(uuidFromSeed('another key'), UUID_SHAPE);
    assert.equal(uuidFromSeed('another key')[14], '4');
    assert.notEqual(uuidFromSeed(`${KEY}:a`), uuidFromSeed(`${KEY}:b`));
  });

  it('uuidV7 carries the time, the version and the variant, and the same seed gives the same id', () => {
    const id = uuidV7('2024-11-22T12:00:00.000Z', `${KEY}:run`);
    assert.equal(id, '019353be-4a00-72f2-887d-2bd043372e15');
    assert.equal(
      Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16),
      Date.parse('2024-11-22T12:00:00.000Z'),
    );
    assert.match(id, UUID_SHAPE);
    assert.equal(uuidV7('2024-11-22T12:00:00.000Z', `${KEY}:run`), id);
    assert.match(uuidV7('not a date', KEY), /^00000000-0000-7/);
  });
});

describe('batching', () => {
  it('packBySize packs consecutive items under the limit and sends an oversized one alone', () => {
    assert.deepEqual(packBySize([], 10), []);
    assert.deepEqual(packBySize(['aaa', 'bbb', 'ccc'], 8), [
      { start: 0, end: 2 },
      { start: 2, end: 3 },
    ]);
    assert.deepEqual(packBySize(['a', 'x'.repeat(50), 'b'], 10), [
      { start: 0, end: 1 },
      { start: 1, end: 2 },
      { start: 2, end: 3 },
    ]);
  });

  it('sendInGroups: one group fails as the batch; of several, it stops at the first failed group', async () => {
    const refused = new DeliveryError('bad request', { retryable: false, status: 400 });
    await assert.rejects(
      sendInGroups([{ start: 0, end: 2 }], async () => {
        throw refused;
      }),
      refused,
    );
    const sent: number[] = [];
    const limited = new DeliveryError('rate limited', {
      retryable: true,
      status: 429,
      retryAfterMs: 600_000,
    });
    const outcome = await sendInGroups(
      [
        { start: 0, end: 1 },
        { start: 1, end: 3 },
        { start: 3, end: 5 },
        { start: 5, end: 6 },
      ],
      async (group) => {
        sent.push(group.start);
        if (group.start === 0) return { rejected: [{ index: 0, retryable: false, message: 'item refused' }] };
        if (group.start === 3) throw limited;
        return undefined;
      },
    );
    // The group after the failed one is not sent: a rate-limited receiver is not sent the rest at once.
    assert.deepEqual(sent, [0, 1, 3]);
    assert.deepEqual(outcome, {
      rejected: [{ index: 0, retryable: false, message: 'item refused' }],
      stopped: { error: limited, failed: [3, 4], unsent: [5] },
    });
  });

  it('sendInGroups: a failed first group stops the batch too; a group that stopped part-way stops it', async () => {
    const down = new DeliveryError('unreachable', { retryable: true });
    assert.deepEqual(
      await sendInGroups(
        [
          { start: 0, end: 1 },
          { start: 1, end: 2 },
        ],
        async () => {
          throw down;
        },
      ),
      { rejected: [], stopped: { error: down, failed: [0], unsent: [1] } },
    );
    const busy = new DeliveryError('busy', { retryable: true, status: 503 });
    assert.deepEqual(
      await sendInGroups(
        [
          { start: 0, end: 3 },
          { start: 3, end: 4 },
        ],
        async () => ({ stopped: { error: busy, failed: [1], unsent: [2] } }),
      ),
      { rejected: [], stopped: { error: busy, failed: [1], unsent: [2, 3] } },
    );
  });

  it('sendInGroups never swallows a programming error', async () => {
    await assert.rejects(
      sendInGroups(
        [
          { start: 0, end: 1 },
          { start: 1, end: 2 },
        ],
        async () => {
          throw new TypeError('bug');
        },
      ),
      TypeError,
    );
  });
});

describe('event mappings', () => {
  it('jsonObject reads only JSON objects', () => {
    assert.deepEqual(jsonObject('{"count":3}'), { count: 3 });
    for (const text of ['', 'not json', '[1]', 'null', '3', '"x"'])
      assert.equal(jsonObject(text), null, text);
  });

  it('names spans and observations after the most specific name the request gave', () => {
    const named = { ...sampleEvent().trace, trace_name: 'trace', span_name: 'span', generation_name: null };
    assert.equal(spanName(sampleEvent({ trace: named })), 'span');
    assert.equal(spanName(sampleEvent({ trace: { ...named, span_name: null } })), 'trace');
    assert.equal(observationName(sampleEvent({ trace: { ...named, span_name: null } })), 'openai/gpt-4o');
    const unanswered = sampleEvent({ model: null, requested_model: 'openrouter/auto' });
    assert.equal(spanName(unanswered), 'openrouter/auto');
    assert.equal(observationName(unanswered), 'openrouter/auto');
    // The s3 trace document names its observation the same way.
    assert.equal(traceDocument(unanswered).observations[0].name, 'openrouter/auto');
  });

  it('errorText, toOpenAiChoices and withoutNulls', () => {
    assert.equal(errorText(sampleEvent()), undefined);
    assert.equal(errorText(sampleEvent({ status: 'failed', error: null })), 'failed');
    assert.equal(
      errorText(sampleEvent({ status: 'failed', error: { type: 'upstream_error', message: 'boom' } })),
      'upstream_error: boom',
    );
    assert.deepEqual(
      toOpenAiChoices(
        sampleEvent({
          finish_reason: 'tool_calls',
          output: [
            { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'f', arguments: '{}' }] },
          ],
        }),
      ),
      [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: '',
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
            tool_call_id: undefined,
          },
          finish_reason: 'tool_calls',
        },
      ],
    );
    assert.deepEqual(withoutNulls({ a: null, b: 0, c: undefined, d: '' }), { b: 0, c: undefined, d: '' });
  });
});

/** A valid config of every type, with a base URL field where the type has one. */
const VALID_CONFIGS: Record<string, { config: Record<string, unknown>; baseUrlField?: string }> = {
  arize: { config: { apiKey: 'k', spaceKey: 's', modelId: 'm' }, baseUrlField: 'baseUrl' },
  braintrust: {
    config: { apiKey: 'k', projectId: '6ae68365-7620-4630-921b-bac416634fc8' },
    baseUrlField: 'baseUrl',
  },
  clickhouse: {
    config: { host: 'https://abc.clickhouse.cloud:8443', database: 'db', username: 'default', password: '' },
    baseUrlField: 'host',
  },
  datadog: { config: { apiKey: 'k', mlApp: 'gateway' }, baseUrlField: 'url' },
  grafana: { config: { apiKey: 'k', instanceId: '123456' }, baseUrlField: 'baseUrl' },
  langfuse: { config: { publicKey: 'pk', secretKey: 'sk' }, baseUrlField: 'baseUrl' },
  langsmith: { config: { apiKey: 'k' }, baseUrlField: 'endpoint' },
  newrelic: { config: { licenseKey: 'k' } },
  opik: { config: { apiKey: 'k', workspace: 'w', projectName: 'p' } },
  'otel-collector': { config: { endpoint: 'https://collector:4318/v1/traces' } },
  posthog: { config: { apiKey: 'phc_k' }, baseUrlField: 'endpoint' },
  ramp: { config: { apiKey: 'k' } },
  s3: {
    config: { bucketName: 'traces', accessKeyId: 'a', secretAccessKey: 's' },
    baseUrlField: 'endpoint',
  },
  sentry: {
    config: {
      dsn: 'https://abc@o1.ingest.sentry.io/2',
      otlpEndpoint: 'https://o1.ingest.sentry.io/api/2/integration/otlp/v1/traces',
    },
  },
  snowflake: { config: { account: 'myorg-myaccount', token: 't' } },
  weave: { config: { apiKey: 'k', entity: 'acme', project: 'gateway' }, baseUrlField: 'baseUrl' },
  webhook: { config: { url: 'https://hooks.example.com/in?token=abc' } },
};

function validator(type: string): (config: Record<string, unknown>) => unknown[] {
  const validate = DESTINATION_TYPES.get(type)?.validate;
  assert.ok(validate, `${type} has validate()`);
  return validate;
}

describe('every destination type', () => {
  it('refuses custom headers the HTTP client would refuse', () => {
    assert.deepEqual(Object.keys(VALID_CONFIGS).sort(), [...DESTINATION_TYPES.keys()].sort());
    for (const [type, { config }] of Object.entries(VALID_CONFIGS)) {
      const validate = validator(type);
      assert.deepEqual(validate(config), [], type);
      assert.deepEqual(
        validate({ ...config, headers: { 'X-Ok': 'a\nb' } }),
        [{ field: 'headers', message: 'the value of "X-Ok" contains control characters' }],
        type,
      );
    }
  });

  it('refuses a query in a base URL that paths are appended to', () => {
    for (const [type, { config, baseUrlField }] of Object.entries(VALID_CONFIGS)) {
      if (!baseUrlField) continue;
      const validate = validator(type);
      assert.deepEqual(
        validate({ ...config, [baseUrlField]: 'https://receiver.example.com/?x=1' }),
        [{ field: baseUrlField, message: 'must not carry a query or a fragment' }],
        type,
      );
    }
  });
});
