/**
 * Call-path metrics tallied in plain numbers and handed to prom-client only when Prometheus scrapes. prom-client's
 * own `inc` and `observe` validate and hash their label object on every call, even through a child from
 * `labels()`: several times the cost of the tally itself, on every tool call. These keep one record per label
 * value, found by the caller once (`series`), and serve the exposition prom-client would (the unit test compares
 * the two texts, and the cluster aggregate, for the same observations).
 */
import type { Registry } from 'prom-client';

/** A histogram of one label, in prom-client's metric shape (`get`, `reset`), registered in `registry`. */
export interface TalliedHistogram {
  /** The record of one label value: `observe(seconds)` is a bucket search and three additions. */
  series(labelValue: string): { observe(value: number): void };
}

interface HistogramRecord {
  /** Per bucket, the observations at most its bound and above the one before (not cumulative). */
  counts: number[];
  /** Observations above the last bound. */
  over: number;
  sum: number;
  count: number;
  observe(value: number): void;
}

export function talliedHistogram(options: {
  name: string;
  help: string;
  labelName: string;
  buckets: readonly number[];
  registry: Registry;
}): TalliedHistogram {
  const { name, help, labelName, buckets } = options;
  const records = new Map<string, HistogramRecord>();
  const metric = {
    name,
    help,
    type: 'histogram' as const,
    aggregator: 'sum' as const,
    get: async () => ({ name, help, type: 'histogram', aggregator: 'sum', values: exposition() }),
    reset: () => records.clear(),
  };
  options.registry.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);

  function exposition() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const [labelValue, record] of records) {
      let cumulative = 0;
      buckets.forEach((bound, index) => {
        cumulative += record.counts[index]!;
        values.push({ labels: { le: bound, [labelName]: labelValue }, value: cumulative, metricName: `${name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', [labelName]: labelValue }, value: record.count, metricName: `${name}_bucket` });
      values.push({ labels: { [labelName]: labelValue }, value: record.sum, metricName: `${name}_sum` });
      values.push({ labels: { [labelName]: labelValue }, value: record.count, metricName: `${name}_count` });
    }
    return values;
  }

  return {
    series(labelValue) {
      let record = records.get(labelValue);
      if (!record) {
        const created: HistogramRecord = {
          counts: buckets.map(() => 0),
          over: 0,
          sum: 0,
          count: 0,
          observe(value: number) {
            // A value that is not a finite number is not an observation (prom-client throws on it).
            if (!Number.isFinite(value)) return;
            created.sum += value;
            created.count += 1;
            for (let index = 0; index < buckets.length; index += 1) {
              if (value <= buckets[index]!) {
                created.counts[index]! += 1;
                return;
              }
            }
            created.over += 1;
          },
        };
        record = created;
        records.set(labelValue, record);
      }
      return record;
    },
  };
}

/**
 * A counter of several labels tallied in a map, read into prom-client's `Counter` at scrape time by its `collect`
 * (public API): `series(...)` once per label set, then `inc()` is one addition.
 */
export interface TalliedCounts {
  series(labels: Record<string, string>): { inc(): void };
  /** For the counter's `collect`: every label set with its count. */
  entries(): Iterable<[Record<string, string>, number]>;
}

export function talliedCounts(): TalliedCounts {
  const records = new Map<string, { labels: Record<string, string>; count: number; inc(): void }>();
  return {
    series(labels) {
      const key = Object.values(labels).join('\n');
      let record = records.get(key);
      if (!record) {
        const created = {
          labels,
          count: 0,
          inc() {
            created.count += 1;
          },
        };
        record = created;
        records.set(key, record);
      }
      return record;
    },
    *entries() {
      for (const record of records.values()) yield [record.labels, record.count];
    },
  };
}
