/**
 * Two gateways in this process on one data directory (as the workers of `serve --workers 2` share one database
 * file, each with its own listener): what one swaps in or records is acted on by the other through the change
 * feed within a second, not when its own file watcher or periodic read gets to it.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { eventually } from '../src/store/contract/changes.contract.js';
import { allowAll, prepareWorkspace, type Workspace } from './support/harness.js';
import { freePort } from './support/net.js';

describe('changes between two gateways on one database', () => {
  let workspace: Workspace;
  let first: RunningGateway;
  let second: RunningGateway;

  beforeAll(async () => {
    // No receipt journal: two gateways of one data directory would otherwise claim the same journal slot.
    workspace = await prepareWorkspace({ configExtra: 'receipts:\n  journal: false' });
    const common = {
      configPath: workspace.configPath,
      lockPath: workspace.lockPath,
      env: workspace.env,
      logger: pino({ level: 'silent' }),
      shutdownGraceMs: 2_000,
      authorizerOverride: allowAll(new Set(['orders/api_key'])),
    };
    first = await startGateway({ ...common, lockDebounceMs: 50 });
    // The second one's file watcher waits ten minutes after a change: as if it never saw the write (a lock on a
    // volume another host writes to). Only the first one's announcement can make it reload in time.
    second = await startGateway({ ...common, lockDebounceMs: 600_000, listen: `127.0.0.1:${await freePort()}` });
  }, 120_000);
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await workspace?.cleanup();
  });

  it('a publication swapped in by one gateway is served by the other within a second', async () => {
    const title = (gateway: RunningGateway) => gateway.registry.snapshot().tools.get('search_orders')?.entry.title;
    expect(title(second)).toBe('Search orders');
    await workspace.republish((document) => document.replace('summary: Search orders', 'summary: Find orders'));
    await eventually(() => title(first) === 'Find orders', 10_000);
    const swappedAt = Date.now();
    await eventually(() => title(second) === 'Find orders');
    expect(Date.now() - swappedAt).toBeLessThan(1_000);
    expect(second.registry.snapshot().publications).toEqual(first.registry.snapshot().publications);
  });
});
