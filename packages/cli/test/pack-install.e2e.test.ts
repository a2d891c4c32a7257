import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  let tarball: string;
  beforeAll(async () => {
    const packed = await run(process.execPath, [join(repositoryRoot, 'scripts', 'pack-cli.mjs')], {
      cwd: repositoryRoot,
      maxBuffer: 16 * 1024 * 1024,
    });
    tarball = packed.stdout.trim().split('\n').at(-1)!;
  }, 300_000);
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  it('the package has a README for people who installed it, and every relative link in it and its docs resolves inside it', async () => {
    const unpacked = await temporaryDirectory('gateway-unpacked-');
    cleanups.push(unpacked.cleanup);
    await run('tar', ['-xzf', tarball, '-C', unpacked.path]);
    const packageRoot = join(unpacked.path, 'package');
    const readme = await readFile(join(packageRoot, 'README.md'), 'utf8');
    // Not the repository's README: nothing about installing the workspace or running its example.
    expect(readme).not.toMatch(/pnpm (install|start|test)/);
    expect(readme).toContain('npm install --global --allow-scripts=better-sqlite3');
    const documents = [
      'README.md',
      ...(await readdir(join(packageRoot, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`),
    ];
    const broken: string[] = [];
    let relativeLinks = 0;
    for (const document of documents) {
      const text = await readFile(join(packageRoot, document), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^([a-z][a-z0-9+.-]*:|#)/i.test(target!)) continue;
        relativeLinks += 1;
        const file = resolve(dirname(join(packageRoot, document)), target!.split('#')[0]!);
        if (!file.startsWith(`${packageRoot}/`) || !existsSync(file)) broken.push(`${document}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
    // The README's links go to the docs shipped beside it (the ones messages name as docs/<file>.md).
    expect(readme).toContain('](docs/cli.md');
    expect(relativeLinks).toBeGreaterThan(50);
    for (const named of ['docs/cli.md', 'docs/vault.md', 'docs/server.md', 'docs/config.md', 'docs/errors.md']) {
      expect(existsSync(join(packageRoot, named)), named).toBe(true);
    }
  });

  it('pack → npm install into a temporary prefix → ' + 'gateway --version, import, review, publish, verify', {
    timeout: 600_000,
  }, async () => {
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
