import { execa, type Result } from 'execa';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repositoryRoot = fileURLToPath(new URL('..', import.meta.url));
export const corpusDirectory = join(repositoryRoot, '..', 'shared', 'corpus');
export const gatewayBinary = join(repositoryRoot, 'packages', 'cli', 'dist', 'main.js');

/** Runs the real `gateway` binary as a subprocess; never throws on a non-zero exit. */
export async function runGateway(
  args: string[],
  options: { cwd: string; input?: string; env?: Record<string, string>; timeout?: number },
): Promise<Result> {
  return execa('node', [gatewayBinary, ...args], {
    cwd: options.cwd,
    reject: false,
    input: options.input ?? '',
    env: { ...options.env, NO_COLOR: '1' },
    timeout: options.timeout ?? 60_000,
  });
}

/** A fresh temporary directory, removed by the returned cleanup. */
export async function temporaryDirectory(prefix = 'gateway-test-'): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}
