/**
 * Two replicas on PostgreSQL with the `postgres` vault (`vault.provider: postgres`): the vault in a database and role
 * of its own, its connection string and key-encryption key from the environment, the gateway's connection string
 * a secret in that vault. Both replicas start, share what the first one created in the vault (signing keys), answer
 * tool calls, and the gateway's own database holds no value the vault keeps.
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { loadConfig } from '@gateway/core';
import { createVault, type Vault } from '@gateway/runtime';
import { postgresForThisFile } from '../../../test-support/postgres.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { storageFindings } from '../src/storage.js';
import { allowAll, HARNESS_ADMIN_TOKEN, ORDERS_API_KEY, prepareWorkspace, type Workspace } from './support/harness.js';
import { freePort } from './support/net.js';

const postgres = postgresForThisFile();
let workspace: Workspace;
let gatewayDatabaseUrl: string;
let vault: Vault;
const env: Record<string, string> = {};
const replicas: Array<{ gateway: RunningGateway; mcpUrl: string }> = [];

async function startReplica(port?: number): Promise<void> {
  let configPath = workspace.configPath;
  if (port) {
    configPath = join(workspace.directory, `gateway-${port}.yaml`);
    const config = await readFile(workspace.configPath, 'utf8');
    await writeFile(configPath, config.replace('gateway:\n', `gateway:\n  dataDirectory: .gateway-${port}\n`));
  }
  const gateway = await startGateway({
    configPath,
    lockPath: workspace.lockPath,
    env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 2_000,
    authorizerOverride: allowAll(new Set(['orders/api_key'])),
    ...(port ? { listen: `127.0.0.1:${port}` } : {}),
  });
  replicas.push({ gateway, mcpUrl: port ? `http://127.0.0.1:${port}/mcp` : gateway.mcpUrl });
}

beforeAll(async () => {
  gatewayDatabaseUrl = await postgres.server.createDatabase();
  const suffix = `${process.pid}_${randomBytes(4).toString('hex')}`;
  const password = `pw-${randomBytes(9).toString('hex')}`;
  await postgres.server.psql(`CREATE ROLE vault_${suffix} LOGIN PASSWORD '${password}'`);
  await postgres.server.psql(`CREATE DATABASE vault_${suffix} OWNER vault_${suffix}`);
  env.PATH = process.env.PATH ?? '';
  env.VAULT_DB_URL = `postgres://vault_${suffix}:${password}@127.0.0.1:${postgres.server.port}/vault_${suffix}`;
  env.VAULT_KEK = randomBytes(32).toString('base64');
  workspace = await prepareWorkspace({ configExtra: 'storage:\n  kind: postgres\n  url: database-url' });
  const config = await readFile(workspace.configPath, 'utf8');
  await writeFile(
    workspace.configPath,
    config.replace(
      'vault:\n  provider: env\n',
      'vault:\n  provider: postgres\n  postgres: { url: { env: VAULT_DB_URL }, key: { env: VAULT_KEK } }\n',
    ),
  );
  vault = await createVault(await loadConfig(workspace.configPath), { env });
  await vault.set('database-url', gatewayDatabaseUrl);
  await vault.set('orders-api-key', ORDERS_API_KEY);
  await vault.set('admin-token', HARNESS_ADMIN_TOKEN);
  await startReplica();
  await startReplica(await freePort());
}, 180_000);

afterAll(async () => {
  for (const { gateway } of replicas.splice(0)) await gateway.close();
  await vault?.close?.();
  await workspace?.cleanup();
});

describe('replicas with the postgres vault', () => {
  it('both start on the vault, answer calls, and share the keys the first one stored there', async () => {
    for (const { mcpUrl } of replicas) {
      const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }));
      try {
        const result = (await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } })) as { isError?: boolean };
        expect(result.isError).toBeFalsy();
      } finally {
        await client.close();
      }
    }
    const names = (await vault.list()).map((entry) => entry.name);
    // What a writable vault keeps for every replica (created once, on the first start), besides what was set above.
    expect(names).toEqual(expect.arrayContaining(['admin-token', 'database-url', 'orders-api-key', 'oauth-signing-keys']));
    expect((await vault.list()).find((entry) => entry.name === 'oauth-signing-keys')?.version).toBe(1);
  });

  it('refuses to start, and doctor reports it, when the storage is the vault database itself: VAULT_DATABASE_SHARED', async () => {
    const gatewayUrl = (await vault.get('database-url'))!;
    await vault.set('database-url', env.VAULT_DB_URL!);
    try {
      const refused = startGateway({
        configPath: workspace.configPath,
        lockPath: workspace.lockPath,
        env,
        logger: pino({ level: 'silent' }),
        listen: `127.0.0.1:${await freePort()}`,
      });
      await expect(refused).rejects.toMatchObject({ code: 'VAULT_DATABASE_SHARED' });
      await expect(refused).rejects.not.toThrow(new URL(env.VAULT_DB_URL!).password);
      const findings = await storageFindings(await loadConfig(workspace.configPath), vault);
      expect(findings).toEqual([expect.objectContaining({ check: 'storage', level: 'error', code: 'VAULT_DATABASE_SHARED' })]);
    } finally {
      await vault.set('database-url', gatewayUrl);
    }
  });

  it("the gateway's own database holds no value of the vault", async () => {
    const values: string[] = [];
    for (const { name } of await vault.list()) values.push((await vault.get(name))!);
    const client = new pg.Client({ connectionString: gatewayDatabaseUrl });
    await client.connect();
    try {
      const { rows: tables } = await client.query<{ name: string }>(
        "SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public'",
      );
      expect(tables.length).toBeGreaterThan(5);
      let dump = '';
      for (const { name } of tables) {
        const { rows } = await client.query<{ row: string }>(`SELECT t::text AS row FROM ${name} t`);
        dump += rows.map((row) => row.row).join('\n');
      }
      expect(dump).toContain('receipt');
      for (const value of values) {
        // Long values (PEM keys, JSON) are checked by a distinctive slice; every value by itself.
        expect(dump).not.toContain(value);
        expect(dump).not.toContain(value.slice(0, 48));
      }
      expect(dump).not.toContain(new URL(gatewayDatabaseUrl).password);
    } finally {
      await client.end();
    }
  });
});
