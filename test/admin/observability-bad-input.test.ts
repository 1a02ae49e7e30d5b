import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DESTINATION_TYPE_NAMES } from '../../src/broadcast/destination-types.js';
import { expectError, type TestApp } from '../helpers/test-app.js';
import {
  createDestination,
  DESTINATIONS,
  langfuseConfig,
  startObservabilityGateway,
  startWebhookEndpoint,
  storedDestinationsText,
  type WebhookEndpoint,
} from './observability-helpers.js';

const hashes = (count: number) =>
  Array.from({ length: count }, (_, index) => index.toString(16).padStart(64, '0'));
const headers = (count: number) =>
  Object.fromEntries(Array.from({ length: count }, (_, index) => [`X-Custom-${index}`, 'value']));
const rule = (value: Record<string, unknown>) => ({ groups: [{ rules: [value] }] });
const RULES = 'body\\.filter_rules\\.groups\\.0\\.rules\\.0';

/** Field-level refusals both a create (with a valid langfuse base) and a PATCH give. */
const sharedCases: Array<[string, Record<string, unknown>, RegExp]> = [
  ['empty name', { name: '' }, /body\.name must NOT have fewer than 1 characters/],
  ['blank name', { name: ' \t ' }, /body\.name must have 1 to 255 characters once trimmed/],
  ['name too long', { name: 'n'.repeat(256) }, /body\.name must have 1 to 255 characters once trimmed/],
  ['name too long as sent', { name: ' '.repeat(1025) }, /body\.name must NOT have more than 1024 characters/],
  [
    'name with NUL',
    { name: 'a\u0000b' },
    /body\.name must not contain NUL characters or unpaired surrogates/,
  ],
  ['name with an unpaired surrogate', { name: 'a\ud800b' }, /body\.name must not contain NUL/],
  ['numeric name', { name: 42 }, /body\.name must be string/],
  ['string enabled', { enabled: 'true' }, /body\.enabled must be boolean/],
  ['empty api_key_hashes', { api_key_hashes: [] }, /body\.api_key_hashes must NOT have fewer than 1 items/],
  ['malformed key hash', { api_key_hashes: ['abc'] }, /body\.api_key_hashes\.0 must match pattern/],
  ['upper-case key hash', { api_key_hashes: ['A'.repeat(64)] }, /body\.api_key_hashes\.0 must match pattern/],
  [
    'too many key hashes',
    { api_key_hashes: hashes(1001) },
    /body\.api_key_hashes must NOT have more than 1000 items/,
  ],
  ['string api_key_hashes', { api_key_hashes: 'f'.repeat(64) }, /body\.api_key_hashes must be array/],
  [
    'numeric broadcast flag',
    { broadcast_generation_cost: 1 },
    /body\.broadcast_generation_cost must be boolean/,
  ],
  [
    'string identity flag',
    { broadcast_generation_identity: 'yes' },
    /body\.broadcast_generation_identity must be boolean/,
  ],
  [
    'null request-context flag',
    { broadcast_generation_request_context: null },
    /body\.broadcast_generation_request_context must be boolean/,
  ],
  ['string privacy_mode', { privacy_mode: 'no' }, /body\.privacy_mode must be boolean/],
  ['empty regions', { regions: [] }, /body\.regions must NOT have fewer than 1 items/],
  ['unknown region', { regions: ['mars'] }, /body\.regions\.0 must be one of: global, europe, us, eu/],
  ['regions as a string', { regions: 'global' }, /body\.regions must be array/],
  ['null regions', { regions: null }, /body\.regions must be array/],
  ['sampling_rate 0', { sampling_rate: 0 }, /body\.sampling_rate must be >= 0\.0001/],
  ['sampling_rate below the minimum', { sampling_rate: 0.00009 }, /body\.sampling_rate must be >= 0\.0001/],
  ['sampling_rate above 1', { sampling_rate: 1.5 }, /body\.sampling_rate must be <= 1/],
  ['string sampling_rate', { sampling_rate: '1' }, /body\.sampling_rate must be number/],
  ['unknown field', { colour: 'blue' }, /body\.colour is not a known field/],
  ['filter_rules as a list', { filter_rules: [] }, /body\.filter_rules must be object/],
  [
    'filter_rules without groups',
    { filter_rules: { enabled: true } },
    /body\.filter_rules\.groups must have required/,
  ],
  [
    'no groups',
    { filter_rules: { groups: [] } },
    /body\.filter_rules\.groups must NOT have fewer than 1 items/,
  ],
  [
    'too many groups',
    {
      filter_rules: {
        groups: Array.from({ length: 11 }, () => ({ rules: [{ field: 'model', operator: 'exists' }] })),
      },
    },
    /body\.filter_rules\.groups must NOT have more than 10 items/,
  ],
  [
    'a group without rules',
    { filter_rules: { groups: [{ rules: [] }] } },
    /body\.filter_rules\.groups\.0\.rules must NOT have fewer than 1 items/,
  ],
  [
    'too many rules',
    {
      filter_rules: {
        groups: [{ rules: Array.from({ length: 21 }, () => ({ field: 'model', operator: 'exists' })) }],
      },
    },
    /body\.filter_rules\.groups\.0\.rules must NOT have more than 20 items/,
  ],
  [
    'unknown logic',
    { filter_rules: { groups: [{ logic: 'xor', rules: [{ field: 'model', operator: 'exists' }] }] } },
    /body\.filter_rules\.groups\.0\.logic must be one of: and, or/,
  ],
  [
    'string filter enabled',
    { filter_rules: { enabled: 'yes', groups: [] } },
    /body\.filter_rules\.enabled must be boolean/,
  ],
  [
    'unknown rule field',
    { filter_rules: rule({ field: 'cost', operator: 'exists' }) },
    new RegExp(`${RULES}\\.field must be one of: model, provider`),
  ],
  [
    'unknown operator',
    { filter_rules: rule({ field: 'model', operator: 'like', value: 'x' }) },
    new RegExp(`${RULES}\\.operator must be one of: equals`),
  ],
  [
    'unknown rule property',
    { filter_rules: rule({ field: 'model', operator: 'exists', negate: true }) },
    new RegExp(`${RULES}\\.negate is not a known field`),
  ],
  [
    'a value for exists',
    { filter_rules: rule({ field: 'model', operator: 'exists', value: 'x' }) },
    new RegExp(`${RULES}\\.value must be omitted: exists takes no value`),
  ],
  [
    'a value for not_exists',
    { filter_rules: rule({ field: 'user_id', operator: 'not_exists', value: 1 }) },
    new RegExp(`${RULES}\\.value must be omitted`),
  ],
  [
    'no value for equals',
    { filter_rules: rule({ field: 'model', operator: 'equals' }) },
    new RegExp(`${RULES}\\.value is required by operator equals`),
  ],
  [
    'gt on a text field',
    { filter_rules: rule({ field: 'model', operator: 'gt', value: 1 }) },
    new RegExp(`${RULES}\\.value cannot be compared with gt: model is not a numeric field`),
  ],
  [
    'gte with a string',
    { filter_rules: rule({ field: 'total_cost', operator: 'gte', value: '0.5' }) },
    new RegExp(`${RULES}\\.value must be a finite number`),
  ],
  [
    'contains on a numeric field',
    { filter_rules: rule({ field: 'total_tokens', operator: 'contains', value: '1' }) },
    new RegExp(`${RULES}\\.value cannot be matched with contains: total_tokens is a numeric field`),
  ],
  [
    'starts_with a number',
    { filter_rules: rule({ field: 'model', operator: 'starts_with', value: 4 }) },
    new RegExp(`${RULES}\\.value must be a string`),
  ],
  [
    'equals a number on a text field',
    { filter_rules: rule({ field: 'finish_reason', operator: 'equals', value: 1 }) },
    new RegExp(`${RULES}\\.value must be a string`),
  ],
  [
    'equals a string on a numeric field',
    { filter_rules: rule({ field: 'prompt_tokens', operator: 'not_equals', value: '5' }) },
    new RegExp(`${RULES}\\.value must be a finite number`),
  ],
  [
    'a boolean value',
    { filter_rules: rule({ field: 'model', operator: 'equals', value: true }) },
    new RegExp(`${RULES}\\.value must be string,number`),
  ],
  [
    'a value too long',
    { filter_rules: rule({ field: 'input', operator: 'contains', value: 'x'.repeat(1001) }) },
    new RegExp(`${RULES}\\.value must NOT have more than 1000 characters`),
  ],
  [
    'a value with NUL',
    { filter_rules: rule({ field: 'input', operator: 'contains', value: 'a\u0000' }) },
    new RegExp(`${RULES}\\.value must not contain NUL`),
  ],
  [
    'an invalid regex',
    { filter_rules: rule({ field: 'output', operator: 'regex', value: '(unclosed' }) },
    new RegExp(
      `${RULES}\\.value is refused \\(invalid_regex_pattern\\): the pattern is not a valid JavaScript regular expression`,
    ),
  ],
  [
    'a regex that backtracks catastrophically',
    {
      filter_rules: {
        groups: [
          { rules: [{ field: 'model', operator: 'exists' }] },
          {
            rules: [
              { field: 'model', operator: 'exists' },
              { field: 'input', operator: 'regex', value: '^(a+)+$' },
            ],
          },
        ],
      },
    },
    /body\.filter_rules\.groups\.1\.rules\.1\.value is refused \(invalid_regex_pattern\): .*can backtrack catastrophically/,
  ],
];

