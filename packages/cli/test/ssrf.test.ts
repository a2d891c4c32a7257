/**
 * `gateway import`, `diff` and `publish` fetch description URLs and remote `$ref`s through the same SSRF guard
 * as the server (@gateway/runtime): every spelling of a loopback URL is refused with SSRF_ADDRESS_REFUSED and the
 * loopback server is never reached, unless gateway.yaml's network.allowPrivateNetworks lists its range.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseLock } from '@gateway/core';
import {
  LOOPBACK_ALLOWLIST,
  hostileUrlCases,
  startRecordingServer,
  type HostileUrlCase,
  type RecordingServer,
} from '../../../test-support/hostile-urls.js';
import { createPublishingWorkspace } from './publishing-workspace.js';
import { createWorkspace, type Workspace } from './workspace.js';

let target: RecordingServer;
let redirector: RecordingServer;

beforeAll(async () => {
  target = await startRecordingServer();
  redirector = await startRecordingServer();
});
afterAll(async () => {
  await target.close();
  await redirector.close();
});

async function writeSource(workspace: Workspace, entry: HostileUrlCase, allowPrivateNetworks?: string[]): Promise<void> {
  if (entry.file) await workspace.write(entry.document.replace(/^\.\//, ''), entry.file);
  const config = {
    gateway: { url: 'https://gateway.example.com' },
    sources: { pets: { kind: 'openapi', document: entry.document, ...(entry.allowRemoteRefs ? { allowRemoteRefs: true } : {}) } },
    ...(allowPrivateNetworks ? { network: { allowPrivateNetworks } } : {}),
  };
  await workspace.write('gateway.yaml', stringify(config));
}

function errorLine(stderr: string): string | undefined {
  return stderr.split('\n').find((line) => line.startsWith('error '));
}

describe('gateway import refuses every loopback spelling without network.allowPrivateNetworks', () => {
  let workspace: Workspace;
  beforeEach(async () => {
    workspace = await createWorkspace();
    target.hits.length = 0;
    redirector.hits.length = 0;
  });
  afterEach(async () => {
    await workspace.cleanup();
  });

  it.each(hostileUrlCases({ port: 0 } as RecordingServer, { port: 0 } as RecordingServer).map((entry) => entry.name))(
    '%s: refused with SSRF_ADDRESS_REFUSED (exit 7), the server never hit, no lock written',
    async (name) => {
      const entry = hostileUrlCases(target, redirector).find((candidate) => candidate.name === name)!;
      await writeSource(workspace, entry);
      const result = await workspace.gateway('import', 'pets');
      expect(errorLine(result.stderr), result.stderr).toMatch(/^error SSRF_ADDRESS_REFUSED: refused to connect to /);
      expect(result.exitCode).toBe(7);
      expect(target.hits).toEqual([]);
      expect(redirector.hits).toEqual([]);
      await expect(stat(workspace.lockPath)).rejects.toThrow(/ENOENT/);
    },
  );

  it.each(hostileUrlCases({ port: 0 } as RecordingServer, { port: 0 } as RecordingServer).map((entry) => entry.name))(
    '%s: fetched once its range is in network.allowPrivateNetworks',
    async (name) => {
      const entry = hostileUrlCases(target, redirector).find((candidate) => candidate.name === name)!;
      await writeSource(workspace, entry, LOOPBACK_ALLOWLIST);
      const result = await workspace.gateway('import', 'pets', '--json');
      expect(result.exitCode, result.stderr).toBe(0);
      expect(target.hits.length).toBeGreaterThan(0);
      const lock = parseLock(await readFile(workspace.lockPath, 'utf8'));
      expect(lock.sources[0]!.publications[0]!.operations).toHaveLength(1);
      if (entry.allowRemoteRefs) {
        expect(target.hits).toContain('/schemas.yaml');
        expect(JSON.stringify(lock.sources[0]!.publications[0]!.operations[0]!.inputSchema)).toContain('"required":["name"]');
      }
    },
  );
});

describe('redirects: every hop passes the guard again', () => {
  it('a 302 from an allowed loopback address to one outside the allowlist is refused and the target never hit', async () => {
    // 127.0.0.2 is loopback too (Linux answers on all of 127.0.0.0/8), but only 127.0.0.1/32 is allowed.
    const outside = await startRecordingServer('127.0.0.2');
    const workspace = await createWorkspace();
    try {
      redirector.hits.length = 0;
      const to = encodeURIComponent(`http://127.0.0.2:${outside.port}/openapi.yaml`);
      await writeSource(workspace, { name: 'redirect', document: `http://127.0.0.1:${redirector.port}/redirect?to=${to}` }, [
        '127.0.0.1/32',
      ]);
      const result = await workspace.gateway('import', 'pets');
      expect(errorLine(result.stderr), result.stderr).toMatch(
        /^error SSRF_ADDRESS_REFUSED: refused to connect to 127\.0\.0\.2 at 127\.0\.0\.2 \(loopback address\)/,
      );
      expect(result.exitCode).toBe(7);
      expect(redirector.hits).toEqual(['/redirect']);
      expect(outside.hits).toEqual([]);
    } finally {
      await outside.close();
      await workspace.cleanup();
    }
  });

  it('a redirect to a file: URL is refused with FETCH_REDIRECT_REFUSED', async () => {
    const workspace = await createWorkspace();
    try {
      await writeSource(
        workspace,
        { name: 'redirect', document: `http://127.0.0.1:${redirector.port}/redirect?to=${encodeURIComponent('file:///etc/passwd')}` },
        ['127.0.0.1/32'],
      );
      const result = await workspace.gateway('import', 'pets');
      expect(errorLine(result.stderr), result.stderr).toMatch(/^error FETCH_REDIRECT_REFUSED: /);
      expect(result.stderr).not.toContain('root:');
      expect(result.exitCode).toBe(7);
    } finally {
      await workspace.cleanup();
    }
  });
});

describe('gateway diff and publish use the same guard', () => {
  it('diff of a source whose description URL is loopback is refused and the server never hit', async () => {
    const workspace = await createWorkspace();
    try {
      target.hits.length = 0;
      await writeSource(workspace, { name: 'loopback', document: `http://127.0.0.1:${target.port}/openapi.yaml` });
      const result = await workspace.gateway('diff', 'pets');
      expect(errorLine(result.stderr), result.stderr).toMatch(/^error SSRF_ADDRESS_REFUSED: /);
      expect(result.exitCode).toBe(7);
      expect(target.hits).toEqual([]);
    } finally {
      await workspace.cleanup();
    }
  });

  it('publish re-reads the live description through the guard: a loopback URL is refused and nothing is published', async () => {
    const workspace = await createPublishingWorkspace();
    try {
      // A proposal imported while loopback was allowed; the allowance is then withdrawn before publishing.
      const url = `http://127.0.0.1:${target.port}/openapi.yaml`;
      await workspace.writeConfig(
        { orders: url },
        { trust: { keys: ['./keys/team.pub.jwk'] }, network: { allowPrivateNetworks: ['127.0.0.1/32'] } },
      );
      expect((await workspace.gateway('import', 'orders')).exitCode).toBe(0);
      expect((await workspace.gateway('review', 'orders', '--all-supported')).exitCode).toBe(0);
      await workspace.writeConfig({ orders: url }, { trust: { keys: ['./keys/team.pub.jwk'] } });
      const before = await readFile(workspace.lockPath);
      target.hits.length = 0;
      const result = await workspace.gateway(
        'publish',
        'orders',
        '--key',
        join('keys', 'team.private.jwk'),
        '--publisher',
        'tester@example.com',
      );
      expect(errorLine(result.stderr), result.stderr).toMatch(/^error SSRF_ADDRESS_REFUSED: /);
      expect(result.exitCode).toBe(7);
      expect(target.hits).toEqual([]);
      expect((await readFile(workspace.lockPath)).equals(before)).toBe(true);
    } finally {
      await workspace.cleanup();
    }
  });
});
