import { describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../test/support/databases.js';
import { openPostgres } from '../../store/postgres/database.js';
import { approvalsContract, type ApprovalsFactory } from '../contract/approvals.contract.js';
import { postgresApprovalMigrations, postgresApprovals } from './index.js';

/** Each test: a fresh database on this file's PostgreSQL, and a second pool on it (another replica). */
const postgres = postgresForThisFile();
const postgresFactory: ApprovalsFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresApprovalMigrations);
  const replica = openPostgres(database.url, { max: 5 });
  return {
    approvals: postgresApprovals(database.pool),
    second: postgresApprovals(replica),
    async close() {
      await replica.end();
      await database.close();
    },
  };
};

approvalsContract('PostgreSQL', postgresFactory);

describe('the PostgreSQL approvals on two replicas at once', () => {
  it('many retries of one call, racing on both replicas with their connections open, ask for one approval', async () => {
    const database = await freshPostgresDatabase(postgres.server, postgresApprovalMigrations);
    const replica = openPostgres(database.url, { max: 6 });
    try {
      for (const pool of [database.pool, replica]) {
        const clients = await Promise.all(Array.from({ length: 5 }, () => pool.connect()));
        for (const client of clients) client.release();
      }
      const replicas = [postgresApprovals(database.pool), postgresApprovals(replica)];
      const now = Date.now();
      const call = {
        sessionId: 'session-1',
        tool: 'refund_order',
        fingerprint: 'sha256:aaa',
        argumentsDigest: 'hmac-sha256:111',
        subject: 'local:alice',
        personName: 'alice',
        clientId: 'client-1',
        clientName: 'Editor',
        source: 'orders',
        target: 'POST /orders/{orderId}/refund',
        argumentsPreview: '{}',
        approvers: null,
        expiresAt: now + 60_000,
      };
      const asked = await Promise.all(Array.from({ length: 10 }, (_, index) => replicas[index % 2]!.request(call, now)));
      expect(new Set(asked.map((approval) => approval.id)).size).toBe(1);
    } finally {
      await replica.end();
      await database.close();
    }
  });
});