/**
 * A value nested `levels` deep (`[[[…]]]`, or `{"a":{"a":…}}`): past the config bound (8), within
 * the body's (128, src/platform/json-depth.ts), so the config's own rule answers.
 */
const nested = (levels: number, kind: 'array' | 'object' = 'array'): unknown => {
  let value: unknown = kind === 'array' ? [] : {};
  for (let level = 1; level < levels; level += 1) value = kind === 'array' ? [value] : { a: value };
  return value;
};
const TOO_DEEP = /must not nest more than 8 levels deep/;

/** Config refusals (for a langfuse destination unless the case names another type). */
const configCases: Array<[string, string, Record<string, unknown>, RegExp]> = [
  [
    'an unknown field nesting arrays 100 deep',
    'langfuse',
    { ...langfuseConfig(), zzz: nested(100) },
    /body\.config\.zzz(\.0){8} must not nest more than 8 levels deep/,
  ],
  [
    'a header nesting objects 100 deep',
    'langfuse',
    { ...langfuseConfig(), headers: { 'X-A': nested(100, 'object') } },
    /body\.config\.headers\.X-A(\.a){7} must not nest more than 8 levels deep/,
  ],
  ['a config field nesting 9 levels', 'langfuse', { ...langfuseConfig(), baseUrl: nested(9) }, TOO_DEEP],
  [
    'a required field missing',
    'langfuse',
    { publicKey: 'pk-lf-1234567890' },
    /body\.config\.secretKey must have required property 'secretKey'/,
  ],
  [
    'a field of the wrong type',
    'langfuse',
    { ...langfuseConfig(), secretKey: 42 },
    /body\.config\.secretKey must be string/,
  ],
  [
    'an empty secret',
    'langfuse',
    { ...langfuseConfig(), secretKey: '' },
    /body\.config\.secretKey must NOT have fewer than 1 characters/,
  ],
  [
    'an unknown config field',
    'langfuse',
    { ...langfuseConfig(), region: 'eu' },
    /body\.config\.region is not a known field for this type/,
  ],
  [
    'a malformed URL',
    'langfuse',
    { ...langfuseConfig(), baseUrl: 'not a url' },
    /body\.config\.baseUrl must match format "uri"/,
  ],
  [
    'a URL of another scheme',
    'langfuse',
    { ...langfuseConfig(), baseUrl: 'ftp://langfuse.example.com' },
    /body\.config\.baseUrl must be an http or https URL/,
  ],
  [
    'credentials in a URL',
    'webhook',
    { url: 'https://user:pass@hooks.example.com/in' },
    /body\.config\.url must not carry credentials in the URL/,
  ],
  [
    'a webhook without url',
    'webhook',
    { method: 'POST' },
    /body\.config\.url must have required property 'url'/,
  ],
  [
    'a webhook method',
    'webhook',
    { url: 'https://hooks.example.com/in', method: 'PATCH' },
    /body\.config\.method must be one of: POST, PUT/,
  ],
  [
    'a newrelic region',
    'newrelic',
    { licenseKey: 'k'.repeat(20), region: 'EU' },
    /body\.config\.region must be one of: us, eu/,
  ],
  [
    'headers as a list',
    'langfuse',
    { ...langfuseConfig(), headers: ['X-A: 1'] },
    /body\.config\.headers must be object/,
  ],
  [
    'a header value not text',
    'langfuse',
    { ...langfuseConfig(), headers: { 'X-A': 1 } },
    /body\.config\.headers\.X-A must be string/,
  ],
  [
    'too many headers',
    'langfuse',
    { ...langfuseConfig(), headers: headers(21) },
    /body\.config\.headers must not have more than 20 headers/,
  ],
  [
    'an invalid header name',
    'langfuse',
    { ...langfuseConfig(), headers: { 'X Team': 'a' } },
    /body\.config\.headers\.X Team is not a valid HTTP header name/,
  ],
  [
    'a Host header',
    'langfuse',
    { ...langfuseConfig(), headers: { Host: 'evil.example.com' } },
    /body\.config\.headers\.Host cannot be set/,
  ],
  [
    'a Content-Length header',
    'langfuse',
    { ...langfuseConfig(), headers: { 'content-length': '0' } },
    /body\.config\.headers\.content-length cannot be set/,
  ],
  [
    'a Transfer-Encoding header',
    'langfuse',
    { ...langfuseConfig(), headers: { 'Transfer-Encoding': 'chunked' } },
    /body\.config\.headers\.Transfer-Encoding cannot be set/,
  ],
  [
    'a hop-by-hop header',
    'langfuse',
    { ...langfuseConfig(), headers: { Connection: 'close' } },
    /body\.config\.headers\.Connection cannot be set/,
  ],
  [
    'a header given twice',
    'langfuse',
    { ...langfuseConfig(), headers: { 'X-A': '1', 'x-a': '2' } },
    /body\.config\.headers\.x-a is given twice/,
  ],
  [
    'a header value too long',
    'langfuse',
    { ...langfuseConfig(), headers: { 'X-A': 'v'.repeat(4097) } },
    /body\.config\.headers\.X-A must NOT have more than 4096 characters/,
  ],
  [
    'a header value with a newline',
    'langfuse',
    { ...langfuseConfig(), headers: { 'X-A': 'a\r\nX-Injected: 1' } },
    /body\.config\.headers\.X-A must not contain control characters/,
  ],
  [
    'a header value beyond Latin-1',
    'langfuse',
    { ...langfuseConfig(), headers: { 'X-A': 'ok \u2603' } },
    /body\.config\.headers\.X-A must not contain control characters or characters above U\+00FF/,
  ],
];

