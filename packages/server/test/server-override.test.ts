/**
 * `sources.<name>.server` end to end: a description without `servers` (SERVER_URL_MISSING on its own) is imported,
 * reviewed and published by the real CLI with the override in gateway.yaml; the signed lock holds the URL, editing it
 * breaks verification, and a call through the executor reaches the configured (staging) URL.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { parseLock, type LockedOperation, type Lockfile } from '@gateway/core';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { NO_CREDENTIALS, createExecutor } from '../src/execute/index.js';
import { PublicationRegistry } from '../src/publications/registry.js';
import { startRecordingUpstream } from './support/fixtures.js';

const documentText = JSON.stringify({
  openapi: '3.1.0',
  info: { title: 'No servers', version: '1' },
  paths: {
    '/widgets/{id}': {
      get: {
        operationId: 'getWidget',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'OK' } },
      },
    },
  },
});

let directory: Awaited<ReturnType<typeof temporaryDirectory>>;
let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
const agent = new Agent({ connect: { timeout: 1_000 } });

function gateway(...args: string[]) {
  return runGateway(args, { cwd: directory.path });
}

async function writeConfig(server: unknown): Promise<void> {
  const source: Record<string, unknown> = { kind: 'openapi', document: './widgets.json' };
  if (server !== undefined) source.server = server;
  await writeFile(
    join(directory.path, 'gateway.yaml'),
    // JSON is YAML: gateway.yaml can be written without a YAML library.
    JSON.stringify({
      gateway: { url: 'https://gateway.example.com' },
      sources: { widgets: source },
      trust: { keys: ['./keys/team.pub.jwk'] },
    }),
  );
}

async function readLock(): Promise<{ text: string; lock: Lockfile }> {
  const text = await readFile(join(directory.path, 'tools.lock'), 'utf8');
  return { text, lock: parseLock(text) };
}

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-server-override-');
  upstream = await startRecordingUpstream();
  await writeFile(join(directory.path, 'widgets.json'), documentText);
  const generated = await gateway('keys', 'generate', '--out', 'keys', '--name', 'team');
  expect(generated.exitCode, generated.stderr).toBe(0);
});

afterAll(async () => {
  await upstream.close();
  await agent.close();
  await directory.cleanup();
});

describe('sources.<name>.server', () => {
  it('without it, a document without servers imports as SERVER_URL_MISSING', async () => {
    await writeConfig(undefined);
    const imported = await gateway('import', 'widgets');
    expect(imported.exitCode, imported.stderr).toBe(0);
    const operation = (await readLock()).lock.sources[0]!.publications[0]!.operations[0]!;
    expect(operation.status).toBe('unsupported');
    expect(operation.reason?.code).toBe('SERVER_URL_MISSING');
  });

  it('with it, import → review → publish → verify, the URL is in the signed publication, and calls reach it', async () => {
    const staging = `${upstream.url}/staging/`;
    await writeConfig(staging);
    for (const args of [
      ['import', 'widgets'],
      ['review', 'widgets', '--all-supported'],
      ['publish', 'widgets', '--key', 'keys/team.private.jwk', '--publisher', 'tester@example.com'],
      ['verify'],
    ]) {
      const result = await gateway(...args);
      expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    }
    const { text, lock } = await readLock();
    const publication = lock.sources[0]!.publications[0]!;
    expect(publication.status).toBe('in use');
    expect((publication.operations[0] as LockedOperation).server).toBe(`${upstream.url}/staging`);

    // The server URL is covered by the signature: pointing the lock elsewhere by hand fails verification.
    const lockPath = join(directory.path, 'tools.lock');
    await writeFile(lockPath, text.replace(`${upstream.url}/staging`, `${upstream.url}/production`));
    const tampered = await gateway('verify');
    expect(tampered.exitCode).not.toBe(0);
    await writeFile(lockPath, text);

    const registry = new PublicationRegistry();
    registry.replace(lock);
    const executor = createExecutor({
      credentials: { resolve: async () => NO_CREDENTIALS },
      dispatcherFor: () => agent,
      limitsFor: () => ({ connectMs: 1_000, totalMs: 2_000, maxResponseBytes: 10_000 }),
    });
    const outcome = await executor.execute(registry.snapshot().tools.get('get_widget')!, { id: 'w1' }, { logins: new Set() });
    expect(outcome.outcome, JSON.stringify(outcome.result)).toBe('ok');
    expect(upstream.requests.at(-1)?.path).toBe('/staging/widgets/w1');
  });

  it('changing the override shows in gateway diff as a changed request (the publication must be redone)', async () => {
    await writeConfig(`${upstream.url}/other`);
    const diff = await gateway('--json', 'diff', 'widgets');
    const report = JSON.parse(diff.stdout) as { sources: Array<{ baseline: unknown; changed: Array<{ tool: string }> }> };
    expect(report.sources[0]!.baseline).not.toBeNull();
    expect(report.sources[0]!.changed.map((change) => change.tool)).toEqual(['get_widget']);
  });

  it('a URL that is not http(s) is refused by the configuration schema; an unknown variable by the import', async () => {
    await writeConfig('ftp://example.com');
    const badUrl = await gateway('import', 'widgets');
    expect(badUrl.exitCode).not.toBe(0);
    expect(badUrl.stderr).toContain('server');
    await writeConfig({ variables: { region: 'eu' } });
    const badVariable = await gateway('import', 'widgets');
    expect(badVariable.exitCode).not.toBe(0);
    expect(badVariable.stderr).toContain('SERVER_OVERRIDE_INVALID');
  });
});
