import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startFakeUpstream, writeSse } from '../../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../../helpers/test-app.js';
import { createKey, generationId, generationRecord, promptBound, sseData, usd } from './harness.js';

/**
 * Image output end to end: google/gemini-2.5-flash-image (Google AI Studio, the catalogue's prices:
 * $0.30/M prompt, $2.50/M completion, $30/M image output) answered by a fake Gemini upstream in
 * its wire format, seen through /chat/completions (JSON, stream, and the `openai` SDK), /responses
 * (JSON and its event stream) and /messages, with the cost and the generation record.
 */
const MODEL = 'google/gemini-2.5-flash-image';
const PROMPT_NANOS = 300;
const COMPLETION_NANOS = 2500;
const IMAGE_NANOS = 30_000;

// A 1×1 PNG; what Gemini sends is the same shape, only longer.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const DATA_URL = `data:image/png;base64,${PNG}`;

// 1,290 image tokens (one 1024×1024 image) and 9 text tokens out, 12 in.
const USAGE = {
  promptTokenCount: 12,
  candidatesTokenCount: 1299,
  totalTokenCount: 1311,
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: 12 }],
  candidatesTokensDetails: [
    { modality: 'IMAGE', tokenCount: 1290 },
    { modality: 'TEXT', tokenCount: 9 },
  ],
};
const INPUT_NANOS = 12 * PROMPT_NANOS;
const OUTPUT_NANOS = 9 * COMPLETION_NANOS + 1290 * IMAGE_NANOS;
const COST_NANOS = INPUT_NANOS + OUTPUT_NANOS;

const identity = { modelVersion: 'gemini-2.5-flash-image', responseId: 'img-resp-1' };
const candidate = (parts: unknown[], finishReason?: string) => ({
  content: { role: 'model', parts },
  index: 0,
  ...(finishReason ? { finishReason } : {}),
});

/** The whole answer: text, then the image. */
function answerWhole(response: ServerResponse) {
  response.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      candidates: [
        candidate(
          [{ text: 'Here is your cat.' }, { inlineData: { mimeType: 'image/png', data: PNG } }],
          'STOP',
        ),
      ],
      usageMetadata: USAGE,
      ...identity,
    }),
  );
}

/** The streamed answer: text, the image whole in one chunk, more text, then the finish with usage. */
function answerStreamed(response: ServerResponse) {
  const chunk = (parts: unknown[], finishReason?: string, usage?: unknown) =>
    JSON.stringify({
      candidates: [candidate(parts, finishReason)],
      usageMetadata: usage ?? { promptTokenCount: 12, totalTokenCount: 12 },
      ...identity,
    });
  return writeSse(response, [
    chunk([{ text: 'Here is ' }]),
    chunk([{ text: 'your cat.' }]),
    chunk([{ inlineData: { mimeType: 'image/png', data: PNG } }]),
    chunk([{ text: ' Enjoy.' }]),
    chunk([], 'STOP', USAGE),
  ]);
}

