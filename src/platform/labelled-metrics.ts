import type { Registry } from 'prom-client';

/**
 * Counters and histograms for the request path, exposed through a prom-client registry. prom-client's
 * own `inc`/`observe` validate and hash a labels object on every call (about 3% of an inference
 * request's CPU at saturation, docs/performance.md); these keep one entry per label-value tuple,
 * found by a joined key, and build prom-client's exposition objects only when scraped. Label values
 * are given in `labelNames` order.
 */
interface Options {
  name: string;
  help: string;
  labelNames: readonly string[];
  registry: Registry;
}

/** What the registry reads on scrape (prom-client's own metrics answer the same shape). */
interface Exposition {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Array<{ metricName?: string; labels: Record<string, string | number>; value: number }>;
}

/** The separator of a tuple's key: it cannot appear in the label values the gateway uses. */
const SEPARATOR = '\u0000';

abstract class LabelledMetric<Entry> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum' as const;
  abstract readonly type: Exposition['type'];
  protected readonly labelNames: readonly string[];
  protected readonly entries = new Map<string, { labels: Record<string, string>; entry: Entry }>();

  constructor(options: Options) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames;
    // prom-client's registry takes any object with a name and `get()`; its typings want its classes.
    options.registry.registerMetric(this as never);
  }

  protected entryFor(values: readonly string[]): Entry {
    const key = values.length === 1 ? (values[0] as string) : values.join(SEPARATOR);
    let found = this.entries.get(key);
    if (!found) {
      if (values.length !== this.labelNames.length)
        throw new RangeError(
          `${this.name}: ${this.labelNames.length} label values expected, got ${values.length}`,
        );
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, index) => {
        labels[name] = values[index] as string;
      });
      found = { labels, entry: this.create() };
      this.entries.set(key, found);
    }
    return found.entry;
  }

  protected abstract create(): Entry;

  /** Called by the registry on scrape. */
  abstract get(): Promise<Exposition>;

  reset(): void {
    this.entries.clear();
  }
}

export class LabelledCounter extends LabelledMetric<{ value: number }> {
  readonly type = 'counter' as const;

  inc(values: readonly string[], amount = 1): void {
    this.entryFor(values).value += amount;
  }

  protected create() {
    return { value: 0 };
  }

  async get(): Promise<Exposition> {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: [...this.entries.values()].map(({ labels, entry }) => ({
        labels: { ...labels },
        value: entry.value,
      })),
    };
  }
}

export class LabelledHistogram extends LabelledMetric<{ counts: Float64Array; sum: number; count: number }> {
  readonly type = 'histogram' as const;
  private readonly buckets: readonly number[];

  constructor(options: Options & { buckets: readonly number[] }) {
    super(options);
    this.buckets = [...options.buckets].sort((a, b) => a - b);
  }

  observe(values: readonly string[], value: number): void {
    if (!Number.isFinite(value)) return;
    const entry = this.entryFor(values);
    let bucket = 0;
    while (bucket < this.buckets.length && value > (this.buckets[bucket] as number)) bucket += 1;
    entry.counts[bucket] = (entry.counts[bucket] as number) + 1;
    entry.sum += value;
    entry.count += 1;
  }

  protected create() {
    // One slot per bound, and one past the last (+Inf).
    return { counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
  }

  async get(): Promise<Exposition> {
    const values: Exposition['values'] = [];
    for (const { labels, entry } of this.entries.values()) {
      let cumulative = 0;
      this.buckets.forEach((bound, index) => {
        cumulative += entry.counts[index] as number;
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { le: bound, ...labels },
          value: cumulative,
        });
      });
      values.push({
        metricName: `${this.name}_bucket`,
        labels: { le: '+Inf', ...labels },
        value: entry.count,
      });
      // Copies: a reader of getMetricsAsJSON may change what it gets without touching the entries.
      values.push({ metricName: `${this.name}_sum`, labels: { ...labels }, value: entry.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...labels }, value: entry.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
