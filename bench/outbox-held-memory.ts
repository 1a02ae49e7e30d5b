import { parseArgs } from 'node:util';
import { outboxRowsFor, stowPayload } from '../src/broadcast/outbox-events.js';
import { createFanoutOutbox } from '../src/broadcast/outbox-fanout.js';
import type { OutboxRepository } from '../src/broadcast/outbox-repository.js';
import type { BroadcastOutboxTable } from '../src/storage/database-schema.js';
import { sampleEvent, sampleTarget } from '../test/helpers/broadcast-fixtures.js';

/**
 * What a generation's outbox rows weigh on the request thread's JS heap while the delivery worker
 * holds them (from the commit until every destination has the event: the batch linger and the
 * sends, a second or more). Everything the request thread still holds when a scavenge runs is
 * copied by it, so this weight times the events held sets how much a broadcasting gateway's
 * scavenges copy beyond a gateway without destinations.
 *
 * Builds the rows of `--generations` events for three destinations that receive the same payload
 * (one fan-out row each, as `outboxRowsFor` stores them), queues them for their destinations as the
 * worker does, and reads the heap after full collections: with the payload text in the row, and
 * stowed off the heap as the worker keeps it (`stowPayload`); with each destination's part made
 * only when its queue is sent, as the worker does, and with all three parts made at once (what
 * the worker held before session 18). Deterministic: no load, no timing.
 *
 *   node --expose-gc --import tsx bench/outbox-held-memory.ts [--generations 10000]
 */
const { values } = parseArgs({ options: { generations: { type: 'string', default: '10000' } } });
const generations = Number(values.generations);
if (!Number.isSafeInteger(generations) || generations <= 0) {
  console.error(
    `bench:outbox-held-memory: --generations must be a positive integer, got "${values.generations}"`,
  );
  process.exit(1);
}
const collect = (globalThis as { gc?: () => void }).gc;
if (!collect) {
  console.error(
    'bench:outbox-held-memory: run node with --expose-gc (npm run bench:outbox-held-memory does)',
  );
  process.exit(1);
}

const targets = ['d-1', 'd-2', 'd-3'].map((id) => sampleTarget({ id }));

/** A conversation of some length: the same event with a 16,000-character user message. */
const LONG_INPUT = [{ role: 'user' as const, content: 'All work and no play. '.repeat(727) }];

function heldRows(index: number, long: boolean): BroadcastOutboxTable[] {
  const event = sampleEvent({
    generation_id: `gen-1732276800-${String(index).padStart(16, '0')}`,
    ...(long ? { input: LONG_INPUT } : {}),
  });
  return outboxRowsFor({
    targets,
    event,
    keyHash: 'a'.repeat(64),
    workspaceId: 'ws-1',
    region: 'global',
    now: new Date(),
    lease: { owner: 'worker-1', until: new Date(Date.now() + 30_000) },
    keepEvent: false,
  });
}

function measure(
  stow: boolean,
  long: boolean,
  made: boolean,
): { heap: number; external: number; payload: number } {
  const outbox = createFanoutOutbox({} as OutboxRepository);
  const held: BroadcastOutboxTable[][] = [];
  /** The worker's hand-off queues, by destination. */
  const queues = new Map<string, BroadcastOutboxTable[]>();
  collect?.();
  collect?.();
  const before = process.memoryUsage();
  let payloadChars = 0;
  for (let index = 0; index < generations; index += 1) {
    const rows = heldRows(index, long);
    for (const row of rows) {
      payloadChars += row.payload.length;
      if (stow) stowPayload(row);
    }
    if (made) held.push(outbox.expand(rows));
    else {
      for (const [destinationId, row] of outbox.open(rows)) {
        const queue = queues.get(destinationId);
        if (queue) queue.push(row);
        else queues.set(destinationId, [row]);
      }
      held.push(rows);
    }
  }
  collect?.();
  collect?.();
  const after = process.memoryUsage();
  // Read after the measure: the rows must still be reachable when the heap is.
  if (held.length !== generations) throw new Error('rows lost');
  return {
    heap: (after.heapUsed - before.heapUsed) / generations,
    external: (after.external - before.external) / generations,
    payload: payloadChars / generations,
  };
}

console.log(`outbox rows held per generation (3 destinations, one fan-out row), ${generations} generations`);
console.log(
  '\n| event | payload | parts | payload chars | JS heap bytes per generation | off-heap bytes per generation |',
);
console.log('| --- | --- | --- | ---: | ---: | ---: |');
for (const long of [false, true]) {
  // Each setting twice: the first measure of a process also pays for some of V8's warm-up.
  for (const [stow, made] of [
    [false, true],
    [true, true],
    [true, false],
    [false, true],
    [true, true],
    [true, false],
  ] as const) {
    const { heap, external, payload } = measure(stow, long, made);
    console.log(
      `| ${long ? 'a 16,000-character prompt' : "the tests' sample"} | ${stow ? 'stowed (Buffer)' : 'text in the row'} | ` +
        `${made ? 'all made at once' : 'made when sent'} | ${payload.toFixed(0)} | ${heap.toFixed(0)} | ${external.toFixed(0)} |`,
    );
  }
}
