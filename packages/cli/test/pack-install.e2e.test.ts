import { execFile } from 'node:child_process';
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { repositoryRoot, temporaryDirectory } from '../../../test-support/cli.js';
import { VERSION } from '../src/program.js';

const run = promisify(execFile);

/**
 * The CLI as a user outside this repository gets it: `pnpm pack:cli` makes one tarball (workspace packages
 * bundled, third-party ones as pinned dependencies), npm installs it into an empty prefix, and the installed
 * `gateway` runs the whole publishing path in a folder that knows nothing of this repository.
 */
describe('the CLI installs from a tarball on a fresh machine', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  it('pack → npm install into a temporary prefix → ' + 'gateway --version, import, review, publish, verify', {
    timeout: 600_000,
  }, async () => {
    const packed = await run(process.execPath, [join(repositoryRoot, 'scripts', 'pack-cli.mjs')], {
      cwd: repositoryRoot,
      maxBuffer: 16 * 1024 * 1024,
    });
    const tarball = packed.stdout.trim().split('\n').at(-1)!;
    expect(tarball).toMatch(/governed-tool-gateway-\d+\.\d+\.\d+\.tgz$/);

    const prefix = await temporaryDirectory('gateway-prefix-');
    cleanups.push(prefix.cleanup);
    // Exactly the documented install command (scripts need not run for these commands: better-sqlite3 is only
    // needed by `serve`, which the docs install with --allow-scripts).
    await run('npm', ['install', '--global', '--prefix', prefix.path, '--prefer-offline', '--no-audit', '--no-fund', tarball], {
      cwd: prefix.path,
      maxBuffer: 16 * 1024 * 1024,
      timeout: 540_000,
    });
    const gateway = join(prefix.path, 'bin', 'gateway');

    const project = await temporaryDirectory('gateway-outside-');
    cleanups.push(project.cleanup);
    const cli = async (...args: string[]) => {
      // No workspace on PATH or NODE_PATH: only what the tarball installed.
      const result = await run(gateway, args, {
        cwd: project.path,
        env: { PATH: process.env.PATH ?? '', HOME: project.path, NO_COLOR: '1' },
      });
      return result.stdout;
    };
    expect((await cli('--version')).trim()).toBe(VERSION);

    await copyFile(join(repositoryRoot, 'examples', 'orders-api', 'openapi.yaml'), join(project.path, 'orders.yaml'));
    await cli('keys', 'generate', '--out', 'keys');
    await writeFile(
      join(project.path, 'gateway.yaml'),
      [
        'gateway:',
        '  url: https://gateway.example.com',
        'sources:',
        '  orders:',
        '    kind: openapi',
        '    document: ./orders.yaml',
        'trust:',
        '  keys: [./keys/publisher.pub.jwk]',
        '',
      ].join('\n'),
    );
    await cli('import', 'orders');
    await cli('review', 'orders', '--all-supported');
    await cli('publish', 'orders', '--key', 'keys/publisher.private.jwk', '--publisher', 'outside@example.com');
    const verified = JSON.parse(await cli('verify', '--json')) as { ok: boolean; sources: Array<{ name: string; inUse: string | null }> };
    expect(verified.ok).toBe(true);
    expect(verified.sources).toEqual([expect.objectContaining({ name: 'orders', inUse: expect.stringMatching(/^publication-\d+$/) })]);
  });
});
