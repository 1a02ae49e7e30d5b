import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { structuredAnthropic } from '../../helpers/fake-anthropic-structured.js';
import { startFakeUpstream, writeSse } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  ACME_MODEL,
  acmeCatalog,
  chatCompletion,
  chatStreamFrames,
  createKey,
  sseData,
  withGem,
} from './harness.js';

/** An OpenAI-compatible model like ACME_MODEL whose catalogue record lists `reasoning`. */
const THINKER = 'acme/thinker-1';
/** Gemini models that list `reasoning`: 2.5 Flash thinks unless told not to, Flash-Lite only when asked. */
const FLASH = 'gem/flash';
const FLASH_LITE = 'gem/flash-lite';
const GEMINI_ANSWER = JSON.stringify({
  candidates: [{ content: { role: 'model', parts: [{ text: 'Done.' }] }, finishReason: 'STOP' }],
  usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
});

/**
 * Anthropic's `output_config.effort` sent to `/messages` without `thinking` governs how many tokens
 * the answer spends and turns no thinking on: what each upstream receives for it, beside the
 * effort forms that do ask for reasoning (with `thinking`, chat's `reasoning_effort`, Responses'
 * `reasoning`), which are unchanged.
 */
describe('/messages output_config.effort without thinking', () => {
  let fake: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  before(async () => {
    fake = await startFakeUpstream();
    const anthropic = structuredAnthropic('Done.');
    fake.handle((request, response) => {
      if (request.url.includes('/messages')) return anthropic(request, response);
      if (request.url.includes('/v1beta/'))
        return void response.writeHead(200, { 'content-type': 'application/json' }).end(GEMINI_ANSWER);
      if ((request.body as { stream?: boolean }).stream)
        return void writeSse(response, chatStreamFrames(['Done.']));
      response.writeHead(200, { 'content-type': 'application/json' }).end(chatCompletion('Done.'));
    });
    const catalog = withGem(acmeCatalog(`${fake.url}/v1`), `${fake.url}/v1beta`);
    const widget = catalog.models[0] as (typeof catalog.models)[number];
    const reasons = [...widget.supported_parameters, 'reasoning'];
    catalog.models.push(
      {
        ...widget,
        id: THINKER,
        name: 'Acme Thinker 1',
        provider_model_id: 'thinker-1',
        supported_parameters: reasons,
      },
      ...[
        [FLASH, 'gemini-2.5-flash'],
        [FLASH_LITE, 'gemini-2.5-flash-lite'],
      ].map(([id, upstreamId]) => ({
        ...widget,
        id: id as string,
        name: upstreamId as string,
        provider: 'gem',
        provider_model_id: upstreamId as string,
        supported_parameters: reasons,
      })),
    );
    gateway = await startTestApp({
      config: {
        credits: { initial: 100 },
        catalog,
        providers: {
          acme: { api_key: 'a' },
          gem: { api_key: 'g' },
          anthropic: { api_key: 'sk-ant-test', base_url: `${fake.url}/v1` },
        },
      },
    });
    key = (await createKey(gateway)).key;
  });
  after(async () => {
    await gateway.close();
    await fake.close();
  });

  const post = (path: string, body: Record<string, unknown>) =>
    gateway.request('POST', `/api/v1${path}`, { key, body });
  /** The body the fake upstream received last. */
  const sent = () => fake.requests.at(-1)?.body as Record<string, any>;
  const messages = (model: string, extra: Record<string, unknown>) =>
    post('/messages', {
      model,
      max_tokens: 2000,
      messages: [{ role: 'user', content: 'Classify: "great product".' }],
      ...extra,
    });
  const textOf = (reply: { text: string }) =>
    sseData(reply.text)
      .filter((event) => event.type === 'content_block_delta' && event.delta.type === 'text_delta')
      .map((event) => event.delta.text)
      .join('');

  it('reaches Anthropic as output_config.effort with no thinking, whole and streamed', async () => {
    for (const stream of [false, true]) {
      const reply = await messages('anthropic/claude-opus-4.7', {
        output_config: { effort: 'low' },
        stream,
      });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(stream ? textOf(reply) : reply.body.content[0].text, 'Done.');
      const body = sent();
      assert.equal(body.model, 'claude-opus-4-7');
      assert.equal(body.thinking, undefined, 'no thinking turned on');
      assert.deepEqual(body.output_config, { effort: 'low' });
      assert.equal(body.max_tokens, 2000, "the caller's cap, with no thinking room added");
    }
    // Each model gets a level it has; with thinking disabled the effort still goes.
    await messages('anthropic/claude-sonnet-4.6', { output_config: { effort: 'xhigh' } });
    assert.deepEqual([sent().thinking, sent().output_config], [undefined, { effort: 'max' }]);
    await messages('anthropic/claude-opus-4.5', { output_config: { effort: 'medium' } });
    assert.deepEqual([sent().thinking, sent().output_config], [undefined, { effort: 'medium' }]);
    await messages('anthropic/claude-opus-4.8', {
      thinking: { type: 'disabled' },
      output_config: { effort: 'high' },
    });
    assert.deepEqual([sent().thinking, sent().output_config], [undefined, { effort: 'high' }]);
  });

  it('is dropped for a Claude model that takes no effort, which gets no thinking either', async () => {
    for (const model of ['anthropic/claude-sonnet-4.5', 'anthropic/claude-haiku-4.5']) {
      const reply = await messages(model, { output_config: { effort: 'low' } });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(sent().thinking, undefined, model);
      assert.equal(sent().output_config, undefined, model);
      assert.equal(sent().max_tokens, 2000, model);
    }
  });

  it('beside thinking, and from chat and Responses, an effort still asks for thinking', async () => {
    const adaptive = { type: 'adaptive', display: 'summarized' };
    await messages('anthropic/claude-opus-4.7', {
      thinking: { type: 'adaptive' },
      output_config: { effort: 'low' },
    });
    assert.deepEqual([sent().thinking, sent().output_config], [adaptive, { effort: 'low' }]);
    const chat = await post('/chat/completions', {
      model: 'anthropic/claude-opus-4.7',
      messages: [{ role: 'user', content: 'hi' }],
      reasoning_effort: 'low',
    });
    assert.equal(chat.status, 200, chat.text);
    assert.deepEqual([sent().thinking, sent().output_config], [adaptive, { effort: 'low' }]);
    const responses = await post('/responses', {
      model: 'anthropic/claude-opus-4.7',
      input: 'hi',
      reasoning: { effort: 'low' },
    });
    assert.equal(responses.status, 200, responses.text);
    assert.deepEqual([sent().thinking, sent().output_config], [adaptive, { effort: 'low' }]);
    // A budget-thinking model is still given a budget for a chat effort.
    await post('/chat/completions', {
      model: 'anthropic/claude-sonnet-4.5',
      messages: [{ role: 'user', content: 'hi' }],
      reasoning_effort: 'low',
    });
    assert.deepEqual(sent().thinking, { type: 'enabled', budget_tokens: 4096 });
  });

  it('reaches an OpenAI-compatible reasoning model as its reasoning_effort, and a model that does not reason as nothing', async () => {
    for (const stream of [false, true]) {
      const reasoner = await messages(THINKER, { output_config: { effort: 'low' }, stream });
      assert.equal(reasoner.status, 200, reasoner.text);
      assert.equal(stream ? textOf(reasoner) : reasoner.body.content[0].text, 'Done.');
      assert.equal(sent().model, 'thinker-1');
      assert.equal(sent().reasoning_effort, 'low');
      const plain = await messages(ACME_MODEL, { output_config: { effort: 'low' }, stream });
      assert.equal(plain.status, 200, plain.text);
      assert.equal(sent().model, 'widget-1');
      assert.equal(sent().reasoning_effort, undefined);
    }
  });

  it('reaches Gemini 2.5 Flash, which thinks anyway, as its budget, and turns no thinking on for Flash-Lite', async () => {
    const flash = await messages(FLASH, { output_config: { effort: 'low' } });
    assert.equal(flash.status, 200, flash.text);
    assert.equal(flash.body.content[0].text, 'Done.');
    assert.deepEqual(sent().generationConfig.thinkingConfig, { thinkingBudget: 1024 });
    const lite = await messages(FLASH_LITE, { output_config: { effort: 'low' } });
    assert.equal(lite.status, 200, lite.text);
    assert.equal(sent().generationConfig.thinkingConfig, undefined);
    // Beside thinking, the effort is Flash-Lite's budget, as before.
    await messages(FLASH_LITE, { thinking: { type: 'adaptive' }, output_config: { effort: 'low' } });
    assert.equal(sent().generationConfig.thinkingConfig.thinkingBudget, 1024);
  });

  it('an effort that is not a level is a 400 naming the field, sent nowhere', async () => {
    const count = fake.requests.length;
    for (const [effort, rule] of [
      ['extreme', 'must be one of: low, medium, high, xhigh, max'],
      ['none', 'must be one of: low, medium, high, xhigh, max'],
      [3, 'must be string,null'],
    ] as const) {
      const reply = await messages('anthropic/claude-opus-4.7', { output_config: { effort } });
      assert.equal(reply.status, 400, reply.text);
      assert.ok(
        reply.body.error.message.startsWith(`Invalid request parameters: body.output_config.effort ${rule}`),
        reply.body.error.message,
      );
    }
    assert.equal(fake.requests.length, count);
  });
});
