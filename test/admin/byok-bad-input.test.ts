import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';
import { addWorkspace, providerSecret, storedCredentialsText } from './byok-helpers.js';

const unknownHash = 'f'.repeat(64);
const hashes = (count: number) =>
  Array.from({ length: count }, (_, index) => index.toString(16).padStart(64, '0'));

describe('BYOK credentials refuse bad input with a 400 that names the field, and change nothing', () => {
  let gateway: TestApp;
  let existing: string;
  let otherWorkspaceKeyHash: string;
  const secret = providerSecret();

  before(async () => {
    gateway = await startTestApp();
    const created = await gateway.request('POST', '/api/v1/byok', {
      body: { provider: 'openai', key: secret },
    });
    assert.equal(created.status, 200, created.text);
    existing = created.body.data.id;
    const other = await addWorkspace(gateway, 'Other');
    const otherKey = await gateway.request('POST', '/api/v1/keys', {
      body: { name: 'x', workspace_id: other },
    });
    otherWorkspaceKeyHash = otherKey.body.data.hash;
  });
  after(() => gateway.close());

  const validKey = 'sk-valid-0123456789abcdefghijklmnop';
  const createCases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['missing provider', { key: validKey }, /body\.provider must have required property/],
    ['missing key', { provider: 'openai' }, /body\.key must have required property/],
    [
      'unknown provider',
      { provider: 'no-such-provider', key: validKey },
      /body\.provider must be the slug of a provider in the catalogue/,
    ],
    ['provider variant', { provider: 'openai/eu', key: validKey }, /body\.provider must be the slug/],
    [
      'demo provider',
      { provider: 'switchyard', key: validKey },
      /body\.provider cannot be "switchyard".*demo provider/,
    ],
    ['non-string provider', { provider: 42, key: validKey }, /body\.provider must be string/],
    ['empty key', { provider: 'openai', key: '' }, /body\.key must NOT have fewer than 1 characters/],
    ['key too long', { provider: 'openai', key: 'k'.repeat(4097) }, /body\.key must NOT have more than 4096/],
    [
      'key with a trailing newline',
      { provider: 'openai', key: `${validKey}\n` },
      /body\.key must not start or end with whitespace/,
    ],
    [
      'key with a leading space',
      { provider: 'openai', key: ` ${validKey}` },
      /body\.key must not start or end/,
    ],
    [
      'key with a newline inside',
      { provider: 'openai', key: 'sk-abc\ndef-0123456789' },
      /body\.key must not contain control characters/,
    ],
    ['key with NUL', { provider: 'openai', key: 'sk-abc\u0000def' }, /body\.key must not contain control/],
    ['key with DEL', { provider: 'openai', key: 'sk-abc\u007fdef' }, /body\.key must not contain control/],
    [
      'key with an unpaired surrogate',
      { provider: 'openai', key: 'sk-abc\ud800def-0123456789' },
      /body\.key must not contain unpaired surrogates/,
    ],
    [
      'key with a character past Latin-1',
      { provider: 'openai', key: 'sk-proj-\u2713\u2713abcdefghijklmnopqrstuv' },
      /body\.key must hold only printable Latin-1 characters \(it is sent in an HTTP header\)/,
    ],
    [
      'key with an emoji',
      { provider: 'openai', key: 'sk-\u{1F600}abcdefghijklmnopqrstuvwxyz' },
      /body\.key must hold only printable Latin-1/,
    ],
    ['non-string key', { provider: 'openai', key: 12345 }, /body\.key must be string/],
    ['empty name', { provider: 'openai', key: validKey, name: '' }, /body\.name must NOT have fewer than 1/],
    [
      'blank name',
      { provider: 'openai', key: validKey, name: '\u00a0 ' },
      /body\.name must not be blank \(whitespace only\)/,
    ],
    [
      'name too long',
      { provider: 'openai', key: validKey, name: 'n'.repeat(201) },
      /body\.name must NOT have more than 200/,
    ],
    [
      'negative sort_order',
      { provider: 'openai', key: validKey, sort_order: -1 },
      /body\.sort_order must be >= 0/,
    ],
    [
      'fractional sort_order',
      { provider: 'openai', key: validKey, sort_order: 1.5 },
      /body\.sort_order must be integer/,
    ],
    [
      'sort_order too large',
      { provider: 'openai', key: validKey, sort_order: 1_000_001 },
      /body\.sort_order must be <= 1000000/,
    ],
    [
      'string sort_order',
      { provider: 'openai', key: validKey, sort_order: '1' },
      /body\.sort_order must be integer/,
    ],
    [
      'string disabled',
      { provider: 'openai', key: validKey, disabled: 'true' },
      /body\.disabled must be boolean/,
    ],
    [
      'string is_fallback',
      { provider: 'openai', key: validKey, is_fallback: 1 },
      /body\.is_fallback must be boolean/,
    ],
    [
      'empty allowed_api_key_hashes',
      { provider: 'openai', key: validKey, allowed_api_key_hashes: [] },
      /body\.allowed_api_key_hashes must NOT have fewer than 1 items/,
    ],
    [
      'empty allowed_models',
      { provider: 'openai', key: validKey, allowed_models: [] },
      /body\.allowed_models must NOT have fewer than 1 items/,
    ],
    [
      'empty allowed_user_ids',
      { provider: 'openai', key: validKey, allowed_user_ids: [] },
      /body\.allowed_user_ids must NOT have fewer than 1 items/,
    ],
    [
      'allow-list that is not a list',
      { provider: 'openai', key: validKey, allowed_user_ids: 'user_1' },
      /body\.allowed_user_ids must be array/,
    ],
    [
      'duplicate user ids',
      { provider: 'openai', key: validKey, allowed_user_ids: ['a', 'b', 'a'] },
      /body\.allowed_user_ids must NOT have duplicate items/,
    ],
    [
      'empty user id',
      { provider: 'openai', key: validKey, allowed_user_ids: ['a', ''] },
      /body\.allowed_user_ids\.1 must NOT have fewer than 1 characters/,
    ],
    [
      '1001 user ids',
      { provider: 'openai', key: validKey, allowed_user_ids: hashes(1001) },
      /body\.allowed_user_ids must NOT have more than 1000 items/,
    ],
    [
      'hash that is not 64 hex',
      { provider: 'openai', key: validKey, allowed_api_key_hashes: [unknownHash, 'abc'] },
      /body\.allowed_api_key_hashes\.1 must match pattern/,
    ],
    [
      'hash in upper case',
      { provider: 'openai', key: validKey, allowed_api_key_hashes: ['F'.repeat(64)] },
      /body\.allowed_api_key_hashes\.0 must match pattern/,
    ],
    [
      'unknown model',
      { provider: 'openai', key: validKey, allowed_models: ['openai/no-such-model'] },
      /body\.allowed_models\.0 must be a model id or canonical slug of the catalogue/,
    ],
    [
      'unknown workspace',
      { provider: 'openai', key: validKey, workspace_id: '00000000-0000-4000-8000-000000000000' },
      /body\.workspace_id names no existing workspace/,
    ],
    [
      'malformed workspace_id',
      { provider: 'openai', key: validKey, workspace_id: 'w1' },
      /body\.workspace_id must match format "uuid"/,
    ],
    [
      'unknown field',
      { provider: 'openai', key: validKey, secret: 'x' },
      /body\.secret is not a known field/,
    ],
    ['a masked label as key', { provider: 'openai', key: 'sk-...6789' }, /body\.key is a masked label/],
    ['a fully masked key', { provider: 'openai', key: '********' }, /body\.key is a masked label/],
  ];

  for (const [name, body, expected] of createCases) {
    it(`POST refuses ${name}`, async () => {
      const before = await storedCredentialsText(gateway);
      const response = await gateway.request('POST', '/api/v1/byok', { body });
      assert.match(expectError(response, 400), expected);
      assert.equal(await storedCredentialsText(gateway), before);
    });
  }

  it('POST refuses the demo provider also when the demo provider is switched on', async () => {
    const demo = await startTestApp({ demo: true });
    try {
      const response = await demo.request('POST', '/api/v1/byok', {
        body: { provider: 'switchyard', key: validKey },
      });
      assert.match(expectError(response, 400), /body\.provider cannot be "switchyard"/);
    } finally {
      await demo.close();
    }
  });

  it('POST refuses unknown key hashes and hashes of another workspace in the same words', async () => {
    const messages: string[] = [];
    for (const hash of [unknownHash, otherWorkspaceKeyHash]) {
      const before = await storedCredentialsText(gateway);
      const response = await gateway.request('POST', '/api/v1/byok', {
        body: { provider: 'openai', key: validKey, allowed_api_key_hashes: [hash] },
      });
      messages.push(expectError(response, 400));
      assert.equal(await storedCredentialsText(gateway), before);
    }
    assert.equal(
      messages[0],
      'Invalid request parameters: body.allowed_api_key_hashes.0 names no API key of this workspace',
    );
    assert.equal(messages[1], messages[0]);
  });

  const patchCases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['an empty body', {}, /body must NOT have fewer than 1 properties/],
    [
      'a workspace move',
      { workspace_id: '00000000-0000-4000-8000-000000000000' },
      /body\.workspace_id is not a known field/,
    ],
    ['an unknown provider', { provider: 'nope' }, /body\.provider must be the slug/],
    ['a key with a newline', { key: `${validKey}\n` }, /body\.key must not start or end with whitespace/],
    ['an empty key', { key: '' }, /body\.key must NOT have fewer than 1 characters/],
    ['sort_order -1', { sort_order: -1 }, /body\.sort_order must be >= 0/],
    [
      'an empty allowed_models',
      { allowed_models: [] },
      /body\.allowed_models must NOT have fewer than 1 items/,
    ],
    [
      'an unknown key hash',
      { allowed_api_key_hashes: [unknownHash] },
      /allowed_api_key_hashes\.0 names no API key/,
    ],
    ['a null name', { name: null }, /body\.name must be string/],
    ['a null sort_order', { sort_order: null }, /body\.sort_order must be integer/],
    ["another key's masked label", { key: 'abc...wxyz' }, /body\.key is a masked label/],
    [
      'a provider change without the key',
      { provider: 'deepinfra' },
      /body\.key must be given again when body\.provider changes/,
    ],
    [
      'a key past Latin-1',
      { key: 'sk-\u00e9\u0100abcdefghijklmnopqrstuvwxyz' },
      /body\.key must hold only printable Latin-1/,
    ],
  ];

  for (const [name, body, expected] of patchCases) {
    it(`PATCH refuses ${name}`, async () => {
      const before = await storedCredentialsText(gateway);
      const response = await gateway.request('PATCH', `/api/v1/byok/${existing}`, { body });
      assert.match(expectError(response, 400), expected);
      assert.equal(await storedCredentialsText(gateway), before);
    });
  }

  it('PATCH keeps the stored key when the record read with GET is sent back with its masked label', async () => {
    const record = (await gateway.request('GET', `/api/v1/byok/${existing}`)).body.data;
    assert.match(record.label, /^.{3}\.\.\..{4}$/);
    const sealed = async () =>
      (
        await gateway.services.storage.db
          .selectFrom('byok_credentials')
          .select('secret_ciphertext')
          .where('id', '=', existing)
          .executeTakeFirstOrThrow()
      ).secret_ciphertext;
    const before = await sealed();
    const response = await gateway.request('PATCH', `/api/v1/byok/${existing}`, {
      body: { key: record.label, name: record.name },
    });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.data.label, record.label);
    assert.equal(await sealed(), before);
  });

  it('refuses bad list parameters', async () => {
    for (const [query, expected] of [
      ['limit=0', /querystring\.limit must be >= 1/],
      ['limit=101', /querystring\.limit must be <= 100/],
      ['offset=-1', /querystring\.offset must be >= 0/],
      ['workspace_id=abc', /querystring\.workspace_id must match format "uuid"/],
      [
        'workspace_id=00000000-0000-4000-8000-000000000000',
        /querystring\.workspace_id names no existing workspace/,
      ],
      ['page=2', /querystring\.page is not a known field/],
    ] as const) {
      assert.match(expectError(await gateway.request('GET', `/api/v1/byok?${query}`), 400), expected, query);
    }
  });

  it('stored the one valid credential sealed, and nothing else', async () => {
    const stored = await storedCredentialsText(gateway);
    assert.equal(stored.includes(secret), false);
    const rows = await gateway.services.storage.db.selectFrom('byok_credentials').select('id').execute();
    assert.deepEqual(
      rows.map((row) => row.id),
      [existing],
    );
  });
});
