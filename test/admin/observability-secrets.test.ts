import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { maskSecretValue, openDestinationConfig } from '../../src/admin/observability/destination-config.js';
import { startReceiver } from '../helpers/broadcast-fixtures.js';
import { isolatedDatabase, startTestApp, type TestApp } from '../helpers/test-app.js';
import {
  createDestination,
  DESTINATIONS,
  destinationRow,
  langfuseConfig,
  startObservabilityGateway,
  vendorSecret,
} from './observability-helpers.js';

const expectError = (response: { status: number; body: any; text: string }, status: number): string => {
  assert.equal(response.status, status, response.text);
  return response.body.error.message;
};

/**
 * Stored secrets stay with the address they were given for: a key that may edit a destination cannot
 * point it at a receiver of its own and have the gateway send the credentials there, nor read them
 * back from a receiver's echoed error. Config strings cannot hold what would break every delivery.
 */
describe('observability destination secrets and config strings', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startObservabilityGateway();
  });
  after(async () => {
    await gateway.close();
  });

  it('refuses to move a destination to another address unless its secrets are given again', async () => {
    const config = { ...langfuseConfig(), baseUrl: 'https://us.cloud.langfuse.com' };
    const created = await createDestination(gateway, { type: 'langfuse', name: 'lf', config });
    const thief = await startReceiver(() => ({ status: 200, body: { data: [] } }));
    try {
      const moved = await gateway.request('PATCH', `${DESTINATIONS}/${created.id}`, {
        body: { config: { baseUrl: thief.url } },
      });
      assert.match(
        expectError(moved, 400),
        /body\.config\.publicKey must be given again when the destination's address changes/,
      );
      // Sending the masked values back is not giving them again.
      const maskedBack = await gateway.request('PATCH', `${DESTINATIONS}/${created.id}`, {
        body: { config: { ...created.config, baseUrl: thief.url } },
      });
      expectError(maskedBack, 400);
      const row = await destinationRow(gateway, created.id);
      assert.equal(JSON.parse(row.config).baseUrl, 'https://us.cloud.langfuse.com', 'nothing changed');
      const tested = await gateway.request('POST', `${DESTINATIONS}/${created.id}/test`);
      assert.equal(tested.status, 200);
      assert.equal(thief.requests.length, 0, 'no credential reached the new address');
      // With both keys given again, the move is accepted.
      const fresh = langfuseConfig();
      const accepted = await gateway.request('PATCH', `${DESTINATIONS}/${created.id}`, {
        body: { config: { ...fresh, baseUrl: thief.url } },
      });
      assert.equal(accepted.status, 200, accepted.text);
      // Changing a field other than the address keeps the secrets, as spec 4.5 rule 4 says.
      const renamed = await gateway.request('PATCH', `${DESTINATIONS}/${created.id}`, {
        body: { name: 'lf 2' },
      });
      assert.equal(renamed.status, 200, renamed.text);
    } finally {
      await thief.close();
    }
  });

  it('takes the secrets out of a receiver answer shown by the connection test', async () => {
    const echo = await startReceiver((request) => ({
      status: 401,
      body: { error: `bad key ${request.headers.authorization} ${request.headers['x-extra']}` },
    }));
    try {
      const config = {
        ...langfuseConfig(),
        baseUrl: echo.url,
        headers: { 'X-Extra': 'extra-secret-header-value' },
      };
      const created = await createDestination(gateway, { type: 'langfuse', name: 'echoed', config });
      const tested = await gateway.request('POST', `${DESTINATIONS}/${created.id}/test`);
      assert.equal(tested.status, 200, tested.text);
      assert.equal(tested.body.data.ok, false);
      const basic = Buffer.from(`${config.publicKey}:${config.secretKey}`).toString('base64');
      assert.ok(!tested.text.includes(basic), tested.text);
      assert.ok(!tested.text.includes(config.secretKey));
      assert.ok(!tested.text.includes('extra-secret-header-value'));
      assert.match(tested.body.data.error, /\[secret\]/);
    } finally {
      await echo.close();
    }
  });

  it("takes out the secrets a type sends in a form of its own: Weave's Basic pair, Sentry's DSN key", async () => {
    const echo = await startReceiver((request) => ({
      status: 401,
      body: { error: `bad credentials ${request.headers.authorization} ${request.headers['x-sentry-auth']}` },
    }));
    const apiKey = 'wandb-secret-key-0123456789abcdef';
    const sentryKey = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    try {
      for (const { type, config, leaked } of [
        {
          type: 'weave',
          config: { apiKey, entity: 'team', project: 'proj', baseUrl: echo.url },
          leaked: [apiKey, Buffer.from(`api:${apiKey}`).toString('base64')],
        },
        {
          type: 'sentry',
          config: {
            dsn: `https://${sentryKey}@o1.ingest.sentry.io/42`,
            otlpEndpoint: `${echo.url}/v1/traces`,
          },
          leaked: [sentryKey],
        },
      ]) {
        const created = await createDestination(gateway, { type, name: `echoed ${type}`, config });
        const tested = await gateway.request('POST', `${DESTINATIONS}/${created.id}/test`);
        assert.equal(tested.status, 200, tested.text);
        assert.equal(tested.body.data.ok, false, tested.text);
        for (const secret of leaked) assert.ok(!tested.text.includes(secret), `${type}: ${tested.text}`);
        assert.match(tested.body.data.error, /\[secret\]/);
      }
    } finally {
      await echo.close();
    }
  });

  it('masks the credentials a webhook or collector URL carries, and keeps them when sent back', async () => {
    const token = 'SUPERSECRETTOKEN123456';
    // The save's connection test passes; the later one is refused, echoing the address it was sent to.
    let answered = 0;
    const receiver = await startReceiver((request) => {
      answered += 1;
      return answered === 1
        ? { status: 200, body: {} }
        : { status: 403, body: { error: `refused ${request.url}` } };
    });
    try {
      const url = `${receiver.url}/hook?token=${token}&team=t1`;
      const created = await createDestination(gateway, {
        type: 'webhook',
        name: 'hooked',
        config: { url, headers: { 'X-Sig': 'abcdefghijklmnopqrstu' } },
      });
      const shown = new URL(created.config.url as string);
      assert.equal(shown.searchParams.get('token'), 'SUPE...3456');
      assert.equal(shown.searchParams.get('team'), '****');
      for (const read of [
        await gateway.request('GET', `${DESTINATIONS}/${created.id}`),
        await gateway.request('GET', DESTINATIONS),
      ]) {
        assert.equal(read.status, 200, read.text);
        assert.ok(!read.text.includes(token), read.text);
      }
      // The record sent back as read (its URL masked) changes the name and keeps the stored URL.
      const patched = await gateway.request('PATCH', `${DESTINATIONS}/${created.id}`, {
        body: { name: 'renamed', config: created.config },
      });
      assert.equal(patched.status, 200, patched.text);
      // Stored sealed with the secrets, not in the clear: the row's plain config has no URL.
      const row = await destinationRow(gateway, created.id);
      assert.equal(JSON.parse(row.config).url, undefined);
      assert.ok(!JSON.stringify(row).includes(token));
      assert.equal(
        JSON.parse(gateway.services.secretBox.open(row.secrets_ciphertext as string)).url,
        url,
        'the stored URL is the one given',
      );
      // The URL as read, edited elsewhere (its path) with the token still masked: refused, not stored
      // with the mask in place of the token.
      const edited = new URL(created.config.url as string);
      edited.pathname = '/hook2';
      const refused = await gateway.request('PATCH', `${DESTINATIONS}/${created.id}`, {
        body: { config: { url: edited.toString() } },
      });
      assert.equal(refused.status, 400, refused.text);
      assert.match(
        refused.body.error.message,
        /^Invalid request parameters: body\.config\.url holds a masked credential/,
      );
      assert.equal(
        JSON.parse(
          gateway.services.secretBox.open(
            (await destinationRow(gateway, created.id)).secrets_ciphertext as string,
          ),
        ).url,
        url,
        'nothing changed',
      );
      // A receiver that echoes the request's address does not give the token away either.
      const tested = await gateway.request('POST', `${DESTINATIONS}/${created.id}/test`);
      assert.equal(tested.status, 200, tested.text);
      assert.equal(tested.body.data.ok, false);
      assert.match(tested.body.data.error, /refused \/hook\?token=\[secret\]/);
      assert.ok(!tested.text.includes(token), tested.text);
      // A collector's endpoint the same way (userinfo is refused outright).
      const collector = await startReceiver(() => ({ status: 200, body: {} }));
      try {
        const created = await createDestination(gateway, {
          type: 'otel-collector',
          name: 'collector',
          config: { endpoint: `${collector.url}/v1/traces?api_key=${token}` },
        });
        assert.equal(new URL(created.config.endpoint as string).searchParams.get('api_key'), 'SUPE...3456');
      } finally {
        await collector.close();
      }
    } finally {
      await receiver.close();
    }
  });

  it('refuses a header named twice in a PATCH, as a POST does', async () => {
    const created = await createDestination(gateway, {
      type: 'opik',
      name: 'headers twice',
      config: {
        apiKey: 'k'.repeat(20),
        workspace: 'w',
        projectName: 'p',
        headers: { 'X-One': 'first-value-aaaa' },
      },
    });
    const before = (await destinationRow(gateway, created.id)).secrets_ciphertext;
    const response = await gateway.request('PATCH', `${DESTINATIONS}/${created.id}`, {
      body: { config: { headers: { 'X-Dup': 'first-value-aaaa', 'x-dup': 'second-value-bbbb' } } },
    });
    assert.match(
      expectError(response, 400),
      /body\.config\.headers\.x-dup is given twice \(header names are case-insensitive\)/,
    );
    assert.equal((await destinationRow(gateway, created.id)).secrets_ciphertext, before);
  });

  it('refuses control characters, unpaired surrogates and oversized strings anywhere in a config', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        'CRLF in a secret',
        { type: 'datadog', config: { apiKey: 'abc\r\nX-Injected: 1', mlApp: 'app' } },
        /body\.config\.apiKey must not contain control characters/,
      ],
      [
        'NUL in a name',
        { type: 'opik', config: { apiKey: 'k'.repeat(20), workspace: 'w', projectName: 'a\u0000b' } },
        /body\.config\.projectName must not contain control characters/,
      ],
      [
        'unpaired surrogate',
        { type: 'langsmith', config: { apiKey: 'k'.repeat(20), project: 'a\ud800b' } },
        /body\.config\.project must not contain unpaired surrogates/,
      ],
      [
        '1 MB value',
        { type: 'langfuse', config: { publicKey: 'pk', secretKey: 's'.repeat(1_000_000) } },
        /body\.config\.secretKey must NOT have more than 4096 characters/,
      ],
      [
        'non-Latin-1 secret',
        { type: 'datadog', config: { apiKey: 'ключ-ключ-ключ', mlApp: 'app' } },
        /body\.config\.apiKey must hold only printable Latin-1/,
      ],
      // Not secrets, but sent as header values all the same: every delivery would fail.
      [
        'non-Latin-1 Opik workspace',
        { type: 'opik', config: { apiKey: 'k'.repeat(20), workspace: '日本', projectName: 'p' } },
        /body\.config\.workspace must hold only printable Latin-1 characters \(it is sent in an HTTP header\)/,
      ],
      [
        'non-Latin-1 ClickHouse user',
        {
          type: 'clickhouse',
          config: {
            host: 'https://ch.example.com:8443',
            database: 'db',
            username: '日本',
            password: 'p'.repeat(12),
          },
        },
        /body\.config\.username must hold only printable Latin-1/,
      ],
      [
        'non-Latin-1 Arize space',
        { type: 'arize', config: { apiKey: 'k'.repeat(20), spaceKey: '日本', modelId: 'm' } },
        /body\.config\.spaceKey must hold only printable Latin-1/,
      ],
    ];
    for (const [what, body, pattern] of cases) {
      const response = await gateway.request('POST', DESTINATIONS, { body: { name: what, ...body } });
      assert.match(expectError(response, 400), pattern, what);
    }
  });

  it('refuses unknown config fields in a PATCH even when they are null', async () => {
    const created = await createDestination(gateway, {
      type: 'langfuse',
      name: 'nulls',
      config: langfuseConfig(),
    });
    const unknown = await gateway.request('PATCH', `${DESTINATIONS}/${created.id}`, {
      body: { config: { bogus: null } },
    });
    assert.match(expectError(unknown, 400), /body\.config\.bogus is not a known field/);
    const badHeader = await gateway.request('PATCH', `${DESTINATIONS}/${created.id}`, {
      body: { config: { headers: { 'Bad Name': null } } },
    });
    assert.match(
      expectError(badHeader, 400),
      /body\.config\.headers\.Bad Name is not a valid HTTP header name/,
    );
    const row = await destinationRow(gateway, created.id);
    assert.equal(row.updated_at, row.created_at, 'refused PATCHes change nothing');
  });
});

