import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isUuid, newTimeOrderedId } from '../../src/platform/ids.js';

describe('newTimeOrderedId', () => {
  it('is a version 7 UUID with the RFC 9562 variant', () => {
    const id = newTimeOrderedId();
    assert.ok(isUuid(id), id);
    assert.equal(id[14], '7');
    assert.match(id[19] ?? '', /[89ab]/);
  });

  it('carries the time in milliseconds in its first 48 bits', () => {
    const at = Date.UTC(2026, 10, 22, 18, 10, 0, 123);
    const id = newTimeOrderedId(at);
    assert.equal(Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16), at);
  });

  it('sorts by time as text, and never repeats', () => {
    const ids = Array.from({ length: 2_000 }, (_, n) => newTimeOrderedId(1_700_000_000_000 + n));
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(Array.from({ length: 10_000 }, () => newTimeOrderedId(0))).size, 10_000);
  });

  it('keeps the random bits apart from the time and the version (each id its own)', () => {
    const ids = Array.from({ length: 600 }, () => newTimeOrderedId(Date.UTC(2026, 0, 1)));
    for (const id of ids) assert.ok(isUuid(id) && id[14] === '7' && /[89ab]/.test(id[19] ?? ''), id);
    // Past the pool's 256 ids: the refilled pool gives other bytes, and the shared text buffer
    // never leaks one id's digits into another (the time prefix is the same, the rest differs).
    assert.equal(new Set(ids.map((id) => id.slice(14))).size, ids.length);
    assert.equal(new Set(ids.map((id) => id.slice(0, 13))).size, 1);
  });
});
