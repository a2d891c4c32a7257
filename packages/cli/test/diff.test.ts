import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { addedNote, REMOVED_NOTE, type SourceDiff } from '@gateway/core';
import { editOnce } from './publishing-workspace.js';
import { createWorkspace, type Workspace } from './workspace.js';

interface DiffOutput {
  changed: boolean;
  sources: SourceDiff[];
}

function summarise(diff: SourceDiff) {
  return {
    added: diff.added.map((operation) => operation.tool),
    removed: diff.removed.map((operation) => operation.tool),
    changed: Object.fromEntries(diff.changed.map((operation) => [operation.tool, operation.changes.map((change) => change.message)])),
  };
}

describe('gateway diff', () => {
  let workspace: Workspace;
  let petstore: string;
  /** The files each test may edit, as they were after publishing; restored after every test. */
  let originals: Record<string, string>;
  beforeAll(async () => {
    workspace = await createWorkspace();
    await workspace.copyCorpus('oas30-petstore.yaml', 'petstore.yaml');
    await workspace.copyCorpus('oas31-tictactoe.yaml', 'tictactoe.yaml');
    petstore = join(workspace.path, 'petstore.yaml');
    expect((await workspace.gateway('keys', 'generate', '--out', 'keys')).exitCode).toBe(0);
    await workspace.writeConfig({ pets: './petstore.yaml', games: './tictactoe.yaml' }, { trust: { keys: ['./keys/publisher.pub.jwk'] } });
    for (const args of [
      ['import', 'pets'],
      ['review', 'pets', '--all-supported'],
      ['publish', 'pets', '--key', 'keys/publisher.private.jwk'],
      ['import', 'games'],
    ]) {
      const result = await workspace.gateway(...args);
      expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    }
    originals = {};
    for (const name of ['petstore.yaml', 'tictactoe.yaml', 'gateway.yaml', 'tools.lock']) originals[name] = await workspace.read(name);
  });
  afterEach(async () => {
    for (const [name, text] of Object.entries(originals)) await workspace.write(name, text);
  });
  afterAll(async () => {
    await workspace.cleanup();
  });

  async function diffJson(...args: string[]): Promise<{ exitCode: number; output: DiffOutput }> {
    const result = await workspace.gateway('--json', 'diff', ...args);
    return { exitCode: result.exitCode ?? -1, output: JSON.parse(result.stdout) as DiffOutput };
  }

  it('an unchanged description exits 0 with --exit-code', async () => {
    const result = await workspace.gateway('diff', '--exit-code');
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toContain('pets: no changes (live description matches publication-1 (in use))');
    expect(result.stdout).toContain('games: no changes (live description matches publication-2 (proposed))');
    const { output } = await diffJson();
    expect(output.changed).toBe(false);
  });

  it('reports exactly the operations added, removed and changed, with the parameter change', async () => {
    // Remove createPets, add a delete operation, and turn the limit parameter into a required string.
    await editOnce(petstore, '    post:\n      summary: Create a pet\n', '    x-removed-post:\n      summary: Create a pet\n');
    await editOnce(
      petstore,
      '          required: false\n          schema:\n            type: integer\n',
      '          required: true\n          schema:\n            type: string\n',
    );
    await editOnce(
      petstore,
      '  /pets/{petId}:\n',
      '  /pets/{petId}:\n    delete:\n      operationId: deletePet\n      parameters:\n        - name: petId\n          in: path\n' +
        '          required: true\n' +
        '          schema:\n            type: string\n      responses:\n        "204":\n          description: deleted\n',
    );
    const { exitCode, output } = await diffJson('pets', '--exit-code');
    expect(exitCode).toBe(1);
    expect(output.changed).toBe(true);
    expect(output.sources.map((diff) => diff.source)).toEqual(['pets']);
    expect(summarise(output.sources[0]!)).toEqual({
      added: ['delete_pet'],
      removed: ['create_pets'],
      changed: {
        list_pets: ['query parameter limit: type integer (int32) → string (int32)', 'query parameter limit: optional → required'],
      },
    });
    // Without --exit-code the same differences are only reported, in core's words (one wording everywhere).
    const text = await workspace.gateway('diff', 'pets');
    expect(text.exitCode).toBe(0);
    const lines = text.stdout.split('\n');
    const added = { tool: 'delete_pet', method: 'DELETE', path: '/pets/{petId}', status: 'supported' } as const;
    expect(lines).toContain(`  + delete_pet  DELETE /pets/{petId}  (${addedNote(added)})`);
    expect(lines).toContain(`  - create_pets  POST /pets  (${REMOVED_NOTE})`);
    const markdown = (await workspace.gateway('diff', 'pets', '--format', 'markdown')).stdout.split('\n');
    expect(markdown).toContain('| added | `delete_pet` | `DELETE /pets/{petId}` | new in the live description |');
    expect(markdown).toContain('| removed | `create_pets` | `POST /pets` | no longer in the live description |');
  });

  it('reports a changed server on every operation that uses it', async () => {
    await editOnce(petstore, 'url: http://petstore.swagger.io/v1', 'url: https://pets.example.com/v2');
    const { exitCode, output } = await diffJson('pets', '--exit-code');
    expect(exitCode).toBe(1);
    const message = 'server http://petstore.swagger.io/v1 → https://pets.example.com/v2';
    expect(summarise(output.sources[0]!)).toEqual({
      added: [],
      removed: [],
      changed: { create_pets: [message], list_pets: [message], show_pet_by_id: [message] },
    });
  });

  it('compares a never-published source with its proposal: required and security changes', async () => {
    const tictactoe = join(workspace.path, 'tictactoe.yaml');
    await editOnce(
      tictactoe,
      '          description: Progress URL that should be called if asynchronous response is returned\n          required: false\n',
      '          description: Progress URL that should be called if asynchronous response is returned\n          required: true\n',
    );
    await editOnce(
      tictactoe,
      '        - defaultApiKey: []\n        - app2AppOauth:\n          - board:read\n',
      '        - defaultApiKey: []\n',
    );
    const { exitCode, output } = await diffJson('games', '--exit-code');
    expect(exitCode).toBe(1);
    const diff = output.sources[0]!;
    expect(diff.baseline).toMatchObject({ publication: 'publication-2', status: 'proposed' });
    const summary = summarise(diff);
    expect(summary.added).toEqual([]);
    expect(summary.removed).toEqual([]);
    expect(Object.keys(summary.changed)).toEqual(['get_board', 'put_square']);
    expect(summary.changed.put_square).toEqual(['header parameter progressUrl: optional → required']);
    expect(summary.changed.get_board).toHaveLength(1);
    expect(summary.changed.get_board![0]).toMatch(
      /^security defaultApiKey \(apiKey in header api-key\) or app2AppOauth \(oauth2\) \[board:read\] → defaultApiKey/,
    );
  });

  it('renders a Markdown table for a pull-request comment', async () => {
    await editOnce(petstore, 'url: http://petstore.swagger.io/v1', 'url: https://pets.example.com/v2');
    const result = await workspace.gateway('diff', '--format', 'markdown');
    expect(result.exitCode).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe('## Tool changes');
    expect(lines).toContain('| | tool | operation | what changed |');
    expect(lines).toContain('|---|---|---|---|');
    expect(lines).toContain(
      '| changed | `list_pets` | `GET /pets` | ' + 'server http://petstore.swagger.io/v1 → https://pets.example.com/v2 |',
    );
    expect(result.stdout).toContain('No changes versus publication-2 (proposed).');
  });

  it('lists every operation as added for a source not yet in the lock, and refuses an unknown format', async () => {
    await workspace.copyCorpus('oas30-petstore.yaml', 'more-pets.yaml');
    const config = await workspace.read('gateway.yaml');
    await workspace.write(
      'gateway.yaml',
      config.replace('sources:\n', 'sources:\n  more:\n    kind: openapi\n    document: ./more-pets.yaml\n'),
    );
    const { exitCode, output } = await diffJson('more', '--exit-code');
    expect(exitCode).toBe(1);
    expect(output.sources[0]!.baseline).toBeNull();
    expect(summarise(output.sources[0]!).added).toEqual(['create_pets', 'list_pets', 'show_pet_by_id']);

    const bad = await workspace.gateway('diff', '--format', 'html');
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('USAGE_INVALID');
  });
});
