import { copyFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runGateway } from '../../../test-support/cli.js';
import { postgresForThisFile } from '../../../test-support/postgres.js';
import { postgresMigrations } from '../../server/src/storage.js';
import { openPostgres } from '../../server/src/store/postgres/database.js';
import { migratePostgres } from '../../server/src/store/postgres/migrate.js';
import { ordersDocument } from './publishing-workspace.js';
import { createWorkspace, type Workspace } from './workspace.js';

interface Finding {
  check: string;
  level: 'ok' | 'warning' | 'error';
  code?: string;
  message: string;
  fix?: string;
}

const postgres = postgresForThisFile();

describe('gateway doctor', () => {
  let workspace: Workspace | undefined;
  afterEach(async () => {
    await workspace?.cleanup();
    workspace = undefined;
  });

  async function doctor(): Promise<{ exitCode: number; findings: Finding[]; ok: boolean }> {
    const result = await workspace!.gateway('doctor', '--json');
    const report = JSON.parse(result.stdout) as { ok: boolean; findings: Finding[] };
    return { exitCode: result.exitCode, findings: report.findings, ok: report.ok };
  }
  const failing = (findings: Finding[]) =>
    findings
      .filter((finding) => finding.level === 'error')
      .map((finding) => finding.check)
      .sort();

  it('names every missing piece with its fix, and passes once each fix is applied', { timeout: 180_000 }, async () => {
    workspace = await createWorkspace();
    await copyFile(ordersDocument, join(workspace.path, 'orders.yaml'));
    // serve would listen where gateway.url points (loopback with a port): a port nothing else holds.
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    await new Promise((resolve) => blocker.close(resolve));
    const writeConfig = async (extra: Record<string, unknown>) =>
      workspace!.write(
        'gateway.yaml',
        stringify({
          gateway: { url: `http://127.0.0.1:${port}` },
          sources: {
            orders: { kind: 'openapi', document: './orders.yaml', credentials: { api_key: { type: 'apiKey', secret: 'orders-api-key' } } },
          },
          ...extra,
        }),
      );
    await writeConfig({});

    // Nothing set up yet: no trusted key, no lock, no secret, nobody to sign in.
    let report = await doctor();
    expect(report.exitCode).toBe(1);
    expect(report.ok).toBe(false);
    expect(failing(report.findings)).toEqual(['lock', 'secret', 'sign-in', 'trust'].sort());
    for (const finding of report.findings.filter((each) => each.level === 'error')) expect(finding.fix, finding.check).toBeTruthy();
    expect(report.findings.find((finding) => finding.check === 'secret')!.fix).toContain('gateway secrets set orders-api-key');
    expect(report.findings.find((finding) => finding.check === 'sign-in')!.fix).toContain('gateway people add');

    // Follow the fixes, one by one.
    expect((await workspace.gateway('keys', 'generate', '--out', 'keys', '--name', 'publisher')).exitCode).toBe(0);
    await writeConfig({ trust: { keys: ['./keys/publisher.pub.jwk'] } });
    for (const args of [
      ['import', 'orders'],
      ['review', 'orders', '--all-supported'],
      ['publish', 'orders', '--key', 'keys/publisher.private.jwk'],
    ]) {
      const run = await workspace.gateway(...args);
      expect(run.exitCode, `${args.join(' ')}: ${run.stderr}`).toBe(0);
    }
    report = await doctor();
    // The lock verifies now; the example upstream is on loopback, which the SSRF guard refuses.
    expect(failing(report.findings)).toEqual(['network', 'secret', 'sign-in']);
    expect(report.findings.find((finding) => finding.check === 'network')!.fix).toContain('127.0.0.1/32');

    await writeConfig({ trust: { keys: ['./keys/publisher.pub.jwk'] }, network: { allowPrivateNetworks: ['127.0.0.1/32'] } });
    expect((await runGateway(['secrets', 'set', 'orders-api-key'], { cwd: workspace.path, input: 'demo-orders-key\n' })).exitCode).toBe(0);
    expect((await runGateway(['people', 'add', 'alice'], { cwd: workspace.path, input: 'a long enough password\n' })).exitCode).toBe(0);

    report = await doctor();
    expect(failing(report.findings)).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.exitCode).toBe(0);
    // The admin token is optional for serving tools, so it is a warning, not a failure.
    expect(report.findings.find((finding) => finding.check === 'admin-token')?.level).toBe('warning');

    // The human report says it is ready and still shows the warning with its fix.
    const human = await runGateway(['doctor'], { cwd: workspace.path });
    expect(human.exitCode).toBe(0);
    expect(human.stdout).toMatch(/warn\s+admin-token/);
    expect(human.stdout).toContain('gateway secrets set admin-token');
    expect(human.stdout).toContain('ready:');
    expect(report.findings.find((finding) => finding.check === 'listen')).toMatchObject({
      level: 'ok',
      message: `127.0.0.1:${port} is free to listen on`,
    });

    // Another process takes the port serve would listen on: not ready, and the line says why and what to do.
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
    try {
      report = await doctor();
      expect(report.ok).toBe(false);
      expect(report.exitCode).toBe(1);
      expect(failing(report.findings)).toEqual(['listen']);
      expect(report.findings.find((finding) => finding.check === 'listen')).toMatchObject({
        message: `cannot listen on 127.0.0.1:${port}: the address is already in use (is another gateway running?)`,
        fix: expect.stringContaining('--listen or gateway.listen'),
      });
      const busy = await runGateway(['doctor'], { cwd: workspace.path });
      expect(busy.exitCode).toBe(1);
      expect(busy.stdout).toMatch(/FAIL\s+listen\s+cannot listen on 127\.0\.0\.1:\d+: the address is already in use/);
      expect(busy.stdout).toContain('not ready:');
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it('checks MCP sources: a stdio command that does not exist, an endpoint the SSRF guard refuses, the env secret it names', async () => {
    workspace = await createWorkspace();
    const writeConfig = async (command: string, extra: Record<string, unknown>) =>
      workspace!.write(
        'gateway.yaml',
        stringify({
          gateway: { url: 'http://127.0.0.1:8080' },
          sources: {
            everything: { kind: 'mcp', command: [command, 'server.js', 'stdio'], env: { API_TOKEN: { secret: 'everything-token' } } },
            tracker: { kind: 'mcp', url: 'http://127.0.0.1:9/mcp' },
          },
          ...extra,
        }),
      );
    await writeConfig('./bin/no-such-mcp-server', {});
    let report = await doctor();
    const finding = (check: string, text: string) => report.findings.find((each) => each.check === check && each.message.includes(text));
    expect(finding('mcp', 'everything')).toMatchObject({
      level: 'error',
      message: expect.stringContaining("'./bin/no-such-mcp-server' is not an executable file"),
    });
    expect(finding('mcp', 'everything')!.fix).toContain('sources.everything.command');
    expect(finding('network', 'tracker')).toMatchObject({ level: 'error', fix: expect.stringContaining('127.0.0.1/32') });
    expect(finding('secret', "'everything-token'")).toMatchObject({
      level: 'error',
      fix: expect.stringContaining('gateway secrets set everything-token'),
    });
    expect(report.ok).toBe(false);

    // Each fix applied: the command exists (here: node itself, found on PATH by name), loopback is allowed,
    // the secret is in the vault.
    await writeConfig('node', { network: { allowPrivateNetworks: ['127.0.0.1/32'] } });
    expect((await runGateway(['secrets', 'set', 'everything-token'], { cwd: workspace.path, input: 'a-token\n' })).exitCode).toBe(0);
    report = await doctor();
    expect(finding('mcp', 'everything')).toMatchObject({ level: 'ok', message: expect.stringMatching(/stdio command \/.*node$/) });
    expect(finding('mcp', 'tracker')).toMatchObject({ level: 'ok' });
    expect(report.findings.filter((each) => each.check === 'network')).toEqual([]);
    expect(finding('secret', "'everything-token'")).toMatchObject({ level: 'ok' });
  });

  it('with storage.kind postgres: the connection string in the vault, the connection, the migrations, never the password', {
    timeout: 240_000,
  }, async () => {
    workspace = await createWorkspace();
    const useSecret = (name: string) =>
      workspace!.write(
        'gateway.yaml',
        stringify({ gateway: { url: 'http://127.0.0.1:8080' }, sources: {}, storage: { kind: 'postgres', url: name } }),
      );
    const storage = async () => {
      const result = await workspace!.gateway('doctor', '--json');
      for (const output of [result.stdout, result.stderr]) {
        expect(output).not.toContain(postgres.server.password);
        expect(output).not.toContain('hunter2');
      }
      const report = JSON.parse(result.stdout) as { ok: boolean; findings: Finding[] };
      return report.findings.filter((finding) => finding.check === 'storage');
    };
    const set = async (name: string, value: string) =>
      expect((await runGateway(['secrets', 'set', name], { cwd: workspace!.path, input: `${value}\n` })).exitCode).toBe(0);
    const codes = (findings: Finding[]) => findings.map((finding) => `${finding.level} ${finding.code ?? ''}`.trim());

    // No connection string in the vault yet.
    await useSecret('database-url');
    expect(codes(await storage())).toEqual(['error DATABASE_URL_MISSING']);

    await set('database-url', 'host=db user=gateway password=hunter2');
    expect(codes(await storage())).toEqual(['error DATABASE_URL_INVALID']);

    await useSecret('closed-url');
    await set('closed-url', `postgres://gateway_test:hunter2@127.0.0.1:${await closedPortNumber()}/gateway`);
    const closed = await storage();
    expect(codes(closed)).toEqual(['error DATABASE_UNREACHABLE']);
    expect(closed[0]!.message).toMatch(/127\.0\.0\.1:\d+\/gateway/);
    const human = await workspace.gateway('doctor');
    expect(human.stdout).toMatch(/FAIL\s+storage\s+cannot reach the PostgreSQL database 127\.0\.0\.1:\d+\/gateway/);
    expect(`${human.stdout}${human.stderr}`).not.toContain('hunter2');

    // A real database, not migrated yet: it answers, and every migration is pending.
    const url = await postgres.server.createDatabase();
    await useSecret('real-url');
    await set('real-url', url);
    const fresh = await storage();
    expect(codes(fresh)).toEqual(['ok', 'warning DATABASE_MIGRATIONS_PENDING']);
    expect(fresh[1]!.message).toContain('oauth-001, oauth-002, oauth-003');
    expect(fresh[1]!.message).toContain('receipts-001, receipts-002');

    const pool = openPostgres(url);
    try {
      await migratePostgres(pool, postgresMigrations);
      expect(codes(await storage())).toEqual(['ok', 'ok']);
      // A newer gateway migrated it further: this version says so.
      await pool.query("INSERT INTO schema_migrations (id) VALUES ('oauth-999')");
      expect(codes(await storage())).toEqual(['ok', 'error DATABASE_MIGRATIONS_UNKNOWN']);
    } finally {
      await pool.end();
    }
  });
});

async function closedPortNumber(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
