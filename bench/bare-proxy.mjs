// The floor the gateway is measured against in the inference benchmark (bench/inference.ts): the least
// any Node proxy in front of the same upstream must do. It reads the request, makes one keep-alive
// undici request and pipes the upstream's answer back; no parsing, auth, routing or accounting.
// Plain .mjs run by plain node, as dist/main.js is, so its CPU and memory figures carry no loader.
//
// Usage: node bench/bare-proxy.mjs --port <port> --upstream http://127.0.0.1:<port>
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, upstream: { type: 'string' } },
});
if (!values.upstream) throw new Error('--upstream is required');
const upstream = values.upstream.replace(/\/+$/, '');

// The same pool as the gateway's upstream client (src/gateway/providers/shared/upstream-http.ts),
// so both hops open the same number of upstream connections.
const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });

const server = createServer(async (req, res) => {
  try {
    // Buffered rather than piped: the gateway must hold the whole body to route it, as would any
    // proxy that picks a provider by model.
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const answer = await request(`${upstream}${req.url}`, {
      method: req.method,
      headers: { 'content-type': 'application/json', authorization: 'Bearer bench-key' },
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      dispatcher: agent,
    });
    const headers = { 'content-type': answer.headers['content-type'] ?? 'application/json' };
    // Kept when the upstream sent one, so a JSON answer is not re-framed as chunked on the way back.
    if (answer.headers['content-length']) headers['content-length'] = answer.headers['content-length'];
    res.writeHead(answer.statusCode, headers);
    // pipe() rather than stream.pipeline(): pipeline allocates an AbortController per call and aborts
    // it, with a DOMException, when it finishes, which is measurable at this size.
    answer.body.on('error', () => res.destroy());
    res.on('close', () => answer.body.destroy());
    answer.body.pipe(res);
  } catch (error) {
    // Only reading the request or reaching the upstream throws, so nothing has been sent yet.
    res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `bare proxy: ${error.message}` } }));
  }
});
server.keepAliveTimeout = 60_000;
server.listen(Number(values.port), '127.0.0.1');
// Exit normally on SIGTERM, so that node flags such as --cpu-prof can write their output.
process.on('SIGTERM', () => server.close(() => process.exit(0)));
