/**
 * Hostile OpenAPI documents given to the real `gateway import`: file `$ref`s that leave the document's folder
 * through symbolic links or name non-regular files, documents nested thousands deep, bytes that are not UTF-8,
 * NUL characters in names, and the temporary files a killed write leaves behind. Each is refused with a stable
 * document code (exit 4) and nothing is written; a refused file's content is never printed.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_DOCUMENT_DEPTH, STALE_TEMPORARY_MS, parseLock } from '@gateway/core';
import { runGateway } from '../../../test-support/cli.js';
import { createWorkspace, type Workspace } from './workspace.js';

/** A document (YAML) whose one operation's body schema is `schema` (YAML flow text). */
function documentWithSchema(schema: string): string {
  return `openapi: 3.1.0
info: { title: Pets, version: '1' }
servers: [{ url: 'https://api.example.com' }]
paths:
  /pets:
    post:
      operationId: addPet
      requestBody:
        content:
          application/json:
            schema: ${schema}
      responses: { '200': { description: ok } }
`;
}

const SMALL = documentWithSchema('{ type: object }');

let workspace: Workspace;
beforeEach(async () => {
  workspace = await createWorkspace();
});
afterEach(async () => {
  await workspace.cleanup();
});

async function lockExists(): Promise<boolean> {
  return stat(workspace.lockPath).then(
    () => true,
    () => false,
  );
}

/** Runs `gateway import pets`; expects exit 4 with `error <code>:` and no lock; returns all output. */
async function expectDocumentRefused(code: string, env?: Record<string, string>): Promise<string> {
  const result = env ? await runGateway(['import', 'pets'], { cwd: workspace.path, env }) : await workspace.gateway('import', 'pets');
  const line = result.stderr.split('\n').find((candidate) => candidate.startsWith('error '));
  expect(line, result.stderr).toMatch(new RegExp(`^error ${code}: `));
  expect(result.exitCode).toBe(4);
  expect(await lockExists()).toBe(false);
  return result.stdout + result.stderr;
}

