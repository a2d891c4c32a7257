import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseLock, type Lockfile, type OpenApiLockedSource, type Publication } from '@gateway/core';
import { gatewayBinary } from '../../../test-support/cli.js';
import { createWorkspace, type Workspace } from './workspace.js';

function proposalOf(lock: Lockfile, sourceName: string): Publication {
  const source = (lock.sources as OpenApiLockedSource[]).find((candidate) => candidate.name === sourceName)!;
  return source.publications.find((publication) => publication.status === 'proposed')!;
}

function selectedTools(proposal: Publication): string[] {
  return proposal.operations
    .filter((operation) => operation.selected)
    .map((operation) => operation.tool)
    .sort();
}

describe('gateway review', () => {
  let workspace: Workspace;
  let readProposal: () => Promise<Publication>;
  beforeEach(async () => {
    workspace = await createWorkspace();
    await workspace.writeConfig({
      pets: await workspace.copyCorpus('oas30-petstore.yaml', 'petstore.yaml'),
      uploads: await workspace.copyCorpus('oas30-readme-file-uploads.json'),
    });
    expect((await workspace.gateway('import', 'pets')).exitCode).toBe(0);
    readProposal = async () => proposalOf(parseLock(await readFile(workspace.lockPath, 'utf8')), 'pets');
  });
  afterEach(async () => {
    await workspace.cleanup();
  });

  it('shows every operation with method, path, tool name, status and its arguments, without waiting for input', async () => {
    const result = await workspace.gateway('review', 'pets');
    expect(result.exitCode).toBe(0);
    const proposal = await readProposal();
    for (const operation of proposal.operations) {
      expect(result.stdout).toContain(`${operation.tool}  ${operation.method} ${operation.path}`);
    }
    expect(result.stdout).toMatch(/publication-1 \(proposed\), 3 operations/);
    // Arguments: name, type, required or not, and where each goes in the request.
    expect(result.stdout).toMatch(/limit\s+integer \(int32\)\s+optional\s+query/);
    expect(result.stdout).toMatch(/petId\s+string\s+required\s+path/);
    expect(result.stdout).toMatch(/body\s+\S.*required\s+body \(application\/json\)/);
    // The body schema is unfolded: Pet's properties appear under the body argument.
    expect(result.stdout).toMatch(/\n\s+name\s+string\s+required/);
    expect(result.stdout).toMatch(/\n\s+tag\s+string\s+optional/);
  });

  it('--json gives the whole proposed publication', async () => {
    const result = await workspace.gateway('review', 'pets', '--json');
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(await readProposal());
  });

  it('--select with globs selects matching tools and writes the lock; --deselect removes them', async () => {
    const proposal = await readProposal();
    const supported = proposal.operations.filter((operation) => operation.status === 'supported').map((operation) => operation.tool);
    expect(supported.length).toBeGreaterThan(1);
    const [first] = supported.sort();
    const pattern = `${first!.slice(0, 3)}*`;
    const expected = supported.filter((tool) => tool.startsWith(first!.slice(0, 3))).sort();

    const result = await workspace.gateway('review', 'pets', '--select', pattern, '--json');
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      source: 'pets',
      publication: 'publication-1',
      selected: expected,
      deselected: [],
      approvals: [],
      toolCount: expected.length,
    });
    const after = await readProposal();
    expect(selectedTools(after)).toEqual(expected);
    expect(after.toolCount).toBe(expected.length);

    const deselect = await workspace.gateway('review', 'pets', '--deselect', first!);
    expect(deselect.exitCode).toBe(0);
    expect(deselect.stdout).toContain(`- ${first}`);
    expect(selectedTools(await readProposal())).toEqual(expected.filter((tool) => tool !== first));
  });

  it('--all-supported selects every supported operation; repeating it changes nothing', async () => {
    const result = await workspace.gateway('review', 'pets', '--all-supported');
    expect(result.exitCode).toBe(0);
    const proposal = await readProposal();
    const supported = proposal.operations.filter((operation) => operation.status === 'supported').map((operation) => operation.tool);
    expect(selectedTools(proposal)).toEqual(supported.sort());
    const bytes = await readFile(workspace.lockPath);
    const again = await workspace.gateway('review', 'pets', '--all-supported');
    expect(again.stdout).toContain('no change');
    expect((await readFile(workspace.lockPath)).equals(bytes)).toBe(true);
  });

  it('selecting an unsupported operation fails with its reason (exit 7) and leaves the lock untouched', async () => {
    expect((await workspace.gateway('import', 'uploads')).exitCode).toBe(0);
    const lock = parseLock(await readFile(workspace.lockPath, 'utf8'));
    const unsupported = proposalOf(lock, 'uploads').operations.find((operation) => operation.status === 'unsupported');
    expect(unsupported, 'the uploads document has an unsupported operation').toBeDefined();
    const bytes = await readFile(workspace.lockPath);
    const result = await workspace.gateway('review', 'uploads', '--select', unsupported!.tool);
    expect(result.exitCode).toBe(7);
    expect(result.stderr).toMatch(/^error SELECTION_UNSUPPORTED: /m);
    expect(result.stderr).toContain(unsupported!.tool);
    expect(result.stderr).toContain(unsupported!.reason!.code);
    expect(result.stderr).toContain(unsupported!.reason!.message);
    expect((await readFile(workspace.lockPath)).equals(bytes)).toBe(true);

    const listing = await workspace.gateway('review', 'uploads');
    expect(listing.stdout).toContain(`[-] ${unsupported!.tool}`);
    expect(listing.stdout).toContain(`unsupported ${unsupported!.reason!.code}`);
  });

  it('a pattern that matches no tool name fails with exit 2', async () => {
    const result = await workspace.gateway('review', 'pets', '--select', 'no_such_*');
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/^error SELECTION_NO_MATCH: .*no_such_\*/m);
  });

  it('a source without a proposal fails with exit 5', async () => {
    const result = await workspace.gateway('review', 'uploads');
    expect(result.exitCode).toBe(5);
    expect(result.stderr).toMatch(/^error PROPOSAL_NOT_FOUND: .*gateway import uploads/m);
  });

  it('--help teaches with examples', async () => {
    const result = await workspace.gateway('review', '--help');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Examples:');
    expect(result.stdout).toContain('--all-supported');
    expect(result.stdout).toContain('--select <patterns...>');
  });

  // `script` (util-linux) gives the binary a real pseudo-terminal, so the checklist is exercised as a person
  // would: space toggles the first choice, enter saves.
  it.skipIf(!existsSync('/usr/bin/script'))('in a terminal, the checklist saves what the person ticks', async () => {
    const before = await readProposal();
    const first = before.operations.find((operation) => operation.status === 'supported')!;
    const command = `node ${JSON.stringify(gatewayBinary)} review pets`;
    const child = execa('script', ['-qfec', command, '/dev/null'], {
      cwd: workspace.path,
      reject: false,
      env: { TERM: 'xterm', NO_COLOR: '1' },
      timeout: 30_000,
    });
    let output = '';
    const prompted = new Promise<void>((resolve) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('space toggles')) resolve();
      });
    });
    await prompted;
    child.stdin!.write(' ');
    await new Promise((resolve) => setTimeout(resolve, 200));
    child.stdin!.write('\r');
    const result = await child;
    expect(result.exitCode, output).toBe(0);
    expect(output).toContain(`+ ${first.tool}`);
    expect(selectedTools(await readProposal())).toEqual([first.tool]);
  });
});
