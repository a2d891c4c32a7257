/**
 * Metrics of `gateway serve --workers N`: the workers share the listen socket, so a scrape reaches one worker at
 * random. Each scrape is therefore answered with the whole cluster's metrics: the worker asks the primary, which
 * collects every worker's registry (prom-client's AggregatorRegistry, over the cluster's IPC channels) and
 * aggregates them (counters and histograms summed; gauges of shared state, read alike by every worker, by the
 * aggregator their definition names: metrics.ts).
 */
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

const REQUEST = 'gateway-metrics-request';
const ANSWER = 'gateway-metrics-answer';
/** How long a worker waits for the primary's aggregate (prom-client gives up on a silent worker after 5 s). */
const ANSWER_TIMEOUT_MS = 8_000;

interface MetricsRequest {
  type: typeof REQUEST;
  id: number;
}
interface MetricsAnswer {
  type: typeof ANSWER;
  id: number;
  text?: string;
  error?: string;
}

/** In the primary: answers each worker's request with the metrics of every worker, aggregated. */
export function answerClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: MetricsRequest | undefined) => {
    if (message?.type !== REQUEST) return;
    const reply = (answer: Omit<MetricsAnswer, 'type' | 'id'>) => {
      if (worker.isConnected()) worker.send({ type: ANSWER, id: message.id, ...answer } satisfies MetricsAnswer);
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (error: Error) => reply({ error: error.message }),
    );
  });
}

/**
 * In a worker: its registry answers the primary's collection, and the returned function renders the cluster's
 * metrics by asking the primary.
 */
export function clusterMetricsRenderer(registry: Registry): () => Promise<{ contentType: string; text: string }> {
  // The constructor adds prom-client's listener that answers the primary's collection with `registry`.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  const waiting = new Map<number, { resolve(text: string): void; reject(error: Error): void }>();
  let nextId = 0;
  process.on('message', (message: MetricsAnswer | undefined) => {
    if (message?.type !== ANSWER) return;
    const request = waiting.get(message.id);
    if (!request) return;
    waiting.delete(message.id);
    if (message.text === undefined) request.reject(new Error(`the cluster's metrics could not be collected: ${message.error}`));
    else request.resolve(message.text);
  });
  return async () => {
    const id = nextId++;
    const text = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error("the primary did not answer with the cluster's metrics"));
      }, ANSWER_TIMEOUT_MS);
      waiting.set(id, {
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      process.send!({ type: REQUEST, id } satisfies MetricsRequest);
    });
    return { contentType: registry.contentType, text };
  };
}
