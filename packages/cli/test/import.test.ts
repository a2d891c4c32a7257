import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  UNSUPPORTED_REASON_CODES,
  applyImport,
  emptyLock,
  importOpenApi,
  parseLock,
  serialiseLock,
  sha256Digest,
  type ImportSummary,
  type Lockfile,
  type OpenApiLockedSource,
} from '@gateway/core';
import { corpusDirectory } from '../../../test-support/cli.js';
import { closedPort, createWorkspace, readCorpus, type Workspace } from './workspace.js';

function proposalOf(lock: Lockfile, sourceName: string) {
  // These tests import OpenAPI documents only.
  const source = (lock.sources as OpenApiLockedSource[]).find((candidate) => candidate.name === sourceName);
  return source?.publications.find((publication) => publication.status === 'proposed');
}

async function readLock(workspace: Workspace): Promise<Lockfile> {
  return parseLock(await readFile(workspace.lockPath, 'utf8'));
}

describe('gateway import', () => {
  let workspace: Workspace;
  beforeEach(async () => {
    workspace = await createWorkspace();
  });
  afterEach(async () => {
    await workspace.cleanup();
  });

  it('imports the petstore into a schema-valid lock as a proposal and prints a correct summary', async () => {
    await workspace.writeConfig({ pets: await workspace.copyCorpus('oas30-petstore.yaml', 'petstore.yaml') });
    const result = await workspace.gateway('import', 'pets', '--json');
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    const summary = JSON.parse(result.stdout) as ImportSummary;

    const lock = await readLock(workspace); // parseLock validates against the lockfile schema
    const source = lock.sources[0]!;
    expect(source).toMatchObject({ name: 'pets', kind: 'openapi', document: './petstore.yaml' });
    expect(source.documentDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const proposal = proposalOf(lock, 'pets')!;
    expect(proposal).toMatchObject({ id: 'publication-1', status: 'proposed', toolCount: 0 });
    expect(lock.lastPublication).toBe(1);
    const tools = proposal.operations.map((operation) => operation.tool).sort();
    expect(proposal.operations.map((operation) => `${operation.method} ${operation.path}`).sort()).toEqual([
      'GET /pets',
      'GET /pets/{petId}',
      'POST /pets',
    ]);
    expect(proposal.operations.every((operation) => operation.selected === false)).toBe(true);

    const supported = proposal.operations.filter((operation) => operation.status === 'supported').length;
    expect(summary).toEqual({
      source: 'pets',
      publication: 'publication-1',
      documentDigest: source.documentDigest,
      operations: 3,
      supported,
      unsupported: 3 - supported,
      unsupportedByReason: summary.unsupportedByReason,
      selected: 0,
      versusInUse: { publication: null, added: tools, changed: [], removed: [] },
    });
    expect(Object.values(summary.unsupportedByReason).reduce((sum, count) => sum + count, 0)).toBe(summary.unsupported);
  });

  it('prints a human summary naming the publication and the next step', async () => {
    await workspace.writeConfig({ pets: await workspace.copyCorpus('oas30-petstore.yaml', 'petstore.yaml') });
    const result = await workspace.gateway('import', 'pets');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('into publication-1 (proposed)');
    expect(result.stdout).toMatch(/operations\s+3/);
    expect(result.stdout).toContain('no publication in use yet');
    expect(result.stdout).toContain('next: gateway review pets');
  });

  it('a second import of the same document leaves a byte-identical lock', async () => {
    await workspace.writeConfig({ pets: await workspace.copyCorpus('oas30-petstore.yaml', 'petstore.yaml') });
    expect((await workspace.gateway('import', 'pets')).exitCode).toBe(0);
    const first = await readFile(workspace.lockPath);
    expect((await workspace.gateway('import', 'pets')).exitCode).toBe(0);
    expect((await readFile(workspace.lockPath)).equals(first)).toBe(true);
  });

  it('imports an OpenAPI 3.2 document with a QUERY operation', async () => {
    await workspace.writeConfig({ flights: await workspace.copyCorpus('oas32-query-example.yaml') });
    const result = await workspace.gateway('import', 'flights', '--json');
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    const proposal = proposalOf(await readLock(workspace), 'flights')!;
    expect(proposal.operations.some((operation) => operation.method === 'QUERY')).toBe(true);
    expect(JSON.parse(result.stdout).operations).toBe(proposal.operations.length);
  });

  it('numbers proposals of different sources globally', async () => {
    await workspace.writeConfig({
      pets: await workspace.copyCorpus('oas30-petstore.yaml', 'petstore.yaml'),
      flights: await workspace.copyCorpus('oas32-query-example.yaml'),
    });
    expect((await workspace.gateway('import', 'pets')).exitCode).toBe(0);
    expect((await workspace.gateway('import', 'flights')).exitCode).toBe(0);
    const lock = await readLock(workspace);
    expect(proposalOf(lock, 'pets')!.id).toBe('publication-1');
    expect(proposalOf(lock, 'flights')!.id).toBe('publication-2');
    expect(lock.lastPublication).toBe(2);
  });

  it('carries forward the selection of unchanged operations on re-import, and not of a changed one', async () => {
    const original = await readCorpus('oas30-petstore.yaml');
    await workspace.write('petstore.yaml', original);
    await workspace.writeConfig({ pets: './petstore.yaml' });
    expect((await workspace.gateway('import', 'pets')).exitCode).toBe(0);
    const selected = await workspace.gateway('review', 'pets', '--all-supported');
    expect(selected.exitCode).toBe(0);
    const before = proposalOf(await readLock(workspace), 'pets')!;
    const selectedBefore = before.operations.filter((operation) => operation.selected).map((operation) => operation.tool);
    const showPet = before.operations.find((operation) => operation.path === '/pets/{petId}')!;
    expect(selectedBefore).toContain(showPet.tool);

    // Change the request of GET /pets/{petId}: its path parameter becomes an integer.
    const modified = original.replace(
      /(- name: petId\s+in: path\s+required: true\s+description: [^\n]*\n\s+schema:\n\s+type: )string/,
      '$1integer',
    );
    expect(modified).not.toBe(original);
    await workspace.write('petstore.yaml', modified);
    const result = await workspace.gateway('import', 'pets', '--json');
    expect(result.exitCode).toBe(0);
    const after = proposalOf(await readLock(workspace), 'pets')!;
    expect(after.id).toBe(before.id);
    const changed = after.operations.find((operation) => operation.tool === showPet.tool)!;
    expect(changed.fingerprint).not.toBe(showPet.fingerprint);
    expect(changed.selected).toBe(false);
    expect(
      after.operations
        .filter((operation) => operation.selected)
        .map((operation) => operation.tool)
        .sort(),
    ).toEqual(selectedBefore.filter((tool) => tool !== showPet.tool).sort());
    expect(after.toolCount).toBe(selectedBefore.length - 1);
  });

  it('carries forward from the publication in use and reports added, changed and removed versus it', async () => {
    const original = await readCorpus('oas30-petstore.yaml');
    await workspace.write('petstore.yaml', original);
    await workspace.writeConfig({ pets: './petstore.yaml' });
    expect((await workspace.gateway('import', 'pets')).exitCode).toBe(0);
    expect((await workspace.gateway('review', 'pets', '--all-supported')).exitCode).toBe(0);
    // Stand in for `gateway publish` (its own issue): the proposal becomes in use with its selected operations.
    const lock = await readLock(workspace);
    const proposal = proposalOf(lock, 'pets')!;
    proposal.status = 'in use';
    proposal.operations = proposal.operations.filter((operation) => operation.selected);
    await workspace.write('tools.lock', serialiseLock(lock));
    const published = new Map(proposal.operations.map((operation) => [`${operation.path} ${operation.method}`, operation.tool]));

    // Remove POST /pets, change GET /pets/{petId}, add DELETE /pets/{petId}.
    const modified = original
      .replace(/\n {4}post:\n[\s\S]*?(?=\n {2}\/pets\/\{petId\}:)/, '')
      .replace(/(- name: petId\s+in: path\s+required: true\s+description: [^\n]*\n\s+schema:\n\s+type: )string/, '$1integer')
      .replace(
        /\ncomponents:/,
        '\n    delete:\n      operationId: deletePet\n      responses:\n        "204":\n          description: deleted\ncomponents:',
      );
    await workspace.write('petstore.yaml', modified);
    const result = await workspace.gateway('import', 'pets', '--json');
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    const summary = JSON.parse(result.stdout) as ImportSummary;
    expect(summary.publication).toBe('publication-2');
    expect(summary.versusInUse.publication).toBe('publication-1');
    expect(summary.versusInUse.removed).toEqual(published.has('/pets POST') ? [published.get('/pets POST')] : []);
    expect(summary.versusInUse.changed).toEqual(published.has('/pets/{petId} GET') ? [published.get('/pets/{petId} GET')] : []);
    expect(summary.versusInUse.added).toContain('delete_pet');
    const next = await readLock(workspace);
    const newProposal = proposalOf(next, 'pets')!;
    const listPets = newProposal.operations.find((operation) => operation.path === '/pets' && operation.method === 'GET')!;
    expect(listPets.selected).toBe(listPets.status === 'supported');
    expect(newProposal.operations.find((operation) => operation.tool === 'delete_pet')!.selected).toBe(false);
    expect(newProposal.operations.find((operation) => operation.path === '/pets/{petId}' && operation.method === 'GET')!.selected).toBe(
      false,
    );
    // The publication in use is untouched beside the new proposal.
    expect(next.sources[0]!.publications.map((publication) => [publication.id, publication.status])).toEqual([
      ['publication-1', 'in use'],
      ['publication-2', 'proposed'],
    ]);
  });
});

describe('gateway import: bad input leaves the lock untouched', () => {
  let workspace: Workspace;
  let lockBytes: Buffer;
  beforeEach(async () => {
    workspace = await createWorkspace();
    await workspace.writeConfig({ pets: await workspace.copyCorpus('oas30-petstore.yaml', 'petstore.yaml') });
    expect((await workspace.gateway('import', 'pets')).exitCode).toBe(0);
    lockBytes = await readFile(workspace.lockPath);
  });
  afterEach(async () => {
    await workspace.cleanup();
  });

  /** Runs the command; asserts the exit code, the `error CODE:` line on stderr, and the lock's bytes unchanged. */
  async function expectRefused(args: string[], exitCode: number, code: string): Promise<string> {
    const result = await workspace.gateway(...args);
    expect(result.exitCode, result.stderr).toBe(exitCode);
    const line = result.stderr.split('\n').find((candidate) => candidate.startsWith('error '));
    expect(line, result.stderr).toBeDefined();
    expect(line).toMatch(new RegExp(`^error ${code}: `));
    expect((await readFile(workspace.lockPath)).equals(lockBytes)).toBe(true);
    return line!;
  }

  it('malformed YAML: exit 4', async () => {
    await workspace.write('petstore.yaml', 'openapi: 3.0.0\ninfo: [unclosed\npaths: {}\n');
    await expectRefused(['import', 'pets'], 4, 'OPENAPI_PARSE_ERROR');
  });

  it('invalid OpenAPI (no info.version, a path without a leading slash): exit 4', async () => {
    await workspace.write('petstore.yaml', 'openapi: 3.0.3\ninfo:\n  title: broken\npaths:\n  pets:\n    get:\n      responses: {}\n');
    await expectRefused(['import', 'pets'], 4, 'OPENAPI_INVALID');
  });

  it('Swagger 2.0: exit 4, naming the version', async () => {
    await workspace.writeConfig({ pets: await workspace.copyCorpus('swagger20-petstore.json') });
    const line = await expectRefused(['import', 'pets'], 4, 'OPENAPI_UNSUPPORTED_VERSION');
    expect(line).toContain('2.0');
  });

  it('an unknown OpenAPI version: exit 4, naming the version', async () => {
    await workspace.write('petstore.yaml', 'openapi: 4.0.0\ninfo:\n  title: future\n  version: "1"\npaths: {}\n');
    const line = await expectRefused(['import', 'pets'], 4, 'OPENAPI_UNSUPPORTED_VERSION');
    expect(line).toContain('4.0.0');
  });

  it('a missing file: exit 4, naming the file', async () => {
    await workspace.writeConfig({ pets: './nowhere.yaml' });
    const line = await expectRefused(['import', 'pets'], 4, 'OPENAPI_NOT_FOUND');
    expect(line).toContain('nowhere.yaml');
  });

  it('an unreachable URL: exit 8', async () => {
    const port = await closedPort();
    // Loopback is allowed here so that the guard lets the connection be tried (and fail).
    await workspace.writeConfig({ pets: `http://127.0.0.1:${port}/x.yaml` }, { network: { allowPrivateNetworks: ['127.0.0.1/32'] } });
    await expectRefused(['import', 'pets'], 8, 'OPENAPI_UNREACHABLE');
  });

  it('a YAML alias bomb: exit 4, quickly', async () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let level = 1; level < 9; level += 1) {
      const previous = String.fromCharCode(96 + level);
      const name = String.fromCharCode(97 + level);
      levels.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(',')}]`);
    }
    await workspace.write(
      'petstore.yaml',
      `openapi: 3.0.0\ninfo: {title: bomb, version: "1"}\npaths: {}\nx-bomb:\n  ${levels.join('\n  ')}\n`,
    );
    const started = Date.now();
    await expectRefused(['import', 'pets'], 4, 'OPENAPI_ALIAS_LIMIT');
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('a document over import.maxDocumentBytes: exit 4', async () => {
    await workspace.writeConfig({ pets: './petstore.yaml' }, { import: { maxDocumentBytes: 1000 } });
    await expectRefused(['import', 'pets'], 4, 'OPENAPI_TOO_LARGE');
  });

  it('an invalid gateway.yaml: exit 3, naming the key and the line', async () => {
    await workspace.write(
      'gateway.yaml',
      'gateway:\n  url: https://gateway.example.com\nsources:\n  pets:\n    kind: graphql\n    document: ./petstore.yaml\n',
    );
    const line = await expectRefused(['import', 'pets'], 3, 'CONFIG_INVALID');
    expect(line).toContain('sources.pets.kind');
    expect(line).toContain('gateway.yaml:5');
  });

  it('an unknown source name: exit 2, listing the known ones', async () => {
    const line = await expectRefused(['import', 'orders'], 2, 'SOURCE_UNKNOWN');
    expect(line).toContain('pets');
  });

  it('a broken existing lock is reported and never overwritten: exit 5', async () => {
    await workspace.write('tools.lock', 'lockVersion: 1\nlastPublication: oops\n');
    lockBytes = await readFile(workspace.lockPath);
    await expectRefused(['import', 'pets'], 5, 'LOCK_SCHEMA_INVALID');
  });

  it('--json also prints the error as JSON on stdout', async () => {
    const result = await workspace.gateway('import', 'orders', '--json');
    expect(result.exitCode).toBe(2);
    expect(JSON.parse(result.stdout).error).toMatchObject({ code: 'SOURCE_UNKNOWN', category: 'usage' });
  });
});

describe('gateway import from a URL', () => {
  it('imports a document served over HTTP on loopback, recording the URL as written', async () => {
    const workspace = await createWorkspace();
    const text = await readCorpus('oas30-petstore.yaml');
    const server = createServer((request, response) => {
      if (request.url === '/petstore.yaml') {
        response.writeHead(200, { 'content-type': 'application/yaml' });
        response.end(text);
      } else {
        response.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const url = `http://127.0.0.1:${port}/petstore.yaml`;
      const loopbackAllowed = { network: { allowPrivateNetworks: ['127.0.0.1/32'] } };
      await workspace.writeConfig({ pets: url }, loopbackAllowed);
      const result = await workspace.gateway('import', 'pets', '--json');
      expect(result.stderr).toBe('');
      expect(result.exitCode).toBe(0);
      expect(JSON.parse(result.stdout).operations).toBe(3);
      const lock = await readLock(workspace);
      expect(lock.sources[0]!.document).toBe(url);
      expect(lock.sources[0]!.documentDigest).toBe(sha256Digest(text));

      // A 404 means the document cannot be fetched: the lock stays as it was.
      const bytes = await readFile(workspace.lockPath);
      await workspace.writeConfig({ pets: `http://127.0.0.1:${port}/missing.yaml` }, loopbackAllowed);
      const missing = await workspace.gateway('import', 'pets');
      expect(missing.exitCode).toBe(8);
      expect(missing.stderr).toMatch(/^error OPENAPI_UNREACHABLE: .*HTTP 404/m);
      expect((await readFile(workspace.lockPath)).equals(bytes)).toBe(true);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await workspace.cleanup();
    }
  });
});

