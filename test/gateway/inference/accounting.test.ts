import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startFakeUpstream, writeSse } from '../../helpers/fake-upstream.js';
import {
  backend,
  type ClientResponse,
  expectError,
  isolatedDatabase,
  startTestApp,
  type TestApp,
} from '../../helpers/test-app.js';
import {
  ACME_COMPLETION_NANOS,
  ACME_MODEL,
  ACME_PROMPT_NANOS,
  acmeCatalog,
  BAIDU,
  chatCompletion,
  chatStreamFrames,
  createKey,
  DEEPSEEK,
  generationId,
  generationRecord,
  keyInfo,
  type OpenAiUsage,
  promptBound,
  sseData,
  usageOf,
  usd,
  waitFor,
} from './harness.js';

/**
 * Exact cost from reported usage, and reserve-then-settle under concurrency: the key's limit and
 * the account's credits are never overspent, on one instance and across two sharing Redis.
 */

/** 1000 prompt tokens of which 400 cached, 500 completion tokens of which 200 reasoning. */
const DETAILED_USAGE: OpenAiUsage = {
  prompt_tokens: 1000,
  completion_tokens: 500,
  total_tokens: 1500,
  prompt_tokens_details: { cached_tokens: 400 },
  completion_tokens_details: { reasoning_tokens: 200 },
};
// By hand, at Baidu's prices for deepseek-v4-pro (nano-dollars per token: prompt 185.9, cache read
// 15.4, completion 371.8; reasoning has no price of its own). The listed prices already include the
// endpoint's discount (0.89 off a $1.69/M standard price), so it is not applied again:
//   input  = 600 × 185.9 + 400 × 15.4 = 111,540 + 6,160 = 117,700
//   output = 500 × 371.8              = 185,900
const INPUT_NANOS = 117_700;
const OUTPUT_NANOS = 185_900;
const TOTAL_NANOS = 303_600;

