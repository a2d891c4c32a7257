import { execa } from 'execa';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repositoryRoot = fileURLToPath(new URL('..', import.meta.url));
/** The shared corpus beside the repository, or where GATEWAY_CORPUS_DIR says (git worktrees live elsewhere). */
export const corpusDirectory = process.env.GATEWAY_CORPUS_DIR ?? join(repositoryRoot, '..', 'shared', 'corpus');
export const gatewayBinary = join(repositoryRoot, 'packages', 'cli', 'dist', 'main.js');

/** What a finished `gateway` run left behind. */
export interface GatewayRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `gateway` binary as a subprocess; never throws on a non-zero exit. */
export async function runGateway(
  args: string[],
  options: { cwd: string; input?: string; env?: Record<string, string>; timeout?: number },
): Promise<GatewayRun> {
  const result = await execa('node', [gatewayBinary, ...args], {
    cwd: options.cwd,
    reject: false,
    input: options.input ?? '',
    env: { ...options.env, NO_COLOR: '1' },
    timeout: options.timeout ?? 60_000,
  });
  // A run killed by the timeout has no exit code: report it as a failure a test can see.
  return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout ?? ''), stderr: String(result.stderr ?? '') };
}

/** A fresh temporary directory, removed by the returned cleanup. */
export async function temporaryDirectory(prefix = 'gateway-test-'): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}
