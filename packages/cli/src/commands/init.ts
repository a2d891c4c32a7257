import { access, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
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
      printResult(
        context,
        [
          `wrote ${context.configPath}`,
          'next: point sources.orders.document at your OpenAPI document, then run `gateway import orders`',
        ],
        { written: context.configPath, overwritten: exists },
      );
    });
}
