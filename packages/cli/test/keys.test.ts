import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { keyIdOf, readPrivateKeyFile, readPublicKeyFile } from '@gateway/core';
import { createWorkspace, type Workspace } from './workspace.js';

describe('gateway keys generate', () => {
  let workspace: Workspace;
  beforeEach(async () => {
    workspace = await createWorkspace();
  });
  afterEach(async () => {
    await workspace.cleanup();
  });

  it('writes an Ed25519 pair, the private file owner-only, and prints the kid and the trust entry', async () => {
    const result = await workspace.gateway('keys', 'generate', '--out', 'keys', '--name', 'alice');
    expect(result.exitCode).toBe(0);
    const privatePath = join(workspace.path, 'keys', 'alice.private.jwk');
    const publicPath = join(workspace.path, 'keys', 'alice.pub.jwk');
    expect((await stat(privatePath)).mode & 0o777).toBe(0o600);
    const privateJwk = await readPrivateKeyFile(privatePath);
    const publicJwk = await readPublicKeyFile(publicPath);
    expect(publicJwk.kid).toBe(privateJwk.kid);
    expect(publicJwk.kid).toBe(await keyIdOf(publicJwk));
    expect(await readFile(publicPath, 'utf8')).not.toContain('"d"');
    expect(result.stdout).toContain(`key id ${publicJwk.kid}`);
    expect(result.stdout).toContain('- ./keys/alice.pub.jwk');
    expect(result.stdout).not.toContain(privateJwk.d);
  });

  it('never overwrites a key silently: KEY_EXISTS (exit 7) unless --force', async () => {
    expect((await workspace.gateway('keys', 'generate', '--out', 'keys')).exitCode).toBe(0);
    const before = await workspace.read('keys/publisher.private.jwk');
    const refused = await workspace.gateway('keys', 'generate', '--out', 'keys');
    expect(refused.exitCode).toBe(7);
    expect(refused.stderr).toContain('KEY_EXISTS');
    expect(await workspace.read('keys/publisher.private.jwk')).toBe(before);

    const forced = await workspace.gateway('--json', 'keys', 'generate', '--out', 'keys', '--force');
    expect(forced.exitCode).toBe(0);
    const output = JSON.parse(forced.stdout) as { keyId: string; publicKey: string };
    expect(await workspace.read('keys/publisher.private.jwk')).not.toBe(before);
    expect((await readPublicKeyFile(output.publicKey)).kid).toBe(output.keyId);
    expect((await stat(join(workspace.path, 'keys', 'publisher.private.jwk'))).mode & 0o777).toBe(0o600);
  });
});
