import { describe, expect, it } from 'vitest';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { talliedCounts, talliedHistogram } from './tallied.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];
// Values on, below and above the bounds, and past the last one.
const OBSERVED: Array<[string, number]> = [
  ['orders', 0.0005],
  ['orders', 0.001],
  ['orders', 0.05],
  ['billing', 0.01],
  ['orders', 2.5],
  ['billing', 0.75],
  ['orders', 0],
];

function both() {
  const reference = new Registry();
  const histogram = new Histogram({ name: 'x_seconds', help: 'h', labelNames: ['source'], buckets: BUCKETS, registers: [reference] });
  const tallied = new Registry();
  const ours = talliedHistogram({ name: 'x_seconds', help: 'h', labelName: 'source', buckets: BUCKETS, registry: tallied });
  for (const [source, value] of OBSERVED) {
    histogram.observe({ source }, value);
    ours.series(source).observe(value);
  }
  return { reference, tallied, ours };
}

describe('tallied metrics', () => {
  it("a tallied histogram serves the exposition prom-client's Histogram serves for the same observations", async () => {
    const { reference, tallied } = both();
    const text = await tallied.metrics();
    expect(text).toBe(await reference.metrics());
    expect(text).toContain('x_seconds_bucket{le="0.001",source="orders"} 3');
    expect(text).toContain('x_seconds_bucket{le="+Inf",source="orders"} 5');
    expect(text).toContain('x_seconds_count{source="billing"} 2');
  });

  it('aggregates across workers (prom-client cluster aggregation) as a Histogram does', async () => {
    const first = both();
    const second = both();
    const aggregate = async (registries: Registry[]) =>
      AggregatorRegistry.aggregate(await Promise.all(registries.map((registry) => registry.getMetricsAsJSON()))).metrics();
    const text = await aggregate([first.tallied, second.tallied]);
    expect(text).toBe(await aggregate([first.reference, second.reference]));
    expect(text).toContain('x_seconds_count{source="orders"} 10');
  });

  it('ignores a value that is not a finite number, and reset empties it', async () => {
    const { tallied, ours } = both();
    ours.series('orders').observe(Number.NaN);
    expect(await tallied.metrics()).toContain('x_seconds_count{source="orders"} 5');
    tallied.resetMetrics();
    expect(await tallied.metrics()).not.toContain('x_seconds_count');
  });

  it('tallied counts read into a Counter at scrape time give what incrementing it would', async () => {
    const counts = talliedCounts();
    const registry = new Registry();
    new Counter({
      name: 'calls_total',
      help: 'c',
      labelNames: ['tool', 'outcome'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [labels, count] of counts.entries()) this.inc(labels, count);
      },
    });
    const allowed = counts.series({ tool: 'get_order', outcome: 'allowed' });
    allowed.inc();
    allowed.inc();
    counts.series({ tool: 'get_order', outcome: 'denied' }).inc();
    const text = await registry.metrics();
    expect(text).toContain('calls_total{tool="get_order",outcome="allowed"} 2');
    expect(text).toContain('calls_total{tool="get_order",outcome="denied"} 1');
    allowed.inc();
    expect(await registry.metrics()).toContain('calls_total{tool="get_order",outcome="allowed"} 3');
  });
});
