import { execFile } from 'node:child_process';
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import {
  describeNotOffered,
  GatewayError,
  importLiveSource,
  loadConfig,
  loadTrustedKeys,
  parsePrivateJwk,
  publishProposal,
  readLockFile,
  readPrivateKeyFile,
  writeLockFile,
  type PrivateKeyJwk,
} from '@gateway/core';
import { liveImportOptions } from '../live-source.js';
import { contextFrom, printResult } from '../context.js';
import { withGuardedFetcher } from '../network.js';

interface PublishOptions {
  key?: string;
  publisher?: string;
  allowStale?: boolean;
}

/** The signing key: --key, else GATEWAY_PUBLISH_KEY (the JWK itself, for CI secrets), else GATEWAY_PUBLISH_KEY_FILE. */
async function signingKey(options: PublishOptions): Promise<PrivateKeyJwk> {
  if (options.key) return readPrivateKeyFile(resolve(options.key));
  const inline = process.env.GATEWAY_PUBLISH_KEY;
  if (inline && inline.trim() !== '') return parsePrivateJwk(inline, { where: 'GATEWAY_PUBLISH_KEY' });
  const file = process.env.GATEWAY_PUBLISH_KEY_FILE;
  if (file && file.trim() !== '') return readPrivateKeyFile(resolve(file));
  throw new GatewayError(
    'KEY_REQUIRED',
    'no signing key: pass --key <file.private.jwk>, or set GATEWAY_PUBLISH_KEY (the private JWK) or GATEWAY_PUBLISH_KEY_FILE',
  );
}

/** Who publishes: --publisher, else `git config user.email`, else the login name. */
async function publisherName(options: PublishOptions, directory: string): Promise<string> {
  if (options.publisher !== undefined) {
    if (options.publisher.trim() === '') throw new GatewayError('USAGE_INVALID', '--publisher must not be empty');
    return options.publisher.trim();
  }
  try {
    const { stdout } = await promisify(execFile)('git', ['config', 'user.email'], { cwd: directory, timeout: 5000 });
    if (stdout.trim() !== '') return stdout.trim();
  } catch {
    // No git, or no user.email configured: fall back to the login name.
  }
  const fromEnvironment = process.env.USER ?? process.env.USERNAME;
  if (fromEnvironment && fromEnvironment.trim() !== '') return fromEnvironment.trim();
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

export function registerPublish(program: Command): void {
  program
    .command('publish')
    .description("sign a source's reviewed proposal and make it the publication in use")
    .argument('<source>', 'a source name from gateway.yaml')
    .option('--key <file>', 'the private JWK to sign with (or env GATEWAY_PUBLISH_KEY / GATEWAY_PUBLISH_KEY_FILE)')
    .option('--publisher <name>', 'who publishes (default: git config user.email, else the login name)')
    .option('--allow-stale', 'publish even if the live description changed since the import (recorded in the lock)')
    .addHelpText(
      'after',
      '\nThe selected operations of the proposal are frozen into the in-use publication, signed (JWS, EdDSA)\n' +
        'with a key listed under trust.keys; the publication in use before is removed (git keeps it).\n' +
        'Refused when nothing is selected, when the key is not trusted, or when the proposal no longer matches\n' +
        'the live document (re-import, or --allow-stale). docs/publishing.md explains what is signed.\n' +
        '\nExamples:\n' +
        '  gateway publish orders --key keys/publisher.private.jwk\n' +
        '  GATEWAY_PUBLISH_KEY="$(cat key.jwk)" gateway publish orders --publisher ci@example.com',
    )
    .action(async (sourceName: string, options: PublishOptions, command: Command) => {
      const context = contextFrom(command);
      const loaded = await loadConfig(context.configPath);
      const privateJwk = await signingKey(options);
      const lock = await readLockFile(context.lockPath, { missingIsEmpty: true });
      const trustedKeys = await loadTrustedKeys(loaded);
      const publisher = await publisherName(options, loaded.directory);
      const result = await withGuardedFetcher(loaded, (fetchText) =>
        publishProposal({
          lock,
          config: loaded,
          source: sourceName,
          privateJwk,
          trustedKeys,
          publisher,
          allowStale: options.allowStale === true,
          live: () => importLiveSource(loaded, sourceName, liveImportOptions(loaded, lock, sourceName, fetchText)),
        }),
      );
      await writeLockFile(context.lockPath, result.lock);
      const publication = result.publication;
      const lines = [
        `published ${sourceName} as ${publication.id} (in use, ` +
          `${publication.toolCount} tool${publication.toolCount === 1 ? '' : 's'}) in ${context.lockPath}`,
        `  signed with key ${publication.keyId} by ${publication.publishedBy} at ${publication.publishedAt}`,
      ];
      const notOffered = publication.notOffered ?? [];
      if (notOffered.length > 0) {
        lines.push(`  not offered (recorded and signed with it): ${notOffered.length}`);
        for (const entry of notOffered) lines.push(`    ${describeNotOffered(entry)}`);
      }
      if (result.retired) lines.push(`  retired ${result.retired} (removed from the lock; git history keeps it)`);
      if (result.stale.length > 0) {
        lines.push('  published although stale (--allow-stale, recorded as allowedStale: true):');
        for (const finding of result.stale) lines.push(`    ${finding.message}`);
      }
      lines.push('next: commit tools.lock; CI runs `gateway verify`');
      printResult(context, lines, {
        source: sourceName,
        publication: publication.id,
        toolCount: publication.toolCount,
        tools: publication.operations.map((operation) => operation.tool),
        notOffered,
        keyId: publication.keyId,
        publishedBy: publication.publishedBy,
        publishedAt: publication.publishedAt,
        allowedStale: publication.allowedStale === true,
        stale: result.stale,
        retired: result.retired,
      });
    });
}
