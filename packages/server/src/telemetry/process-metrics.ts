/**
 * Node's process metrics, as prom-client's `collectDefaultMetrics` serves them, less one: the GC duration histogram
 * (`nodejs_gc_duration_seconds`). It observes every garbage collection through a PerformanceObserver, and a busy
 * gateway collects its young generation every few hundred calls: a few microseconds of every call went to it
 * (docs/performance.md). The rest are read when Prometheus scrapes. prom-client is pinned to an exact version
 * (STACK.md); `telemetry.test.ts` checks the names served, so a release that moves these files fails there first.
 */
import { createRequire } from 'node:module';
import type { Registry } from 'prom-client';

const require = createRequire(import.meta.url);

/** prom-client's default collectors by file name (lib/metrics/), in its own order, without `gc`. */
const COLLECTORS = [
  'processCpuTotal',
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processResources',
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
] as const;

type Collector = (registry: Registry, config: { eventLoopMonitoringPrecision?: number }) => void;

export function collectProcessMetrics(registry: Registry, config: { eventLoopMonitoringPrecision: number }): void {
  for (const name of COLLECTORS) {
    // processResources needs process.getActiveResourcesInfo (Node 17+); prom-client skips it without, as here.
    if (name === 'processResources' && typeof process.getActiveResourcesInfo !== 'function') continue;
    (require(`prom-client/lib/metrics/${name}.js`) as Collector)(registry, config);
  }
}
