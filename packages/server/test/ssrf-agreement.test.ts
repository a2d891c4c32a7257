/**
 * The CLI and the server decide alike on every description URL: the same gateway.yaml is given to
 * `gateway import` (a subprocess) and to the server's drift watcher (with the guarded agent built from
 * `network.allowPrivateNetworks` as the server builds it), and both must refuse, or both fetch, each loopback
 * spelling of the shared table.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@gateway/core';
import { createGuardedAgent } from '@gateway/runtime';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import {
  LOOPBACK_ALLOWLIST,
  hostileUrlCases,
  startRecordingServer,
  type HostileUrlCase,
  type RecordingServer,
} from '../../../test-support/hostile-urls.js';
import { startDriftWatcher } from '../src/drift/index.js';
import { driftMigrations, sqliteDriftStore } from '../src/drift/sqlite/index.js';
import { PublicationRegistry } from '../src/publications/registry.js';
import { openDatabase } from '../src/store/sqlite/database.js';

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

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** `fetched` or the error code, and how many requests reached the loopback servers. */
interface Decision {
  outcome: string;
  hits: number;
}

function hits(): number {
  return target.hits.length + redirector.hits.length;
}

async function workspaceFor(
  entry: HostileUrlCase,
  allowPrivateNetworks: string[] | undefined,
): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const directory = await temporaryDirectory('gateway-ssrf-agreement-');
  if (entry.file) await writeFile(join(directory.path, entry.document.replace(/^\.\//, '')), entry.file);
  const config = {
    gateway: { url: 'https://gateway.example.com' },
    sources: { pets: { kind: 'openapi', document: entry.document, ...(entry.allowRemoteRefs ? { allowRemoteRefs: true } : {}) } },
    ...(allowPrivateNetworks ? { network: { allowPrivateNetworks } } : {}),
  };
  // JSON is YAML: no YAML writer needed in the server's tests.
  await writeFile(join(directory.path, 'gateway.yaml'), JSON.stringify(config, null, 2));
  return directory;
}

async function cliDecision(directory: string): Promise<Decision> {
  const before = hits();
  const result = await runGateway(['import', 'pets', '--json'], { cwd: directory });
  const outcome = result.exitCode === 0 ? 'fetched' : String((JSON.parse(result.stdout) as { error: { code: string } }).error.code);
  return { outcome, hits: hits() - before };
}

async function serverDecision(directory: string): Promise<Decision> {
  const before = hits();
  const loaded = await loadConfig(join(directory, 'gateway.yaml'));
  // As startGateway builds the drift watcher's agent.
  const agent = createGuardedAgent({ allowPrivateNetworks: loaded.config.network?.allowPrivateNetworks ?? [] });
  const database = openDatabase(join(directory, 'gateway.db'), driftMigrations);
  const watcher = await startDriftWatcher({
    loaded,
    store: sqliteDriftStore(database),
    registry: new PublicationRegistry(),
    agent,
    logger: silent,
    intervalMs: 60_000,
    schedule: false,
  });
  try {
    await watcher.checkNow();
    const report = watcher.report()[0]!;
    return { outcome: report.status === 'error' ? String(report.error?.code) : 'fetched', hits: hits() - before };
  } finally {
    await watcher.stop();
    database.close();
    await agent.close();
  }
}

const names = hostileUrlCases({ port: 0 } as RecordingServer, { port: 0 } as RecordingServer).map((entry) => entry.name);

describe('the CLI and the server make the same SSRF decision on every URL form', () => {
  it.each(names)('%s: both refuse without an allowlist, both fetch with one', async (name) => {
    const entry = hostileUrlCases(target, redirector).find((candidate) => candidate.name === name)!;
    for (const [allowList, expected] of [
      [undefined, 'SSRF_ADDRESS_REFUSED'],
      [LOOPBACK_ALLOWLIST, 'fetched'],
    ] as const) {
      const directory = await workspaceFor(entry, allowList ? [...allowList] : undefined);
      try {
        const cli = await cliDecision(directory.path);
        const server = await serverDecision(directory.path);
        expect({ cli: cli.outcome, server: server.outcome }).toEqual({ cli: expected, server: expected });
        if (expected === 'fetched') {
          expect(cli.hits).toBeGreaterThan(0);
          expect(server.hits).toBe(cli.hits);
        } else {
          expect({ cli: cli.hits, server: server.hits }).toEqual({ cli: 0, server: 0 });
        }
      } finally {
        await directory.cleanup();
      }
    }
  });
});
