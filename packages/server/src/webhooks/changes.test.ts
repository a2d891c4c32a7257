/**
 * A webhook endpoint's pause and resume between two processes on one database file: the process whose attempts
 * ran out announces the pause, and a resume through the other process (where `gateway webhooks resume` reached)
 * wakes the first one's dispatcher through the change feed, though its own idle poll is a minute away.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig, type Receipt } from '@gateway/core';
import { createGuardedAgent, createVault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { newWebhookSecret, startWebhookReceiver, waitFor } from '../../test/support/webhook-receiver.js';
import { outboxMigrations, SqliteOutboxStore } from '../outbox/sqlite/index.js';
import type { ChangePayloads } from '../store/changes.js';
import { eventually } from '../store/contract/changes.contract.js';
import { changeMigrations, sqliteChangeFeed } from '../store/sqlite/changes.js';
import { openDatabase } from '../store/sqlite/database.js';
import { createWebhooks } from './service.js';

/** An allowed call's receipt (what the receipt log hands the outbox). */
function receipt(index: number): Receipt {
  return {
    id: `receipt-${index}`,
    index,
    time: new Date(Date.UTC(2026, 10, 22, 12, 0, 0, index)).toISOString(),
    session: 'session-7',
    person: 'local:ada',
    clientId: 'client-1',
    tool: 'get_pet',
    source: 'pets',
    publication: 'publication-1',
    fingerprint: 'sha256:abc',
    login: null,
    outcome: 'allowed',
    reason: null,
    upstreamStatus: 200,
    durationMs: 1.5,
    argumentsDigest: 'hmac-sha256:00',
    resultDigest: null,
  };
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('webhook endpoint changes across processes', () => {
  it('a pause is announced, and a resume in another process wakes the paused dispatcher within a second', async () => {
    const directory = await temporaryDirectory('gateway-webhook-changes-');
    cleanups.push(() => directory.cleanup());
    let isUp = false;
    const target = await startWebhookReceiver(() => ({ status: isUp ? 204 : 503 }));
    cleanups.push(() => target.close());
    const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
    cleanups.push(() => agent.close());
    const loaded = parseConfig(
      [
        'gateway:',
        '  url: http://127.0.0.1:8080',
        'sources: {}',
        'vault:',
        '  provider: env',
        'webhooks:',
        '  audit:',
        `    url: ${target.url}`,
        '    secret: audit-secret',
        '    retry: { attempts: 2, initialDelayMs: 10, maxDelayMs: 50, timeoutMs: 2000 }',
        '',
      ].join('\n'),
      join(directory.path, 'gateway.yaml'),
    );
    const vault = await createVault(loaded, { env: { GATEWAY_SECRET_AUDIT_SECRET: newWebhookSecret() } });
    const processes = await Promise.all(
      [0, 1].map(async () => {
        const database = openDatabase(join(directory.path, 'gateway.db'), [...outboxMigrations, ...changeMigrations]);
        const changes = sqliteChangeFeed(database);
        cleanups.push(() => database.close());
        cleanups.push(() => changes.close());
        // Idle dispatchers look for work on their own once a minute: only an announcement wakes them sooner.
        const webhooks = await createWebhooks({
          loaded,
          store: new SqliteOutboxStore(database),
          vault,
          agent,
          changes,
          pollIntervalMs: 60_000,
        });
        return { database, changes, webhooks };
      }),
    );
    const [delivering, operator] = processes as [(typeof processes)[0], (typeof processes)[0]];
    const heard: Array<ChangePayloads['webhook-endpoint']> = [];
    operator.changes.subscribe('webhook-endpoint', (payload) => heard.push(payload));
    delivering.webhooks.start();
    cleanups.push(() => delivering.webhooks.stop());
    delivering.database.transaction(() => {
      for (const index of [0, 1]) delivering.webhooks.outbox.onReceipt(receipt(index), { adapter: 'sqlite' });
    })();

    const store = new SqliteOutboxStore(operator.database);
    await waitFor(async () => (await store.endpoint('audit'))!.pausedAt !== null, 'the pause');
    await eventually(() => heard.length === 1);
    expect(heard).toEqual([{ endpoint: 'audit', state: 'paused' }]);

    isUp = true;
    await operator.webhooks.resume('audit');
    const resumedAt = Date.now();
    await eventually(() => target.requests.filter((request) => request.status === 204).length === 2);
    expect(Date.now() - resumedAt).toBeLessThan(1_000);
    await eventually(() => heard.length === 2);
    expect(heard[1]).toEqual({ endpoint: 'audit', state: 'resumed' });
  });
});
