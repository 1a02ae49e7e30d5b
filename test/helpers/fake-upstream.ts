import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

type Handler = (request: RecordedRequest, response: ServerResponse) => void | Promise<void>;

/**
 * A real listening HTTP server standing in for a provider. Each test sets the handler; every
 * request is recorded with its parsed JSON body.
 */
export async function startFakeUpstream() {
  let handler: Handler = (_request, response) => {
    response.writeHead(500).end('no handler');
  };
  const requests: RecordedRequest[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep the text
      }
      const recorded = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body,
      };
      requests.push(recorded);
      Promise.resolve(handler(recorded, response)).catch(() => response.destroy());
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    handle(next: Handler) {
      handler = next;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes SSE `data:` frames, optionally with a delay between them. */
export async function writeSse(response: ServerResponse, frames: string[], delayMs = 0): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const frame of frames) {
    response.write(`data: ${frame}\n\n`);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
  response.end();
}

/** Reads a whole adapter stream into an array of parts, for assertions on their order. */
export async function collect<T>(parts: AsyncIterable<T>): Promise<T[]> {
  const collected: T[] = [];
  for await (const part of parts) collected.push(part);
  return collected;
}
