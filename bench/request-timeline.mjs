// Where one request's time goes, from Node's and undici's diagnostics channels: a preload for the
// gateway (or the bare proxy) under a one-connection load. Each POST is stamped at its phases, in
// milliseconds from the server's `request` event; at exit the medians of the last three quarters of
// the requests go to /tmp/request-timeline-<pid>.txt. Sequential requests only (one connection).
//
// Usage: BENCH_GATEWAY_NODE_ARGS="--import $PWD/bench/request-timeline.mjs" \
//          node --import tsx bench/inference.ts --only "4."
//   handler  Fastify's route handler starts (body read, parsed, validated; hooks run)
//   create   undici creates the upstream request
//   sent     its headers are written to the upstream socket
//   answer   the upstream's response headers arrive
//   ended    the upstream's response has been read
//   finish   the response to the client has been handed to the socket
import diagnostics from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';

const phases = ['handler', 'create', 'sent', 'answer', 'ended', 'finish'];
const timelines = [];
let current = null;
const mark = (phase) => {
  if (current && current[phase] === undefined) current[phase] = performance.now() - current.start;
};

diagnostics.subscribe('http.server.request.start', ({ request }) => {
  if (request.method !== 'POST') return;
  current = { start: performance.now() };
  timelines.push(current);
});
diagnostics.subscribe('tracing:fastify.request.handler:start', () => mark('handler'));
diagnostics.subscribe('undici:request:create', () => mark('create'));
diagnostics.subscribe('undici:client:sendHeaders', () => mark('sent'));
diagnostics.subscribe('undici:request:headers', () => mark('answer'));
diagnostics.subscribe('undici:request:trailers', () => mark('ended'));
diagnostics.subscribe('http.server.response.finish', () => mark('finish'));

process.on('exit', () => {
  const measured = timelines.slice(Math.floor(timelines.length / 4));
  const median = (phase) => {
    const values = measured
      .map((timeline) => timeline[phase])
      .filter((value) => value !== undefined)
      .sort((a, b) => a - b);
    return values.length === 0 ? '-' : values[Math.floor(values.length / 2)].toFixed(3);
  };
  const line = phases.map((phase) => `${phase} ${median(phase)}`).join(', ');
  writeFileSync(`/tmp/request-timeline-${process.pid}.txt`, `${measured.length} requests: ${line} ms\n`);
});