describe('file $refs stay inside the document folder, by real path', () => {
  // The document lives in api/; outside.yaml sits beside that folder.
  const SECRET_MARKER = 'outside-the-folder-6f1c2d';
  beforeEach(async () => {
    await mkdir(join(workspace.path, 'api'));
    await writeFile(join(workspace.path, 'outside.yaml'), `S:\n  type: object\n  description: ${SECRET_MARKER}\n`);
    await workspace.writeConfig({ pets: './api/openapi.yaml' });
  });

  it('a symbolic link to a file outside the folder is refused, and the outside text reaches neither lock nor output', async () => {
    await symlink('../outside.yaml', join(workspace.path, 'api', 'link.yaml'));
    await workspace.write('api/openapi.yaml', documentWithSchema("{ $ref: './link.yaml#/S' }"));
    const output = await expectDocumentRefused('OPENAPI_FILE_REF_REFUSED');
    expect(output).toContain('link.yaml (a symbolic link to a file outside the folder)');
    expect(output).not.toContain(SECRET_MARKER);
  });

  it('a symbolic link to /proc/self/environ is refused without printing any environment entry', async () => {
    const marker = 'environment-value-9b7e41';
    await symlink('/proc/self/environ', join(workspace.path, 'api', 'env.yaml'));
    await workspace.write('api/openapi.yaml', documentWithSchema("{ $ref: './env.yaml#/S' }"));
    const output = await expectDocumentRefused('OPENAPI_FILE_REF_REFUSED', { GATEWAY_PROBE_MARKER: marker });
    expect(output).not.toContain(marker);
    expect(output).not.toMatch(/PATH=|HOME=/);
  });

  it('a symbolic link to a folder outside is refused for the files below it', async () => {
    await mkdir(join(workspace.path, 'elsewhere'));
    await writeFile(join(workspace.path, 'elsewhere', 's.yaml'), `S:\n  description: ${SECRET_MARKER}\n`);
    await symlink('../elsewhere', join(workspace.path, 'api', 'shared'));
    await workspace.write('api/openapi.yaml', documentWithSchema("{ $ref: './shared/s.yaml#/S' }"));
    const output = await expectDocumentRefused('OPENAPI_FILE_REF_REFUSED');
    expect(output).not.toContain(SECRET_MARKER);
  });

  it('a FIFO inside the folder is refused as not a regular file, at once (the import never blocks on it)', async () => {
    execFileSync('mkfifo', [join(workspace.path, 'api', 'pipe.yaml')]);
    await workspace.write('api/openapi.yaml', documentWithSchema("{ $ref: './pipe.yaml#/S' }"));
    const started = Date.now();
    const output = await expectDocumentRefused('OPENAPI_FILE_REF_REFUSED');
    expect(output).toContain('pipe.yaml (not a regular file)');
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('a folder named as a file is refused as not a regular file', async () => {
    await mkdir(join(workspace.path, 'api', 'schemas.yaml'));
    await workspace.write('api/openapi.yaml', documentWithSchema("{ $ref: './schemas.yaml#/S' }"));
    const output = await expectDocumentRefused('OPENAPI_FILE_REF_REFUSED');
    expect(output).toContain('schemas.yaml (not a regular file)');
  });

  it('a symbolic link that stays inside the folder is followed', async () => {
    await mkdir(join(workspace.path, 'api', 'schemas'));
    await writeFile(
      join(workspace.path, 'api', 'schemas', 'pet.yaml'),
      'S:\n  type: object\n  required: [name]\n  properties:\n    name: { type: string }\n',
    );
    await symlink('./schemas/pet.yaml', join(workspace.path, 'api', 'link.yaml'));
    await workspace.write('api/openapi.yaml', documentWithSchema("{ $ref: './link.yaml#/S' }"));
    const result = await workspace.gateway('import', 'pets');
    expect(result.exitCode, result.stderr).toBe(0);
    const operation = parseLock(await readFile(workspace.lockPath, 'utf8')).sources[0]!.publications[0]!.operations[0]!;
    expect(JSON.stringify(operation.inputSchema)).toContain('"required":["name"]');
  });
});

describe(`documents nest at most ${MAX_DOCUMENT_DEPTH} levels`, () => {
  beforeEach(async () => {
    await workspace.writeConfig({ pets: './openapi.json' });
  });

  function deepSchema(levels: number): string {
    let schema = '{"type":"string"}';
    for (let level = 0; level < levels; level += 1) schema = `{"type":"object","properties":{"a":${schema}}}`;
    return schema;
  }

  /** A JSON document whose top level holds `x-deep`: `levels` nested arrays (the document itself is depth 1). */
  function withNestedArrays(levels: number): string {
    return `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{},"x-deep":${'['.repeat(levels)}${']'.repeat(levels)}}`;
  }

  it('a 10,000-deep JSON schema is OPENAPI_TOO_DEEP (exit 4), not an internal error', async () => {
    const text =
      `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/x":{"post":` +
      `{"requestBody":{"content":{"application/json":{"schema":${deepSchema(10_000)}}}},"responses":{"200":{"description":"ok"}}}}}}`;
    await workspace.write('openapi.json', text);
    const output = await expectDocumentRefused('OPENAPI_TOO_DEEP');
    expect(output).toContain(`limit of ${MAX_DOCUMENT_DEPTH} levels`);
  });

  it('a 10,000-deep YAML flow collection is OPENAPI_TOO_DEEP (exit 4)', async () => {
    await workspace.writeConfig({ pets: './openapi.yaml' });
    await workspace.write(
      'openapi.yaml',
      `openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\nx-deep: ${'['.repeat(10_000)}x${']'.repeat(10_000)}\n`,
    );
    await expectDocumentRefused('OPENAPI_TOO_DEEP');
  });

  it('a 10,000-deep YAML block sequence is OPENAPI_TOO_DEEP (exit 4)', async () => {
    await workspace.writeConfig({ pets: './openapi.yaml' });
    await workspace.write(
      'openapi.yaml',
      `openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\nx-deep:\n  ${'- '.repeat(10_000)}x\n`,
    );
    await expectDocumentRefused('OPENAPI_TOO_DEEP');
  });

  it(`exactly ${MAX_DOCUMENT_DEPTH} levels are accepted, one more is refused`, async () => {
    await workspace.write('openapi.json', withNestedArrays(MAX_DOCUMENT_DEPTH - 1));
    const accepted = await workspace.gateway('import', 'pets');
    expect(accepted.exitCode, accepted.stderr).toBe(0);
    const lockBytes = await readFile(workspace.lockPath);
    await workspace.write('openapi.json', withNestedArrays(MAX_DOCUMENT_DEPTH));
    const refused = await workspace.gateway('import', 'pets');
    expect(refused.stderr).toMatch(/^error OPENAPI_TOO_DEEP: /m);
    expect(refused.exitCode).toBe(4);
    expect((await readFile(workspace.lockPath)).equals(lockBytes)).toBe(true);
  });

  it('a chain of 10,000 schemas referencing each other is OPENAPI_TOO_DEEP (exit 4), not an internal error', async () => {
    const schemas: Record<string, unknown> = {};
    for (let index = 0; index < 10_000; index += 1) {
      schemas[`S${index}`] = { type: 'object', properties: { next: { $ref: `#/components/schemas/S${index + 1}` } } };
    }
    schemas.S10000 = { type: 'string' };
    const document = {
      openapi: '3.1.0',
      info: { title: 't', version: '1' },
      paths: {
        '/x': {
          post: {
            requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/S0' } } } },
            responses: { '200': { description: 'ok' } },
          },
        },
      },
      components: { schemas },
    };
    await workspace.write('openapi.json', JSON.stringify(document));
    await expectDocumentRefused('OPENAPI_TOO_DEEP');
  });

  it('a multi-file document whose `properties` $ref points back at its own schema is refused, not an endless import', async () => {
    await workspace.writeConfig({ pets: './openapi.yaml' });
    await workspace.write('s.yaml', "A:\n  type: object\n  properties:\n    $ref: '#/A'\n");
    await workspace.write('openapi.yaml', documentWithSchema("{ $ref: './s.yaml#/A' }"));
    const started = Date.now();
    await expectDocumentRefused('OPENAPI_TOO_DEEP');
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('a referenced file nested too deep is refused too', async () => {
    await workspace.write('deep.json', `{"S":${deepSchema(200)}}`);
    await workspace.write(
      'openapi.json',
      JSON.stringify({
        openapi: '3.1.0',
        info: { title: 't', version: '1' },
        paths: {
          '/x': {
            post: {
              requestBody: { content: { 'application/json': { schema: { $ref: './deep.json#/S' } } } },
              responses: { '200': { description: 'ok' } },
            },
          },
        },
      }),
    );
    await expectDocumentRefused('OPENAPI_TOO_DEEP');
  });
});

describe('documents must be UTF-8', () => {
  const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1');

  it('a Latin-1 document (é as byte 0xE9) is OPENAPI_NOT_UTF8, not silently turned into U+FFFD', async () => {
    await workspace.writeConfig({ pets: './openapi.yaml' });
    await writeFile(join(workspace.path, 'openapi.yaml'), latin1(SMALL.replace('title: Pets', 'title: Pétstore')));
    const output = await expectDocumentRefused('OPENAPI_NOT_UTF8');
    expect(output).not.toContain('\uFFFD');
  });

  it('a stray 0xFF byte in a property name is OPENAPI_NOT_UTF8', async () => {
    await workspace.writeConfig({ pets: './openapi.yaml' });
    const text = Buffer.concat([
      Buffer.from(documentWithSchema('{ type: object, properties: { na')),
      Buffer.from([0xff]),
      Buffer.from('me: { type: string } } }'),
    ]);
    await writeFile(join(workspace.path, 'openapi.yaml'), text);
    await expectDocumentRefused('OPENAPI_NOT_UTF8');
  });

  it('a referenced file that is not UTF-8 is OPENAPI_NOT_UTF8', async () => {
    await workspace.writeConfig({ pets: './openapi.yaml' });
    await writeFile(join(workspace.path, 'schemas.yaml'), latin1('S:\n  type: object\n  description: café\n'));
    await workspace.write('openapi.yaml', documentWithSchema("{ $ref: './schemas.yaml#/S' }"));
    await expectDocumentRefused('OPENAPI_NOT_UTF8');
  });

  it('a URL document that is not UTF-8 is OPENAPI_NOT_UTF8', async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/yaml' }).end(latin1(SMALL.replace('title: Pets', 'title: Pétstore')));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      await workspace.writeConfig(
        { pets: `http://127.0.0.1:${port}/openapi.yaml` },
        { network: { allowPrivateNetworks: ['127.0.0.1/32'] } },
      );
      await expectDocumentRefused('OPENAPI_NOT_UTF8');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('UTF-8 with a byte order mark and non-ASCII names is still accepted', async () => {
    await workspace.writeConfig({ pets: './openapi.yaml' });
    await writeFile(join(workspace.path, 'openapi.yaml'), `\uFEFF${SMALL.replace('title: Pets', 'title: Pétstore ✓')}`);
    const result = await workspace.gateway('import', 'pets');
    expect(result.exitCode, result.stderr).toBe(0);
  });
});

describe('names must not contain NUL', () => {
  beforeEach(async () => {
    await workspace.writeConfig({ pets: './openapi.json' });
  });

  function document(path: string, operation: Record<string, unknown>): string {
    return JSON.stringify({
      openapi: '3.1.0',
      info: { title: 't', version: '1' },
      servers: [{ url: 'https://api.example.com' }],
      paths: { [path]: { post: { responses: { '200': { description: 'ok' } }, ...operation } } },
    });
  }

  const cases: Array<[string, string, string]> = [
    ['operationId', document('/pets', { operationId: 'add\u0000Pet' }), '/paths/~1pets/post/operationId'],
    [
      'parameter name',
      document('/pets', { parameters: [{ name: 'lim\u0000it', in: 'query', schema: { type: 'string' } }] }),
      '/paths/~1pets/post/parameters/0/name',
    ],
    ['path', document('/pets\u0000/admin', {}), '/paths'],
    [
      'schema property name',
      document('/pets', {
        requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { 'na\u0000me': { type: 'string' } } } } } },
      }),
      '/paths/~1pets/post/requestBody/content/application~1json/schema/properties',
    ],
  ];
  it.each(cases)('a NUL in a %s is OPENAPI_NAME_INVALID (exit 4), naming where', async (_what, text, pointer) => {
    expect(text).toContain('\\u0000');
    await workspace.write('openapi.json', text);
    const output = await expectDocumentRefused('OPENAPI_NAME_INVALID');
    expect(output).toContain(`at ${pointer} contains a NUL character`);
  });

  it('a NUL written as the YAML escape "\\0" in an operationId is refused too', async () => {
    await workspace.writeConfig({ pets: './openapi.yaml' });
    await workspace.write('openapi.yaml', SMALL.replace('operationId: addPet', 'operationId: "add\\0Pet"'));
    await expectDocumentRefused('OPENAPI_NAME_INVALID');
  });
});

