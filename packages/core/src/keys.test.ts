import { describe, expect, it } from 'vitest';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GatewayError,
  generatePublisherKeyPair,
  keyFileText,
  keyIdOf,
  parsePrivateJwk,
  parsePublicJwk,
  publicJwkOf,
  readPrivateKeyFile,
  readPublicKeyFile,
} from './index.js';

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return (error as GatewayError).code;
  }
  throw new Error('expected a GatewayError');
}

describe('publisher keys', () => {
  it('generates an Ed25519 pair whose kid is the RFC 7638 thumbprint', async () => {
    const pair = await generatePublisherKeyPair();
    expect(pair.privateJwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(pair.publicJwk).not.toHaveProperty('d');
    expect(pair.keyId).toBe(await keyIdOf({ kty: 'OKP', crv: 'Ed25519', x: pair.publicJwk.x }));
    expect(pair.keyId).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(pair.privateJwk.kid).toBe(pair.keyId);
    expect(await publicJwkOf(pair.privateJwk)).toEqual(pair.publicJwk);
  });

  it('matches the thumbprint example of RFC 8037 Appendix A.3', async () => {
    // RFC 8037 A.3: the thumbprint of the A.2 public key.
    const kid = await keyIdOf({ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' });
    expect(kid).toBe('kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k');
  });

  it('reads back the files it writes', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'keys-test-'));
    const pair = await generatePublisherKeyPair();
    await writeFile(join(directory, 'p.private.jwk'), keyFileText(pair.privateJwk));
    await writeFile(join(directory, 'p.pub.jwk'), keyFileText(pair.publicJwk));
    expect(await readPrivateKeyFile(join(directory, 'p.private.jwk'))).toEqual(pair.privateJwk);
    expect(await readPublicKeyFile(join(directory, 'p.pub.jwk'))).toEqual(pair.publicJwk);
    // A missing trust.keys file is a configuration error; a missing signing key a usage error (own codes, own exits).
    expect(await codeOf(readPublicKeyFile(join(directory, 'missing.jwk')))).toBe('TRUST_KEY_UNREADABLE');
    expect(await codeOf(readPrivateKeyFile(join(directory, 'missing.jwk')))).toBe('KEY_UNREADABLE');
  });

  it('refuses a private key where a public one is trusted, and a public one where a private one signs', async () => {
    const pair = await generatePublisherKeyPair();
    expect(await codeOf(parsePublicJwk(JSON.stringify(pair.privateJwk), { where: 'trust' }))).toBe('KEY_PRIVATE_PART_PRESENT');
    expect(await codeOf(parsePrivateJwk(JSON.stringify(pair.publicJwk), { where: 'key' }))).toBe('KEY_NOT_PRIVATE');
  });

  it('refuses text that is not an Ed25519 JWK, and a kid that is not the thumbprint, without echoing key material', async () => {
    const pair = await generatePublisherKeyPair();
    expect(await codeOf(parsePublicJwk('not json', { where: 'k' }))).toBe('TRUST_KEY_INVALID');
    expect(await codeOf(parsePublicJwk('[]', { where: 'k' }))).toBe('TRUST_KEY_INVALID');
    expect(await codeOf(parsePublicJwk(JSON.stringify({ kty: 'EC', crv: 'P-256', x: 'a', y: 'b' }), { where: 'k' }))).toBe(
      'TRUST_KEY_INVALID',
    );
    expect(await codeOf(parsePublicJwk(JSON.stringify({ ...pair.publicJwk, kid: 'chosen-by-attacker' }), { where: 'k' }))).toBe(
      'TRUST_KEY_INVALID',
    );
    expect(await codeOf(parsePrivateJwk('not json', { where: 'k' }))).toBe('KEY_INVALID');
    try {
      await parsePrivateJwk(JSON.stringify({ ...pair.privateJwk, kid: 'x' }), { where: 'k' });
    } catch (error) {
      expect((error as Error).message).not.toContain(pair.privateJwk.d);
    }
  });
});
