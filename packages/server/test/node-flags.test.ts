/**
 * Every way the project starts a serving process bounds V8's young generation with the one flag of
 * src/node-flags.ts: the `gateway` bin's shebang (source and build), and `serve --workers` (its workers get the
 * flag even when the primary was started without it; the cluster test checks the running workers). An operator's
 * own choice of a semi-space size wins wherever it was made.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../../test-support/cli.js';
import { SEMI_SPACE_FLAG, SEMI_SPACE_MB, choosesSemiSpace, servingExecArgv } from '../src/node-flags.js';

/** What `env -S` runs for a `#!/usr/bin/env -S …` line: the words after `-S`. */
function shebangCommand(firstLine: string): string[] {
  const match = /^#!\/usr\/bin\/env -S (.+)$/.exec(firstLine);
  return match ? match[1]!.trim().split(/\s+/) : [];
}

describe('the Node flags of a serving process', () => {
  it('the gateway bin runs node with SEMI_SPACE_FLAG, in the source and in the build', async () => {
    for (const file of ['packages/cli/src/main.ts', 'packages/cli/dist/main.js']) {
      const firstLine = (await readFile(join(repositoryRoot, file), 'utf8')).split('\n')[0]!;
      expect(shebangCommand(firstLine), file).toEqual(['node', SEMI_SPACE_FLAG]);
    }
    expect(SEMI_SPACE_FLAG).toBe(`--max-semi-space-size=${SEMI_SPACE_MB}`);
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
