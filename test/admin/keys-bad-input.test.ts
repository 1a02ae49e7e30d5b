import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { hashApiKey } from '../../src/platform/ids.js';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';

describe('API keys refuse bad input with a 4xx that names the field, and change nothing', () => {
  let gateway: TestApp;
  let existing: string;
  before(async () => {
    gateway = await startTestApp();
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'existing', limit: 5 } });
    existing = created.body.data.hash;
  });
  after(() => gateway.close());

  async function snapshot() {
    const keys = await gateway.services.storage.db
      .selectFrom('api_keys')
      .selectAll()
      .orderBy('hash')
      .execute();
    return JSON.stringify(keys);
  }

  const createCases: Array<[string, unknown, RegExp]> = [
    ['missing name', {}, /body\.name/],
    ['empty name', { name: '' }, /body\.name must NOT have fewer than 1 characters/],
    ['non-string name', { name: 42 }, /body\.name must be string/],
    ['negative limit', { name: 'a', limit: -1 }, /body\.limit/],
    ['non-numeric limit', { name: 'a', limit: 'ten' }, /body\.limit/],
    ['numeric string limit', { name: 'a', limit: '10' }, /body\.limit/],
    [
      'a positive limit under one nano-dollar (it would be stored as 0)',
      { name: 'a', limit: 5e-324 },
      /body\.limit must be 0 or at least 0\.000000001/,
    ],
    ['huge limit', { name: 'a', limit: 1e300 }, /body\.limit/],
    [
      'unknown limit_reset',
      { name: 'a', limit_reset: 'hourly' },
      /body\.limit_reset must be one of: daily, weekly, monthly, null/,
    ],
    ['NUL in name', { name: 'a\u0000b' }, /body\.name must not contain NUL characters/],
    ['a blank name', { name: ' \t ' }, /body\.name must not be blank \(whitespace only\)/],
    ['NUL in creator_user_id', { name: 'a', creator_user_id: '\u0000' }, /body\.creator_user_id/],
    ['empty expires_at', { name: 'a', expires_at: '' }, /expires_at .*UTC/],
    [
      'expires_at on February 30',
      { name: 'a', expires_at: '2099-02-30T00:00:00Z' },
      /expires_at is not a valid date/,
    ],
    [
      'expires_at at 24:00',
      { name: 'a', expires_at: '2099-01-01T24:00:00Z' },
      /expires_at is not a valid date/,
    ],
    ['expires_at with +02:00', { name: 'a', expires_at: '2099-01-01T00:00:00+02:00' }, /expires_at .*UTC/],
    ['expires_at without timezone', { name: 'a', expires_at: '2099-01-01T00:00:00' }, /expires_at .*UTC/],
    ['expires_at without seconds', { name: 'a', expires_at: '2099-01-01T00:00Z' }, /expires_at/],
    ['expires_at not a date', { name: 'a', expires_at: '2099-13-45T99:00:00Z' }, /expires_at/],
    [
      'expires_at in the past',
      { name: 'a', expires_at: '2001-01-01T00:00:00Z' },
      /expires_at must be in the future/,
    ],
    [
      'unknown workspace_id',
      { name: 'a', workspace_id: '00000000-0000-4000-8000-000000000000' },
      /workspace_id/,
    ],
    [
      'non-uuid workspace_id',
      { name: 'a', workspace_id: 'default' },
      /body\.workspace_id must match format "uuid"/,
    ],
    ['empty creator_user_id', { name: 'a', creator_user_id: '' }, /body\.creator_user_id/],
    ['unknown field', { name: 'a', limt: 5 }, /body\.limt is not a known field/],
    ['array instead of object', [{ name: 'a' }], /body must be object/],
    ['null body', null, /body must be object/],
  ];

  for (const [label, body, message] of createCases) {
    it(`POST /keys: ${label} → 400`, async () => {
      const before = await snapshot();
      const response = await gateway.request('POST', '/api/v1/keys', {
        rawBody: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      assert.match(expectError(response, 400), message);
      assert.equal(await snapshot(), before);
    });
  }

  const updateCases: Array<[string, unknown, RegExp]> = [
    ['empty body', {}, /body must NOT have fewer than 1 properties/],
    ['empty name', { name: '' }, /body\.name/],
    ['NUL in name', { name: '\u0000' }, /body\.name must not contain NUL characters/],
    ['a blank name', { name: '   ' }, /body\.name must not be blank \(whitespace only\)/],
    ['negative limit', { limit: -0.01 }, /body\.limit/],
    [
      'a positive limit under one nano-dollar',
      { limit: 4e-10 },
      /body\.limit must be 0 or at least 0\.000000001/,
    ],
    ['string disabled', { disabled: 'yes' }, /body\.disabled must be boolean/],
    ['unknown limit_reset', { limit_reset: 'yearly' }, /body\.limit_reset/],
    [
      'expires_at is not patchable',
      { expires_at: '2099-01-01T00:00:00Z' },
      /body\.expires_at is not a known field/,
    ],
  ];
  for (const [label, body, message] of updateCases) {
    it(`PATCH /keys/{hash}: ${label} → 400`, async () => {
      const before = await snapshot();
      const response = await gateway.request('PATCH', `/api/v1/keys/${existing}`, { body });
      assert.match(expectError(response, 400), message);
      assert.equal(await snapshot(), before);
    });
  }

  it('the calling key cannot disable or delete itself (that would lock its caller out), and nothing changes', async () => {
    const own = hashApiKey(gateway.managementKey);
    const before = await snapshot();
    assert.match(
      expectError(await gateway.request('PATCH', `/api/v1/keys/${own}`, { body: { disabled: true } }), 400),
      /body\.disabled: a key cannot disable itself/,
    );
    assert.match(
      expectError(await gateway.request('DELETE', `/api/v1/keys/${own}`), 409),
      /a key cannot delete itself/i,
    );
    assert.equal(await snapshot(), before);
    // It still works, and may still change what does not lock it out.
    assert.equal((await gateway.request('GET', '/api/v1/keys')).status, 200);
    const renamed = await gateway.request('PATCH', `/api/v1/keys/${own}`, {
      body: { name: 'still me', disabled: false },
    });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.data.name, 'still me');
    // Another key is disabled and deleted by it as before.
    const other = await gateway.request('POST', '/api/v1/keys', { body: { name: 'other' } });
    const hash = other.body.data.hash;
    assert.equal(
      (await gateway.request('PATCH', `/api/v1/keys/${hash}`, { body: { disabled: true } })).status,
      200,
    );
    assert.equal((await gateway.request('DELETE', `/api/v1/keys/${hash}`)).status, 200);
  });

  it('a body with a Content-Encoding → 415 naming it, whether or not it is really compressed; nothing is created', async () => {
    const before = await snapshot();
    for (const [encoding, body] of [
      ['gzip', JSON.stringify({ name: 'labelled' })],
      ['gzip', gzipSync(JSON.stringify({ name: 'compressed' }))],
      ['br, gzip', JSON.stringify({ name: 'listed' })],
    ] as const) {
      const response = await fetch(`${gateway.url}/api/v1/keys`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${gateway.managementKey}`,
          'content-type': 'application/json',
          'content-encoding': encoding,
        },
        body,
      });
      const text = await response.text();
      assert.equal(response.status, 415, text);
      assert.match(
        JSON.parse(text).error.message,
        new RegExp(`Content-Encoding "${encoding}" is not supported`),
      );
    }
    assert.equal(await snapshot(), before);
  });

  it('a body that is not UTF-8 → 400 naming the rule; nothing is created, not even with U+FFFD in its name', async () => {
    const before = await snapshot();
    const response = await fetch(`${gateway.url}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.managementKey}`, 'content-type': 'application/json' },
      // "Café" in Latin-1.
      body: Buffer.from([...Buffer.from('{"name":"Caf'), 0xe9, ...Buffer.from('"}')]),
    });
    const text = await response.text();
    assert.equal(response.status, 400, text);
    assert.match(JSON.parse(text).error.message, /body must be valid UTF-8/);
    assert.equal(await snapshot(), before);
  });

  it('path hashes that are not 64 hex characters → 400 naming the parameter', async () => {
    for (const path of [
      '/api/v1/keys/not-a-hash',
      `/api/v1/keys/${'A'.repeat(64)}`,
      `/api/v1/keys/${existing}0`,
    ]) {
      assert.match(expectError(await gateway.request('GET', path), 400), /params\.hash/);
    }
    const before = await snapshot();
    expectError(await gateway.request('DELETE', '/api/v1/keys/xyz'), 400);
    assert.equal(await snapshot(), before);
  });

  it('list parameters: offset < 0, a non-integer offset, a bad include_disabled, a bad or unknown workspace_id', async () => {
    assert.match(
      expectError(await gateway.request('GET', '/api/v1/keys?offset=-1'), 400),
      /querystring\.offset must be >= 0/,
    );
    assert.match(
      expectError(await gateway.request('GET', '/api/v1/keys?offset=abc'), 400),
      /querystring\.offset must be integer/,
    );
    assert.match(
      expectError(await gateway.request('GET', '/api/v1/keys?include_disabled=maybe'), 400),
      /querystring\.include_disabled/,
    );
    assert.match(
      expectError(await gateway.request('GET', '/api/v1/keys?workspace_id=nope'), 400),
      /querystring\.workspace_id/,
    );
    assert.match(
      expectError(
        await gateway.request('GET', '/api/v1/keys?workspace_id=00000000-0000-4000-8000-000000000000'),
        400,
      ),
      /workspace_id names no existing workspace/,
    );
    assert.match(
      expectError(await gateway.request('GET', '/api/v1/keys?limit=5'), 400),
      /querystring\.limit is not a known field/,
    );
  });
});
