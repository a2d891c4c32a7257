import { writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { createAdminPlugin } from '../src/admin/index.js';
import { createOriginGuard } from '../src/mcp/origin.js';
import { freePort } from './support/net.js';
import { lockWith, lockedOperation } from './support/fixtures.js';
import { PublicationRegistry } from '../src/publications/registry.js';
import type { SessionStore } from '../src/authorization/stores/session-store.js';
import { sessionMigrations, sqliteSessionStore } from '../src/authorization/stores/sqlite/index.js';
import { openDatabase, type SqliteDatabase } from '../src/store/sqlite/database.js';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';

// `gateway sessions` runs as a subprocess against a real admin API over a real SQLite session store.
const TOKEN = 'sessions-test-admin-token';
const env = { PATH: process.env.PATH ?? '' };
let directory: { path: string; cleanup: () => Promise<void> };
let database: SqliteDatabase;
let store: SessionStore;
let app: FastifyInstance;
let url: string;
let registry: PublicationRegistry;
const revoked: string[] = [];

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-sessions-');
  const text = 'gateway:\n  url: http://127.0.0.1:9\nsources: {}\n';
  const configPath = join(directory.path, 'gateway.yaml');
  await writeFile(configPath, text);
  const loaded = parseConfig(text, configPath);
  const vault = await createVault(loaded, { env });
  await vault.set('admin-token', TOKEN);
  database = openDatabase(join(directory.path, 'gateway.db'), sessionMigrations);
  store = sqliteSessionStore(database);
  store.onRevoke((id) => revoked.push(id));
  const now = Date.now();
  await store.openSession({
    subject: 'local:alice',
    personName: 'alice',
    clientId: 'dcr-1',
    clientName: 'Editor',
    tools: [{ name: 'get_order', fingerprint: 'sha256:abc' }],
    logins: ['orders/api_key'],
    expiresAt: now + 3_600_000,
  });
  await store.openSession(
    { subject: 'local:bob', personName: 'bob', clientId: 'dcr-2', clientName: 'Agent', tools: [], logins: [], expiresAt: now - 1000 },
    now - 5000,
  );
  app = Fastify({ logger: false });
  const port = await freePort();
  // What the running gateway serves: get_order as approved, search_orders changed since.
  registry = new PublicationRegistry();
  registry.replace(
    lockWith([
      lockedOperation({ tool: 'get_order', method: 'GET', path: '/orders/{id}', fingerprint: 'sha256:abc' }),
      lockedOperation({ tool: 'search_orders', method: 'GET', path: '/orders', fingerprint: 'sha256:now' }),
    ]),
  );
  const guard = createOriginGuard({ mcpUrl: 'http://127.0.0.1:9/mcp', isLoopbackListener: true, listenPort: port });
  await app.register(createAdminPlugin({ vault, loaded, registry, guard, sessions: store }));
  await app.listen({ host: '127.0.0.1', port });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await app?.close();
  database?.close();
  await directory?.cleanup();
});

const sessions = (args: string[]) => runGateway(['sessions', ...args, '--url', url], { cwd: directory.path, env });

describe('gateway sessions (through the admin API)', () => {
  it('list shows open sessions; --all adds ended ones', async () => {
    const open = JSON.parse(
      String((await runGateway(['--json', 'sessions', 'list', '--url', url], { cwd: directory.path, env })).stdout),
    ) as {
      sessions: Array<{ id: string; state: string }>;
    };
    expect(open.sessions.map((session) => [session.id, session.state])).toEqual([['session-1', 'open']]);
    const all = JSON.parse(
      String((await runGateway(['--json', 'sessions', 'list', '--all', '--url', url], { cwd: directory.path, env })).stdout),
    ) as {
      sessions: Array<{ id: string; state: string }>;
    };
    expect(all.sessions.map((session) => [session.id, session.state])).toEqual([
      ['session-1', 'open'],
      ['session-2', 'expired'],
    ]);
  });

  it('show prints the tools with the fingerprints the person approved', async () => {
    const result = await sessions(['show', 'session-1']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    expect(String(result.stdout)).toContain('get_order  sha256:abc');
    expect(String(result.stdout)).toContain('orders/api_key');
  });

  it('show marks a tool whose served fingerprint differs from the approved one as stale, with the reason', async () => {
    const stale = await store.openSession({
      subject: 'local:carol',
      personName: 'carol',
      clientId: 'dcr-3',
      clientName: 'Editor',
      tools: [
        { name: 'get_order', fingerprint: 'sha256:abc' },
        { name: 'search_orders', fingerprint: 'sha256:before' },
      ],
      logins: [],
      expiresAt: Date.now() + 3_600_000,
    });
    const human = await sessions(['show', stale.id]);
    expect(human.exitCode, String(human.stderr)).toBe(0);
    expect(String(human.stdout)).toMatch(/search_orders {2}sha256:before {2}STALE: changed since approval \(now sha256:now\)/);
    expect(String(human.stdout)).not.toMatch(/get_order .*STALE/);
    const json = await sessions(['show', stale.id, '--json']);
    const tools = (
      JSON.parse(String(json.stdout)) as { session: { tools: Array<{ name: string; stale?: boolean; currentFingerprint?: string }> } }
    ).session.tools;
    expect(tools.find((tool) => tool.name === 'search_orders')).toMatchObject({ stale: true, currentFingerprint: 'sha256:now' });
    expect(tools.find((tool) => tool.name === 'get_order')!.stale).toBeUndefined();
  });

  it("revoke ends the session in the running server's store, which clears the server's token cache", async () => {
    const result = await sessions(['revoke', 'session-1', '--reason', 'lost laptop']);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    expect(await store.isSessionOpen('session-1')).toBe(false);
    expect((await store.session('session-1'))!.revokedReason).toBe('lost laptop');
    expect(revoked).toEqual(['session-1']);
  });

  it('revoking a session that had already ended says so, changes nothing and exits 7 (refused)', async () => {
    const again = await sessions(['revoke', 'session-1', '--reason', 'second time']);
    expect(again.exitCode).toBe(7);
    expect(String(again.stderr)).toMatch(
      /SESSION_ALREADY_ENDED: .*session-1 had already ended: it was revoked at \S+ \(lost laptop\); nothing changed/,
    );
    expect(String(again.stdout)).not.toContain('revoked session-1');
    expect((await store.session('session-1'))!.revokedReason).toBe('lost laptop');
    expect(revoked).toEqual(['session-1']);

    const expired = await sessions(['revoke', 'session-2']);
    expect(expired.exitCode).toBe(7);
    expect(String(expired.stderr)).toMatch(/session-2 had already ended: it expired at \S+; nothing changed/);
    expect((await store.session('session-2'))!.revokedAt).toBeNull();
  });

  it('an unknown session is a usage error', async () => {
    const result = await sessions(['revoke', 'session-99']);
    expect(result.exitCode).toBe(2);
    expect(String(result.stderr)).toContain('SESSION_NOT_FOUND');
  });

  it('a wrong admin token is refused and changes nothing', async () => {
    const result = await runGateway(['sessions', 'revoke', 'session-2', '--url', url], {
      cwd: directory.path,
      env: { ...env, GATEWAY_ADMIN_TOKEN: 'not-the-token' },
    });
    expect(result.exitCode).toBe(9);
    expect(String(result.stderr)).toContain('ADMIN_TOKEN_INVALID');
    expect((await store.session('session-2'))!.revokedAt).toBeNull();
  });
});
