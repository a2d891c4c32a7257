import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@gateway/core';
import { openSessionStore } from '@gateway/server';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { createPublishingWorkspace } from './publishing-workspace.js';

let directory: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const temporary = await temporaryDirectory('gateway-sessions-');
  directory = temporary.path;
  cleanup = temporary.cleanup;
  await writeFile(join(directory, 'gateway.yaml'), 'gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n');
  const opened = openSessionStore(await loadConfig(join(directory, 'gateway.yaml')));
  const now = Date.now();
  opened.store.openSession({ subject: 'local:alice', personName: 'alice', clientId: 'dcr-1', clientName: 'Editor', tools: [{ name: 'get_order', fingerprint: 'sha256:abc' }], logins: ['orders/api_key'], expiresAt: now + 3_600_000 });
  opened.store.openSession({ subject: 'local:bob', personName: 'bob', clientId: 'dcr-2', clientName: 'Agent', tools: [], logins: [], expiresAt: now - 1000 }, now - 5000);
  opened.close();
});
afterAll(async () => {
  await cleanup?.();
});

describe('gateway sessions', () => {
  it('list shows open sessions; --all adds ended ones', async () => {
    const open = JSON.parse(String((await runGateway(['--json', 'sessions', 'list'], { cwd: directory })).stdout)) as { sessions: Array<{ id: string; state: string }> };
    expect(open.sessions.map((session) => [session.id, session.state])).toEqual([['session-1', 'open']]);
    const all = JSON.parse(String((await runGateway(['--json', 'sessions', 'list', '--all'], { cwd: directory })).stdout)) as { sessions: Array<{ id: string; state: string }> };
    expect(all.sessions.map((session) => [session.id, session.state])).toEqual([['session-1', 'open'], ['session-2', 'expired']]);
  });

  it('show prints the tools with the fingerprints the person approved', async () => {
    const result = await runGateway(['sessions', 'show', 'session-1'], { cwd: directory });
    expect(result.exitCode).toBe(0);
    expect(String(result.stdout)).toContain('get_order  sha256:abc');
    expect(String(result.stdout)).toContain('orders/api_key');
  });

  it('revoke ends the session in the database the server reads', async () => {
    const result = await runGateway(['sessions', 'revoke', 'session-1', '--reason', 'lost laptop'], { cwd: directory });
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const opened = openSessionStore(await loadConfig(join(directory, 'gateway.yaml')));
    try {
      expect(opened.store.isSessionOpen('session-1')).toBe(false);
      expect(opened.store.session('session-1')!.revokedReason).toBe('lost laptop');
    } finally {
      opened.close();
    }
  });

  it('an unknown session is a usage error', async () => {
    const result = await runGateway(['sessions', 'revoke', 'session-99'], { cwd: directory });
    expect(result.exitCode).toBe(2);
    expect(String(result.stderr)).toContain('SESSION_NOT_FOUND');
  });
});

describe('gateway sessions show marks stale tools', () => {
  it('a tool whose published operation differs from the approved fingerprint is marked stale with the reason; an unchanged one is not', async () => {
    const workspace = await createPublishingWorkspace();
    try {
      await workspace.importAndPublish('orders');
      const lock = await workspace.readLock();
      const operations = lock.sources[0]!.publications.find((publication) => publication.status === 'in use')!.operations;
      const current = (tool: string) => operations.find((operation) => operation.tool === tool)!.fingerprint;
      const opened = openSessionStore(await loadConfig(workspace.configPath));
      opened.store.openSession({
        subject: 'local:alice',
        personName: 'alice',
        clientId: 'dcr-1',
        clientName: 'Editor',
        tools: [
          { name: 'get_order', fingerprint: current('get_order') },
          { name: 'search_orders', fingerprint: 'sha256:approved-before-the-change' },
        ],
        logins: ['orders/api_key'],
        expiresAt: Date.now() + 3_600_000,
      });
      opened.close();
      const json = await workspace.gateway('--json', 'sessions', 'show', 'session-1');
      expect(json.exitCode, json.stderr).toBe(0);
      const tools = (JSON.parse(json.stdout) as { session: { tools: Array<{ name: string; stale?: boolean; staleReason?: string; currentFingerprint?: string }> } }).session.tools;
      expect(tools.find((tool) => tool.name === 'get_order')!.stale).toBeUndefined();
      const search = tools.find((tool) => tool.name === 'search_orders')!;
      expect(search.stale).toBe(true);
      expect(search.currentFingerprint).toBe(current('search_orders'));
      expect(search.staleReason).toContain('changed since approval');
      const human = await workspace.gateway('sessions', 'show', 'session-1');
      expect(human.stdout).toMatch(/search_orders {2}sha256:approved-before-the-change {2}STALE: changed since approval/);
      expect(human.stdout).not.toMatch(/get_order .*STALE/);
    } finally {
      await workspace.cleanup();
    }
  });
});
