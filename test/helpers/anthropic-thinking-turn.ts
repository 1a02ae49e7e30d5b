import type { ServerResponse } from 'node:http';

/**
 * A first turn of Anthropic's extended thinking with tools, as Anthropic streams it: signed thinking
 * ("Paris: call the tool."), a redacted block, then a `get_weather` call for Paris (`toolu_paris`).
 * Tests of the thinking round trip answer the first request with it and check that the second
 * carries those blocks back unchanged.
 */
export function streamThinkingToolTurn(
  response: ServerResponse,
  blocks: { signature: string; redacted: string },
): void {
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  const send = (type: string, data: Record<string, unknown>) =>
    response.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send('message_start', {
    message: {
      id: 'msg_turn_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [],
      stop_reason: null,
      usage: { input_tokens: 40, output_tokens: 1 },
    },
  });
  send('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } });
  send('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Paris: call ' } });
  send('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'the tool.' } });
  send('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: blocks.signature } });
  send('content_block_stop', { index: 0 });
  send('content_block_start', {
    index: 1,
    content_block: { type: 'redacted_thinking', data: blocks.redacted },
  });
  send('content_block_stop', { index: 1 });
  send('content_block_start', {
    index: 2,
    content_block: { type: 'tool_use', id: 'toolu_paris', name: 'get_weather', input: {} },
  });
  send('content_block_delta', {
    index: 2,
    delta: { type: 'input_json_delta', partial_json: '{"city":"Paris"}' },
  });
  send('content_block_stop', { index: 2 });
  send('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 30 } });
  send('message_stop', {});
  response.end();
}