describe('exact cost from the upstream usage', () => {
  let fake: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  before(async () => {
    fake = await startFakeUpstream();
    fake.handle((request, response) => {
      if ((request.body as any).stream) {
        return writeSse(response, chatStreamFrames(['Cached', ' answer'], DETAILED_USAGE));
      }
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(chatCompletion('Cached answer', DETAILED_USAGE));
    });
    gateway = await startTestApp({
      config: {
        credits: { initial: 10 },
        providers: { baidu: { api_key: 'k', base_url: `${fake.url}/v1` } },
      },
    });
    key = (await createKey(gateway)).key;
  });
  after(async () => {
    await gateway.close();
    await fake.close();
  });

  const body = (extra: Record<string, unknown>) => ({ model: DEEPSEEK, max_tokens: 1000, ...extra });

  it('prices cached and reasoning tokens: usage.cost and cost_details equal the hand-computed figure', async () => {
    assert.equal(INPUT_NANOS + OUTPUT_NANOS, TOTAL_NANOS);
    const response = await gateway.request('POST', '/api/v1/chat/completions', {
      key,
      body: body({ messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 200, response.text);
    const usage = response.body.usage;
    assert.equal(usage.prompt_tokens, 1000);
    assert.equal(usage.completion_tokens, 500);
    assert.equal(usage.prompt_tokens_details.cached_tokens, 400);
    assert.equal(usage.completion_tokens_details.reasoning_tokens, 200);
    assert.equal(usage.cost, usd(TOTAL_NANOS));
    assert.equal(usage.is_byok, false);
    assert.equal(usage.cost_details.upstream_inference_prompt_cost, usd(INPUT_NANOS));
    assert.equal(usage.cost_details.upstream_inference_completions_cost, usd(OUTPUT_NANOS));

    const record = await generationRecord(gateway, key, generationId(response));
    assert.equal(record.total_cost, usd(TOTAL_NANOS));
    assert.equal(record.native_tokens_cached, 400);
    assert.equal(record.native_tokens_reasoning, 200);
    assert.equal(record.provider_name, BAIDU.name);
  });

  it('bills a streamed reply the same, from the usage in its last chunk', async () => {
    const response = await gateway.request('POST', '/api/v1/chat/completions', {
      key,
      body: body({ messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    assert.equal(response.status, 200, response.text);
    const usageChunk = sseData(response.text).at(-2);
    assert.equal(usageChunk.usage.cost, usd(TOTAL_NANOS));
    assert.equal(usageChunk.usage.prompt_tokens_details.cached_tokens, 400);
  });

  it('reports the same cost on /responses', async () => {
    const response = await gateway.request('POST', '/api/v1/responses', {
      key,
      body: { model: DEEPSEEK, input: 'hi', max_output_tokens: 1000 },
    });
    assert.equal(response.status, 200, response.text);
    const usage = response.body.usage;
    assert.equal(usage.input_tokens, 1000);
    assert.equal(usage.input_tokens_details.cached_tokens, 400);
    assert.equal(usage.output_tokens_details.reasoning_tokens, 200);
    assert.equal(usage.cost, usd(TOTAL_NANOS));
  });

  it('adds every cost to the key usage and the account total_usage', async () => {
    const spent = usd(3 * TOTAL_NANOS);
    const info = await keyInfo(gateway, key);
    assert.equal(info.usage, spent);
    assert.equal(info.usage_daily, spent);
    // The generation log writes in group commits (about 50 ms): the stored totals follow.
    await waitFor('the account total_usage', async () => {
      const credits = await gateway.request('GET', '/api/v1/credits');
      return credits.body.data.total_usage === spent;
    });
    const hash = info.hash;
    const stored = await gateway.request('GET', `/api/v1/keys/${hash}`);
    assert.equal(stored.body.data.usage, spent);
  });
});

/** A fake upstream that holds every request until the test lets them through. */
async function gatedUpstream(usage: OpenAiUsage) {
  const fake = await startFakeUpstream();
  const held: ServerResponse[] = [];
  let open = false;
  const answer = (response: ServerResponse) =>
    response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion('counted', usage));
  fake.handle((_request, response) => {
    if (open) answer(response);
    else held.push(response);
  });
  return {
    fake,
    held,
    release() {
      open = true;
      for (const response of held.splice(0)) answer(response);
    },
  };
}

// The request of the limit tests, priced on the config model (acme/widget-1: $1 / $2 per million):
// the prompt bound is 5 bytes + 4 + 16 = 25 tokens, and max_tokens is 100, so the worst case is
// 25 × 1000 + 100 × 2000 = 225,000 nano-dollars. The upstream reports exactly that usage.
const PROMPT = 'count';
const MAX_TOKENS = 100;
const PROMPT_TOKENS = promptBound([PROMPT]);
const WORST_NANOS = PROMPT_TOKENS * ACME_PROMPT_NANOS + MAX_TOKENS * ACME_COMPLETION_NANOS;
const WORST_USAGE = usageOf(PROMPT_TOKENS, MAX_TOKENS);
const countRequest = {
  model: ACME_MODEL,
  messages: [{ role: 'user', content: PROMPT }],
  max_tokens: MAX_TOKENS,
};

/**
 * Fires `total` requests spread over the gateways, waits until each one is either answered or held
 * at the upstream, lets the held ones through, and returns every status.
 */
async function burst(
  gateways: TestApp[],
  key: string,
  gate: Awaited<ReturnType<typeof gatedUpstream>>,
  total = 50,
) {
  let answered = 0;
  const responses = Array.from({ length: total }, (_, index) =>
    gateways[index % gateways.length]!.request('POST', '/api/v1/chat/completions', {
      key,
      body: countRequest,
    }).finally(() => {
      answered += 1;
    }),
  );
  await waitFor(
    'every request to be refused or held upstream',
    () => answered + gate.held.length === total,
    15_000,
  );
  gate.release();
  return Promise.all(responses);
}

function assertTenPassed(responses: ClientResponse[]) {
  const passed = responses.filter((response) => response.status === 200);
  const refused = responses.filter((response) => response.status === 402);
  assert.equal(passed.length, 10, responses.map((response) => response.status).join(','));
  assert.equal(refused.length, 40);
  for (const response of refused) {
    expectError(response, 402);
    assert.equal(response.body.error.metadata.error_type, 'payment_required');
    assert.match(response.body.error.message, /Key limit exceeded/);
  }
  for (const response of passed) assert.equal(response.body.usage.cost, usd(WORST_NANOS));
}

describe('spend limits under concurrency', () => {
  it('lets exactly 10 of 50 concurrent requests through a key whose limit fits 10 worst cases', async () => {
    const gate = await gatedUpstream(WORST_USAGE);
    const gateway = await startTestApp({
      config: {
        credits: { initial: 100 },
        providers: { acme: { api_key: 'k' } },
        catalog: acmeCatalog(`${gate.fake.url}/v1`),
      },
    });
    try {
      const limitUsd = usd(10 * WORST_NANOS);
      const { key, hash } = await createKey(gateway, { name: 'ten', limit: limitUsd });
      assertTenPassed(await burst([gateway], key, gate));
      assert.equal(gate.fake.requests.length, 10);

      const info = await keyInfo(gateway, key);
      assert.equal(info.usage, limitUsd);
      assert.equal(info.limit_remaining, 0);
      await gateway.services.generations.flush();
      const stored = await gateway.request('GET', `/api/v1/keys/${hash}`);
      assert.equal(stored.body.data.usage, limitUsd);

      // Nothing is left: the next request is refused before any upstream call.
      const more = await gateway.request('POST', '/api/v1/chat/completions', { key, body: countRequest });
      expectError(more, 402);
      assert.equal(gate.fake.requests.length, 10);
    } finally {
      await gateway.close();
      await gate.fake.close();
    }
  });

  it('answers 402 once the account credits cannot cover the worst case', async () => {
    const gate = await gatedUpstream(WORST_USAGE);
    gate.release();
    const gateway = await startTestApp({
      config: {
        // One and a half worst cases: the first request fits, the second does not.
        credits: { initial: usd(1.5 * WORST_NANOS) },
        providers: { acme: { api_key: 'k' } },
        catalog: acmeCatalog(`${gate.fake.url}/v1`),
      },
    });
    try {
      const { key } = await createKey(gateway);
      const first = await gateway.request('POST', '/api/v1/chat/completions', { key, body: countRequest });
      assert.equal(first.status, 200, first.text);
      const second = await gateway.request('POST', '/api/v1/chat/completions', {
        key,
        body: countRequest,
        headers: { 'x-switchyard-metadata': 'enabled' },
      });
      expectError(second, 402);
      assert.equal(second.body.error.metadata.error_type, 'payment_required');
      assert.match(second.body.error.message, /Insufficient credits/);
      // No provider was reached: attempt 0, with the refused endpoint listed.
      const metadata = second.body.switchyard_metadata;
      assert.equal(metadata.attempt, 0);
      assert.deepEqual(metadata.attempts, [{ provider: 'Acme', model: ACME_MODEL, status: 402 }]);
      assert.equal(gate.fake.requests.length, 1);
      const record = await generationRecord(gateway, key, generationId(second));
      assert.equal(record.status, 'failed');
      assert.equal(record.http_status, 402);
      await waitFor('the account total_usage', async () => {
        const credits = await gateway.request('GET', '/api/v1/credits');
        return credits.body.data.total_usage === usd(WORST_NANOS) && credits.body.data;
      });
    } finally {
      await gateway.close();
      await gate.fake.close();
    }
  });

  it('keeps the limit global across two instances sharing Redis', {
    skip: !backend.redisUrl && 'REDIS_URL is not set',
  }, async () => {
    const gate = await gatedUpstream(WORST_USAGE);
    const database = isolatedDatabase();
    const redisPrefix = `switchyard-test-${randomBytes(6).toString('hex')}:`;
    const config = {
      credits: { initial: 100 },
      providers: { acme: { api_key: 'k' } },
      catalog: acmeCatalog(`${gate.fake.url}/v1`),
    };
    const first = await startTestApp({ database, redisPrefix, config });
    const second = await startTestApp({ database, redisPrefix, config });
    try {
      const limitUsd = usd(10 * WORST_NANOS);
      const { key, hash } = await createKey(first, { name: 'shared', limit: limitUsd });
      assertTenPassed(await burst([first, second], key, gate));
      assert.equal(gate.fake.requests.length, 10);
      await Promise.all([first.services.generations.flush(), second.services.generations.flush()]);
      const stored = await first.request('GET', `/api/v1/keys/${hash}`);
      assert.equal(stored.body.data.usage, limitUsd);
    } finally {
      await first.close();
      await second.close();
      await database.drop();
      await gate.fake.close();
    }
  });
});

/** The figure a 402 names: "this request may cost up to $X". */
const reservedNanos = (response: ClientResponse): number => {
  const match = /may cost up to \$([0-9.e-]+)/.exec(expectError(response, 402));
  assert.ok(match, response.text);
  return Math.round(Number(match[1]) * 1e9);
};

describe('the worst case reserved before the call', () => {
  let gateway: TestApp;
  let key: string;
  before(async () => {
    gateway = await startTestApp({
      config: {
        credits: { initial: 100 },
        providers: { acme: { api_key: 'k' } },
        catalog: acmeCatalog('http://127.0.0.1:9/v1'),
      },
    });
    // A limit below any priced request: every request is refused, naming its worst case.
    key = (await createKey(gateway, { name: 'tiny', limit: 0.000001 })).key;
  });
  after(() => gateway.close());

  const ask = (body: Record<string, unknown>) =>
    gateway.request('POST', '/api/v1/chat/completions', { key, body: { model: ACME_MODEL, ...body } });

  it('is the prompt bound at the prompt price plus max_tokens at the completion price', async () => {
    const response = await ask({ messages: [{ role: 'user', content: PROMPT }], max_tokens: MAX_TOKENS });
    assert.equal(reservedNanos(response), WORST_NANOS);
    assert.equal(response.body.error.metadata.error_type, 'payment_required');
    assert.match(response.body.error.message, /Key limit exceeded/);
  });

  it("uses the endpoint's maximum output when the request sets none", async () => {
    const response = await ask({ messages: [{ role: 'user', content: PROMPT }] });
    assert.equal(reservedNanos(response), PROMPT_TOKENS * ACME_PROMPT_NANOS + 4096 * ACME_COMPLETION_NANOS);
  });

  it('counts the system prompt, every message, tools and a JSON schema response format', async () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'lookup',
          description: 'd'.repeat(300),
          parameters: { type: 'object', properties: {} },
        },
      },
    ];
    const schema = {
      type: 'object',
      properties: { answer: { type: 'string', description: 'x'.repeat(2000) } },
    };
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: PROMPT },
    ];
    const base = reservedNanos(await ask({ messages, max_tokens: MAX_TOKENS }));
    assert.ok(
      base >= promptBound(['Be brief.', PROMPT]) * ACME_PROMPT_NANOS + MAX_TOKENS * ACME_COMPLETION_NANOS,
    );
    const withTools = reservedNanos(await ask({ messages, max_tokens: MAX_TOKENS, tools }));
    assert.ok(withTools - base >= Buffer.byteLength(JSON.stringify(tools)) * ACME_PROMPT_NANOS * 0.9);
    const withSchema = reservedNanos(
      await ask({
        messages,
        max_tokens: MAX_TOKENS,
        response_format: { type: 'json_schema', json_schema: { name: 'reply', schema } },
      }),
    );
    // The schema's 2000-odd bytes are sent with the prompt: they are part of the bound.
    assert.ok(withSchema - base >= Buffer.byteLength(JSON.stringify(schema)) * ACME_PROMPT_NANOS);
  });

  it('adds 1,024 prompt tokens for the text providers wrap tools and output formats in', async () => {
    const messages = [{ role: 'user', content: PROMPT }];
    const base = reservedNanos(await ask({ messages, max_tokens: MAX_TOKENS }));
    // json_object carries no schema: all it adds to the bound is the framing (a JSON-only
    // instruction, or a provider's own structured-output prompt) and its own few bytes.
    const jsonObject = reservedNanos(
      await ask({ messages, max_tokens: MAX_TOKENS, response_format: { type: 'json_object' } }),
    );
    assert.equal(jsonObject - base, 1024 * ACME_PROMPT_NANOS);
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const withTools = reservedNanos(await ask({ messages, max_tokens: MAX_TOKENS, tools }));
    assert.ok(withTools - base >= 1024 * ACME_PROMPT_NANOS, `${withTools - base}`);
    // A text format frames nothing.
    const text = reservedNanos(
      await ask({ messages, max_tokens: MAX_TOKENS, response_format: { type: 'text' } }),
    );
    assert.equal(text, base);
  });

  it('reserves nothing for a zero-priced model: it passes a key too small for any priced request', async () => {
    const demo = await startTestApp({ demo: true });
    try {
      const { key: tiny } = await createKey(demo, { name: 'tiny', limit: 0.000001 });
      const response = await demo.request('POST', '/api/v1/chat/completions', {
        key: tiny,
        body: { model: 'switchyard/echo', messages: [{ role: 'user', content: 'free' }] },
      });
      assert.equal(response.status, 200, response.text);
    } finally {
      await demo.close();
    }
  });
});
