import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configSchema, loadConfig, parseConfig } from '@gateway/core';
import { STARTER_CONFIG } from '../src/starter-config.js';
import { repositoryRoot } from '../../../test-support/cli.js';
import { createWorkspace, type Workspace } from './workspace.js';

describe('gateway init', () => {
  let workspace: Workspace;
  beforeEach(async () => {
    workspace = await createWorkspace();
  });
  afterEach(async () => {
    await workspace.cleanup();
  });

  it('writes a commented starter that is itself a valid configuration', async () => {
    const result = await workspace.gateway('init');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('gateway.yaml');
    const text = await readFile(workspace.configPath, 'utf8');
    expect(text).toBe(STARTER_CONFIG);
    expect(text).toMatch(/^# /m);
    const loaded = await loadConfig(workspace.configPath);
    expect(loaded.config.gateway.url).toBe('https://gateway.example.com');
    expect(loaded.config.sources.orders).toEqual({ kind: 'openapi', document: './orders.openapi.yaml' });
    expect(loaded.config.trust?.keys).toEqual(['./keys/publisher.pub.jwk']);
  });

  it('every commented-out key in the starter is valid too once uncommented', () => {
    // Uncommenting the examples must not produce an invalid file (they teach the real key names).
    const uncommented = STARTER_CONFIG.replace(
      /^(\s*)# ( *(?:listen|allowRemoteRefs|credentials|import|maxDocumentBytes|timeoutMs|apiKeyAuth):.*)$/gm,
      '$1$2',
    );
    expect(uncommented).not.toBe(STARTER_CONFIG);
    const loaded = parseConfig(uncommented, 'gateway.yaml');
    expect(loaded.config.import?.maxDocumentBytes).toBe(26214400);
    expect(loaded.config.sources.orders?.credentials).toEqual({ apiKeyAuth: { type: 'apiKey', secret: 'orders-api-key' } });
  });

  it('refuses to overwrite an existing file without --force (exit 7), and overwrites with it', async () => {
    await workspace.write('gateway.yaml', 'mine: true\n');
    const refused = await workspace.gateway('init');
    expect(refused.exitCode).toBe(7);
    expect(refused.stderr).toMatch(/^error CONFIG_EXISTS: .*--force/m);
    expect(await workspace.read('gateway.yaml')).toBe('mine: true\n');

    const forced = await workspace.gateway('init', '--force');
    expect(forced.exitCode).toBe(0);
    expect(await workspace.read('gateway.yaml')).toBe(STARTER_CONFIG);
  });

  it('writes at the --config path and reports it with --json', async () => {
    const result = await workspace.gateway('--config', 'nested/dir/gw.yaml', '--json', 'init');
    expect(result.exitCode).toBe(0);
    const written = join(workspace.path, 'nested/dir/gw.yaml');
    expect(JSON.parse(result.stdout)).toEqual({
      written,
      overwritten: false,
      gitignore: { path: join(workspace.path, 'nested/dir/.gitignore'), added: ['*.private.jwk', '.gateway/'] },
    });
    expect(await readFile(written, 'utf8')).toBe(STARTER_CONFIG);
  });

  it('keeps private keys and local state out of git: writes a .gitignore, or adds only the missing lines to one', async () => {
    const fresh = await workspace.gateway('init');
    expect(fresh.exitCode).toBe(0);
    expect(await workspace.read('.gitignore')).toContain('*.private.jwk\n.gateway/\n');
    expect(fresh.stdout).toMatch(/never commit it/);

    await workspace.write('.gitignore', 'node_modules\n.gateway/');
    const again = await workspace.gateway('init', '--force');
    expect(again.exitCode).toBe(0);
    const text = await workspace.read('.gitignore');
    expect(text.startsWith('node_modules\n.gateway/\n')).toBe(true);
    expect(text.match(/\.gateway\//g)).toHaveLength(1);
    expect(text).toContain('*.private.jwk');
  });

  it('an argument-parser error honours --json: the same error as JSON on stdout, exit 2', async () => {
    const result = await workspace.gateway('--json', 'no-such-command');
    expect(result.exitCode).toBe(2);
    const parsed = JSON.parse(result.stdout) as { error: { code: string; category: string; message: string } };
    expect(parsed.error).toMatchObject({ code: 'USAGE_INVALID', category: 'usage' });
    expect(parsed.error.message).toContain("unknown command 'no-such-command'");
  });

  it('--help teaches with examples', async () => {
    const result = await workspace.gateway('init', '--help');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Examples:');
    expect(result.stdout).toContain('--force');
  });
});

describe('docs/gateway-config.schema.json', () => {
  it('is exactly the schema gateway.yaml is validated with (regenerate: node scripts/write-config-schema.mjs)', async () => {
    const committed = JSON.parse(await readFile(join(repositoryRoot, 'docs', 'gateway-config.schema.json'), 'utf8'));
    expect(committed).toEqual(JSON.parse(JSON.stringify(configSchema)));
  });
});
