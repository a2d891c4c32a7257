import { access, mkdir } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { GatewayError, generatePublisherKeyPair, keyFileText, writeFileAtomically } from '@gateway/core';
import { contextFrom, printResult } from '../context.js';

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

export function registerKeys(program: Command): void {
  const keys = program
    .command('keys')
    .description('publisher keys that sign publications')
    .addHelpText('after', '\nExamples:\n  gateway keys generate --out keys   # then list keys/publisher.pub.jwk under trust.keys');
  keys
    .command('generate')
    .description('write a new Ed25519 key pair: <name>.private.jwk (mode 0600, keep secret) and <name>.pub.jwk')
    .requiredOption('--out <dir>', 'directory to write the two files to (created if missing)')
    .option('--name <name>', 'file name stem', 'publisher')
    .option('--force', 'overwrite existing key files')
    .addHelpText(
      'after',
      '\nThe key id (kid) is the RFC 7638 thumbprint of the public key. Trust the key by listing the\n' +
        '*.pub.jwk file under trust.keys in gateway.yaml; sign with `gateway publish <source> --key <private file>`.\n' +
        '\nExamples:\n' +
        '  gateway keys generate --out keys\n' +
        '  gateway keys generate --out ~/.config/gateway --name alice',
    )
    .action(async (options: { out: string; name: string; force?: boolean }, command: Command) => {
      const context = contextFrom(command);
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(options.name)) {
        throw new GatewayError(
          'USAGE_INVALID',
          `--name must be a plain file name stem (letters, digits, . _ -), not ${JSON.stringify(options.name)}`,
        );
      }
      const directory = resolve(options.out);
      const privatePath = join(directory, `${options.name}.private.jwk`);
      const publicPath = join(directory, `${options.name}.pub.jwk`);
      for (const path of [privatePath, publicPath]) {
        if (!options.force && (await exists(path))) {
          throw new GatewayError('KEY_EXISTS', `${path} already exists; a key is never overwritten silently (pass --force to replace it)`, {
            details: { path },
          });
        }
      }
      await mkdir(directory, { recursive: true });
      const pair = await generatePublisherKeyPair();
      // Owner-only from the first byte: the temporary file is created 0600 before it is renamed into place.
      await writeFileAtomically(privatePath, keyFileText(pair.privateJwk), 0o600);
      await writeFileAtomically(publicPath, keyFileText(pair.publicJwk));
      const trustPath = relative(resolve(context.configPath, '..'), publicPath) || publicPath;
      const trustLine = `    - ${trustPath.startsWith('.') || trustPath.startsWith('/') ? trustPath : `./${trustPath}`}`;
      printResult(
        context,
        [
          `wrote ${privatePath} (private, mode 0600: keep it secret, never commit it)`,
          `wrote ${publicPath}`,
          `key id ${pair.keyId}`,
          'trust it by adding the public file to gateway.yaml:',
          '  trust:',
          '    keys:',
          trustLine,
        ],
        { keyId: pair.keyId, privateKey: privatePath, publicKey: publicPath, trustEntry: trustLine.trim().slice(2) },
      );
    });
}
