/**
 * `gateway review --each-call`: the review choice that holds every call of a tool for a person's approval
 * (docs/approvals.md) is written into the proposal, shown, carried to the next import, signed by publish (an edit
 * of it breaks `gateway verify`), and refused when malformed.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EACH_CALL_NOTE, type LockedEntry, type Lockfile, type Publication } from '@gateway/core';
import { join } from 'node:path';
import { createPublishingWorkspace, editOnce, type PublishingWorkspace } from './publishing-workspace.js';

function entries(lock: Lockfile, which: 'proposed' | 'in use'): Map<string, LockedEntry> {
  const source = lock.sources.find((candidate) => candidate.name === 'orders')!;
  const publication = (source.publications as Publication<LockedEntry>[]).find((candidate) => candidate.status === which)!;
  return new Map(publication.operations.map((entry) => [entry.tool, entry]));
}

describe('gateway review --each-call', () => {
  let workspace: PublishingWorkspace;
  beforeEach(async () => {
    workspace = await createPublishingWorkspace();
    for (const args of [
      ['import', 'orders'],
      ['review', 'orders', '--all-supported'],
    ]) {
      const result = await workspace.gateway(...args);
      expect(result.exitCode, result.stderr).toBe(0);
    }
  });
  afterEach(async () => {
    await workspace.cleanup();
  });

  it('marks the tools, names who approves, shows it, and --any-call takes it back', async () => {
    const marked = await workspace.gateway('review', 'orders', '--each-call', 'create_*', '--approvers', '@operators', 'alice', '--json');
    expect(marked.exitCode, marked.stderr).toBe(0);
    const change = JSON.parse(marked.stdout) as { approvals: Array<{ tool: string; approval: string; approvers: string[] }> };
    expect(change.approvals).toEqual([{ tool: 'create_order', approval: 'each-call', approvers: ['@operators', 'alice'] }]);
    const proposal = entries(await workspace.readLock(), 'proposed');
    expect(proposal.get('create_order')).toMatchObject({ approval: 'each-call', approvers: ['@operators', 'alice'] });
    expect(proposal.get('get_order')!.approval).toBeUndefined();
    // The lock writes the fields right after `selected`, and only on the tool that has them.
    const text = await readFile(workspace.lockPath, 'utf8');
    expect(text.match(/approval: each-call/g)).toHaveLength(1);
    expect(text).toMatch(/selected: true\n\s+approval: each-call\n\s+approvers:\n\s+- "?@operators"?\n\s+- alice\n/);

    const listing = await workspace.gateway('review', 'orders');
    expect(listing.stdout).toMatch(/\[x\] create_order .*\n\s+approval: each call waits for an operator or alice\n/);

    const own = await workspace.gateway('review', 'orders', '--each-call', 'get_order');
    expect(own.stdout).toContain("~ get_order: each call waits for the session's own person");
    expect(entries(await workspace.readLock(), 'proposed').get('get_order')).toMatchObject({ approval: 'each-call' });
    expect(entries(await workspace.readLock(), 'proposed').get('get_order')!.approvers).toBeUndefined();

    const cleared = await workspace.gateway('review', 'orders', '--any-call', '*');
    expect(cleared.exitCode).toBe(0);
    expect(cleared.stdout).toContain('~ create_order: calls no longer wait for approval');
    expect([...entries(await workspace.readLock(), 'proposed').values()].some((entry) => entry.approval !== undefined)).toBe(false);
  });

  it('publish signs the choice: the in-use tool keeps it, a re-import carries it, and removing it breaks verify', async () => {
    expect((await workspace.gateway('review', 'orders', '--each-call', 'create_order')).exitCode).toBe(0);
    const published = await workspace.gateway('publish', 'orders', '--key', 'keys/team.private.jwk', '--publisher', 'tester@example.com');
    expect(published.exitCode, published.stderr).toBe(0);
    expect(entries(await workspace.readLock(), 'in use').get('create_order')!.approval).toBe('each-call');

    // A new import (a new proposal) carries the choice by tool name.
    const reimported = await workspace.gateway('import', 'orders');
    expect(reimported.exitCode, reimported.stderr).toBe(0);
    expect(entries(await workspace.readLock(), 'proposed').get('create_order')!.approval).toBe('each-call');
    expect((await workspace.gateway('verify')).exitCode).toBe(0);

    // `gateway diff` says of a changed or removed each-call tool that its calls wait for a person.
    await editOnce(join(workspace.path, 'orders.yaml'), '      summary: Create an order\n', '      summary: Create an order now\n');
    await editOnce(
      join(workspace.path, 'orders.yaml'),
      '      operationId: deleteOrder\n',
      '      operationId: deleteOrder\n      deprecated: true\n',
    );
    const diff = await workspace.gateway('diff', 'orders');
    expect(diff.stdout).toMatch(new RegExp(`~ create_order .*\\n(?: {6}.*\\n)* {6}${EACH_CALL_NOTE}\\n`));
    expect(diff.stdout.split(EACH_CALL_NOTE)).toHaveLength(2);

    // Someone edits the signed (in-use, listed first) publication to drop the approval: its signature no longer
    // covers what is there.
    const text = await readFile(workspace.lockPath, 'utf8');
    const line = /\n +approval: each-call(?=\n)/.exec(text)!;
    expect(text.indexOf('status: in use')).toBeLessThan(line.index);
    await writeFile(workspace.lockPath, text.slice(0, line.index) + text.slice(line.index + line[0].length));
    const verify = await workspace.gateway('verify');
    expect(verify.exitCode).toBe(6);
    expect(verify.stdout).toMatch(/LOCK_SIGNATURE_INVALID +orders\/publication-1 create_order/);
  });

  it('refuses approvers without --each-call, and a name that is neither a person nor @operators (exit 2, lock untouched)', async () => {
    const bytes = await readFile(workspace.lockPath);
    const alone = await workspace.gateway('review', 'orders', '--approvers', 'alice');
    expect(alone.exitCode).toBe(2);
    expect(alone.stderr).toMatch(/^error APPROVER_INVALID: .*--each-call/m);
    const bad = await workspace.gateway('review', 'orders', '--each-call', 'create_order', '--approvers', '-rf');
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/^error APPROVER_INVALID: '-rf' is neither a person name nor @operators/m);
    expect((await readFile(workspace.lockPath)).equals(bytes)).toBe(true);
  });
});
