/**
 * `storage.poolSize`: how many connections a gateway process opens to its PostgreSQL database (besides the change
 * feed's one), so that replicas × workers × (poolSize + 1) can be fitted under the server's max_connections. A
 * gateway with `poolSize: 2` under 32 concurrent receipted calls (each receipt's transaction holds a connection,
 * and they queue on the tree head's row lock) never holds more than 2, counted by PostgreSQL itself.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { postgresForThisFile } from '../../../test-support/postgres.js';
import { startPostgresHarness } from './support/cluster.js';
import type { Harness } from './support/harness.js';

const postgres = postgresForThisFile();
let harness: Harness | undefined;
let databaseUrl: string;

beforeAll(async () => {
  databaseUrl = await postgres.server.createDatabase();
  harness = await startPostgresHarness(databaseUrl, ['  poolSize: 2']);
}, 120_000);

afterAll(async () => {
  await harness?.stop();
});

describe('storage.poolSize', () => {
  it('bounds the connections a gateway process opens, under more concurrent calls than connections', async () => {
    const observer = new pg.Client({ connectionString: databaseUrl, application_name: 'pool-size-test' });
    await observer.connect();
    const counts: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await observer.query<{ pool: number; feed: number }>(
          `SELECT count(*) FILTER (WHERE application_name = 'gateway')::int AS pool,
                  count(*) FILTER (WHERE application_name = 'gateway-changes')::int AS feed
             FROM pg_stat_activity WHERE datname = current_database()`,
        );
        counts.push(rows[0]!.pool);
        expect(rows[0]!.feed).toBeLessThanOrEqual(1);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const clients = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const client = new Client({ name: 'pool-size', version: '1.0.0' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(harness!.mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }),
        );
        return client;
      }),
    );
    try {
      for (let round = 0; round < 3; round += 1) {
        const results = await Promise.all(
          Array.from({ length: 32 }, (_, index) =>
            clients[index % clients.length]!.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } }),
          ),
        );
        for (const result of results) expect(result.isError).toBeFalsy();
      }
    } finally {
      sampling = false;
      await sampler;
      await observer.end();
      await Promise.all(clients.map((client) => client.close()));
    }
    // Sampled all along (a busy pool shows in PostgreSQL's own view), and never above the setting.
    expect(counts.length).toBeGreaterThan(10);
    expect(Math.max(...counts)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...counts)).toBeLessThanOrEqual(2);
  }, 120_000);
});
