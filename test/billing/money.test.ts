import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nanosToUsd, usdToNanos } from '../../src/billing/money.js';
import { utcDay } from '../../src/billing/usage-windows.js';

describe('nanosToUsd', () => {
  it('gives the 9-place decimal of an integer amount, as rounding through toFixed(9) would', () => {
    const samples = [0, 1, 9, 10, 999_999_999, 1_000_000_000, 300_000_000, 123_456_789_012, 2 ** 53 - 1];
    // A deterministic spread over every magnitude up to 2^53.
    let seed = 7;
    for (let index = 0; index < 20_000; index += 1) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      samples.push(Math.floor((seed / 2 ** 31) * 2 ** (index % 53)));
    }
    for (const nanos of samples) {
      assert.equal(nanosToUsd(nanos), Number((nanos / 1e9).toFixed(9)), `nanos ${nanos}`);
    }
    assert.equal(nanosToUsd(300_000_000), 0.3);
    assert.equal(nanosToUsd(usdToNanos(0.1) + usdToNanos(0.2)), 0.3);
  });

  it('answers 0, never -0, for nothing', () => {
    assert.ok(Object.is(nanosToUsd(0), 0));
    assert.ok(Object.is(nanosToUsd(-0), 0));
  });

  it('rounds a fractional amount to 9 places', () => {
    assert.equal(nanosToUsd(0.4), 0);
    assert.equal(nanosToUsd(1.6), 0.000000002);
  });
});

describe('utcDay', () => {
  it('answers the UTC day of each instant, including across midnight and back', () => {
    assert.equal(utcDay(new Date('2026-03-01T23:59:59.999Z')), '2026-03-01');
    assert.equal(utcDay(new Date('2026-03-02T00:00:00.000Z')), '2026-03-02');
    assert.equal(utcDay(new Date('2026-03-01T12:00:00.000Z')), '2026-03-01');
    assert.equal(utcDay(new Date('2026-03-01T23:00:00.000-05:00')), '2026-03-02');
    assert.equal(utcDay(new Date('1969-12-31T23:59:59.999Z')), '1969-12-31');
    assert.throws(() => utcDay(new Date(Number.NaN)), RangeError);
  });
});
