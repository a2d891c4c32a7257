import { access, mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { GatewayError, writeFileAtomically } from '@gateway/core';
import { contextFrom, printResult } from '../context.js';
import { STARTER_CONFIG } from '../starter-config.js';

export function registerInit(program: Command): void {
  program
    .command('init')
    .description('write a commented starter gateway.yaml (at --config, default ./gateway.yaml)')
    .option('--force', 'overwrite an existing file')
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  gateway init                          write ./gateway.yaml\n' +
        '  gateway --config api/gateway.yaml init\n' +
        '  gateway init --force                  replace an existing gateway.yaml\n' +
        '\nThen edit sources.<name>.document to point at your OpenAPI document and run\n' +
        '`gateway import <name>`. Every key is explained in docs/config.md.',
    )
    .action(async (options: { force?: boolean }, command: Command) => {
      const context = contextFrom(command);
      const exists = await access(context.configPath).then(
        () => true,
        () => false,
      );
      if (exists && !options.force) {
        throw new GatewayError('CONFIG_EXISTS', `${context.configPath} already exists; pass --force to overwrite it`, {
          details: { path: context.configPath },
        });
      }
      await mkdir(dirname(context.configPath), { recursive: true });
      await writeFileAtomically(context.configPath, STARTER_CONFIG);
      const gitignore = await ensureGitignore(dirname(context.configPath));
      printResult(
        context,
        [
          `wrote ${context.configPath}`,
          gitignore.added.length > 0
            ? `${gitignore.existed ? 'updated' : 'wrote'} ${gitignore.path} (${gitignore.added.join(', ')} stay out of git)`
            : '',
          'next: point sources.orders.document at your OpenAPI document, then run `gateway import orders`',
          'keys: `gateway keys generate --out keys` writes keys/publisher.pub.jwk (commit it, list it under trust.keys) and',
          '      keys/publisher.private.jwk: never commit it; keep it in your password manager or CI secret store',
          '      (GATEWAY_PUBLISH_KEY in examples/ci) and pass it to `gateway publish --key`.',
        ].filter(Boolean),
        { written: context.configPath, overwritten: exists, gitignore: { path: gitignore.path, added: gitignore.added } },
      );
    });
}

/** What must never be committed beside gateway.yaml: private signing keys and the local data folder (vault, database). */
export const GITIGNORE_ENTRIES = ['*.private.jwk', '.gateway/'];

/** Adds the entries a gateway folder needs to its .gitignore (created when missing); existing lines are kept. */
async function ensureGitignore(directory: string): Promise<{ path: string; existed: boolean; added: string[] }> {
  const path = join(directory, '.gitignore');
  const current = await readFile(path, 'utf8').catch(() => undefined);
  const lines = new Set((current ?? '').split(/\r?\n/).map((line) => line.trim()));
  const added = GITIGNORE_ENTRIES.filter((entry) => !lines.has(entry));
  if (added.length > 0) {
    const prefix = current === undefined ? '' : current.endsWith('\n') || current === '' ? current : `${current}\n`;
    await writeFileAtomically(
      path,
      `${prefix}# gateway: private keys and local state (vault, database) never go to git\n${added.join('\n')}\n`,
    );
  }
  return { path, existed: current !== undefined, added };
}
