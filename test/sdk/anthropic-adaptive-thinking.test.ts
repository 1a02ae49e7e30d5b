// Claude Code and other Anthropic-SDK clients ask the newest Claude models for adaptive thinking
// (`thinking: {type: "adaptive"}` with `output_config.effort`); chat clients ask for an effort or
// a budget. Anthropic refuses a token budget from Claude 4.7 on and adaptive thinking before 4.6:
// a fake Anthropic that refuses as it does checks that each model is asked the way it takes.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { type RecordedRequest, startFakeUpstream } from '../helpers/fake-upstream.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

type Body = { model: string; thinking?: { type: string; display?: string }; output_config?: unknown };

function answer(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function anthropic(request: RecordedRequest, response: ServerResponse): void {
  const body = request.body as Body;
  const newest = /claude-(opus-4-[78]|[a-z]+-5)/.test(body.model);
  const adaptiveCapable = newest || /claude-[a-z]+-4-6/.test(body.model);
  if (body.thinking?.type === 'enabled' && newest) {
    answer(response, 400, {
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message:
          '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
      },
    });
    return;
  }
  if (body.thinking?.type === 'adaptive' && !adaptiveCapable) {
    answer(response, 400, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'adaptive thinking is not supported on this model' },
    });
    return;
  }
  const thinks = body.thinking !== undefined;
  answer(response, 200, {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: body.model,
    content: [
      ...(thinks
        ? [
            {
              type: 'thinking',
              thinking: body.thinking?.display === 'omitted' ? '' : 'Thought it through.',
              signature: 'EqQBsig',
            },
          ]
        : []),
      { type: 'text', text: 'Done.' },
    ],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 20 },
  });
}

describe('adaptive thinking on the newest Claude models, through /messages and chat', () => {
  let gateway: TestApp;
  let fake: Awaited<ReturnType<typeof startFakeUpstream>>;
  let key: string;

  before(async () => {
    fake = await startFakeUpstream();
    fake.handle(anthropic);
    gateway = await startTestApp({
      config: {
        credits: { initial: 10 },
        providers: { anthropic: { api_key: 'sk-ant-test', base_url: `${fake.url}/v1` } },
      },
    });
    const created = await gateway.request('POST', '/api/v1/keys', { body: { name: 'sdk' } });
    assert.equal(created.status, 200, created.text);
    key = created.body.key;
  });
  after(async () => {
    await gateway.close();
    await fake.close();
  });

  it('a Claude Code style request reaches Opus 4.7 as adaptive thinking with its effort', async () => {
    const client = new Anthropic({ baseURL: `${gateway.url}/api`, apiKey: key, maxRetries: 0 });
    const message = await client.messages.create({
      model: 'anthropic/claude-opus-4.7',
      max_tokens: 8000,
      thinking: { type: 'adaptive' },
      output_config: { effort: 'high' },
      messages: [{ role: 'user', content: 'Plan the refactor.' }],
    } as Anthropic.MessageCreateParamsNonStreaming);
    const sent = fake.requests.at(-1)!.body as Body;
    assert.deepEqual(sent.thinking, { type: 'adaptive', display: 'summarized' });
    assert.deepEqual(sent.output_config, { effort: 'high' });
    assert.equal((message.content[0] as Anthropic.ThinkingBlock).thinking, 'Thought it through.');
  });

  it('chat clients asking for an effort or a budget get an answer from 4.5, 4.6 and 4.8 alike', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/api/v1`, apiKey: key, maxRetries: 0 });
    for (const model of [
      'anthropic/claude-sonnet-4.5',
      'anthropic/claude-sonnet-4.6',
      'anthropic/claude-opus-4.8',
    ]) {
      for (const reasoning of [{ effort: 'low' }, { max_tokens: 2048 }]) {
        const completion = await client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'Think, then answer.' }],
          reasoning,
        } as OpenAI.ChatCompletionCreateParamsNonStreaming);
        assert.equal(
          completion.choices[0]?.message.content,
          'Done.',
          `${model} ${JSON.stringify(reasoning)}`,
        );
        const message = completion.choices[0]?.message as { reasoning?: string };
        assert.equal(message.reasoning, 'Thought it through.', `${model} ${JSON.stringify(reasoning)}`);
      }
    }
  });
});
