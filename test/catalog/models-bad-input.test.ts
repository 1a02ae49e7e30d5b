import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { expectError, startTestApp, type TestApp } from '../helpers/test-app.js';
import { readSnapshot } from './oracle.js';

const allIds = readSnapshot().models.map((model: { id: string }) => model.id);

/** Refused queries: the raw query string and the parameter name(s) the message must name. */
const REFUSED: Array<[query: string, names: string[]]> = [
  ['category=unknown', ['category']],
  ['sort=unknown', ['sort']],
  ['context=0', ['context']],
  ['context=-5', ['context']],
  ['context=abc', ['context']],
  ['context=1.5', ['context']],
  ['min_price=-1', ['min_price']],
  ['max_price=abc', ['max_price']],
  ['min_price=5&max_price=1', ['min_price', 'max_price']],
  ['min_output_price=-0.5', ['min_output_price']],
  ['min_output_price=3&max_output_price=2', ['min_output_price', 'max_output_price']],
  ['min_tool_success_rate=1.5', ['min_tool_success_rate']],
  ['max_tool_success_rate=-0.1', ['max_tool_success_rate']],
  ['min_tool_success_rate=0.8&max_tool_success_rate=0.2', ['min_tool_success_rate', 'max_tool_success_rate']],
  ['region=us', ['region']],
  ['zdr=false', ['zdr']],
  ['distillable=maybe', ['distillable']],
  ['output_modalities=text,video', ['output_modalities']],
  ['input_modalities=smell', ['input_modalities']],
  ['min_age_days=-1', ['min_age_days']],
  ['min_age_days=1.5', ['min_age_days']],
  ['max_age_days=abc', ['max_age_days']],
  ['min_age_days=10&max_age_days=5', ['min_age_days', 'max_age_days']],
  ['min_intelligence_index=-2', ['min_intelligence_index']],
  ['max_agentic_index=abc', ['max_agentic_index']],
  ['min_coding_index=10&max_coding_index=5', ['min_coding_index', 'max_coding_index']],
  ['use_rss=maybe', ['use_rss']],
  ['use_rss_chat_links=yes', ['use_rss_chat_links']],
  // Numbers are plain decimals, given once: what Number() would also read is not enough.
  ['context=0x10', ['context']],
  ['context=1e3', ['context']],
  ['min_price=Infinity', ['min_price']],
  ['min_intelligence_index=1e400', ['min_intelligence_index']],
  ['max_price=%201', ['max_price']],
  ['context=1000&context=2000', ['context']],
];

describe('GET /models: refused parameters', () => {
  let gateway: TestApp;
  before(async () => {
    gateway = await startTestApp();
  });
  after(() => gateway.close());

  for (const [query, names] of REFUSED) {
    it(`${query} → 400 naming ${names.join(' or ')}`, async () => {
      const message = expectError(
        await gateway.request('GET', `/api/v1/models?${query}`, { key: null }),
        400,
      );
      assert.ok(
        names.some((name) => message.includes(name)),
        `the message names ${names.join(' or ')}: ${message}`,
      );
    });
  }

  it('a refused value is refused with a key too', async () => {
    expectError(await gateway.request('GET', '/api/v1/models?context=0'), 400);
  });

  it('unknown query parameters are ignored', async () => {
    const response = await gateway.request('GET', '/api/v1/models?foo=bar&limit=abc', { key: null });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(
      response.body.data.map((model: { id: string }) => model.id),
      allIds,
    );
  });

  it('GET /models/count with output_modalities=bogus → 400 naming output_modalities', async () => {
    const message = expectError(
      await gateway.request('GET', '/api/v1/models/count?output_modalities=bogus', { key: null }),
      400,
    );
    assert.match(message, /output_modalities/);
  });
});
