/**
 * MCP servers as sources in the CLI: the real `@modelcontextprotocol/server-everything` over stdio and over
 * Streamable HTTP on loopback, imported, reviewed, published, verified and diffed by the real binary.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseLock, type LockedMcpTool, type McpLockedSource } from '@gateway/core';
import { closedPort, createWorkspace, type Workspace } from './workspace.js';

const require = createRequire(import.meta.url);
const everything = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');

async function startEverythingHttp(): Promise<{ url: string; process: ChildProcess }> {
  const port = await closedPort();
  const child = spawn(process.execPath, [everything, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server-everything did not start')), 20_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('listening')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, process: child };
}

async function writeMcpConfig(workspace: Workspace, sources: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<void> {
  await workspace.write(
    'gateway.yaml',
    stringify({ gateway: { url: 'https://gateway.example.com' }, sources, trust: { keys: ['./keys/team.pub.jwk'] }, ...extra }),
  );
}

async function mcpSource(workspace: Workspace, name: string): Promise<McpLockedSource> {
  const lock = parseLock(await readFile(workspace.lockPath, 'utf8'));
  const source = lock.sources.find((candidate) => candidate.name === name)!;
  expect(source.kind).toBe('mcp');
  return source as McpLockedSource;
}

function run(workspace: Workspace, ...args: string[]) {
  return workspace.gateway(...args).then((result) => {
    expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    return result;
  });
}

describe('MCP sources in the CLI', () => {
  let workspace: Workspace;
  let http: { url: string; process: ChildProcess };

  beforeAll(async () => {
    workspace = await createWorkspace();
    expect((await workspace.gateway('keys', 'generate', '--out', 'keys', '--name', 'team')).exitCode).toBe(0);
    http = await startEverythingHttp();
  }, 60_000);

  afterAll(async () => {
    http?.process.kill();
    await workspace?.cleanup();
  });

  it('imports, reviews, publishes, verifies and diffs server-everything over stdio', async () => {
    await writeMcpConfig(workspace, { everything: { kind: 'mcp', command: ['node', everything, 'stdio'] } });
    const imported = await run(workspace, 'import', 'everything', '--json');
    const summary = JSON.parse(imported.stdout) as { operations: number; supported: number };
    expect(summary.operations).toBeGreaterThanOrEqual(10);

    const source = await mcpSource(workspace, 'everything');
    expect(source.document).toBe(`stdio:${JSON.stringify(['node', everything, 'stdio'])}`);
    const echo = source.publications[0]!.operations.find((tool) => tool.tool === 'echo')!;
    expect(echo).toMatchObject({ name: 'echo', status: 'supported', selected: false });
    expect(echo.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);

    // The review shows the tool's schema the way it shows an operation's request shape.
    const review = await run(workspace, 'review', 'everything', '--no-interactive');
    expect(review.stdout).toMatch(/\[ \] echo {2}MCP echo {2}supported/);
    expect(review.stdout).toMatch(/message +string +required/);
    expect(review.stdout).toContain('annotations (upstream claims, not enforced)');

    await run(workspace, 'review', 'everything', '--select', 'echo', 'get-sum', 'get-tiny-image', 'get-structured-content');
    await run(workspace, 'publish', 'everything', '--key', 'keys/team.private.jwk', '--publisher', 'tester@example.com');
    const published = await mcpSource(workspace, 'everything');
    expect(published.publications.map((publication) => publication.status)).toEqual(['in use']);
    expect(published.publications[0]!.operations.map((tool: LockedMcpTool) => tool.tool)).toEqual([
      'echo',
      'get-structured-content',
      'get-sum',
      'get-tiny-image',
    ]);
    const verified = await run(workspace, 'verify');
    expect(verified.stdout).toContain('everything');

    const diff = await run(workspace, 'diff', 'everything', '--exit-code');
    expect(diff.stdout).not.toMatch(/changed/i);
  }, 120_000);

  it('imports the same server over Streamable HTTP; its colliding names get the <source>__ prefix', async () => {
    await writeMcpConfig(
      workspace,
      {
        everything: { kind: 'mcp', command: ['node', everything, 'stdio'] },
        remote: { kind: 'mcp', url: http.url },
      },
      { network: { allowPrivateNetworks: ['127.0.0.1/32'] } },
    );
    await run(workspace, 'import', 'remote');
    const remote = await mcpSource(workspace, 'remote');
    expect(remote.document).toBe(http.url);
    const names = remote.publications[0]!.operations.map((tool) => [tool.tool, tool.name]);
    expect(names).toContainEqual(['remote__echo', 'echo']);
    expect(names).toContainEqual(['remote__get-sum', 'get-sum']);
    await run(workspace, 'review', 'remote', '--select', 'remote__echo');
    await run(workspace, 'publish', 'remote', '--key', 'keys/team.private.jwk', '--publisher', 'tester@example.com');
    await run(workspace, 'verify');
  }, 120_000);

  it('refuses a loopback MCP endpoint unless network.allowPrivateNetworks lists it (the SSRF guard)', async () => {
    await writeMcpConfig(workspace, { remote: { kind: 'mcp', url: http.url } });
    const before = await workspace.read('tools.lock');
    const refused = await workspace.gateway('import', 'remote');
    expect(refused.exitCode).toBe(7);
    expect(refused.stderr).toContain('SSRF_ADDRESS_REFUSED');
    expect(await workspace.read('tools.lock')).toBe(before);
  }, 60_000);
});