describe('every corpus document', () => {
  // In-process, with the same steps `gateway import` takes (importOpenApi → applyImport → serialiseLock), so the
  // whole corpus runs in seconds rather than one subprocess per document.
  const documents = readdirSync(corpusDirectory)
    .filter((name) => /\.(ya?ml|json)$/.test(name) && !name.startsWith('swagger20-'))
    .sort()
    .concat(['oas30-digitalocean-multifile/DigitalOcean-public.v2.yaml']);

  it.each(documents)(
    '%s: imports into a schema-valid lock, every operation supported or with a reason, a second import byte-identical',
    async (name) => {
      const options = { baseDirectory: corpusDirectory };
      const first = applyImport(emptyLock(), 'corpus', `./${name}`, await importOpenApi(name, options)).lock;
      const text = serialiseLock(first);
      const lock = parseLock(text); // schema-valid
      const operations = lock.sources[0]!.publications[0]!.operations;
      for (const operation of operations) {
        if (operation.status === 'supported') expect(operation.reason).toBeNull();
        else expect(UNSUPPORTED_REASON_CODES).toContain(operation.reason?.code);
      }
      const second = applyImport(first, 'corpus', `./${name}`, await importOpenApi(name, options)).lock;
      expect(serialiseLock(second)).toBe(text);
    },
    120_000,
  );
});