describe('observability destinations refuse bad input with a 400 that names the field, and change nothing', () => {
  let gateway: TestApp;
  let existing: Record<string, any>;
  let snapshot: string;
  const base = () => ({ type: 'langfuse', name: 'valid', config: langfuseConfig() });

  before(async () => {
    gateway = await startObservabilityGateway();
    existing = await createDestination(gateway, {
      ...base(),
      api_key_hashes: ['e'.repeat(64)],
      regions: ['us'],
    });
    snapshot = await storedDestinationsText(gateway);
  });
  after(async () => {
    await gateway?.close();
  });

  async function expectUnchanged(what: string): Promise<void> {
    assert.equal(await storedDestinationsText(gateway), snapshot, `${what} changed something`);
  }

  it('POST: every field of spec 4.5 violated once', async () => {
    const createOnly: Array<[string, Record<string, unknown>, RegExp]> = [
      ['missing type', { name: 'x', config: {} }, /body\.type must have required property 'type'/],
      [
        'missing name',
        { type: 'langfuse', config: langfuseConfig() },
        /body\.name must have required property 'name'/,
      ],
      [
        'missing config',
        { type: 'langfuse', name: 'x' },
        /body\.config must have required property 'config'/,
      ],
      ['null config', { ...base(), config: null }, /body\.config must be object/],
      ['config as a string', { ...base(), config: 'langfuse' }, /body\.config must be object/],
      [
        'workspace_id not a UUID',
        { ...base(), workspace_id: 'default' },
        /body\.workspace_id must match format "uuid"/,
      ],
    ];
    for (const [what, body, pattern] of createOnly) {
      const response = await gateway.request('POST', DESTINATIONS, { body });
      assert.match(expectError(response, 400), pattern, what);
    }
    for (const [what, fields, pattern] of sharedCases) {
      const response = await gateway.request('POST', DESTINATIONS, { body: { ...base(), ...fields } });
      assert.match(expectError(response, 400), pattern, what);
    }
    await expectUnchanged('a refused create');
  });

  it('POST: an unknown type is refused with the 17 accepted values', async () => {
    for (const type of ['bigquery', 'Langfuse', 'raindrop', '']) {
      const response = await gateway.request('POST', DESTINATIONS, { body: { ...base(), type } });
      const message = expectError(response, 400);
      assert.match(message, /body\.type must be one of: /, type);
      const listed = message.replace(/^.*must be one of: /, '').split(', ');
      assert.deepEqual(listed, [...DESTINATION_TYPE_NAMES]);
      assert.equal(listed.length, 17);
    }
    await expectUnchanged('an unknown type');
  });

  it('POST: configs that their type refuses', async () => {
    for (const [what, type, config, pattern] of configCases) {
      const response = await gateway.request('POST', DESTINATIONS, { body: { type, name: 'x', config } });
      assert.match(expectError(response, 400), pattern, what);
    }
    await expectUnchanged('a refused config');
  });

  it('PATCH: every field violated once, plus what a PATCH may not do', async () => {
    const path = `${DESTINATIONS}/${existing.id}`;
    const patchOnly: Array<[string, Record<string, unknown>, RegExp]> = [
      ['an empty body', {}, /body must NOT have fewer than 1 properties/],
      ['a new type', { type: 'posthog' }, /body\.type is not a known field/],
      [
        'another workspace',
        { workspace_id: existing.workspace_id },
        /body\.workspace_id is not a known field/,
      ],
      ['null config', { config: null }, /body\.config must be object/],
      ['null name', { name: null }, /body\.name must be string/],
      ['null enabled', { enabled: null }, /body\.enabled must be boolean/],
      ['null sampling_rate', { sampling_rate: null }, /body\.sampling_rate must be number/],
      [
        'a required config field removed',
        { config: { secretKey: null } },
        /body\.config\.secretKey must have required property/,
      ],
      [
        'an empty secret',
        { config: { publicKey: '' } },
        /body\.config\.publicKey must NOT have fewer than 1 characters/,
      ],
      ['an unknown config field', { config: { project: 'x' } }, /body\.config\.project is not a known field/],
      [
        'a malformed URL',
        { config: { baseUrl: 'langfuse.example.com/no-scheme' } },
        /body\.config\.baseUrl must match format "uri"/,
      ],
      [
        'a forbidden header',
        { config: { headers: { Host: 'x' } } },
        /body\.config\.headers\.Host cannot be set/,
      ],
      [
        'a header value not text',
        { config: { headers: { 'X-A': 5 } } },
        /body\.config\.headers\.X-A must be string/,
      ],
      ['a config field nesting arrays 100 deep', { config: { baseUrl: nested(100) } }, TOO_DEEP],
      [
        'a header nesting objects 100 deep',
        { config: { headers: { 'X-A': nested(100, 'object') } } },
        /body\.config\.headers\.X-A(\.a){7} must not nest/,
      ],
    ];
    for (const [what, body, pattern] of [...patchOnly, ...sharedCases]) {
      const response = await gateway.request('PATCH', path, { body });
      assert.match(expectError(response, 400), pattern, what);
    }
    await expectUnchanged('a refused PATCH');
  });

  it('queries: paging, workspace and status', async () => {
    const cases: Array<[string, RegExp]> = [
      [`${DESTINATIONS}?offset=-1`, /querystring\.offset must be >= 0/],
      [`${DESTINATIONS}?limit=0`, /querystring\.limit must be >= 1/],
      [`${DESTINATIONS}?limit=101`, /querystring\.limit must be <= 100/],
      [`${DESTINATIONS}?limit=ten`, /querystring\.limit must be integer/],
      [`${DESTINATIONS}?limit=0x1`, /querystring\.limit must be a decimal number, got "0x1"/],
      [`${DESTINATIONS}?limit=0b10`, /querystring\.limit must be a decimal number/],
      [`${DESTINATIONS}?limit=1e0`, /querystring\.limit must be a decimal number/],
      [`${DESTINATIONS}?limit=%201`, /querystring\.limit must be a decimal number, got " 1"/],
      [`${DESTINATIONS}?limit=1&limit=2`, /querystring\.limit is given more than once/],
      [`${DESTINATIONS}?workspace_id=default`, /querystring\.workspace_id must match format "uuid"/],
      [`${DESTINATIONS}?type=langfuse`, /querystring\.type is not a known field/],
      [
        `${DESTINATIONS}/${existing.id}/deliveries?status=failed`,
        /querystring\.status must be one of: dead, pending/,
      ],
      [`${DESTINATIONS}/${existing.id}/deliveries?limit=101`, /querystring\.limit must be <= 100/],
      [`${DESTINATIONS}/${existing.id}/deliveries?offset=-5`, /querystring\.offset must be >= 0/],
    ];
    for (const [path, pattern] of cases) {
      assert.match(expectError(await gateway.request('GET', path), 400), pattern, path);
    }
    const defaults = await gateway.request('GET', DESTINATIONS);
    assert.equal(defaults.status, 200);
    assert.equal(defaults.body.total_count, 1);
  });

  it('a workspace_id naming no workspace is a 400 for the organization key', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const created = await gateway.request('POST', DESTINATIONS, {
      body: { ...base(), workspace_id: missing },
    });
    assert.match(expectError(created, 400), /body\.workspace_id names no existing workspace/);
    const listed = await gateway.request('GET', `${DESTINATIONS}?workspace_id=${missing}`);
    assert.match(expectError(listed, 400), /querystring\.workspace_id names no existing workspace/);
    await expectUnchanged('a missing workspace');
  });
});