describe('temporary files a killed write left behind', () => {
  it('the next write of the lock removes stale .tools.lock.<hex>.tmp files, and only those', async () => {
    await workspace.writeConfig({ pets: './openapi.yaml' });
    await workspace.write('openapi.yaml', SMALL);
    // What a SIGKILL between writing and renaming leaves: a full copy of the lock under the temporary name.
    const stale = ['.tools.lock.0123456789ab.tmp', '.tools.lock.fedcba987654.tmp'];
    const kept = [
      '.tools.lock.a1b2c3d4e5f6.tmp', // as young as a concurrent writer's: left alone
      '.tools.lock.notes.tmp', // not the pattern
      '.gateway.yaml.0123456789ab.tmp', // another file's
    ];
    const old = new Date(Date.now() - STALE_TEMPORARY_MS - 60_000);
    for (const name of [...stale, ...kept]) await workspace.write(name, 'lockVersion: 1\n');
    for (const name of [...stale, ...kept.slice(1)]) await utimes(join(workspace.path, name), old, old);

    const result = await workspace.gateway('import', 'pets');
    expect(result.exitCode, result.stderr).toBe(0);
    const left = (await readdir(workspace.path)).filter((name) => name.endsWith('.tmp')).sort();
    expect(left).toEqual([...kept].sort());
  });
});
