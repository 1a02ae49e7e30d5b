import { parseArgs } from 'node:util';
import { encodeOtlpTraces } from '../src/broadcast/otlp-spans.js';
import { sampleEvent } from '../test/helpers/broadcast-fixtures.js';
import { median } from './bench-processes.js';

/**
 * What encoding OTLP/JSON spans costs the delivery thread (webhook, otel-collector and the
 * OTLP-based vendors): microseconds per span for batches of 100 and for one span per request (the
 * webhook's habit), on the tests' complete sample event (bodies, cost, identity, request context).
 * Run pinned for steady figures:
 *
 *   taskset -c 0 node --import tsx bench/otlp-encode.ts [--rounds 5]
 */
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const rounds = Number(values.rounds);
if (!Number.isSafeInteger(rounds) || rounds <= 0) {
  console.error(`bench:otlp-encode: --rounds must be a positive integer, got "${values.rounds}"`);
  process.exit(1);
}

const template = sampleEvent();
const events = Array.from({ length: 100 }, (_, index) =>
  sampleEvent({
    generation_id: `gen-1732276800-${String(index).padStart(16, '0')}`,
    trace: {
      ...template.trace,
      trace_id: index.toString(16).padStart(32, '0'),
      span_id: (index + 1).toString(16).padStart(16, '0'),
    },
  }),
);
const bodyChars = encodeOtlpTraces(events).length / events.length;
console.log(
  `event payload ${JSON.stringify(template).length} chars; OTLP/JSON ${bodyChars.toFixed(0)} chars per span`,
);

function time(label: string, spans: number, run: () => void): number {
  const started = process.hrtime.bigint();
  run();
  const micros = Number(process.hrtime.bigint() - started) / 1e3 / spans;
  console.log(`${label}: ${micros.toFixed(1)} µs per span`);
  return micros;
}

const batched: number[] = [];
const single: number[] = [];
for (let round = 1; round <= rounds; round += 1) {
  batched.push(
    time(`round ${round}, batches of 100`, 50 * events.length, () => {
      for (let batch = 0; batch < 50; batch += 1) encodeOtlpTraces(events);
    }),
  );
  single.push(
    time(`round ${round}, one span per request`, 2_000, () => {
      for (let index = 0; index < 2_000; index += 1) encodeOtlpTraces([events[index % events.length]!]);
    }),
  );
}
console.log(
  `\nmedian of ${rounds} rounds: ${median(batched).toFixed(1)} µs per span in batches of 100, ` +
    `${median(single).toFixed(1)} µs one span per request`,
);