describe('private addresses with allow_private_networks off', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startObservabilityGateway({ allowPrivateNetworks: false });
  });
  after(async () => {
    await gateway.close();
  });

  it('refuses trailing-dot localhost names and IPv4-compatible IPv6 literals', async () => {
    for (const url of [
      'http://localhost./v1/traces',
      'http://foo.localhost./v1/traces',
      'http://[::127.0.0.1]/v1/traces',
    ]) {
      const response = await gateway.request('POST', DESTINATIONS, {
        body: { type: 'otel-collector', name: 'private', config: { endpoint: url } },
      });
      assert.match(expectError(response, 400), /body\.config\.endpoint .*non-public address/, url);
    }
  });
});

describe('destination rows saved with a credential-carrying URL in the clear', () => {
  it('are sealed when the server starts, the config they give an exporter unchanged', async () => {
    const database = isolatedDatabase();
    const config = {
      broadcast: { allow_private_networks: true, worker_enabled: false },
      limits: { rate_limit: { requests: 0, window_seconds: 60 } },
    };
    const token = vendorSecret('tok_');
    const receiver = await startReceiver(() => ({ status: 200, body: {} }));
    const url = `${receiver.url}/in?token=${token}`;
    let ids: string[] = [];
    let before: Record<string, unknown>[] = [];
    let updatedAt: string[] = [];
    const first = await startTestApp({ database, config });
    try {
      const kept = await createDestination(first, {
        type: 'webhook',
        name: 'old hook',
        config: { url, headers: { 'X-Sig': 'abcdefghijklmnopqrstu' } },
      });
      const deleted = await createDestination(first, { type: 'webhook', name: 'old gone', config: { url } });
      assert.equal((await first.request('DELETE', `${DESTINATIONS}/${deleted.id}`)).status, 200);
      ids = [kept.id, deleted.id];
      // As a build before URLs were sealed stored them: the URL in the plain column.
      const { db } = first.services.storage;
      for (const id of ids) {
        const row = await db
          .selectFrom('observability_destinations')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        const opened = openDestinationConfig(row, first.services.secretBox);
        const { url: plainUrl, headers, ...rest } = opened;
        await db
          .updateTable('observability_destinations')
          .set({
            config: JSON.stringify({ ...rest, url: plainUrl }),
            secrets_ciphertext: headers ? first.services.secretBox.seal(JSON.stringify({ headers })) : null,
          })
          .where('id', '=', id)
          .execute();
      }
      const rows = await db
        .selectFrom('observability_destinations')
        .selectAll()
        .where('id', 'in', ids)
        .execute();
      assert.ok(
        rows.every((row) => row.config.includes(token)),
        'the old format holds the token in the clear',
      );
      const byId = (id: string) => rows.find((row) => row.id === id) as (typeof rows)[number];
      before = ids.map((id) => openDestinationConfig(byId(id), first.services.secretBox));
      updatedAt = ids.map((id) => String(byId(id).updated_at));
    } finally {
      await first.close();
    }

    const second = await startTestApp({ database, config });
    try {
      const rows = await second.services.storage.db
        .selectFrom('observability_destinations')
        .selectAll()
        .where('id', 'in', ids)
        .execute();
      assert.equal(rows.length, 2);
      const byId = (id: string) => rows.find((row) => row.id === id) as (typeof rows)[number];
      for (const row of rows) {
        assert.ok(!row.config.includes(token), `row ${row.id} still holds the token: ${row.config}`);
        assert.equal(JSON.parse(row.config).url, undefined);
      }
      // What an exporter is given is what it was; the change is not the user's: updated_at stays.
      assert.deepEqual(
        ids.map((id) => openDestinationConfig(byId(id), second.services.secretBox)),
        before,
      );
      assert.deepEqual(
        ids.map((id) => String(byId(id).updated_at)),
        updatedAt,
      );
      const read = await second.request('GET', `${DESTINATIONS}/${ids[0]}`);
      assert.equal(read.status, 200, read.text);
      assert.equal(new URL(read.body.data.config.url).searchParams.get('token'), maskSecretValue(token));
    } finally {
      await second.close();
      await receiver.close();
      await database.drop();
    }
  });
});
