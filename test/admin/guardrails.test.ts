import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { defaultGuardrailId, defaultGuardrailName } from '../../src/admin/guardrails/default-guardrail-id.js';
import { POLICY_TOPIC } from '../../src/admin/workspaces/workspace-access.js';
import { newId } from '../../src/platform/ids.js';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';

const GUARDRAILS = '/api/v1/guardrails';
const RECORD_FIELDS = [
  'allowed_models',
  'allowed_providers',
  'content_filter_builtins',
  'content_filters',
  'created_at',
  'description',
  'enforce_zdr',
  'enforce_zdr_anthropic',
  'enforce_zdr_google',
  'enforce_zdr_openai',
  'enforce_zdr_other',
  'id',
  'ignored_models',
  'ignored_providers',
  'limit_usd',
  'name',
  'reset_interval',
  'updated_at',
  'workspace_id',
];
const RULES_UNSET = {
  description: null,
  limit_usd: null,
  reset_interval: null,
  allowed_models: null,
  allowed_providers: null,
  ignored_models: null,
  ignored_providers: null,
  enforce_zdr: null,
  enforce_zdr_anthropic: null,
  enforce_zdr_openai: null,
  enforce_zdr_google: null,
  enforce_zdr_other: null,
  content_filter_builtins: null,
  content_filters: null,
};

/** A workspace row written directly: the workspaces API is not what this file tests. */
async function addWorkspace(gateway: TestApp): Promise<string> {
  const id = newId();
  const at = new Date().toISOString();
  await gateway.services.storage.db
    .insertInto('workspaces')
    .values({
      id,
      name: 'Other',
      slug: `other-${id.slice(0, 8)}`,
      description: '',
      created_by: 'test',
      default_text_model: '',
      default_image_model: '',
      default_provider_sort: '',
      io_logging_api_key_ids: null,
      io_logging_sampling_rate: 1,
      is_data_discount_logging_enabled: 0,
      is_observability_broadcast_enabled: 0,
      is_observability_io_logging_enabled: 0,
      include_byok_in_budgets: 0,
      is_default: 0,
      created_at: at,
      updated_at: at,
    })
    .execute();
  return id;
}

