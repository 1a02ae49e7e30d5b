import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { destinationsOf, eventOfBuiltRow, outboxRowsFor, partOf } from '../../src/broadcast/outbox-events.js';
import type { BroadcastOutboxTable } from '../../src/storage/database-schema.js';
import { sampleEvent, sampleTarget } from '../helpers/broadcast-fixtures.js';

const partsOf = (row: BroadcastOutboxTable) =>
  destinationsOf(row).map((destinationId) => partOf(row, destinationId));

const rowsFor = (keepEvent: boolean) =>
  outboxRowsFor({
    targets: ['d-1', 'd-2', 'd-3'].map((id) => sampleTarget({ id })),
    event: sampleEvent(),
    keyHash: 'a'.repeat(64),
    workspaceId: 'ws-1',
    region: 'global',
    now: new Date('2026-11-23T12:00:00Z'),
    lease: { owner: 'worker-1', until: new Date('2026-11-23T12:00:30Z') },
    keepEvent,
  });

describe('outboxRowsFor: the built event kept with its rows', () => {
  it('keeps it, parts included, for a worker that sends from this thread', () => {
    const [row] = rowsFor(true);
    assert.ok(row);
    assert.equal(eventOfBuiltRow(row)?.generation_id, sampleEvent().generation_id);
    for (const part of partsOf(row)) assert.equal(eventOfBuiltRow(part), eventOfBuiltRow(row));
  });

  it('keeps only the payload text when the delivery thread sends (it parses the text)', () => {
    const rows = rowsFor(false);
    assert.equal(rows.length, 1);
    const [row] = rows;
    assert.ok(row);
    assert.equal(JSON.parse(row.payload).generation_id, sampleEvent().generation_id);
    assert.equal(eventOfBuiltRow(row), undefined);
    for (const part of partsOf(row)) assert.equal(eventOfBuiltRow(part), undefined);
  });
});
