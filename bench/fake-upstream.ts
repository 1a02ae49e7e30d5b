// A stand-in OpenAI-compatible upstream for the inference benchmark (bench/inference.ts). It shares a
// core with the load generator, so it uses node:http alone and precomputes every byte it sends: its own
// cost must stay small and identical whichever target (direct, bare proxy, gateway) is being measured.
//
// POST /v1/chat/completions        answers at once
// POST /slow/v1/chat/completions   answers after 50 ms (a provider base URL of …/slow/v1 reaches it)
// ?delay=<ms> on either path overrides the delay.
// A body with "stream": true gets 50 chat.completion.chunk frames, a usage chunk and `data: [DONE]`.
// GET /health answers 200 so the harness can tell when it listens.
//
// Usage: node --import tsx bench/fake-upstream.ts --port <port>
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' } } });

/** Delay of the /slow/ variant: long enough that 256 connections measure concurrency, not CPU. */
const SLOW_DELAY_MS = 50;
const STREAM_CHUNKS = 50;
const PROMPT_TOKENS = 12;

const words = 'The quick brown fox jumps over the lazy dog while the gateway relays every token'.split(' ');
/** One word per completion token, so the streamed and non-streamed answers carry the same text. */
const tokens = Array.from(
  { length: STREAM_CHUNKS },
  (_, index) => `${index === 0 ? '' : ' '}${words[index % words.length]}`,
);
const usage = {
  prompt_tokens: PROMPT_TOKENS,
  completion_tokens: STREAM_CHUNKS,
  total_tokens: PROMPT_TOKENS + STREAM_CHUNKS,
};
const envelope = (object: string) => ({
  id: 'chatcmpl-bench',
  object,
  created: 1_700_000_000,
  model: 'fast',
});

const completion = Buffer.from(
  JSON.stringify({
    ...envelope('chat.completion'),
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: tokens.join(''), refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage,
  }),
);

const frame = (payload: unknown) => Buffer.from(`data: ${JSON.stringify(payload)}\n\n`);
const streamFrames: Buffer[] = [
  ...tokens.map((token, index) =>
    frame({
      ...envelope('chat.completion.chunk'),
      choices: [
        {
          index: 0,
          delta: index === 0 ? { role: 'assistant', content: token } : { content: token },
          logprobs: null,
          finish_reason: index === STREAM_CHUNKS - 1 ? 'stop' : null,
        },
      ],
    }),
  ),
  frame({ ...envelope('chat.completion.chunk'), choices: [], usage }),
  Buffer.from('data: [DONE]\n\n'),
];

const notFound = Buffer.from(
  JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }),
);

/**
 * Writes one frame per event-loop turn: the frames leave as separate TCP segments, as a model's tokens
 * do, instead of one coalesced write the proxy would parse in a single read. No timer, so no fixed delay.
 */
function streamFrom(response: ServerResponse, index: number): void {
  if (response.destroyed) return;
  if (index === streamFrames.length - 1) {
    response.end(streamFrames[index]);
    return;
  }
  response.write(streamFrames[index]);
  setImmediate(streamFrom, response, index + 1);
}

function answer(response: ServerResponse, streaming: boolean): void {
  if (response.destroyed) return;
  if (streaming) {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    streamFrom(response, 0);
  } else {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': completion.length });
    response.end(completion);
  }
}

function handle(request: IncomingMessage, response: ServerResponse): void {
  const url = request.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  if (request.method === 'GET' && path === '/health') {
    response.end('ok');
    return;
  }
  const slow = path === '/slow/v1/chat/completions';
  if (request.method !== 'POST' || (!slow && path !== '/v1/chat/completions')) {
    request.resume();
    response.writeHead(404, { 'content-type': 'application/json', 'content-length': notFound.length });
    response.end(notFound);
    return;
  }
  const delayParam = queryAt === -1 ? null : new URLSearchParams(url.slice(queryAt + 1)).get('delay');
  const delay = delayParam === null ? (slow ? SLOW_DELAY_MS : 0) : Number(delayParam);
  let body = '';
  request.setEncoding('utf8');
  request.on('data', (chunk: string) => {
    body += chunk;
  });
  request.on('end', () => {
    // A regular expression instead of JSON.parse: the only thing the answer depends on is this flag.
    const streaming = /"stream"\s*:\s*true/.test(body);
    if (delay > 0) setTimeout(answer, delay, response, streaming);
    else answer(response, streaming);
  });
}

const server = createServer(handle);
// The proxies under test keep their upstream connections for up to 30 s between bursts.
server.keepAliveTimeout = 60_000;
server.listen(Number(values.port), '127.0.0.1');
