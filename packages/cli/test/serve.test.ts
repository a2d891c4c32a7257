import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SEMI_SPACE_FLAG } from '@gateway/runtime/node-flags';
import { gatewayBinary, repositoryRoot, runGateway } from '../../../test-support/cli.js';
import { createPublishingWorkspace, type PublishingWorkspace } from './publishing-workspace.js';
import { closedPort } from './workspace.js';

/** Node 22.15+ on POSIX: `gateway serve` re-executes itself with the flag instead of warning. */
const canReexec = typeof (process as { execve?: unknown }).execve === 'function';

/** Runs `gateway serve` until it prints its URL, then stops it; returns what it wrote. */
async function serveOnce(directory: string, nodeFlags: string[] = []): Promise<{ stdout: string; stderr: string }> {
  const port = await closedPort();
  const child = spawn(
    process.execPath,
    [...nodeFlags, gatewayBinary, 'serve', '--listen', `127.0.0.1:${port}`, '--url', `http://127.0.0.1:${port}`],
    {
      cwd: directory,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', GATEWAY_LOG_LEVEL: 'warn' },
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 20_000;
  // The warning is written right after the "serving" line; wait for either a settled output or the deadline.
  while (!stdout.includes('serving') && Date.now() < deadline && child.exitCode === null)
    await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setTimeout(resolve, 300));
  child.kill('SIGTERM');
  await exited;
  expect(stdout, stderr).toContain('serving http://127.0.0.1:');
  return { stdout, stderr };
}

describe('gateway serve', () => {
  let workspace: PublishingWorkspace | undefined;
  afterEach(async () => {
    await workspace?.cleanup();
    workspace = undefined;
  });

  it('listens where a loopback gateway.url with a port points when no listen address is given', async () => {
    workspace = await createPublishingWorkspace();
    await workspace.importAndPublish('orders');
    const port = await closedPort();
    const config = await workspace.read('gateway.yaml');
    await workspace.write('gateway.yaml', config.replace('url: https://gateway.example.com', `url: http://127.0.0.1:${port}`));
    const child = spawn(process.execPath, [gatewayBinary, 'serve'], { cwd: workspace.path, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let healthy = false;
      const deadline = Date.now() + 20_000;
      while (!healthy && Date.now() < deadline && child.exitCode === null) {
        healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (response) => response.ok,
          () => false,
        );
        if (!healthy) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(healthy).toBe(true);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  });

  it('reports a busy listen address with its own code and exit code, not an internal error', async () => {
    workspace = await createPublishingWorkspace();
    await workspace.importAndPublish('orders');
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const result = await runGateway(['serve', '--listen', `127.0.0.1:${port}`, '--url', `http://127.0.0.1:${port}`], {
        cwd: workspace.path,
        timeout: 20_000,
      });
      expect(result.exitCode).toBe(3);
      expect(result.stderr).toContain('LISTEN_ADDRESS_UNAVAILABLE');
      expect(result.stderr).toContain(`cannot listen on 127.0.0.1:${port}: the address is already in use (is another gateway running?)`);
      expect(result.stderr).not.toContain('INTERNAL_ERROR');
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('runs with the young generation bound: re-executed with it where Node can, else a warning naming it', async () => {
    workspace = await createPublishingWorkspace();
    await workspace.importAndPublish('orders');
    const plain = await serveOnce(workspace.path);
    if (canReexec) expect(plain.stderr).not.toContain('node runs without');
    else expect(plain.stderr).toContain(`node runs without ${SEMI_SPACE_FLAG}`);
    const withFlag = await serveOnce(workspace.path, [SEMI_SPACE_FLAG]);
    expect(withFlag.stderr).not.toContain('node runs without');
    // The README says what the installed bin does, on every Node it supports (not that it always passes the flag).
    const readme = (await readFile(join(repositoryRoot, 'README.md'), 'utf8')).replace(/\s+/g, ' ');
    expect(readme).not.toContain('the flag is the one the installed bin passes');
    expect(readme).toContain('the installed `gateway serve` adds it by itself on Node 22.15+');
    expect(readme).toContain(
      `on Node 20 it runs without it and says so in one warning at start, unless you set \`NODE_OPTIONS=${SEMI_SPACE_FLAG}\``,
    );
  });

  it('warns loudly when nobody can sign in, and not once a person exists', async () => {
    workspace = await createPublishingWorkspace();
    await workspace.importAndPublish('orders');
    const before = await serveOnce(workspace.path);
    expect(before.stderr).toContain('WARNING: nobody can sign in');
    expect(before.stderr).toContain('gateway people add');

    expect((await runGateway(['people', 'add', 'alice'], { cwd: workspace.path, input: 'a long enough password\n' })).exitCode).toBe(0);
    const after = await serveOnce(workspace.path);
    expect(after.stderr).not.toContain('nobody can sign in');
  });

  it('starts without a warning from Node or a library (a deprecated option would print one at every start)', async () => {
    workspace = await createPublishingWorkspace();
    await workspace.importAndPublish('orders');
    const { stderr } = await serveOnce(workspace.path);
    // Node writes process warnings (its own and libraries' deprecations, e.g. Fastify's FSTDEP*) as "(node:<pid>) …".
    expect(stderr).not.toMatch(/\(node:\d+\)/);
  });

  /** `gateway serve` of a published workspace with `storage.kind: postgres` whose `storage.url` names `database-url`. */
  async function serveOnPostgres(prepare: (path: string) => Promise<void> = async () => undefined) {
    workspace = await createPublishingWorkspace();
    await workspace.importAndPublish('orders');
    const config = await workspace.read('gateway.yaml');
    await workspace.write('gateway.yaml', `${config}storage:\n  kind: postgres\n  url: database-url\n`);
    await prepare(workspace.path);
    const port = await closedPort();
    const result = await runGateway(['serve', '--listen', `127.0.0.1:${port}`, '--url', `http://127.0.0.1:${port}`], {
      cwd: workspace.path,
      timeout: 20_000,
    });
    return { result, served: workspace };
  }

  it('with storage.kind postgres and no connection string in the vault, stops naming the secret, no SQLite file made', async () => {
    const { result, served } = await serveOnPostgres();
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('DATABASE_URL_MISSING');
    expect(result.stderr).toContain("'database-url'");
    // Nothing half-started: no SQLite file standing in for the database.
    await expect(served.read('.gateway/gateway.db')).rejects.toThrow(/ENOENT/);
  });

  it("with storage.kind postgres and a vault it cannot read, stops with the vault's own code, not DATABASE_URL_MISSING", async () => {
    const { result, served } = await serveOnPostgres(async (path) => {
      await mkdir(join(path, '.gateway'), { recursive: true });
      await writeFile(join(path, '.gateway', 'vault.json'), 'not a vault');
    });
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('VAULT_FILE_INVALID');
    expect(result.stderr).not.toContain('DATABASE_URL_MISSING');
    await expect(served.read('.gateway/gateway.db')).rejects.toThrow(/ENOENT/);
  });
});
