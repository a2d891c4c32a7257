import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@gateway/core';
import { temporaryDirectory } from '../../../test-support/cli.js';
import { classifyRedirectUri, isLocalhostOnly, redirectUriMatches } from '../src/authorization/oauth/redirect-uris.js';
import { loadSigningKeys, SIGNING_KEYS_SECRET } from '../src/authorization/oauth/signing-keys.js';
import { createVault } from '@gateway/runtime';
import type { Vault } from '@gateway/runtime';

describe('redirect URI rules (OAuth 2.1 §7.5.1, RFC 8252)', () => {
  it('accepts https, loopback http and reverse-domain private-use schemes; refuses the rest', () => {
    expect(classifyRedirectUri('https://app.example.com/cb')).toEqual({ kind: 'https' });
    expect(classifyRedirectUri('http://127.0.0.1:8123/cb')).toEqual({ kind: 'loopback' });
    expect(classifyRedirectUri('http://[::1]/cb')).toEqual({ kind: 'loopback' });
    expect(classifyRedirectUri('com.example.desktop:/oauth')).toEqual({ kind: 'private-use' });
    for (const uri of [
      'http://example.com/cb',
      'javascript:alert(1)',
      'myapp:/cb',
      'https://a.example/cb#x',
      'https://user:pw@a.example/cb',
      'not a uri',
    ]) {
      expect(classifyRedirectUri(uri), uri).toHaveProperty('problem');
    }
  });

  it('matches exactly, except that a loopback redirect may use any port', () => {
    expect(redirectUriMatches('https://app.example.com/cb', 'https://app.example.com/cb')).toBe(true);
    expect(redirectUriMatches('https://app.example.com/cb', 'https://app.example.com/cb/')).toBe(false);
    expect(redirectUriMatches('https://app.example.com:443/cb', 'https://app.example.com:8443/cb')).toBe(false);
    expect(redirectUriMatches('http://127.0.0.1/cb', 'http://127.0.0.1:51234/cb')).toBe(true);
    expect(redirectUriMatches('http://127.0.0.1:3000/cb', 'http://127.0.0.1:51234/cb')).toBe(true);
    expect(redirectUriMatches('http://127.0.0.1/cb', 'http://localhost:51234/cb')).toBe(false);
    expect(redirectUriMatches('http://127.0.0.1/cb', 'http://127.0.0.1:51234/cb?x=1')).toBe(false);
  });

  it('flags clients whose redirect URIs are all on localhost', () => {
    expect(isLocalhostOnly(['http://127.0.0.1/cb', 'http://localhost:9/cb'])).toBe(true);
    expect(isLocalhostOnly(['http://127.0.0.1/cb', 'https://app.example.com/cb'])).toBe(false);
  });
});

describe('signing keys in the vault', () => {
  let directory: string;
  let cleanup: () => Promise<void>;
  let vault: Vault;

  beforeAll(async () => {
    const temporary = await temporaryDirectory('gateway-keys-');
    directory = temporary.path;
    cleanup = temporary.cleanup;
    await writeFile(join(directory, 'gateway.yaml'), 'gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n');
    vault = await createVault(await loadConfig(join(directory, 'gateway.yaml')), { env: {} });
  });
  afterAll(async () => {
    await cleanup?.();
  });

  it('the first start generates an Ed25519 key in the vault; later starts reuse it', async () => {
    const first = await loadSigningKeys(vault, { maxAgeDays: 90 });
    expect(first.current.publicJwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', kid: first.current.kid });
    expect(first.jwks().keys[0]).not.toHaveProperty('d');
    expect(await vault.get(SIGNING_KEYS_SECRET)).toContain(first.current.kid);
    const second = await loadSigningKeys(vault, { maxAgeDays: 90 });
    expect(second.current.kid).toBe(first.current.kid);
  });

  it('a key older than the maximum age is rotated and the previous one stays in the JWKS', async () => {
    const before = await loadSigningKeys(vault, { maxAgeDays: 90 });
    const later = new Date(Date.now() + 91 * 86_400_000);
    const rotated = await loadSigningKeys(vault, { maxAgeDays: 90, now: later });
    expect(rotated.current.kid).not.toBe(before.current.kid);
    expect(rotated.jwks().keys.map((key) => key.kid)).toEqual([rotated.current.kid, before.current.kid]);
    expect(rotated.byKid(before.current.kid)).toBeDefined();
    const again = await loadSigningKeys(vault, { maxAgeDays: 90, now: new Date(later.getTime() + 91 * 86_400_000) });
    expect(again.jwks().keys.map((key) => key.kid)).toEqual([again.current.kid, rotated.current.kid]);
  });

  it('a read-only vault without the entry signs with a process-lifetime key and says so', async () => {
    await writeFile(join(directory, 'env.yaml'), 'gateway:\n  url: http://127.0.0.1:8080\nsources: {}\nvault:\n  provider: env\n');
    const envVault = await createVault(await loadConfig(join(directory, 'env.yaml')), { env: {} });
    const warnings: string[] = [];
    const keys = await loadSigningKeys(envVault, { maxAgeDays: 90, warn: (message) => warnings.push(message) });
    expect(keys.current.kid).toBeTruthy();
    expect(warnings.join('\n')).toContain('cannot store one');
  });
});
