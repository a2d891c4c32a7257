import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPublishingWorkspace, editOnce, type PublishingWorkspace } from './publishing-workspace.js';

describe('gateway publish', () => {
  let workspace: PublishingWorkspace;
  beforeEach(async () => {
    workspace = await createPublishingWorkspace();
  });
  afterEach(async () => {
    await workspace.cleanup();
  });

  it('freezes the selected operations into a signed in-use publication and removes the proposal', async () => {
    expect((await workspace.gateway('import', 'orders')).exitCode).toBe(0);
    expect((await workspace.gateway('review', 'orders', '--select', 'get_order', '--select', 'search_orders')).exitCode).toBe(0);
    const result = await workspace.gateway(
      '--json',
      'publish',
      'orders',
      '--key',
      'keys/team.private.jwk',
      '--publisher',
      'ada@example.com',
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const output = JSON.parse(result.stdout);
    expect(output).toMatchObject({
      source: 'orders',
      publication: 'publication-1',
      toolCount: 2,
      publishedBy: 'ada@example.com',
      retired: null,
    });
    const lock = await workspace.readLock();
    const publications = lock.sources[0]!.publications;
    expect(publications).toHaveLength(1);
    expect(publications[0]).toMatchObject({ id: 'publication-1', status: 'in use', toolCount: 2, keyId: output.keyId });
    expect(publications[0]!.operations.map((operation) => operation.tool).sort()).toEqual(['get_order', 'search_orders']);
    expect(publications[0]!.signature).toMatch(/^[A-Za-z0-9_-]+\.\.[A-Za-z0-9_-]+$/);
    expect(new Date(publications[0]!.publishedAt!).toISOString()).toBe(publications[0]!.publishedAt);
  });

  it('re-publishing after a new import gets a higher number and retires the earlier publication', async () => {
    await workspace.importAndPublish('orders');
    await editOnce(join(workspace.path, 'orders.yaml'), 'maximum: 100\n', 'maximum: 500\n');
    expect((await workspace.gateway('import', 'orders')).exitCode).toBe(0);
    // The changed operation starts unselected (its request changed); select everything again.
    expect((await workspace.gateway('review', 'orders', '--all-supported')).exitCode).toBe(0);
    const result = await workspace.gateway('publish', 'orders', '--key', 'keys/team.private.jwk');
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toContain('retired publication-1');
    const lock = await workspace.readLock();
    expect(lock.lastPublication).toBe(2);
    expect(lock.sources[0]!.publications.map((publication) => [publication.id, publication.status])).toEqual([['publication-2', 'in use']]);
    expect((await workspace.gateway('verify')).exitCode).toBe(0);
  });

  it('refuses without a proposal, with nothing selected, and without a key', async () => {
    const missing = await workspace.gateway('publish', 'orders', '--key', 'keys/team.private.jwk');
    expect(missing.stderr).toContain('PROPOSAL_NOT_FOUND');
    expect(missing.exitCode).toBe(5);

    expect((await workspace.gateway('import', 'orders')).exitCode).toBe(0);
    const before = await readFile(workspace.lockPath, 'utf8');
    const nothing = await workspace.gateway('publish', 'orders', '--key', 'keys/team.private.jwk');
    expect(nothing.exitCode).toBe(7);
    expect(nothing.stderr).toContain('PUBLISH_NOTHING_SELECTED');
    expect(await readFile(workspace.lockPath, 'utf8')).toBe(before);

    const keyless = await workspace.gateway('publish', 'orders');
    expect(keyless.exitCode).toBe(2);
    expect(keyless.stderr).toContain('KEY_REQUIRED');
  });

  it('refuses a key that trust.keys does not list (KEY_NOT_TRUSTED, exit 7)', async () => {
    expect((await workspace.gateway('keys', 'generate', '--out', 'other', '--name', 'stranger')).exitCode).toBe(0);
    expect((await workspace.gateway('import', 'orders')).exitCode).toBe(0);
    expect((await workspace.gateway('review', 'orders', '--all-supported')).exitCode).toBe(0);
    const result = await workspace.gateway('publish', 'orders', '--key', 'other/stranger.private.jwk');
    expect(result.exitCode).toBe(7);
    expect(result.stderr).toContain('KEY_NOT_TRUSTED');
    expect((await workspace.readLock()).sources[0]!.publications[0]!.status).toBe('proposed');
  });

  it('refuses a proposal the live document no longer matches, unless --allow-stale, which is recorded', async () => {
    expect((await workspace.gateway('import', 'orders')).exitCode).toBe(0);
    expect((await workspace.gateway('review', 'orders', '--all-supported')).exitCode).toBe(0);
    await editOnce(join(workspace.path, 'orders.yaml'), "          pattern: '^ord_[0-9]+$'\n", "          pattern: '^[a-z_0-9]+$'\n");
    const stale = await workspace.gateway('--json', 'publish', 'orders', '--key', 'keys/team.private.jwk');
    expect(stale.exitCode).toBe(7);
    const error = JSON.parse(stale.stdout).error;
    expect(error.code).toBe('PUBLISH_STALE');
    const findings = error.details.findings.map((finding: { kind: string; tool?: string }) =>
      `${finding.kind} ${finding.tool ?? ''}`.trim(),
    );
    expect(findings.sort()).toEqual(['document-changed', 'operation-changed delete_order', 'operation-changed get_order']);

    const allowed = await workspace.gateway('publish', 'orders', '--key', 'keys/team.private.jwk', '--allow-stale');
    expect(allowed.exitCode, allowed.stderr).toBe(0);
    expect(allowed.stdout).toContain('allowedStale: true');
    expect((await workspace.readLock()).sources[0]!.publications[0]!.allowedStale).toBe(true);
    expect(await workspace.read('tools.lock')).toContain('allowedStale: true');
    expect((await workspace.gateway('verify')).exitCode).toBe(0);
  });

  it('takes the key from GATEWAY_PUBLISH_KEY for CI and records the login name when git knows no email', async () => {
    expect((await workspace.gateway('import', 'orders')).exitCode).toBe(0);
    expect((await workspace.gateway('review', 'orders', '--all-supported')).exitCode).toBe(0);
    const { runGateway } = await import('../../../test-support/cli.js');
    const result = await runGateway(['publish', 'orders'], {
      cwd: workspace.path,
      env: {
        GATEWAY_PUBLISH_KEY: await readFile(workspace.privateKey, 'utf8'),
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_CONFIG_NOSYSTEM: '1',
        HOME: workspace.path,
        USER: 'ci-bot',
      },
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const publication = (await workspace.readLock()).sources[0]!.publications[0]!;
    expect(publication.publishedBy).toBe('ci-bot');
    expect(result.stdout + result.stderr).not.toContain('"d"');
  });
});
