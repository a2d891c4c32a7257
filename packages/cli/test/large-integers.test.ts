import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inUsePublication, parseLock, type LockedOperation } from '@gateway/core';
import { editOnce } from './publishing-workspace.js';
import { createWorkspace, type Workspace } from './workspace.js';

/**
 * OAS 3.0 (YAML): bounds beyond 2^53 on query parameters, one through the boolean `exclusiveMaximum` that the
 * importer rewrites into the 2020-12 form. 18014398509481983 becomes 18014398509481984 as a double, and
 * -9223372036854775808 prints as -9223372036854776000 through Number.prototype.toString.
 */
const yamlDocument = `openapi: 3.0.3
info: { title: Big, version: '1' }
servers: [{ url: 'https://api.example.com' }]
paths:
  /ledger:
    get:
      operationId: listLedger
      parameters:
        - name: after
          in: query
          schema: { type: integer, format: int64, minimum: -9223372036854775808, maximum: 18014398509481983 }
        - name: before
          in: query
          schema: { type: integer, maximum: 9223372036854775807, exclusiveMaximum: true }
      responses: { '200': { description: OK } }
`;

/** OAS 3.1 (JSON), whose bound is read by the JSON path of the parser. */
const jsonDocument = JSON.stringify({
  openapi: '3.1.0',
  info: { title: 'Big JSON', version: '1' },
  servers: [{ url: 'https://api.example.com' }],
  paths: {
    '/ids': {
      get: {
        operationId: 'listIds',
        parameters: [{ name: 'id', in: 'query', schema: { type: 'integer', maximum: 12345 } }],
        responses: { '200': { description: 'OK' } },
      },
    },
  },
}).replace('12345', '18014398509481983');

function properties(operation: LockedOperation): Record<string, Record<string, unknown>> {
  return (operation.inputSchema as { properties: Record<string, Record<string, unknown>> }).properties;
}

describe('integer bounds beyond 2^53 stay exact in tools.lock', () => {
  let workspace: Workspace;
  beforeAll(async () => {
    workspace = await createWorkspace();
    await workspace.write('big.yaml', yamlDocument);
    await workspace.write('big.json', jsonDocument);
    const generated = await workspace.gateway('keys', 'generate', '--out', 'keys', '--name', 'team');
    expect(generated.exitCode, generated.stderr).toBe(0);
    await workspace.writeConfig({ big: './big.yaml', bigjson: './big.json' }, { trust: { keys: ['./keys/team.pub.jwk'] } });
    for (const args of [
      ['import', 'big'],
      ['import', 'bigjson'],
      ['review', 'big', '--all-supported'],
      ['review', 'bigjson', '--all-supported'],
      ['publish', 'big', '--key', 'keys/team.private.jwk', '--publisher', 'tester@example.com'],
      ['publish', 'bigjson', '--key', 'keys/team.private.jwk', '--publisher', 'tester@example.com'],
    ]) {
      const result = await workspace.gateway(...args);
      expect(result.exitCode, `${args.join(' ')}: ${result.stdout}${result.stderr}`).toBe(0);
    }
  });
  afterAll(async () => {
    await workspace?.cleanup();
  });

  it('the lock text holds the exact digits of the document, also after the 3.0 exclusiveMaximum rewrite', async () => {
    const text = await workspace.read('tools.lock');
    expect(text).toContain('minimum: -9223372036854775808');
    expect(text).toContain('maximum: 18014398509481983');
    expect(text).toContain('exclusiveMaximum: 9223372036854775807');
    expect(text).not.toContain('18014398509481984');
    expect(text).not.toContain('9223372036854776000');
  });

  it('the lock reads back with the exact values (BigInts), from YAML and JSON documents alike', async () => {
    const lock = parseLock(await workspace.read('tools.lock'));
    const big = inUsePublication(lock.sources.find((source) => source.name === 'big')!)!.operations[0] as LockedOperation;
    expect(properties(big).after).toMatchObject({ minimum: -9223372036854775808n, maximum: 18014398509481983n });
    expect(properties(big).before).toMatchObject({ exclusiveMaximum: 9223372036854775807n });
    expect(properties(big).before).not.toHaveProperty('maximum');
    const json = inUsePublication(lock.sources.find((source) => source.name === 'bigjson')!)!.operations[0] as LockedOperation;
    expect(properties(json).id!.maximum).toBe(18014398509481983n);
  });

  it('the published lock verifies, and changing an exact digit breaks the signature', async () => {
    const verified = await workspace.gateway('verify');
    expect(verified.exitCode, `${verified.stdout}${verified.stderr}`).toBe(0);
    // 9223372036854775806 and …807 are the same double: a signature over doubles would not see this edit.
    expect(Number('9223372036854775806')).toBe(Number('9223372036854775807'));
    const original = await workspace.read('tools.lock');
    await editOnce(workspace.lockPath, 'exclusiveMaximum: 9223372036854775807', 'exclusiveMaximum: 9223372036854775806');
    const tampered = await workspace.gateway('verify');
    expect(tampered.exitCode).not.toBe(0);
    expect(`${tampered.stdout}${tampered.stderr}`).toMatch(/big/);
    await workspace.write('tools.lock', original);
    const again = await workspace.gateway('verify');
    expect(again.exitCode, `${again.stdout}${again.stderr}`).toBe(0);
  });

  it('re-importing the unchanged document leaves the lock byte-identical', async () => {
    // The first import after publishing proposes a publication; importing again must not change a byte.
    const first = await workspace.gateway('import', 'big');
    expect(first.exitCode, `${first.stdout}${first.stderr}`).toBe(0);
    const before = await workspace.read('tools.lock');
    expect(before.split('maximum: 18014398509481983').length - 1).toBe(3);
    const result = await workspace.gateway('import', 'big');
    expect(result.exitCode, `${result.stdout}${result.stderr}`).toBe(0);
    expect(await workspace.read('tools.lock')).toBe(before);
  });

  it('review prints the exact digits, in text and in --json', async () => {
    expect((await workspace.gateway('import', 'big')).exitCode).toBe(0);
    const json = await workspace.gateway('--json', 'review', 'big');
    expect(json.exitCode, json.stderr).toBe(0);
    expect(json.stdout).toContain('"maximum": 18014398509481983');
    expect(json.stdout).toContain('"minimum": -9223372036854775808');
    const text = await workspace.gateway('review', 'big', '--no-interactive');
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toContain('list_ledger');
  });
});
