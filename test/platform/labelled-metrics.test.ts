import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { LabelledCounter, LabelledHistogram } from '../../src/platform/labelled-metrics.js';

/** The exposition text of one metric of a registry. */
async function lines(registry: Registry, name: string): Promise<string> {
  const text = await registry.metrics();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name}_`))
    .join('\n');
}

describe('labelled metrics', () => {
  it('expose exactly what prom-client exposes for the same observations', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const counter = new LabelledCounter({
      name: 'requests_total',
      help: 'h',
      labelNames: ['method', 'route', 'status'],
      registry: ours,
    });
    const reference = new Counter({
      name: 'requests_total',
      help: 'h',
      labelNames: ['method', 'route', 'status'],
      registers: [theirs],
    });
    const buckets = [0.001, 0.01, 0.1, 1, 10];
    const histogram = new LabelledHistogram({
      name: 'latency_seconds',
      help: 'h',
      labelNames: ['route'],
      buckets,
      registry: ours,
    });
    const referenceHistogram = new Histogram({
      name: 'latency_seconds',
      help: 'h',
      labelNames: ['route'],
      buckets,
      registers: [theirs],
    });
    const routes = ['/a', '/b "quoted"\\', '/c\nline'];
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    for (let index = 0; index < 2_000; index += 1) {
      const route = routes[index % routes.length] as string;
      const status = String(200 + (index % 3) * 100);
      const amount = index % 5 === 0 ? 2.5 : 1;
      counter.inc(['POST', route, status], amount);
      reference.inc({ method: 'POST', route, status }, amount);
      // Values on the bounds themselves included: a bound's bucket holds values equal to it.
      const value = index % 7 === 0 ? (buckets[index % buckets.length] as number) : random() * 20;
      histogram.observe([route], value);
      referenceHistogram.observe({ route }, value);
    }
    assert.equal(await lines(ours, 'requests_total'), await lines(theirs, 'requests_total'));
    const exposed = await lines(ours, 'latency_seconds');
    assert.equal(exposed, await lines(theirs, 'latency_seconds'));
    assert.match(exposed, /latency_seconds_bucket\{le="\+Inf",route="\/a"\} 667/);
  });

  it('refuse a wrong number of label values and forget everything on reset', async () => {
    const registry = new Registry();
    const counter = new LabelledCounter({ name: 'c_total', help: 'h', labelNames: ['a', 'b'], registry });
    assert.throws(() => counter.inc(['only one']), /2 label values expected, got 1/);
    counter.inc(['x', 'y']);
    assert.match(await registry.metrics(), /c_total\{a="x",b="y"\} 1/);
    registry.resetMetrics();
    assert.doesNotMatch(await registry.metrics(), /c_total\{/);
  });
});