describe('image output from an image model, end to end', () => {
  let gemini: Awaited<ReturnType<typeof startFakeUpstream>>;
  let openai: Awaited<ReturnType<typeof startFakeUpstream>>;
  let gateway: TestApp;
  let key: string;

  before(async () => {
    [gemini, openai] = await Promise.all([startFakeUpstream(), startFakeUpstream()]);
    gateway = await startTestApp({
      config: {
        credits: { initial: 10 },
        providers: {
          'google-ai-studio': { api_key: 'goog-test', base_url: `${gemini.url}/v1beta` },
          openai: { api_key: 'sk-openai-test', base_url: `${openai.url}/v1` },
        },
      },
    });
    ({ key } = await createKey(gateway));
    gemini.handle((request, response) =>
      request.url.includes('streamGenerateContent') ? answerStreamed(response) : answerWhole(response),
    );
  });
  after(async () => {
    await gateway.close();
    await Promise.all([gemini.close(), openai.close()]);
  });

  const post = (path: string, body: unknown) => gateway.request('POST', `/api/v1${path}`, { key, body });
  const drawCat = { role: 'user', content: 'Draw a cat' };

  it('chat: asks Gemini for text and images with the image options, answers message.images, bills image tokens at their price', async () => {
    const reply = await post('/chat/completions', {
      model: MODEL,
      messages: [drawCat],
      modalities: ['image', 'text'],
      image_config: { aspect_ratio: '16:9', image_size: '2K' },
    });
    assert.equal(reply.status, 200, reply.text);
    const sent = gemini.requests.at(-1)!;
    assert.equal(sent.url, '/v1beta/models/gemini-2.5-flash-image:generateContent');
    assert.deepEqual((sent.body as any).generationConfig, {
      responseModalities: ['TEXT', 'IMAGE'],
      imageConfig: { aspectRatio: '16:9', imageSize: '2K' },
    });
    const message = reply.body.choices[0].message;
    assert.equal(message.content, 'Here is your cat.');
    assert.deepEqual(message.images, [{ type: 'image_url', image_url: { url: DATA_URL } }]);
    assert.deepEqual(reply.body.usage, {
      prompt_tokens: 12,
      completion_tokens: 1299,
      total_tokens: 1311,
      prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, image_tokens: 1290 },
      cost: usd(COST_NANOS),
      is_byok: false,
      cost_details: {
        upstream_inference_cost: null,
        upstream_inference_prompt_cost: usd(INPUT_NANOS),
        upstream_inference_completions_cost: usd(OUTPUT_NANOS),
      },
    });
    const record = await generationRecord(gateway, key, generationId(reply));
    assert.equal(record.native_tokens_completion, 1299);
    assert.equal(record.native_tokens_completion_images, 1290);
    assert.equal(record.total_cost, usd(COST_NANOS));
  });

  it('chat stream: the image whole in a delta.images chunk with its index, in its place among the text', async () => {
    const reply = await post('/chat/completions', {
      model: MODEL,
      messages: [drawCat],
      modalities: ['text', 'image'],
      stream: true,
    });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual((gemini.requests.at(-1)!.body as any).generationConfig, {
      responseModalities: ['TEXT', 'IMAGE'],
    });
    const chunks = sseData(reply.text);
    assert.equal(chunks.at(-1), '[DONE]');
    const deltas = chunks
      .filter((chunk) => chunk !== '[DONE]' && chunk.choices.length > 0)
      .map((chunk) => chunk.choices[0].delta);
    assert.deepEqual(
      deltas.filter((delta) => delta.content || delta.images),
      [
        { role: 'assistant', content: 'Here is ' },
        { role: 'assistant', content: 'your cat.' },
        { role: 'assistant', images: [{ type: 'image_url', image_url: { url: DATA_URL }, index: 0 }] },
        { role: 'assistant', content: ' Enjoy.' },
      ],
    );
    const usage = chunks.at(-2).usage;
    assert.deepEqual(usage.completion_tokens_details, { reasoning_tokens: 0, image_tokens: 1290 });
    assert.equal(usage.cost, usd(COST_NANOS));
    const record = await generationRecord(gateway, key, generationId(reply));
    assert.equal(record.native_tokens_completion_images, 1290);
    assert.equal(record.streamed, true);
  });

  it('chat through the openai SDK: images on the message and in the stream chunks', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/api/v1`, apiKey: key, maxRetries: 0 });
    // The SDK's types know only text and audio modalities; the field goes through as given.
    const params = { model: MODEL, messages: [{ role: 'user' as const, content: 'Draw a cat' }] };
    const completion = await client.chat.completions.create({
      ...params,
      modalities: ['image', 'text'] as never,
    });
    const message = completion.choices[0]!.message as OpenAI.Chat.ChatCompletionMessage & {
      images?: Array<{ image_url: { url: string } }>;
    };
    assert.equal(message.content, 'Here is your cat.');
    assert.equal(message.images?.[0]?.image_url.url, DATA_URL);
    const stream = await client.chat.completions.create({
      ...params,
      modalities: ['image', 'text'] as never,
      stream: true,
    });
    const images: unknown[] = [];
    let text = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; images?: unknown[] } | undefined;
      text += delta?.content ?? '';
      images.push(...(delta?.images ?? []));
    }
    assert.equal(text, 'Here is your cat. Enjoy.');
    assert.deepEqual(images, [{ type: 'image_url', image_url: { url: DATA_URL }, index: 0 }]);
  });

  it('responses: an image_generation_call item after the message, image tokens in the usage', async () => {
    const reply = await post('/responses', {
      model: MODEL,
      input: 'Draw a cat',
      modalities: ['text', 'image'],
    });
    assert.equal(reply.status, 200, reply.text);
    const [message, image, ...rest] = reply.body.output;
    assert.equal(rest.length, 0);
    assert.equal(message.type, 'message');
    assert.equal(message.content[0].text, 'Here is your cat.');
    assert.match(image.id, /^ig_/);
    assert.deepEqual(image, {
      type: 'image_generation_call',
      id: image.id,
      status: 'completed',
      result: PNG,
    });
    assert.equal(reply.body.output_text, 'Here is your cat.');
    assert.deepEqual(reply.body.usage.output_tokens_details, { reasoning_tokens: 0, image_tokens: 1290 });
    assert.equal(reply.body.usage.cost, usd(COST_NANOS));
  });

  it('responses stream: the image item with its events in order, sequence numbers unbroken', async () => {
    const reply = await post('/responses', {
      model: MODEL,
      input: 'Draw a cat',
      modalities: ['text', 'image'],
      stream: true,
    });
    assert.equal(reply.status, 200, reply.text);
    const events = sseData(reply.text);
    assert.equal(events.pop(), '[DONE]');
    assert.deepEqual(
      events.map((event) => event.sequence_number),
      events.map((_, index) => index),
    );
    const summary = events.map((event) =>
      event.type === 'response.output_item.added' || event.type === 'response.output_item.done'
        ? `${event.type}:${event.item.type}:${event.output_index}`
        : event.type,
    );
    assert.deepEqual(summary, [
      'response.created',
      'response.in_progress',
      'response.output_item.added:message:0',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done:message:0',
      'response.output_item.added:image_generation_call:1',
      'response.image_generation_call.in_progress',
      'response.image_generation_call.generating',
      'response.image_generation_call.completed',
      'response.output_item.done:image_generation_call:1',
      'response.output_item.added:message:2',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done:message:2',
      'response.completed',
    ]);
    const added = events[9];
    const done = events[13];
    assert.deepEqual(added.item, {
      type: 'image_generation_call',
      id: added.item.id,
      status: 'in_progress',
      result: null,
    });
    assert.deepEqual(done.item, {
      type: 'image_generation_call',
      id: added.item.id,
      status: 'completed',
      result: PNG,
    });
    for (const event of events.slice(10, 13))
      assert.deepEqual([event.item_id, event.output_index], [added.item.id, 1]);
    const completed = events.at(-1).response;
    assert.deepEqual(
      completed.output.map((item: { type: string }) => item.type),
      ['message', 'image_generation_call', 'message'],
    );
    assert.equal(completed.output[1].result, PNG);
    assert.equal(completed.output_text, 'Here is your cat. Enjoy.');
    assert.equal(completed.usage.output_tokens_details.image_tokens, 1290);
  });

  it('messages: has no image block, so the image is left out and the text answers; its tokens are billed', async () => {
    const reply = await post('/messages', { model: MODEL, max_tokens: 2000, messages: [drawCat] });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body.content, [{ type: 'text', text: 'Here is your cat.' }]);
    // No modalities: Gemini's default for the model stands.
    assert.equal((gemini.requests.at(-1)!.body as any).generationConfig.responseModalities, undefined);
    const record = await generationRecord(gateway, key, generationId(reply));
    assert.equal(record.native_tokens_completion_images, 1290);
    assert.equal(record.total_cost, usd(COST_NANOS));
    const refused = await post('/messages', {
      model: MODEL,
      max_tokens: 50,
      messages: [drawCat],
      modalities: ['image'],
    });
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.body.error.message, /modalities/);
  });

  it('image_config without modalities, as a body sent to many models carries it: sent to an image model, not to a text model', async () => {
    const body = (model: string) => ({ model, messages: [drawCat], image_config: { image_size: '2K' } });
    const image = await post('/chat/completions', body(MODEL));
    assert.equal(image.status, 200, image.text);
    // No modalities named: the model's default answer stands, shaped by the options.
    assert.deepEqual((gemini.requests.at(-1)!.body as any).generationConfig, {
      imageConfig: { imageSize: '2K' },
    });
    assert.equal(image.body.choices[0].message.images.length, 1);
    const text = await post('/chat/completions', body('google/gemini-2.5-flash'));
    assert.equal(text.status, 200, text.text);
    assert.equal((gemini.requests.at(-1)!.body as any).generationConfig, undefined);
    const textOnly = await post('/responses', {
      model: MODEL,
      input: 'Describe a cat',
      modalities: ['text'],
      image_config: { aspect_ratio: '1:1' },
    });
    assert.equal(textOnly.status, 200, textOnly.text);
    assert.deepEqual((gemini.requests.at(-1)!.body as any).generationConfig, {
      responseModalities: ['TEXT'],
    });
    const malformed = await post('/chat/completions', {
      ...body(MODEL),
      image_config: { image_size: 'huge' },
    });
    assert.equal(malformed.status, 400, malformed.text);
    assert.match(malformed.body.error.message, /body\.image_config\.image_size/);
  });

  it("image_config: another provider's keys take any JSON value and are not sent; null for a known key is not given", async () => {
    const image_config = {
      enhance: true,
      seed: null,
      extra: { a: 1 },
      aspect_ratio: null,
      image_size: '2K',
    };
    for (const path of ['/chat/completions', '/responses']) {
      const reply = await post(
        path,
        path === '/responses'
          ? { model: MODEL, input: 'Draw a cat', image_config }
          : { model: MODEL, messages: [drawCat], image_config },
      );
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual((gemini.requests.at(-1)!.body as any).generationConfig, {
        imageConfig: { imageSize: '2K' },
      });
    }
  });

  it('a streamed image past 4 MiB arrives whole; one cut in transit after the text is billed its estimate', async () => {
    const bigImage = 'A'.repeat(5 * 1024 * 1024);
    const chunk = (parts: unknown[], finishReason?: string, usage?: unknown) =>
      JSON.stringify({
        candidates: [candidate(parts, finishReason)],
        usageMetadata: usage ?? { promptTokenCount: 12, totalTokenCount: 12 },
        ...identity,
      });
    const image = chunk([{ inlineData: { mimeType: 'image/png', data: bigImage } }]);
    gemini.handle((_request, response) =>
      writeSse(response, [chunk([{ text: 'Here is your cat.' }]), image, chunk([], 'STOP', USAGE)]),
    );
    const ask = () =>
      post('/chat/completions', {
        model: MODEL,
        messages: [drawCat],
        modalities: ['image', 'text'],
        stream: true,
      });
    const whole = await ask();
    assert.equal(whole.status, 200);
    const images = sseData(whole.text).flatMap((data) =>
      data === '[DONE]' ? [] : (data.choices[0]?.delta.images ?? []),
    );
    assert.equal(images[0].image_url.url, `data:image/png;base64,${bigImage}`);
    const record = await generationRecord(gateway, key, generationId(whole));
    assert.equal(record.status, 'completed');
    // The connection goes down 200 KB into the image, after the text was streamed.
    gemini.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`data: ${chunk([{ text: 'Here is your cat.' }])}\n\n`);
      setTimeout(() => response.write(`data: ${image.slice(0, 200_000)}`), 10);
      setTimeout(() => response.socket?.destroy(), 40);
    });
    const cut = await ask();
    assert.equal(cut.status, 200);
    const failed = await generationRecord(gateway, key, generationId(cut));
    assert.equal(failed.status, 'failed');
    // Billed from what crossed the wire: the prompt's 30 bytes (8 tokens), 17 characters of text
    // (5 tokens), and the image, produced though cut, at its estimate (1,290).
    assert.equal(failed.native_tokens_completion_images, 1290);
    assert.equal(failed.native_tokens_completion, 1295);
    assert.equal(failed.total_cost, usd(8 * PROMPT_NANOS + 5 * COMPLETION_NANOS + 1290 * IMAGE_NANOS));
    gemini.handle((request, response) =>
      request.url.includes('streamGenerateContent') ? answerStreamed(response) : answerWhole(response),
    );
  });

  it('an image whose count the usage lacks is billed its estimate, within the reported output, never on top of it', async () => {
    const answer = (usageMetadata: unknown) => (_request: unknown, response: ServerResponse) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          candidates: [
            candidate(
              [{ text: 'Here is your cat.' }, { inlineData: { mimeType: 'image/png', data: PNG } }],
              'STOP',
            ),
          ],
          usageMetadata,
          ...identity,
        }),
      );
    };
    const ask = async () => {
      const reply = await post('/chat/completions', {
        model: MODEL,
        messages: [drawCat],
        modalities: ['image', 'text'],
      });
      assert.equal(reply.status, 200, reply.text);
      return reply;
    };
    // The output counts the image (1,299 tokens), the IMAGE entry is missing: 1,290 of them at the image price.
    gemini.handle(answer({ promptTokenCount: 12, candidatesTokenCount: 1299, totalTokenCount: 1311 }));
    const unlisted = await ask();
    assert.deepEqual(unlisted.body.usage.completion_tokens_details, {
      reasoning_tokens: 0,
      image_tokens: 1290,
    });
    assert.equal(unlisted.body.usage.completion_tokens, 1299);
    assert.equal(unlisted.body.usage.cost, usd(COST_NANOS));
    // An IMAGE entry garbled to a string, and an output that counts only the text: raised to hold
    // the image (1,290), not added to (1,299 would bill the text twice if it had counted part of it).
    gemini.handle(
      answer({
        promptTokenCount: 12,
        candidatesTokenCount: 9,
        candidatesTokensDetails: [{ modality: 'IMAGE', tokenCount: 'many' }],
      }),
    );
    const garbled = await ask();
    assert.equal(garbled.body.usage.completion_tokens, 1290);
    assert.equal(garbled.body.usage.completion_tokens_details.image_tokens, 1290);
    assert.equal(garbled.body.usage.cost, usd(INPUT_NANOS + 1290 * IMAGE_NANOS));
    const record = await generationRecord(gateway, key, generationId(garbled));
    assert.equal(record.native_tokens_completion_images, 1290);
    gemini.handle((request, response) =>
      request.url.includes('streamGenerateContent') ? answerStreamed(response) : answerWhole(response),
    );
  });

  it('estimates an image from the size asked for: a 4K image of Gemini 3 Pro Image is 2,000 tokens, a 1K one 1,120', async () => {
    // google/gemini-3-pro-image: $2/M prompt, $12/M completion, $120/M image output.
    const proUsage = (images: number) => ({
      promptTokenCount: 12,
      candidatesTokenCount: images + 9,
      candidatesTokensDetails: [
        { modality: 'IMAGE', tokenCount: images },
        { modality: 'TEXT', tokenCount: 9 },
      ],
    });
    let usageMetadata: unknown = { promptTokenCount: 12, candidatesTokenCount: 9 };
    gemini.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          candidates: [
            candidate([{ text: 'Here.' }, { inlineData: { mimeType: 'image/png', data: PNG } }], 'STOP'),
          ],
          usageMetadata,
          ...identity,
        }),
      );
    });
    const ask = (size: string) =>
      post('/chat/completions', {
        model: 'google/gemini-3-pro-image',
        messages: [drawCat],
        modalities: ['image', 'text'],
        image_config: { image_size: size },
      });
    const uncounted = await ask('4K');
    assert.equal(uncounted.status, 200, uncounted.text);
    assert.equal(uncounted.body.usage.completion_tokens_details.image_tokens, 2000);
    assert.equal(uncounted.body.usage.cost, usd(12 * 2_000 + 2000 * 120_000));
    // A reply that counts its image right is billed its count: the estimate is never above it.
    usageMetadata = proUsage(1120);
    const counted = await ask('1K');
    assert.equal(counted.body.usage.completion_tokens_details.image_tokens, 1120);
    assert.equal(counted.body.usage.cost, usd(12 * 2_000 + 9 * 12_000 + 1120 * 120_000));
    gemini.handle((request, response) =>
      request.url.includes('streamGenerateContent') ? answerStreamed(response) : answerWhole(response),
    );
  });

  it('modalities with image for a model that makes no images → 400 naming body.modalities, nothing sent', async () => {
    const before = gemini.requests.length;
    for (const path of ['/chat/completions', '/responses']) {
      const body =
        path === '/responses'
          ? { model: 'google/gemini-2.5-flash', input: 'Draw a cat', modalities: ['image'] }
          : { model: 'google/gemini-2.5-flash', messages: [drawCat], modalities: ['image'] };
      const reply = await post(path, body);
      assert.equal(reply.status, 400, reply.text);
      assert.equal(
        reply.body.error.message,
        'Invalid request parameters: body.modalities asks for image output, which model "google/gemini-2.5-flash" does not produce',
      );
    }
    assert.equal(gemini.requests.length, before);
  });

  it('an image model whose protocol cannot return images (OpenAI Responses) → 400 saying so, nothing sent', async () => {
    const reply = await post('/chat/completions', {
      model: 'openai/gpt-5-image',
      messages: [drawCat],
      modalities: ['image', 'text'],
    });
    assert.equal(reply.status, 400, reply.text);
    assert.match(reply.body.error.message, /OpenAI Responses protocol cannot return generated images/);
    assert.equal(openai.requests.length, 0);
  });

  it('an image model whose protocol cannot return images is reserved at its text price when no modalities are named', async () => {
    // openai/gpt-5-image: $10/M prompt and completion, $40/M image output. 30 prompt tokens at most
    // and 100 output tokens: $0.0013 as text, $0.0043 at the image price; the key has $0.002.
    const { key: limited } = await createKey(gateway, { name: 'gpt-5-image', limit: 0.002 });
    openai.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'resp_1',
          object: 'response',
          model: 'gpt-5-image',
          status: 'completed',
          output: [
            {
              type: 'message',
              id: 'msg_1',
              role: 'assistant',
              status: 'completed',
              content: [{ type: 'output_text', text: 'A cat, in words.', annotations: [] }],
            },
          ],
          usage: { input_tokens: 5, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 } },
        }),
      );
    });
    const reply = await gateway.request('POST', '/api/v1/chat/completions', {
      key: limited,
      body: { model: 'openai/gpt-5-image', messages: [drawCat], max_tokens: 100 },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.choices[0].message.content, 'A cat, in words.');
    assert.equal(openai.requests.length, 1);
  });

  it('reserves the worst case at the image price: a limit that fits a text answer refuses one that may hold images', async () => {
    // 30 prompt tokens at most (10 bytes + 4 + 16) and 100 output tokens: $0.000259 as text
    // (30 × 300 + 100 × 2,500 nano-dollars), $0.003009 when each output token may be an image's.
    assert.equal(promptBound(['Draw a cat']), 30);
    const { key: limited } = await createKey(gateway, { name: 'small', limit: 0.001 });
    const ask = (extra: Record<string, unknown>) =>
      gateway.request('POST', '/api/v1/chat/completions', {
        key: limited,
        body: { model: MODEL, messages: [drawCat], max_tokens: 100, ...extra },
      });
    const before = gemini.requests.length;
    for (const extra of [{ modalities: ['image', 'text'] }, {}]) {
      const refused = await ask(extra);
      assert.equal(refused.status, 402, refused.text);
      assert.match(refused.body.error.message, /Key limit exceeded/);
    }
    assert.equal(gemini.requests.length, before, 'nothing was sent for the refused requests');
    gemini.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          candidates: [candidate([{ text: 'A cat, in words.' }], 'STOP')],
          usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 5, totalTokenCount: 10 },
          ...identity,
        }),
      );
    });
    const text = await ask({ modalities: ['text'] });
    assert.equal(text.status, 200, text.text);
    assert.deepEqual((gemini.requests.at(-1)!.body as any).generationConfig.responseModalities, ['TEXT']);
    assert.equal(text.body.usage.cost, usd(5 * PROMPT_NANOS + 5 * COMPLETION_NANOS));
  });

  it('a later turn sends the answer back (Responses output as input, the chat message as is): Gemini gets the image in the model turn; other protocols leave it out', async () => {
    gemini.handle((request, response) =>
      request.url.includes('streamGenerateContent') ? answerStreamed(response) : answerWhole(response),
    );
    const modelTurn = {
      role: 'model',
      parts: [{ text: 'Here is your cat.' }, { inlineData: { mimeType: 'image/png', data: PNG } }],
    };
    const makeBlue = { role: 'user', content: 'Make it blue' };
    const first = await post('/responses', {
      model: MODEL,
      input: 'Draw a cat',
      modalities: ['text', 'image'],
    });
    assert.equal(first.status, 200, first.text);
    const again = await post('/responses', {
      model: MODEL,
      modalities: ['text', 'image'],
      input: [{ role: 'user', content: 'Draw a cat' }, ...first.body.output, makeBlue],
    });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual((gemini.requests.at(-1)!.body as any).contents, [
      { role: 'user', parts: [{ text: 'Draw a cat' }] },
      modelTurn,
      { role: 'user', parts: [{ text: 'Make it blue' }] },
    ]);
    const chat = await post('/chat/completions', {
      model: MODEL,
      messages: [drawCat],
      modalities: ['image', 'text'],
    });
    const message = chat.body.choices[0].message;
    assert.equal(message.images.length, 1);
    const chatAgain = await post('/chat/completions', {
      model: MODEL,
      modalities: ['image', 'text'],
      messages: [drawCat, message, makeBlue],
    });
    assert.equal(chatAgain.status, 200, chatAgain.text);
    assert.deepEqual((gemini.requests.at(-1)!.body as any).contents[1], modelTurn);
    // The same conversation continued on a text model of another protocol: the image is left out.
    openai.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: 'gpt-4o-mini',
          choices: [
            { index: 0, message: { role: 'assistant', content: 'A blue cat.' }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
        }),
      );
    });
    const elsewhere = await post('/chat/completions', {
      model: 'openai/gpt-4o-mini',
      messages: [drawCat, message, { ...message, content: null }, makeBlue],
    });
    assert.equal(elsewhere.status, 200, elsewhere.text);
    assert.deepEqual((openai.requests.at(-1)!.body as any).messages, [
      { role: 'user', content: 'Draw a cat' },
      { role: 'assistant', content: 'Here is your cat.' },
      { role: 'user', content: 'Make it blue' },
    ]);
  });

  it('a conversation of generated images alone: 400 naming the conversation for a protocol that leaves them out, nothing sent; Gemini takes it', async () => {
    const chatTurn = {
      role: 'assistant',
      content: null,
      images: [{ type: 'image_url', image_url: { url: DATA_URL } }],
    };
    const generated = { type: 'image_generation_call', id: 'ig_1', status: 'completed', result: PNG };
    const rule =
      "holds only generated images besides instructions, which this model's provider cannot take back";
    const sentBefore = openai.requests.length;
    // gpt-4o-mini through OpenAI chat completions, gpt-5-image through the Responses API.
    for (const model of ['openai/gpt-4o-mini', 'openai/gpt-5-image']) {
      const chat = await post('/chat/completions', { model, max_tokens: 50, messages: [chatTurn] });
      assert.equal(chat.status, 400, chat.text);
      assert.equal(chat.body.error.message, `Invalid request parameters: body.messages ${rule}`);
      const withSystem = await post('/chat/completions', {
        model,
        max_tokens: 50,
        messages: [{ role: 'system', content: 'Be brief.' }, chatTurn],
      });
      assert.equal(withSystem.status, 400, withSystem.text);
      assert.equal(withSystem.body.error.message, `Invalid request parameters: body.messages ${rule}`);
      const responses = await post('/responses', {
        model,
        max_output_tokens: 50,
        instructions: 'Be brief.',
        input: [generated],
      });
      assert.equal(responses.status, 400, responses.text);
      assert.equal(responses.body.error.message, `Invalid request parameters: body.input ${rule}`);
    }
    assert.equal(openai.requests.length, sentBefore, 'nothing was sent upstream');

    gemini.handle((_request, response) => answerWhole(response));
    const inModelTurn = {
      role: 'model',
      parts: [{ inlineData: { mimeType: 'image/png', data: PNG } }],
    };
    const chat = await post('/chat/completions', { model: MODEL, max_tokens: 50, messages: [chatTurn] });
    assert.equal(chat.status, 200, chat.text);
    assert.deepEqual((gemini.requests.at(-1)!.body as any).contents, [inModelTurn]);
    const responses = await post('/responses', { model: MODEL, max_output_tokens: 50, input: [generated] });
    assert.equal(responses.status, 200, responses.text);
    assert.deepEqual((gemini.requests.at(-1)!.body as any).contents, [inModelTurn]);
    // With a Gemini model among `models`, routing moves on to it.
    const fallback = await post('/chat/completions', {
      models: ['openai/gpt-4o-mini', MODEL],
      max_tokens: 50,
      messages: [chatTurn],
    });
    assert.equal(fallback.status, 200, fallback.text);
    assert.equal(fallback.body.model, MODEL);
    assert.equal(openai.requests.length, sentBefore);
  });

  it('modalities and image_config null on either surface are not given: nothing of them is sent', async () => {
    openai.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: 'gpt-4o-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: 'A cat.' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
        }),
      );
    });
    const nulls = { modalities: null, image_config: null };
    for (const path of ['/chat/completions', '/responses']) {
      const ask = (model: string) =>
        post(
          path,
          path === '/responses'
            ? { model, input: 'Draw a cat', ...nulls }
            : { model, messages: [drawCat], ...nulls },
        );
      const image = await ask(MODEL);
      assert.equal(image.status, 200, `${path}: ${image.text}`);
      assert.equal((gemini.requests.at(-1)!.body as any).generationConfig, undefined, path);
      const text = await ask('openai/gpt-4o-mini');
      assert.equal(text.status, 200, `${path}: ${text.text}`);
      // Nothing null reaches the upstream (null had been a 400).
      const sent = JSON.stringify(openai.requests.at(-1)!.body);
      assert.ok(!sent.includes('null'), `${path}: ${sent}`);
    }
  });
});