describe('with allow_private_networks off, destinations cannot point into private networks', () => {
  let gateway: TestApp;
  let endpoint: WebhookEndpoint;

  before(async () => {
    gateway = await startObservabilityGateway({ allowPrivateNetworks: false });
    endpoint = await startWebhookEndpoint();
  });
  after(async () => {
    await endpoint?.receiver.close();
    await gateway?.close();
  });

  it('refuses loopback, private and link-local addresses, naming the field, before any request', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['webhook', { url: endpoint.url }, /body\.config\.url points to a non-public address/],
      ['webhook', { url: 'http://localhost:8080/hook' }, /body\.config\.url points to a non-public address/],
      [
        'otel-collector',
        { endpoint: 'http://10.0.0.7:4318/v1/traces' },
        /body\.config\.endpoint points to a non-public address/,
      ],
      [
        'otel-collector',
        { endpoint: 'http://[::1]:4318/v1/traces' },
        /body\.config\.endpoint points to a non-public address/,
      ],
      [
        'langfuse',
        { ...langfuseConfig(), baseUrl: 'http://169.254.169.254' },
        /body\.config\.baseUrl points to a non-public address/,
      ],
    ];
    for (const [type, config, pattern] of cases) {
      const response = await gateway.request('POST', DESTINATIONS, {
        body: { type, name: 'internal', config },
      });
      assert.match(expectError(response, 400), pattern, JSON.stringify(config));
    }
    assert.equal(endpoint.receiver.requests.length, 0, 'no connection test reached the private address');
    assert.equal(await storedDestinationsText(gateway), '[]');

    // The same refusal when a PATCH moves a public destination inward.
    const record = await createDestination(gateway, {
      type: 'langfuse',
      name: 'public',
      config: langfuseConfig(),
    });
    const moved = await gateway.request('PATCH', `${DESTINATIONS}/${record.id}`, {
      body: { config: { baseUrl: 'http://192.168.1.10:3000' } },
    });
    assert.match(expectError(moved, 400), /body\.config\.baseUrl points to a non-public address/);
  });
});
