import { describe, expect, it } from 'vitest';
import { lockedOperation } from '../test/fixtures.js';
import {
  checkPublicationSignature,
  generatePublisherKeyPair,
  publicationSigningPayload,
  signPublication,
  type LockedOperation,
  type Publication,
  type TrustedKey,
} from './index.js';

const operation = lockedOperation;

const source = { name: 'orders', kind: 'openapi' as const, document: './openapi.yaml' };

function publication(): Publication {
  return {
    id: 'publication-1',
    status: 'in use',
    toolCount: 2,
    documentDigest: `sha256:${'a'.repeat(64)}`,
    publishedBy: 'someone@example.com',
    publishedAt: '2026-01-01T00:00:00.000Z',
    operations: [operation('list_orders', 'GET', '/orders'), operation('get_order', 'GET', '/orders/{orderId}')],
  };
}

async function signed() {
  const pair = await generatePublisherKeyPair();
  const trusted: TrustedKey[] = [{ keyId: pair.keyId, publicJwk: pair.publicJwk, path: 'demo.pub.jwk' }];
  const result = await signPublication(source, publication(), pair.privateJwk);
  return { pair, trusted, result };
}

describe('publication signatures', () => {
  it('is a detached-payload compact JWS with alg EdDSA, the key thumbprint as kid and an explicit typ', async () => {
    const { pair, result } = await signed();
    const [header, payload, signature] = result.signature!.split('.');
    expect(payload).toBe('');
    expect(signature).toMatch(/^[A-Za-z0-9_-]{86}$/); // 64 bytes of Ed25519 signature
    const decoded = JSON.parse(Buffer.from(header!, 'base64url').toString('utf8'));
    expect(decoded).toMatchObject({ alg: 'EdDSA', kid: pair.keyId, typ: 'gateway-publication+jws' });
    expect(result.keyId).toBe(pair.keyId);
  });

  it('signs the canonical publication without its signature, bound to the source', async () => {
    const { result } = await signed();
    const payload = JSON.parse(publicationSigningPayload(source, result));
    expect(payload.source).toEqual(source);
    expect(payload.publication).not.toHaveProperty('signature');
    expect(payload.publication.keyId).toBe(result.keyId);
    expect(payload.publication.operations.map((entry: LockedOperation) => entry.fingerprint)).toHaveLength(2);
    // The payload does not depend on operation order or field order: it is the lock's written form.
    const reordered = { ...result, operations: [...result.operations].reverse() };
    expect(publicationSigningPayload(source, reordered)).toBe(publicationSigningPayload(source, result));
  });

  it('verifies with the trusted key', async () => {
    const { trusted, result, pair } = await signed();
    expect(await checkPublicationSignature(source, result, trusted)).toEqual({ valid: true, keyId: pair.keyId });
  });

  it('fails when any signed field changes, naming what changed', async () => {
    const { trusted, result } = await signed();
    const cases: Array<[string, (value: Publication) => Publication, string[]]> = [
      ['status', (value) => ({ ...value, status: 'proposed' }), []],
      ['toolCount', (value) => ({ ...value, toolCount: 1 }), []],
      ['publisher', (value) => ({ ...value, publishedBy: 'mallory' }), []],
      ['allowedStale', (value) => ({ ...value, allowedStale: true }), []],
      [
        'path',
        (value) => ({
          ...value,
          operations: value.operations.map((entry) => (entry.tool === 'get_order' ? { ...entry, path: '/admin/{orderId}' } : entry)),
        }),
        ['get_order'],
      ],
      [
        'tool name',
        (value) => ({
          ...value,
          operations: value.operations.map((entry) => (entry.tool === 'get_order' ? { ...entry, tool: 'fetch_order' } : entry)),
        }),
        ['fetch_order', 'get_order'],
      ],
      ['removed operation', (value) => ({ ...value, operations: value.operations.slice(0, 1) }), [result.operations[1]!.tool]],
    ];
    for (const [label, edit, tools] of cases) {
      const check = await checkPublicationSignature(source, edit(result), trusted);
      expect(check.valid, label).toBe(false);
      if (check.valid) continue;
      expect(check.code, label).toBe('LOCK_SIGNATURE_INVALID');
      expect(
        check.changes
          .filter((change) => change.tool)
          .map((change) => change.tool)
          .sort(),
        label,
      ).toEqual(tools);
      if (tools.length === 0)
        expect(
          check.changes.map((change) => change.kind),
          label,
        ).toEqual(['fields']);
    }
  });

  it('does not let a publication move to another source or document', async () => {
    const { trusted, result } = await signed();
    expect((await checkPublicationSignature({ ...source, name: 'billing' }, result, trusted)).valid).toBe(false);
    expect((await checkPublicationSignature({ ...source, document: './other.yaml' }, result, trusted)).valid).toBe(false);
  });

  it('reports a missing signature, an untrusted key, a forged kid and a flipped signature bit with their codes', async () => {
    const { trusted, result } = await signed();
    const other = await generatePublisherKeyPair();
    const codeOf = async (value: Publication, keys = trusted) => {
      const check = await checkPublicationSignature(source, value, keys);
      return check.valid ? 'valid' : check.code;
    };
    const { signature: _signature, ...unsigned } = result;
    expect(await codeOf(unsigned)).toBe('LOCK_SIGNATURE_MISSING');
    expect(await codeOf(result, [{ keyId: other.keyId, publicJwk: other.publicJwk, path: 'other' }])).toBe('LOCK_KEY_UNTRUSTED');
    const [header, , signature] = result.signature!.split('.');
    const flipped = signature!.slice(0, 10) + (signature![10] === 'A' ? 'B' : 'A') + signature!.slice(11);
    expect(await codeOf({ ...result, signature: `${header}..${flipped}` })).toBe('LOCK_SIGNATURE_INVALID');
    expect(await codeOf({ ...result, signature: 'garbage' })).toBe('LOCK_SIGNATURE_INVALID');
    // A trusted key's kid on a signature made by another key still fails: the bytes are checked, not the name.
    const forged = await signPublication(source, publication(), other.privateJwk);
    const forgedHeader = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(forged.signature!.split('.')[0]!, 'base64url').toString()), kid: trusted[0]!.keyId }),
    ).toString('base64url');
    expect(await codeOf({ ...forged, keyId: trusted[0]!.keyId, signature: `${forgedHeader}..${forged.signature!.split('.')[2]}` })).toBe(
      'LOCK_SIGNATURE_INVALID',
    );
    // keyId in the lock must name the key that signed.
    expect(await codeOf({ ...result, keyId: other.keyId })).toBe('LOCK_SIGNATURE_INVALID');
  });
});
