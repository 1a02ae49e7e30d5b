import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { createGenerationLog } from '../src/billing/generation-log.js';
import { newTimeOrderedId } from '../src/platform/ids.js';
import { openStorage } from '../src/storage/database.js';
import type { BroadcastOutboxTable } from '../src/storage/database-schema.js';
import { initializeStorage } from '../src/storage/initialize.js';
import { SAMPLE_WORKSPACE, sampleGenerationRecord } from '../test/helpers/generation-record.js';

/**
 * What the SQLite group commit costs the event loop, with it on the event loop's connection
 * (`sqlite_commit_thread: false`) and in its thread (the default). Records arrive at `--rate` per
 * second, each with one broadcast outbox row of `--payload` characters (a three-destination event is
 * one fan-out row of ~4 KB), and the generation log commits them as in the gateway (every 50 ms).
 * `--second-writer` adds what the broadcast worker's thread does on the same file: once a second it
 * deletes the rows delivered, under the write lock. Printed per mode: the event loop's utilization,
 * the delay a 1 ms timer met (what a request arriving then waits: p50, p99, p99.9, max) and how
 * many records were stored. Modes alternate over `--rounds`, and each round has a fresh file.
 *
 *   node --import tsx bench/group-commit.ts [--rounds 3] [--seconds 8] [--rate 200]
 *     [--payload 3900] [--second-writer]
 */
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '8' },
    rate: { type: 'string', default: '200' },
    payload: { type: 'string', default: '3900' },
    'second-writer': { type: 'boolean', default: false },
  },
});
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const rate = Number(values.rate);
const payloadChars = Number(values.payload);

/** The broadcast worker's settling, from a thread of its own: delete what is older than a second. */
function startSecondWriter(path: string): Worker {
  const source = `
    const { workerData } = require('node:worker_threads');
    const Database = require(workerData.module);
    const db = new Database(workerData.path);
    db.pragma('busy_timeout = 5000');
    const remove = db.prepare('delete from broadcast_outbox where created_at < ?');
    setInterval(() => {
      db.transaction(() => remove.run(new Date(Date.now() - 1000).toISOString())).immediate();
    }, 1000);
  `;
  return new Worker(source, {
    eval: true,
    workerData: { path, module: createRequire(import.meta.url).resolve('better-sqlite3') },
  });
}

/** A record as the pipeline hands it over, created now (its id time-ordered, as the gateway's). */
const record = (now: Date) =>
  sampleGenerationRecord({ id: `gen-${newTimeOrderedId(now.getTime())}`, created_at: now.toISOString() });

function outboxRow(generationId: string, now: Date): BroadcastOutboxTable {
  const at = now.toISOString();
  return {
    id: newTimeOrderedId(now.getTime()),
    destination_id: '*0',
    workspace_id: SAMPLE_WORKSPACE,
    generation_id: generationId,
    idempotency_key: '',
    payload: JSON.stringify({ generation_id: generationId, text: 'x'.repeat(payloadChars) }),
    status: 'fanout',
    attempts: 1,
    next_attempt_at: at,
    lease_until: at,
    leased_by: 'bench',
    last_error: null,
    last_status: null,
    created_at: at,
    dead_at: null,
    fanout: 'a,b,c',
  };
}

interface Figures {
  utilization: number;
  /** The process's CPU (every thread) per record, µs. */
  cpuPerRecord: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  stored: number;
}

async function runMode(commitThread: boolean): Promise<Figures> {
  const directory = mkdtempSync(join(tmpdir(), 'switchyard-bench-commit-'));
  const path = join(directory, 'bench.db');
  const storage = await openStorage({
    url: `sqlite:${path}`,
    schema: 'main',
    backgroundCheckpoint: true,
    commitThread,
  });
  await initializeStorage({ storage, initialCreditsUsd: 0, now: new Date() });
  const log = createGenerationLog({ storage, logger: { warn: () => {}, error: console.error } });
  const second = values['second-writer'] ? startSecondWriter(path) : null;
  // Warm-up: the thread starts, the statements are prepared.
  for (let index = 0; index < 50; index += 1) {
    const input = record(new Date());
    log.record(input, { rows: 1, weight: 0, build: () => [outboxRow(input.id, new Date())] });
  }
  await log.flush();
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const before = performance.eventLoopUtilization();
  const cpuBefore = process.cpuUsage();
  delay.enable();
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const start = performance.now();
  for (let sent = 0; sent < total; sent += 1) {
    const due = start + sent * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const now = new Date();
    const input = record(now);
    log.record(input, { rows: 1, weight: 0, build: () => [outboxRow(input.id, now)] });
  }
  await log.flush();
  delay.disable();
  const utilization = performance.eventLoopUtilization(before).utilization;
  const cpu = process.cpuUsage(cpuBefore);
  const count = await storage.db
    .selectFrom('generations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  await second?.terminate();
  await log.close();
  await storage.close();
  rmSync(directory, { recursive: true, force: true });
  const ms = (nanos: number) => nanos / 1e6;
  return {
    utilization,
    cpuPerRecord: (cpu.user + cpu.system) / total,
    p50: ms(delay.percentile(50)),
    p99: ms(delay.percentile(99)),
    p999: ms(delay.percentile(99.9)),
    max: ms(delay.max),
    stored: Number(count.n),
  };
}

const modes = [
  { name: 'commit on the event loop', commitThread: false },
  { name: 'commit thread', commitThread: true },
];
const results = new Map<string, Figures[]>(modes.map((mode) => [mode.name, []]));
console.log(
  `group commit: ${rate} records/s with one ${payloadChars}-character outbox row each, ${seconds} s per mode and round, ${rounds} rounds${values['second-writer'] ? ', a second writer deleting delivered rows every second' : ''}`,
);
for (let round = 1; round <= rounds; round += 1) {
  for (const mode of modes) {
    const figures = await runMode(mode.commitThread);
    results.get(mode.name)?.push(figures);
    console.log(
      `round ${round}: ${mode.name}: event loop ${(figures.utilization * 100).toFixed(1)}% busy, ${figures.cpuPerRecord.toFixed(1)} µs CPU per record, timer delay p99 ${figures.p99.toFixed(2)} ms, max ${figures.max.toFixed(2)} ms, ${figures.stored} records stored`,
    );
  }
}
const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};
console.log(
  '\n| mode (medians over rounds) | event loop busy | process CPU µs per record | timer delay p50 ms | p99 ms | p99.9 ms | max ms |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const [name, figures] of results) {
  console.log(
    `| ${name} | ${(median(figures.map((f) => f.utilization)) * 100).toFixed(1)}% | ${median(figures.map((f) => f.cpuPerRecord)).toFixed(1)} | ${median(figures.map((f) => f.p50)).toFixed(2)} | ${median(figures.map((f) => f.p99)).toFixed(2)} | ${median(figures.map((f) => f.p999)).toFixed(2)} | ${median(figures.map((f) => f.max)).toFixed(2)} |`,
  );
}
