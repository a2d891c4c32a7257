import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nestingDepth, parseLock } from '@gateway/core';
import { createWorkspace, type Workspace } from './workspace.js';

/** A request body schema 100 levels deep (arrays of arrays…), as real generated documents can have. */
function hundredLevelDocument(): string {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let level = 1; level < 100; level += 1) schema = { type: 'array', items: schema };
  return JSON.stringify({
    openapi: '3.1.0',
    info: { title: 'Deep', version: '1' },
    servers: [{ url: 'https://api.example.com' }],
    paths: {
      '/deep': {
        post: {
          operationId: 'sendDeep',
          requestBody: { required: true, content: { 'application/json': { schema } } },
          responses: { '200': { description: 'OK' } },
        },
      },
    },
  });
}

describe('a lock the gateway writes is one it can read', () => {
  let workspace: Workspace;
  beforeAll(async () => {
    workspace = await createWorkspace();
    await workspace.write('deep.json', hundredLevelDocument());
    const generated = await workspace.gateway('keys', 'generate', '--out', 'keys', '--name', 'team');
    expect(generated.exitCode, generated.stderr).toBe(0);
    await workspace.writeConfig({ deep: './deep.json' }, { trust: { keys: ['./keys/team.pub.jwk'] } });
  });
  afterAll(async () => {
    await workspace?.cleanup();
  });

  it('a 100-level schema goes through import, review, publish and verify, and the lock reads back', async () => {
    for (const args of [
      ['import', 'deep'],
      ['review', 'deep', '--all-supported'],
      ['publish', 'deep', '--key', 'keys/team.private.jwk', '--publisher', 'tester@example.com'],
      ['verify'],
    ]) {
      const result = await workspace.gateway(...args);
      expect(result.exitCode, `${args.join(' ')}: ${result.stdout}${result.stderr}`).toBe(0);
    }
    const lock = parseLock(await workspace.read('tools.lock'));
    const operation = lock.sources[0]!.publications.find((publication) => publication.status === 'in use')!.operations[0]!;
    expect(operation.status).toBe('supported');
    // inputSchema (1) → properties (2) → body (3) … 100 levels of body schema.
    expect(nestingDepth(operation.inputSchema)).toBe(102);
  });
});
