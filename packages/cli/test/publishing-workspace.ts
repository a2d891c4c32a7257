/**
 * A workspace with the bundled orders example (document copied from examples/orders-api) and a trusted
 * key pair made by the real `gateway keys generate`, for the publish, verify and diff tests.
 */
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { parseLock, type Lockfile } from '@gateway/core';
import { repositoryRoot } from '../../../test-support/cli.js';
import { createWorkspace, type Workspace } from './workspace.js';

export const ordersDocument = join(repositoryRoot, 'examples', 'orders-api', 'openapi.yaml');

export interface PublishingWorkspace extends Workspace {
  privateKey: string;
  readLock(): Promise<Lockfile>;
  /** import → review --all-supported → publish, each expected to succeed. */
  importAndPublish(source: string, ...publishArgs: string[]): Promise<void>;
}

export async function createPublishingWorkspace(): Promise<PublishingWorkspace> {
  const workspace = await createWorkspace();
  await copyFile(ordersDocument, join(workspace.path, 'orders.yaml'));
  const generated = await workspace.gateway('keys', 'generate', '--out', 'keys', '--name', 'team');
  expect(generated.exitCode, generated.stderr).toBe(0);
  await workspace.writeConfig({ orders: './orders.yaml' }, { trust: { keys: ['./keys/team.pub.jwk'] } });
  return {
    ...workspace,
    privateKey: join(workspace.path, 'keys', 'team.private.jwk'),
    async readLock() {
      return parseLock(await readFile(workspace.lockPath, 'utf8'));
    },
    async importAndPublish(source, ...publishArgs) {
      for (const args of [
        ['import', source],
        ['review', source, '--all-supported'],
        ['publish', source, '--key', 'keys/team.private.jwk', '--publisher', 'tester@example.com', ...publishArgs],
      ]) {
        const result = await workspace.gateway(...args);
        expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      }
    },
  };
}

/** Replaces exactly one occurrence of `from` in a workspace file (fails loudly when it is not there once). */
export async function editOnce(path: string, from: string, to: string): Promise<void> {
  const text = await readFile(path, 'utf8');
  const count = text.split(from).length - 1;
  expect(count, `expected exactly one ${JSON.stringify(from)} in ${path}`).toBe(1);
  await writeFile(
    path,
    text.replace(from, () => to),
  );
}