describe('guardrails over HTTP', () => {
  let gateway: TestApp;
  let defaultWorkspace: string;
  const policyChanges: string[] = [];

  const create = (body: Record<string, unknown>, key?: string) =>
    gateway.request('POST', GUARDRAILS, { body, ...(key ? { key } : {}) });
  const storedCount = async () =>
    Number(
      (
        await gateway.services.storage.db
          .selectFrom('guardrails')
          .select((eb) => eb.fn.countAll().as('count'))
          .executeTakeFirstOrThrow()
      ).count,
    );

  before(async () => {
    gateway = await startTestApp();
    gateway.services.bus.subscribe(POLICY_TOPIC, (workspaceId) => policyChanges.push(workspaceId));
    const current = await gateway.request('GET', '/api/v1/key');
    defaultWorkspace = current.body.data.workspace_id;
  });
  after(() => gateway.close());

  it('creates a guardrail: every field of spec 2.5, names resolved, labels fixed, enforce_zdr copied', async () => {
    const before = policyChanges.length;
    const created = await create({
      name: 'Production Guardrail',
      description: 'Guardrail for production environment',
      limit_usd: 100,
      reset_interval: 'monthly',
      // An id, its variant and its canonical slug are one model: stored once, as the canonical slug.
      allowed_models: [
        'anthropic/claude-opus-5',
        'anthropic/claude-opus-5:batch',
        'openai/gpt-5.6-luna-20260709',
      ],
      allowed_providers: ['OpenAI', 'anthropic', 'openai'],
      ignored_providers: ['deepinfra'],
      enforce_zdr: true,
      enforce_zdr_google: false,
      content_filter_builtins: [
        { slug: 'email', action: 'redact', label: 'ignored' },
        { slug: 'regex-prompt-injection', action: 'flag', scan_scope: 'user_only' },
      ],
      content_filters: [
        { pattern: '\\b(sk-[a-zA-Z0-9]{48})\\b', action: 'redact', label: '[API_KEY]' },
        { pattern: '(?<area>\\d{3})-(?<line>\\d{4})', action: 'block' },
      ],
    });
    assert.equal(created.status, 200, created.text);
    const record = created.body.data;
    assert.deepEqual(Object.keys(record).sort(), RECORD_FIELDS);
    assert.match(record.id, /^[0-9a-f-]{36}$/);
    assert.equal(record.workspace_id, defaultWorkspace);
    assert.equal(record.name, 'Production Guardrail');
    assert.equal(record.limit_usd, 100);
    assert.equal(record.reset_interval, 'monthly');
    assert.deepEqual(record.allowed_models, [
      'anthropic/claude-opus-5-20260723',
      'openai/gpt-5.6-luna-20260709',
    ]);
    assert.deepEqual(record.allowed_providers, ['openai', 'anthropic']);
    assert.deepEqual(record.ignored_providers, ['deepinfra']);
    assert.equal(record.ignored_models, null);
    assert.equal(record.enforce_zdr, null, 'deprecated: never echoed');
    assert.equal(record.enforce_zdr_anthropic, true);
    assert.equal(record.enforce_zdr_openai, true);
    assert.equal(record.enforce_zdr_google, false, 'set explicitly, so not copied');
    assert.equal(record.enforce_zdr_other, true);
    assert.deepEqual(record.content_filter_builtins, [
      { slug: 'email', action: 'redact', label: '[EMAIL]' },
      {
        slug: 'regex-prompt-injection',
        action: 'flag',
        label: '[PROMPT_INJECTION]',
        scan_scope: 'user_only',
      },
    ]);
    assert.deepEqual(record.content_filters, [
      { pattern: '\\b(sk-[a-zA-Z0-9]{48})\\b', action: 'redact', label: '[API_KEY]' },
      { pattern: '(?<area>\\d{3})-(?<line>\\d{4})', action: 'block', label: null },
    ]);
    assert.equal(record.created_at, record.updated_at);

    // The row in the documented text formats (the policy loader reads rows directly).
    const row = await gateway.services.storage.db
      .selectFrom('guardrails')
      .selectAll()
      .where('id', '=', record.id)
      .executeTakeFirstOrThrow();
    assert.equal(Number(row.limit_nanos), 100_000_000_000);
    assert.equal(row.allowed_providers, '["openai","anthropic"]');
    assert.equal(row.enforce_zdr_google, 0);
    assert.equal(row.enforce_zdr_other, 1);
    assert.equal(row.is_workspace_default, 0);
    assert.deepEqual(JSON.parse(row.content_filters ?? ''), record.content_filters);
    assert.deepEqual(policyChanges.slice(before), [defaultWorkspace]);

    const fetched = await gateway.request('GET', `${GUARDRAILS}/${record.id.toUpperCase()}`);
    assert.equal(fetched.status, 200);
    assert.deepEqual(fetched.body.data, record);
  });

  it('PATCH changes only what it is given: lists replaced, null removes, enforce_zdr fills unset flags', async () => {
    const created = await create({
      name: 'patched',
      allowed_models: ['anthropic/claude-opus-5'],
      enforce_zdr_anthropic: true,
      enforce_zdr_openai: true,
      enforce_zdr_google: true,
      enforce_zdr_other: true,
      content_filter_builtins: [{ slug: 'ssn', action: 'block' }],
      content_filters: [{ pattern: 'secret', action: 'flag', label: 'S' }],
    });
    const { id } = created.body.data;
    const before = policyChanges.length;

    const zdr = await gateway.request('PATCH', `${GUARDRAILS}/${id}`, {
      body: { enforce_zdr: false, enforce_zdr_openai: true },
    });
    assert.equal(zdr.status, 200, zdr.text);
    assert.deepEqual(
      [
        zdr.body.data.enforce_zdr_anthropic,
        zdr.body.data.enforce_zdr_openai,
        zdr.body.data.enforce_zdr_google,
        zdr.body.data.enforce_zdr_other,
      ],
      [false, true, false, false],
    );
    assert.equal(zdr.body.data.enforce_zdr, null);
    assert.deepEqual(zdr.body.data.allowed_models, ['anthropic/claude-opus-5-20260723'], 'untouched');
    assert.ok(zdr.body.data.updated_at >= created.body.data.updated_at);

    const replaced = await gateway.request('PATCH', `${GUARDRAILS}/${id}`, {
      body: { allowed_models: ['openai/gpt-5.6-luna'], content_filter_builtins: null, content_filters: null },
    });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual(replaced.body.data.allowed_models, ['openai/gpt-5.6-luna-20260709']);
    assert.equal(replaced.body.data.content_filter_builtins, null);
    assert.equal(replaced.body.data.content_filters, null);
    assert.equal(replaced.body.data.enforce_zdr_openai, true, 'flags not in this PATCH stay');
    assert.equal(replaced.body.data.name, 'patched');

    const cleared = await gateway.request('PATCH', `${GUARDRAILS}/${id}`, {
      body: { enforce_zdr: null, allowed_models: null, description: 'now described', limit_usd: 2.5 },
    });
    assert.equal(cleared.body.data.enforce_zdr_anthropic, null);
    assert.equal(cleared.body.data.enforce_zdr_other, null);
    assert.equal(cleared.body.data.allowed_models, null);
    assert.equal(cleared.body.data.description, 'now described');
    assert.equal(cleared.body.data.limit_usd, 2.5);
    assert.equal(policyChanges.length - before, 3);
  });

  it('lists a workspace’s guardrails with total_count, pages, and deletes', async () => {
    const workspace = await addWorkspace(gateway);
    const ids: string[] = [];
    for (const name of ['one', 'two', 'three']) {
      const created = await create({ name, workspace_id: workspace });
      assert.equal(created.status, 200, created.text);
      assert.equal(created.body.data.workspace_id, workspace);
      ids.push(created.body.data.id);
    }
    const all = await gateway.request('GET', `${GUARDRAILS}?workspace_id=${workspace}`);
    assert.equal(all.status, 200);
    assert.equal(all.body.total_count, 3);
    assert.deepEqual(new Set(all.body.data.map((item: { id: string }) => item.id)), new Set(ids));
    const page = await gateway.request('GET', `${GUARDRAILS}?workspace_id=${workspace}&limit=2&offset=2`);
    assert.equal(page.body.data.length, 1);
    assert.equal(page.body.total_count, 3);
    // Without workspace_id: the caller's workspace, which holds none of these.
    const own = await gateway.request('GET', GUARDRAILS);
    assert.equal(
      own.body.data.some((item: { workspace_id: string }) => item.workspace_id === workspace),
      false,
    );

    const deleted = await gateway.request('DELETE', `${GUARDRAILS}/${ids[0]}`);
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { deleted: true });
    expectError(await gateway.request('GET', `${GUARDRAILS}/${ids[0]}`), 404);
    expectError(await gateway.request('DELETE', `${GUARDRAILS}/${ids[0]}`), 404);
    const after = await gateway.request('GET', `${GUARDRAILS}?workspace_id=${workspace}`);
    assert.equal(after.body.total_count, 2);

    for (const [query, field] of [
      ['limit=0', 'querystring.limit'],
      ['limit=101', 'querystring.limit'],
      ['offset=-1', 'querystring.offset'],
      ['workspace_id=nope', 'querystring.workspace_id'],
    ] as const) {
      assert.match(
        expectError(await gateway.request('GET', `${GUARDRAILS}?${query}`), 400),
        new RegExp(field),
      );
    }
  });

  it('refuses every broken rule with a 400 naming the field, and stores nothing', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['empty name', { name: '' }, /body\.name/],
      ['201-character name', { name: 'n'.repeat(201) }, /body\.name must NOT have more than 200 characters/],
      ['1001-character description', { description: 'd'.repeat(1001) }, /body\.description/],
      ['limit_usd 0', { limit_usd: 0 }, /body\.limit_usd must be > 0/],
      [
        'limit_usd below a nano-dollar',
        { limit_usd: 1e-10 },
        /body\.limit_usd must be at least 0\.000000001/,
      ],
      [
        'reset_interval lifetime',
        { reset_interval: 'lifetime' },
        /body\.reset_interval must be one of: daily, weekly, monthly, null/,
      ],
      [
        'empty allowed_models',
        { allowed_models: [] },
        /body\.allowed_models must NOT have fewer than 1 items/,
      ],
      ['empty ignored_providers', { ignored_providers: [] }, /body\.ignored_providers/],
      [
        'unknown model',
        { ignored_models: ['openai/gpt-5.6-luna', 'acme/nothing'] },
        /body\.ignored_models\.1 must be a model id or canonical slug of the catalogue \("acme\/nothing" is not\)/,
      ],
      [
        'unknown provider',
        { allowed_providers: ['openai', 'acme-cloud'] },
        /body\.allowed_providers\.1 must be the slug of a provider/,
      ],
      ['non-boolean ZDR flag', { enforce_zdr_other: 'yes' }, /body\.enforce_zdr_other/],
      [
        'unknown builtin slug',
        { content_filter_builtins: [{ slug: 'passport', action: 'block' }] },
        /body\.content_filter_builtins\.0\.slug must be one of: regex-prompt-injection, email/,
      ],
      [
        'flag on email',
        { content_filter_builtins: [{ slug: 'email', action: 'flag' }] },
        /body\.content_filter_builtins\.0\.action must be one of block, redact for slug email/,
      ],
      [
        'a slug twice',
        {
          content_filter_builtins: [
            { slug: 'ssn', action: 'block' },
            { slug: 'ssn', action: 'redact' },
          ],
        },
        /body\.content_filter_builtins\.1\.slug repeats ssn/,
      ],
      [
        'bad scan_scope',
        {
          content_filter_builtins: [
            { slug: 'regex-prompt-injection', action: 'block', scan_scope: 'system' },
          ],
        },
        /scan_scope must be one of: user_only, all_messages/,
      ],
      [
        'empty content_filter_builtins',
        { content_filter_builtins: [] },
        /body\.content_filter_builtins must NOT have fewer than 1 items/,
      ],
      [
        'empty content_filters',
        { content_filters: [] },
        /body\.content_filters must NOT have fewer than 1 items/,
      ],
      [
        'empty pattern',
        { content_filters: [{ pattern: '', action: 'block' }] },
        /body\.content_filters\.0\.pattern/,
      ],
      [
        'unknown action',
        { content_filters: [{ pattern: 'x', action: 'warn' }] },
        /body\.content_filters\.0\.action must be one of: block, redact, flag/,
      ],
      [
        '101-character label',
        { content_filters: [{ pattern: 'x', action: 'redact', label: 'l'.repeat(101) }] },
        /body\.content_filters\.0\.label/,
      ],
      ['unknown field', { colour: 'red' }, /body\.colour is not a known field/],
      ['a blank name', { name: '  ' }, /body\.name must not be blank \(whitespace only\)/],
      [
        'workspace_id of no workspace',
        { workspace_id: newId() },
        /body\.workspace_id names no existing workspace/,
      ],
    ];
    const count = await storedCount();
    for (const [name, body, message] of cases) {
      const response = await create({ name: 'bad', ...body });
      assert.match(expectError(response, 400), message, name);
    }
    const missing = await gateway.request('POST', GUARDRAILS, { body: {} });
    assert.match(expectError(missing, 400), /body\.name/);
    assert.equal(await storedCount(), count, 'nothing stored');
  });

  it('refuses unsafe custom patterns (invalid_regex_pattern) on create and on PATCH, naming the element', async () => {
    const unsafe: Array<[string, RegExp]> = [
      ['(a+)+', /nested quantifier \(a\+\)\+ can backtrack catastrophically/],
      ['(a|a)*', /alternation \(a\|a\)\* has alternatives that can match the same text/],
      ['pass(?=word)', /lookahead \(\?=word\) is not allowed/],
      ['(a)\\1', /backreference \\1 is not allowed/],
      ['(?<=\\$)\\d+', /lookbehind/],
      ['[\\w.+-]+@[\\w-]+\\.[\\w.-]+', /backtrack catastrophically \(2nd degree polynomial time\)/],
      ['(unclosed', /not a valid JavaScript regular expression/],
    ];
    for (const [pattern, reason] of unsafe) {
      const response = await create({
        name: 'regex',
        content_filters: [
          { pattern: 'fine', action: 'block' },
          { pattern, action: 'redact' },
        ],
      });
      const message = expectError(response, 400);
      assert.match(
        message,
        /body\.content_filters\.1\.pattern is refused \(invalid_regex_pattern\): /,
        pattern,
      );
      assert.match(message, reason, pattern);
    }
    const created = await create({ name: 'safe first' });
    const patched = await gateway.request('PATCH', `${GUARDRAILS}/${created.body.data.id}`, {
      body: { content_filters: [{ pattern: '(\\d*)*x', action: 'block' }] },
    });
    assert.match(
      expectError(patched, 400),
      /content_filters\.0\.pattern.*invalid_regex_pattern.*nested quantifier/,
    );
    const unchanged = await gateway.request('GET', `${GUARDRAILS}/${created.body.data.id}`);
    assert.equal(unchanged.body.data.content_filters, null);
  });

  it('refuses an empty PATCH, a bad id and non-management keys', async () => {
    const created = await create({ name: 'target' });
    const { id } = created.body.data;
    assert.match(
      expectError(await gateway.request('PATCH', `${GUARDRAILS}/${id}`, { body: {} }), 400),
      /fewer than 1 properties/,
    );
    assert.match(
      expectError(
        await gateway.request('PATCH', `${GUARDRAILS}/${id}`, { body: { name: 'x'.repeat(201) } }),
        400,
      ),
      /body\.name/,
    );
    assert.match(expectError(await gateway.request('GET', `${GUARDRAILS}/not-a-uuid`), 400), /params\.id/);
    expectError(await gateway.request('GET', `${GUARDRAILS}/${newId()}`), 404);
    const inference = await gateway.request('POST', '/api/v1/keys', { body: { name: 'inference' } });
    const key = inference.body.key;
    expectError(await gateway.request('GET', GUARDRAILS, { key }), 403);
    expectError(await gateway.request('POST', GUARDRAILS, { key, body: { name: 'x' } }), 403);
    expectError(await gateway.request('GET', `${GUARDRAILS}/${id}`, { key: null }), 401);
  });

  it('serves the workspace default guardrail before it is stored; PATCH stores it; it keeps its name and cannot be deleted', async () => {
    const workspace = await addWorkspace(gateway);
    const id = defaultGuardrailId(workspace);
    const unstored = await gateway.request('GET', `${GUARDRAILS}/${id}`);
    assert.equal(unstored.status, 200, unstored.text);
    assert.deepEqual(
      { ...unstored.body.data, created_at: 0, updated_at: 0 },
      {
        id,
        workspace_id: workspace,
        name: defaultGuardrailName(workspace),
        ...RULES_UNSET,
        created_at: 0,
        updated_at: 0,
      },
    );
    const listed = await gateway.request('GET', `${GUARDRAILS}?workspace_id=${workspace}`);
    assert.deepEqual(listed.body, { data: [], total_count: 0 }, 'listed only once stored');

    assert.match(
      expectError(await gateway.request('DELETE', `${GUARDRAILS}/${id}`), 400),
      /default guardrail cannot be deleted; PATCH it to change what it enforces/,
    );
    assert.match(
      expectError(await gateway.request('PATCH', `${GUARDRAILS}/${id}`, { body: { name: 'Mine now' } }), 400),
      /body\.name cannot be changed/,
    );
    const before = policyChanges.length;
    const stored = await gateway.request('PATCH', `${GUARDRAILS}/${id}`, {
      body: {
        name: defaultGuardrailName(workspace),
        limit_usd: 5,
        content_filter_builtins: [{ slug: 'email', action: 'block' }],
      },
    });
    assert.equal(stored.status, 200, stored.text);
    assert.equal(stored.body.data.limit_usd, 5);
    assert.equal(stored.body.data.name, defaultGuardrailName(workspace));
    assert.deepEqual(policyChanges.slice(before), [workspace]);
    const row = await gateway.services.storage.db
      .selectFrom('guardrails')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(row.is_workspace_default, 1);
    assert.equal(row.workspace_id, workspace);

    const again = await gateway.request('PATCH', `${GUARDRAILS}/${id}`, {
      body: { reset_interval: 'daily' },
    });
    assert.equal(again.body.data.limit_usd, 5);
    assert.equal(again.body.data.reset_interval, 'daily');
    const listedNow = await gateway.request('GET', `${GUARDRAILS}?workspace_id=${workspace}`);
    assert.equal(listedNow.body.total_count, 1);
    assert.equal(listedNow.body.data[0].id, id);
    expectError(await gateway.request('DELETE', `${GUARDRAILS}/${id}`), 400);
    assert.match(
      expectError(
        await gateway.request('POST', `${GUARDRAILS}/${id}/assignments/keys`, {
          body: { key_hashes: ['0'.repeat(64)] },
        }),
        400,
      ),
      /takes no assignments/,
    );
  });

  it('isolates workspaces: another workspace’s guardrails are 404 and its id is refused like a made-up one', async () => {
    const workspace = await addWorkspace(gateway);
    const manager = (
      await gateway.services.keys.createManagementKey({ name: 'B admin', workspace_id: workspace })
    ).key;
    const ours = (await create({ name: 'ours' })).body.data;
    const theirs = await create({ name: 'theirs' }, manager);
    assert.equal(theirs.status, 200, theirs.text);
    assert.equal(theirs.body.data.workspace_id, workspace, 'created in the caller’s workspace');

    for (const [method, path, body] of [
      ['GET', `${GUARDRAILS}/${ours.id}`],
      ['PATCH', `${GUARDRAILS}/${ours.id}`, { name: 'taken' }],
      ['DELETE', `${GUARDRAILS}/${ours.id}`],
      ['GET', `${GUARDRAILS}/${defaultGuardrailId(defaultWorkspace)}`],
      ['PATCH', `${GUARDRAILS}/${defaultGuardrailId(defaultWorkspace)}`, { limit_usd: 1 }],
    ] as const) {
      expectError(await gateway.request(method, path, { key: manager, ...(body ? { body } : {}) }), 404);
    }
    // Another workspace, named in a query or a body: 404, the same answer as for a workspace that
    // does not exist, so nothing leaks about it.
    const outOfReach = expectError(
      await gateway.request('GET', `${GUARDRAILS}?workspace_id=${defaultWorkspace}`, { key: manager }),
      404,
    );
    const unknown = expectError(
      await gateway.request('GET', `${GUARDRAILS}?workspace_id=${newId()}`, { key: manager }),
      404,
    );
    assert.equal(outOfReach, unknown, 'the same answer: nothing leaks about the other workspace');
    const createOutOfReach = expectError(
      await create({ name: 'x', workspace_id: defaultWorkspace }, manager),
      404,
    );
    const createUnknown = expectError(await create({ name: 'x', workspace_id: newId() }, manager), 404);
    assert.equal(createOutOfReach, createUnknown);

    const theirList = await gateway.request('GET', GUARDRAILS, { key: manager });
    assert.deepEqual(
      theirList.body.data.map((item: { id: string }) => item.id),
      [theirs.body.data.id],
    );
    // Their own default guardrail is theirs to read; an organization key (default workspace) reaches both.
    assert.equal(
      (await gateway.request('GET', `${GUARDRAILS}/${defaultGuardrailId(workspace)}`, { key: manager }))
        .status,
      200,
    );
    assert.equal((await gateway.request('GET', `${GUARDRAILS}/${theirs.body.data.id}`)).status, 200);
    assert.equal(
      (await gateway.request('GET', `${GUARDRAILS}/${defaultGuardrailId(workspace)}`)).status,
      200,
    );
    const inTheirs = await create({ name: 'filed there', workspace_id: workspace.toUpperCase() });
    assert.equal(inTheirs.status, 200, inTheirs.text);
    assert.equal(inTheirs.body.data.workspace_id, workspace);
  });
});
