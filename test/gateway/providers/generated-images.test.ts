import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { convertToAnthropicMessagesRequest } from '../../../src/gateway/providers/anthropic/convert-to-anthropic-messages-request.js';
import { convertToOpenAiChatRequest } from '../../../src/gateway/providers/openai-chat/convert-to-openai-chat-request.js';
import { convertToOpenAiResponsesRequest } from '../../../src/gateway/providers/openai-responses/convert-to-openai-responses-request.js';
import type { GenerationRequest, InputItem } from '../../../src/spec/generation-request.js';
import { UnsupportedRequestError } from '../../../src/spec/upstream-error.js';

const image = { type: 'image' as const, url: 'data:image/png;base64,iVBORw0KGgo=', generated: true as const };
const input: InputItem[] = [
  { type: 'message', role: 'user', content: [{ type: 'text', text: 'Draw a cat' }] },
  { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Here.' }, image] },
  // An answer that was an image alone.
  { type: 'message', role: 'assistant', content: [image] },
  { type: 'message', role: 'user', content: [{ type: 'text', text: 'Make it blue' }] },
];

describe('generated images sent back, to protocols that take no image in an assistant turn', () => {
  it('are left out, and so is an assistant turn that held nothing else', () => {
    const chat = convertToOpenAiChatRequest({ model: 'gpt-4o', input } as GenerationRequest, {
      stream: false,
      maxTokensField: 'max_completion_tokens',
      supportsTopK: false,
    });
    assert.deepEqual(chat.messages, [
      { role: 'user', content: 'Draw a cat' },
      { role: 'assistant', content: 'Here.' },
      { role: 'user', content: 'Make it blue' },
    ]);
    const responses = convertToOpenAiResponsesRequest({ model: 'gpt-5', input } as GenerationRequest, {
      stream: false,
    });
    assert.deepEqual(
      (responses.input as Array<{ role: string; content: unknown }>).map((item) => [item.role, item.content]),
      [
        ['user', [{ type: 'input_text', text: 'Draw a cat' }]],
        ['assistant', [{ type: 'output_text', text: 'Here.' }]],
        ['user', [{ type: 'input_text', text: 'Make it blue' }]],
      ],
    );
    const anthropic = convertToAnthropicMessagesRequest(
      { model: 'claude-sonnet-4-5', input } as GenerationRequest,
      {
        stream: false,
      },
    );
    assert.deepEqual(anthropic.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Draw a cat' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Here.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Make it blue' }] },
    ]);
  });

  it('a conversation they leave with nothing but instructions is refused as a rule about the input, by each', () => {
    const onlyImages: InputItem[][] = [
      [{ type: 'message', role: 'assistant', content: [image] }],
      [
        { type: 'message', role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
        { type: 'message', role: 'assistant', content: [image, image] },
      ],
    ];
    const refused = (error: unknown) =>
      error instanceof UnsupportedRequestError &&
      error.field === 'input' &&
      /only generated images besides instructions/.test(error.message);
    for (const conversation of onlyImages) {
      const request = { model: 'm', input: conversation } as GenerationRequest;
      const chatOptions = { stream: false, maxTokensField: 'max_tokens', supportsTopK: false } as const;
      assert.throws(() => convertToOpenAiChatRequest(request, chatOptions), refused);
      assert.throws(() => convertToOpenAiResponsesRequest(request, { stream: false }), refused);
      assert.throws(() => convertToAnthropicMessagesRequest(request, { stream: false }), refused);
    }
  });
});
