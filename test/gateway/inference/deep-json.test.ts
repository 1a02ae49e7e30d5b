import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_JSON_DEPTH, pathTooDeep } from '../../../src/platform/json-depth.js';
import { startFakeUpstream } from '../../helpers/fake-upstream.js';
import { expectError, startTestApp, type TestApp } from '../../helpers/test-app.js';
import { ACME_MODEL, acmeCatalog, chatCompletion, createKey, keyInfo, withClaudeLike } from './harness.js';

/** `{"a":{"a":…1…}}` nested `levels` deep, as text: deeper than this test's own JSON.stringify goes. */
const deepObject = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
const deepArray = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

describe('JSON nested deeper than the gateway walks (stack overflow: once a 500)', () => {
  it('pathTooDeep names the keys down to the first value past the bound, and nothing at the bound', () => {
    const atBound = JSON.parse(deepArray(MAX_JSON_DEPTH));
    assert.equal(pathTooDeep(atBound), null);
    const past = JSON.parse(`{"x":[1,{"y":${deepArray(MAX_JSON_DEPTH)}}]}`);
    const path = pathTooDeep(past);
    assert.deepEqual(path?.slice(0, 4), ['x', '1', 'y', '0']);
    assert.equal(path?.length, MAX_JSON_DEPTH);
    // 100,000 levels: iterative, so no stack to overflow; the path has one key per level above.
    assert.equal(pathTooDeep(JSON.parse(deepObject(100_000)))?.length, MAX_JSON_DEPTH);
    assert.equal(pathTooDeep('text'), null);
  });

  it('pathTooDeep answers alike on its quick check and its walk: wide values, mixed nesting, large bounds', () => {
    // Wide and within the bound: 2,000 siblings, each 127 levels of objects and arrays mixed.
    const branch = JSON.parse(`{"a":[${deepObject(MAX_JSON_DEPTH - 3)}]}`);
    const wide = Array.from({ length: 2_000 }, () => branch);
    assert.equal(pathTooDeep(wide), null);
    // The last sibling one level deeper is found, with its index in the path.
    const deeper = [...wide, JSON.parse(`{"a":[${deepObject(MAX_JSON_DEPTH - 2)}]}`)];
    assert.deepEqual(pathTooDeep(deeper)?.slice(0, 3), ['2000', 'a', '0']);
    // An inherited enumerable key is not the value's own: the quick check may see it, the answer does not.
    const inherited = Object.create({ deep: JSON.parse(deepArray(MAX_JSON_DEPTH + 5)) }) as object;
    assert.equal(pathTooDeep({ own: inherited }), null);
    // A bound beyond what the quick check recurses to still answers, by the walk alone.
    assert.equal(pathTooDeep(JSON.parse(deepArray(1_500)), 1_400)?.length, 1_400);
    assert.equal(pathTooDeep(JSON.parse(deepArray(1_400)), 1_400), null);
    // Small bounds (destination configs use 9).
    assert.equal(pathTooDeep({ a: { b: 1 } }, 2), null);
    assert.deepEqual(pathTooDeep({ a: { b: {} } }, 2), ['a', 'b']);
  });
  describe('through the gateway', () => {
    let fake: Awaited<ReturnType<typeof startFakeUpstream>>;
    let gateway: TestApp;
    let answer: string;

    before(async () => {
      fake = await startFakeUpstream();
      const catalog = withClaudeLike(acmeCatalog(`${fake.url}/v1`), `${fake.url}/v1`);
      gateway = await startTestApp({
        config: {
          credits: { initial: 100 },
          catalog,
          providers: { acme: { api_key: 'a' }, 'claude-like': { api_key: 'c' } },
        },
      });
      fake.handle((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(answer);
      });
    });
    after(async () => {
      await gateway.close();
      await fake.close();
    });

    const post = (key: string, path: string, body: string) =>
      gateway.request('POST', path, { key, rawBody: body, headers: { 'content-type': 'application/json' } });
    const generations = async () =>
      (await gateway.services.storage.db.selectFrom('generations').select('id').execute()).length;

    it('refuses request bodies nesting past the bound with a 400 naming where, and records nothing', async () => {
      const { key } = await createKey(gateway);
      answer = chatCompletion('ok');
      const before = await generations();
      const cases: Array<[string, string, string, RegExp]> = [
        [
          'a tool schema 5,000 levels deep',
          '/api/v1/chat/completions',
          `{"model":"${ACME_MODEL}","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":${deepObject(5000)}}}}}]}`,
          /^Invalid request parameters: body\.tools\.0\.function\.parameters\.properties\.x\.a\.a… nests more than 128 levels deep$/,
        ],
        [
          'a streamed request with a response_format schema 20,000 levels deep',
          '/api/v1/chat/completions',
          `{"model":"${ACME_MODEL}","stream":true,"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":${deepObject(20_000)}}}}`,
          /body\.response_format\.json_schema\.schema\.a\.a\.a\.a\.a… nests more than 128 levels deep/,
        ],
        [
          'a Responses text.format schema',
          '/api/v1/responses',
          `{"model":"${ACME_MODEL}","input":"hi","text":{"format":{"type":"json_schema","name":"s","schema":${deepObject(5000)}}}}`,
          /body\.text\.format\.schema\.a\.a\.a\.a\.a… nests more than 128 levels deep/,
        ],
        [
          'an unknown field of arrays, 129 levels (one past the bound)',
          '/api/v1/chat/completions',
          `{"model":"${ACME_MODEL}","messages":[{"role":"user","content":"hi"}],"zzz":${deepArray(MAX_JSON_DEPTH)}}`,
          /body\.zzz\.0\.0\.0\.0\.0\.0\.0… nests more than 128 levels deep/,
        ],
      ];
      for (const [what, path, body, pattern] of cases) {
        assert.match(expectError(await post(key, path, body), 400), pattern, what);
      }
      // At the bound the body is parsed and the usual rules answer.
      const atBound = await post(
        key,
        '/api/v1/chat/completions',
        `{"model":"${ACME_MODEL}","messages":[{"role":"user","content":"hi"}],"zzz":${deepArray(MAX_JSON_DEPTH - 1)}}`,
      );
      assert.match(expectError(atBound, 400), /body\.zzz is not a known field/);
      assert.equal(await generations(), before);
      assert.equal((await keyInfo(gateway, key)).usage, 0);
    });

    it('refuses admin bodies nesting past the bound before any rule of theirs runs', async () => {
      const before = await gateway.services.storage.db.selectFrom('workspaces').select('id').execute();
      const response = await gateway.request('POST', '/api/v1/workspaces', {
        rawBody: `{"name":"deep","slug":"deep","description":${deepArray(3000)}}`,
        headers: { 'content-type': 'application/json' },
      });
      assert.match(expectError(response, 400), /body\.description\.0\.0\.0\.0\.0\.0\.0… nests more than/);
      const afterwards = await gateway.services.storage.db.selectFrom('workspaces').select('id').execute();
      assert.equal(afterwards.length, before.length);
    });

    it('refuses function-call arguments too deep for a protocol that sends them as an object', async () => {
      const { key } = await createKey(gateway);
      const args = JSON.stringify(deepObject(5000));
      const response = await post(
        key,
        '/api/v1/chat/completions',
        `{"model":"claude-like/widget-3","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":${args}}}]},{"role":"tool","tool_call_id":"c1","content":"x"}]}`,
      );
      assert.equal(
        expectError(response, 400),
        'Arguments of function call c1 (f) nest more than 128 levels deep',
      );
      // The OpenAI protocol carries arguments as text: the same conversation goes through.
      answer = chatCompletion('ok');
      const relayed = await post(
        key,
        '/api/v1/chat/completions',
        `{"model":"${ACME_MODEL}","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":${args}}}]},{"role":"tool","tool_call_id":"c1","content":"x"}]}`,
      );
      assert.equal(relayed.status, 200, relayed.text);
    });

    it('treats an upstream answer nesting past the bound as a bad answer, not a crash', async () => {
      const { key } = await createKey(gateway);
      const body = JSON.parse(chatCompletion('ok'));
      body.choices[0].message.extra = '<deep>';
      answer = JSON.stringify(body).replace('"<deep>"', deepObject(5000));
      const response = await post(
        key,
        '/api/v1/chat/completions',
        `{"model":"${ACME_MODEL}","messages":[{"role":"user","content":"hi"}]}`,
      );
      assert.equal(response.status, 502, response.text);
      assert.match(response.body.error.message, /Provider returned error|nesting more than 128 levels/);
    });

    it('renders tool-call arguments too deep to serialize read to 128 levels on /messages, as streamed', async () => {
      const { key } = await createKey(gateway);
      const body = JSON.parse(chatCompletion(''));
      body.choices[0].message = {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c9', type: 'function', function: { name: 'f', arguments: deepObject(5000) } }],
      };
      body.choices[0].finish_reason = 'tool_calls';
      answer = JSON.stringify(body);
      const response = await post(
        key,
        '/api/v1/messages',
        `{"model":"${ACME_MODEL}","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`,
      );
      assert.equal(response.status, 200, response.text);
      const call = response.body.content.find((block: { type: string }) => block.type === 'tool_use');
      // What a streamed client is sent of them: the object up to the level that goes deeper.
      assert.deepEqual(
        call.input,
        JSON.parse(`${'{"a":'.repeat(MAX_JSON_DEPTH - 1)}{}${'}'.repeat(MAX_JSON_DEPTH - 1)}`),
      );
    });
  });
});
