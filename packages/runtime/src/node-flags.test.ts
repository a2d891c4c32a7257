/**
 * Every way the project starts a serving process bounds V8's young generation with the one flag of
 * node-flags.ts: `gateway serve` re-executes itself with it where Node can (process.execve), and
 * `serve --workers` gives it to its workers even when the primary was started without it (the cluster test
 * checks the running workers). The bin stays a plain `#!/usr/bin/env node`, which every `env` runs. An
 * operator's own choice of a semi-space size wins wherever it was made.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../../test-support/cli.js';
import { SEMI_SPACE_FLAG, SEMI_SPACE_MB, choosesSemiSpace, serveReexecArguments, servingExecArgv } from './node-flags.js';

describe('the Node flags of a serving process', () => {
  it('the gateway bin starts with a plain `#!/usr/bin/env node` (BusyBox env has no -S), in the source and in the build', async () => {
    for (const file of ['packages/cli/src/main.ts', 'packages/cli/dist/main.js']) {
      const firstLine = (await readFile(join(repositoryRoot, file), 'utf8')).split('\n')[0]!;
      expect(firstLine, file).toBe('#!/usr/bin/env node');
    }
    expect(SEMI_SPACE_FLAG).toBe(`--max-semi-space-size=${SEMI_SPACE_MB}`);
  });

  it('`gateway serve` re-executes itself with the flag before anything else, where process.execve exists', async () => {
    const argv = ['/usr/bin/node', '/usr/lib/gateway/main.js', 'serve', '--config', 'gateway.yaml'];
    expect(serveReexecArguments(argv, ['--enable-source-maps'], undefined, true)).toEqual([
      '/usr/bin/node',
      SEMI_SPACE_FLAG,
      '--enable-source-maps',
      '/usr/lib/gateway/main.js',
      'serve',
      '--config',
      'gateway.yaml',
    ]);
    // Not without process.execve (Node 20, Windows: serve warns instead), not for other commands, never twice.
    expect(serveReexecArguments(argv, [], undefined, false)).toBeUndefined();
    expect(serveReexecArguments(['/usr/bin/node', '/usr/lib/gateway/main.js', 'publish'], [], undefined, true)).toBeUndefined();
    expect(serveReexecArguments(argv, [SEMI_SPACE_FLAG], undefined, true)).toBeUndefined();
    expect(serveReexecArguments(argv, [], '--max-semi-space-size=8', true)).toBeUndefined();
    // The CLI's entry point does it first thing, before the commands load.
    const main = await readFile(join(repositoryRoot, 'packages/cli/src/main.ts'), 'utf8');
    const reexecAt = main.indexOf('execve!(process.execPath, reexec, process.env)');
    expect(reexecAt).toBeGreaterThan(0);
    expect(main.indexOf("await import('./program.js')")).toBeGreaterThan(reexecAt);
  });

  it("the repository's own ways of running the CLI pass the same flag: `pnpm gateway` and the README's alias", async () => {
    const scripts = JSON.parse(await readFile(join(repositoryRoot, 'package.json'), 'utf8')).scripts as Record<string, string>;
    expect(scripts.gateway).toBe(`node ${SEMI_SPACE_FLAG} packages/cli/dist/main.js`);
    const readme = await readFile(join(repositoryRoot, 'README.md'), 'utf8');
    expect(readme).toContain(`alias gateway="node ${SEMI_SPACE_FLAG} $PWD/packages/cli/dist/main.js"`);
  });

  it('servingExecArgv adds the flag to the Node flags a worker inherits', () => {
    expect(servingExecArgv([])).toEqual([SEMI_SPACE_FLAG]);
    expect(servingExecArgv(['--enable-source-maps'])).toEqual([SEMI_SPACE_FLAG, '--enable-source-maps']);
  });

  it("an operator's own semi-space size wins: on the command line in any spelling, or in NODE_OPTIONS", () => {
    for (const chosen of [['--max-semi-space-size=8'], ['--max_semi_space_size=8'], ['--max-semi-space-size', '8']]) {
      expect(choosesSemiSpace(chosen), chosen.join(' ')).toBe(true);
      expect(servingExecArgv(chosen)).toEqual(chosen);
    }
    expect(choosesSemiSpace([], '--enable-source-maps --max-semi-space-size=8')).toBe(true);
    expect(servingExecArgv(['--enable-source-maps'], '--max-semi-space-size=8')).toEqual(['--enable-source-maps']);
    // A different flag that merely starts alike is not a choice of the semi-space size.
    expect(choosesSemiSpace(['--max-semi-space-size-x=8'], '--min-semi-space-size=1')).toBe(false);
  });
});
