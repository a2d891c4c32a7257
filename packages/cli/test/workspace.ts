/**
 * A throwaway gateway workspace for CLI tests: a temp directory with a gateway.yaml, documents copied from
 * the corpus (never edited in place), and helpers to run the real binary in it.
 */
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { corpusDirectory, runGateway, temporaryDirectory } from '../../../test-support/cli.js';

export interface Workspace {
  path: string;
  configPath: string;
  lockPath: string;
  /** Copies a corpus document into the workspace under `as` (default: its own name). */
  copyCorpus(name: string, as?: string): Promise<string>;
  /** Writes gateway.yaml with these sources (name → document) and extra top-level keys. */
  writeConfig(sources: Record<string, string>, extra?: Record<string, unknown>): Promise<void>;
  write(name: string, text: string): Promise<void>;
  read(name: string): Promise<string>;
  gateway(...args: string[]): ReturnType<typeof runGateway>;
  cleanup(): Promise<void>;
}

export async function createWorkspace(): Promise<Workspace> {
  const directory = await temporaryDirectory('gateway-cli-');
  const path = directory.path;
  return {
    path,
    configPath: join(path, 'gateway.yaml'),
    lockPath: join(path, 'tools.lock'),
    async copyCorpus(name, as = name) {
      await copyFile(join(corpusDirectory, name), join(path, as));
      return `./${as}`;
    },
    async writeConfig(sources, extra = {}) {
      const config = {
        gateway: { url: 'https://gateway.example.com' },
        sources: Object.fromEntries(Object.entries(sources).map(([name, document]) => [name, { kind: 'openapi', document }])),
        ...extra,
      };
      await writeFile(join(path, 'gateway.yaml'), stringify(config));
    },
    async write(name, text) {
      await writeFile(join(path, name), text);
    },
    async read(name) {
      return readFile(join(path, name), 'utf8');
    },
    gateway: (...args) => runGateway(args, { cwd: path }),
    cleanup: directory.cleanup,
  };
}

export async function readCorpus(name: string): Promise<string> {
  return readFile(join(corpusDirectory, name), 'utf8');
}

/** A loopback port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
