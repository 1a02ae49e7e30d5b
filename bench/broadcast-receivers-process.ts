// The broadcast receivers' own process (see broadcast-receivers.ts): one HTTP server per destination
// type, answering as its ingestion API does on success and counting what it receives, and a control
// server on --control-port: GET /health, GET /receivers (type, url, requests, bytes of each).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { type Receiver, receiverAnswer } from './broadcast-receivers.js';

const { values } = parseArgs({ options: { types: { type: 'string' }, 'control-port': { type: 'string' } } });
const types = (values.types ?? '').split(',').filter(Boolean);
const controlPort = Number(values['control-port']);

const listen = (server: Server, port: number) =>
  new Promise<number>((resolve) =>
    server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );

const receivers: Receiver[] = [];
for (const type of types) {
  const receiver: Receiver = { type, url: '', requests: 0, bytes: 0 };
  const reply = receiverAnswer(type);
  const server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => {
      receiver.bytes += chunk.length;
    });
    request.on('end', () => {
      if (request.headers['x-test-connection'] !== 'true') receiver.requests += 1;
      response.writeHead(reply.status, { 'content-type': 'application/json' });
      response.end(reply.body);
    });
  });
  receiver.url = `http://127.0.0.1:${await listen(server, 0)}`;
  receivers.push(receiver);
}

const control = createServer((request, response) => {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(request.url === '/receivers' ? JSON.stringify(receivers) : '{}');
});
await listen(control, controlPort);
// The parent stops this process with SIGTERM (bench-processes' stopAll).
process.on('SIGTERM', () => process.exit(0));
