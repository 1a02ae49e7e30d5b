import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startFakeUpstream, writeSse } from '../../helpers/fake-upstream.js';
import { expectError, startTestApp, type TestApp } from '../../helpers/test-app.js';
import {
  ACME_MODEL,
  acmeCatalog,
  chatCompletion,
  chatStreamFrames,
  createKey,
  EMBED_MODEL,
  GEM_MODEL,
  generationId,
  withEmbeddings,
  withGem,
} from './harness.js';

const GEMINI_MODEL = GEM_MODEL;

/**
 * Inputs and upstream answers that a fuzzing run through the real adapters (not the demo provider)
 * found to cost a 500, or to leave a record that could not be read back: each must end in a 4xx for
 * the client's input, or a 502 naming the upstream's fault, with a record that reads back.
 */
describe('client input and upstream answers that once cost a 500', () => {
  let fake: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;
  let answer: (response: ServerResponse, url: string) => void;

  before(async () => {
    fake = await startFakeUpstream();
    const catalog = withEmbeddings(withGem(acmeCatalog(`${fake.url}/v1`), `${fake.url}/v1beta`));
    gateway = await startTestApp({
      config: {
        credits: { initial: 100 },
        catalog,
        providers: { acme: { api_key: 'a' }, gem: { api_key: 'g' } },
      },
    });
    key = (await createKey(gateway)).key;
    fake.handle((request, response) => answer(response, request.url ?? ''));
  });
  after(async () => {
    await gateway.close();
    await fake.close();
  });

  const post = (path: string, body: Record<string, unknown>) => gateway.request('POST', path, { key, body });
  const chat = (model: string, extra: Record<string, unknown> = {}) =>
    post('/api/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }], ...extra });
  const json = (body: string) => (response: ServerResponse) =>
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  const sse = (frames: string[]) => (response: ServerResponse) => void writeSse(response, frames);

  /** The generation record of a failed reply reads back, with the status the client got. */
  async function recordReadsBack(reply: { headers: Headers; status: number }): Promise<void> {
    const id = generationId(reply as never);
    assert.ok(id, 'a generation id');
    const record = await gateway.request('GET', `/api/v1/generation?id=${id}`, { key });
    assert.equal(record.status, 200, record.text);
    assert.equal(record.body.data.http_status, reply.status);
  }

  it('a data URL with malformed %-encoding is a 400 for Gemini, not a 500', async () => {
    answer = json('{}');
    for (const url of ['data:image/png,%ZZ', 'data:text/plain,%E0%A4%A']) {
      const reply = await chat(GEMINI_MODEL, {
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }],
      });
      assert.match(expectError(reply, 400), /Invalid data URL in message content: malformed %-encoding/, url);
    }
  });

  it('an upstream answering JSON null is a 502, streamed or not, before any output', async () => {
    answer = (response, url) =>
      url.includes('stream')
        ? sse(['null', JSON.stringify({ candidates: [] })])(response)
        : json('null')(response);
    const gemini = await chat(GEMINI_MODEL);
    assert.equal(gemini.status, 502, gemini.text);
    assert.match(gemini.body.error.message, /JSON null where an object was expected/);
    await recordReadsBack(gemini);
    const geminiStream = await chat(GEMINI_MODEL, { stream: true });
    assert.equal(geminiStream.status, 502, geminiStream.text);

    answer = sse(['null', ...chatStreamFrames(['hello'])]);
    const openai = await chat(ACME_MODEL, { stream: true });
    assert.equal(openai.status, 502, openai.text);
    await recordReadsBack(openai);
  });

  it('an upstream error code that is not an integer becomes a 502 whose record reads back', async () => {
    answer = json('{"error":{"code":400.5,"message":"x"}}');
    for (const model of [ACME_MODEL, GEMINI_MODEL]) {
      const reply = await chat(model);
      assert.equal(reply.status, 502, `${model}: ${reply.text}`);
      assert.equal(reply.body.error.code, 502);
      await recordReadsBack(reply);
    }
    answer = sse(['{"error":{"code":429.9,"message":"x"}}']);
    const streamed = await chat(ACME_MODEL, { stream: true });
    assert.equal(streamed.status, 502, streamed.text);
    await recordReadsBack(streamed);
    // An integer code is still the upstream's status.
    answer = json('{"error":{"code":429,"message":"slow down"}}');
    assert.equal((await chat(ACME_MODEL)).status, 429);
    answer = json(chatCompletion('fine'));
    assert.equal((await chat(ACME_MODEL)).status, 200);
  });

  it('an embedding with a number JSON cannot carry back (1e999) is the upstream fault, not a null', async () => {
    answer = json(
      '{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1e999,0.2,0.3]}],"usage":{"prompt_tokens":2,"total_tokens":2}}',
    );
    const reply = await post('/api/v1/embeddings', { model: EMBED_MODEL, input: 'hi' });
    assert.equal(reply.status, 502, reply.text);
    assert.match(reply.body.error.message, /embedding 0 is not a list of finite numbers/);
  });
});
