import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { createOutboxRepository } from '../src/broadcast/outbox-repository.js';
import { openStorage } from '../src/storage/database.js';
import { initializeStorage } from '../src/storage/initialize.js';

/**
 * What one scrape of the outbox gauge (`switchyard_broadcast_outbox_events`, counted at each
 * /metrics request on the request thread's connection) costs with a backlog: `--rows` fan-out rows
 * of `--payload` characters each (a three-destination event), in a SQLite file. Prints the median
 * of `--repeat` reads of `countByStatus` as shipped, and of the query it replaced (which read each
 * row's `status` and `fanout` from the table, past its payload's overflow pages).
 *
 *   node --import tsx bench/outbox-gauge.ts [--rows 20000] [--payload 3500] [--repeat 9]
 */
const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '20000' },
    payload: { type: 'string', default: '3500' },
    repeat: { type: 'string', default: '9' },
  },
});
const rows = Number(values.rows);
const payloadChars = Number(values.payload);
const repeat = Number(values.repeat);

const directory = mkdtempSync(join(tmpdir(), 'switchyard-outbox-gauge-'));
const storage = await openStorage({ url: `sqlite:${join(directory, 'db.sqlite')}`, schema: 'main' });
try {
  await initializeStorage({ storage, initialCreditsUsd: 0, now: new Date() });
  const insert = storage.sqlite!.prepare(
    `insert into broadcast_outbox (id, destination_id, workspace_id, generation_id, idempotency_key, payload,
       status, attempts, next_attempt_at, created_at, fanout)
     values (?, '*3:0', 'w', ?, '', ?, 'fanout', 1, ?, ?, ?)`,
  );
  const payload = 'x'.repeat(payloadChars);
  const at = new Date().toISOString();
  const fanout = [1, 2, 3].map((n) => `${n}`.repeat(8).padEnd(36, '-')).join(',');
  storage.sqlite!.transaction(() => {
    for (let index = 0; index < rows; index += 1)
      insert.run(`row-${index}`, `gen-${index}`, payload, at, at, fanout);
  })();
  const repository = createOutboxRepository(storage);
  const timed = async (read: () => Promise<unknown>) => {
    const times: number[] = [];
    for (let index = 0; index < repeat; index += 1) {
      const started = performance.now();
      await read();
      times.push(performance.now() - started);
    }
    return times.sort((a, b) => a - b)[Math.floor(times.length / 2)] as number;
  };
  const shipped = await timed(() => repository.countByStatus());
  const replaced = await timed(() =>
    sql`select case when status = 'fanout' then 'pending' else status end as status,
          sum(case when fanout is null then 1 else length(fanout) - length(replace(fanout, ',', '')) + 1 end) as count
        from broadcast_outbox group by 1`.execute(storage.db),
  );
  console.log(
    `outbox gauge with ${rows} fan-out rows of ${payloadChars} characters: ` +
      `countByStatus ${shipped.toFixed(1)} ms, the query it replaced ${replaced.toFixed(1)} ms (medians of ${repeat})`,
  );
} finally {
  await storage.close();
  rmSync(directory, { recursive: true, force: true });
}
