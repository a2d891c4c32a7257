import { describe, expect, it } from 'vitest';
import { lockedOperation } from '../test/fixtures.js';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GatewayError,
  generatePublisherKeyPair,
  keyFileText,
  loadTrustedKeys,
  loadVerifiedLock,
  parseConfig,
  serialiseLock,
  signPublication,
  verifyLock,
  verifyLockFile,
  type LoadedConfig,
  type Lockfile,
  type OpenApiLockedSource,
  type Publication,
  type TrustedKey,
} from './index.js';

const operation = lockedOperation;

const digest = `sha256:${'b'.repeat(64)}`;

async function fixture(configText?: string) {
  const directory = await mkdtemp(join(tmpdir(), 'verify-test-'));
  const pair = await generatePublisherKeyPair();
  await writeFile(join(directory, 'demo.pub.jwk'), keyFileText(pair.publicJwk));
  const text =
    configText ??
    'gateway:\n  url: http://127.0.0.1:8080\nsources:\n  orders:\n    kind: openapi\n    document: ./orders.yaml\n' +
      '  billing:\n    kind: openapi\n    document: ./billing.yaml\ntrust:\n  keys: [./demo.pub.jwk]\n';
  const configPath = join(directory, 'gateway.yaml');
  await writeFile(configPath, text);
  const config: LoadedConfig = parseConfig(text, configPath);
  const trusted: TrustedKey[] = await loadTrustedKeys(config);
  const sign = async (name: string, document: string, publication: Publication) =>
    signPublication({ name, kind: 'openapi', document }, publication, pair.privateJwk);
  const orders = await sign('orders', './orders.yaml', {
    id: 'publication-1',
    status: 'in use',
    toolCount: 2,
    documentDigest: digest,
    publishedBy: 'tester',
    publishedAt: '2026-01-01T00:00:00.000Z',
    operations: [operation('list_orders', 'GET', '/orders'), operation('get_order', 'GET', '/orders/{orderId}')],
  });
  const billing = await sign('billing', './billing.yaml', {
    id: 'publication-2',
    status: 'in use',
    toolCount: 1,
    documentDigest: digest,
    publishedBy: 'tester',
    publishedAt: '2026-01-01T00:00:00.000Z',
    operations: [operation('list_invoices', 'GET', '/invoices')],
  });
  const lock: Lockfile = {
    lockVersion: 1,
    lastPublication: 3,
    sources: [
      { name: 'orders', kind: 'openapi', document: './orders.yaml', documentDigest: digest, publications: [orders] },
      {
        name: 'billing',
        kind: 'openapi',
        document: './billing.yaml',
        documentDigest: digest,
        publications: [
          billing,
          {
            id: 'publication-3',
            status: 'proposed',
            toolCount: 0,
            documentDigest: digest,
            operations: [operation('list_invoices', 'GET', '/invoices', { selected: false })],
          },
        ],
      },
    ],
  };
  return { directory, pair, config, trusted, lock, sign };
}

function codes(report: { problems: Array<{ code: string }> }): string[] {
  return [...new Set(report.problems.map((problem) => problem.code))].sort();
}

describe('verifyLock', () => {
  it('accepts a signed lock that matches its configuration', async () => {
    const { lock, config, trusted } = await fixture();
    const report = await verifyLock(lock, config, trusted);
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.sources.map((source) => [source.name, source.inUse, source.toolCount, source.proposed])).toEqual([
      ['orders', 'publication-1', 2, null],
      ['billing', 'publication-2', 1, 'publication-3'],
    ]);
  });

  it('names the operation whose path was edited: fingerprint mismatch and invalid signature', async () => {
    const { lock, config, trusted } = await fixture();
    (lock.sources[0] as OpenApiLockedSource).publications[0]!.operations[1]!.path = '/orders/{orderId}/admin';
    const report = await verifyLock(lock, config, trusted);
    expect(codes(report)).toEqual(['LOCK_FINGERPRINT_MISMATCH', 'LOCK_SIGNATURE_INVALID']);
    expect(report.problems.every((problem) => problem.tool === 'get_order' && problem.publication === 'publication-1')).toBe(true);
  });

  it('a renamed tool fails the signature, naming both the old and the new name', async () => {
    const { lock, config, trusted } = await fixture();
    (lock.sources[0] as OpenApiLockedSource).publications[0]!.operations[0]!.tool = 'all_orders';
    const report = await verifyLock(lock, config, trusted);
    expect(codes(report)).toEqual(['LOCK_SIGNATURE_INVALID']);
    expect(report.problems.map((problem) => problem.tool).sort()).toEqual(['all_orders', 'list_orders']);
  });

  it('an edited tool count fails with LOCK_TOOL_COUNT_MISMATCH', async () => {
    const { lock, config, trusted } = await fixture();
    (lock.sources[0] as OpenApiLockedSource).publications[0]!.toolCount = 3;
    expect(codes(await verifyLock(lock, config, trusted))).toEqual(['LOCK_SIGNATURE_INVALID', 'LOCK_TOOL_COUNT_MISMATCH']);
  });

  it('an in-use publication edited to proposed keeps its signature, which no longer matches', async () => {
    const { lock, config, trusted } = await fixture();
    (lock.sources[0] as OpenApiLockedSource).publications[0]!.status = 'proposed';
    expect(codes(await verifyLock(lock, config, trusted))).toEqual(['LOCK_SIGNATURE_INVALID']);
  });

  it('refuses unselected or unsupported operations in an in-use publication', async () => {
    const { lock, config, trusted, sign } = await fixture();
    const publication = (lock.sources[0] as OpenApiLockedSource).publications[0]!;
    publication.operations.push(
      operation('delete_order', 'DELETE', '/orders/{orderId}', { selected: false }),
      operation('upload', 'POST', '/upload', { status: 'unsupported', reason: { code: 'MEDIA_TYPE_UNSUPPORTED', message: 'multipart' } }),
    );
    publication.toolCount = 3;
    (lock.sources[0] as OpenApiLockedSource).publications[0] = await sign('orders', './orders.yaml', publication);
    const report = await verifyLock(lock, config, trusted);
    expect(report.problems.map((problem) => [problem.code, problem.tool])).toEqual([
      ['LOCK_OPERATION_NOT_SELECTED', 'delete_order'],
      ['LOCK_OPERATION_UNSUPPORTED', 'upload'],
    ]);
  });

  it('requires a signature by a trusted key on every in-use publication', async () => {
    const { lock, config, trusted } = await fixture();
    delete (lock.sources[0] as OpenApiLockedSource).publications[0]!.signature;
    expect(codes(await verifyLock(lock, config, trusted))).toEqual(['LOCK_SIGNATURE_MISSING']);
    const { lock: other } = await fixture();
    expect(codes(await verifyLock(other, config, trusted))).toEqual(['LOCK_KEY_UNTRUSTED']);
  });

  it('keeps tool names unique across sources', async () => {
    const { lock, config, trusted, sign } = await fixture();
    const billing = (lock.sources[1] as OpenApiLockedSource).publications[0]!;
    billing.operations = [operation('get_order', 'GET', '/invoices/{id}')];
    (lock.sources[1] as OpenApiLockedSource).publications[0] = await sign('billing', './billing.yaml', billing);
    const report = await verifyLock(lock, config, trusted);
    expect(report.problems.map((problem) => [problem.code, problem.tool, problem.source])).toEqual([
      ['LOCK_TOOL_NAME_DUPLICATE', 'get_order', 'billing'],
    ]);
  });

  it('keeps the lock consistent with the configuration: missing, orphan and moved sources', async () => {
    const { lock, trusted, directory } = await fixture();
    const text =
      'gateway:\n  url: http://127.0.0.1:8080\nsources:\n  orders:\n    kind: openapi\n    document: ./orders-v2.yaml\n' +
      '  shipping:\n    kind: openapi\n    document: ./shipping.yaml\ntrust:\n  keys: [./demo.pub.jwk]\n';
    const config = parseConfig(text, join(directory, 'gateway.yaml'));
    const report = await verifyLock(lock, config, trusted);
    expect(report.problems.map((problem) => [problem.code, problem.source])).toEqual([
      ['LOCK_SOURCE_MISMATCH', 'orders'],
      ['LOCK_SOURCE_ORPHAN', 'billing'],
      ['LOCK_SOURCE_MISSING', 'shipping'],
    ]);
  });

  it('allows at most one in-use publication per source and never reuses a number', async () => {
    const { lock, config, trusted } = await fixture();
    const copy = structuredClone((lock.sources[0] as OpenApiLockedSource).publications[0]!);
    (lock.sources[0] as OpenApiLockedSource).publications.push(copy);
    const report = await verifyLock(lock, config, trusted);
    expect(codes(report)).toContain('LOCK_PUBLICATION_CONFLICT');
    expect(codes(report)).toContain('LOCK_PUBLICATION_ID_INVALID');
  });
});

describe('loadVerifiedLock', () => {
  it('returns the lock when it verifies and throws LOCK_VERIFICATION_FAILED with the problems when not', async () => {
    const { lock, config, directory } = await fixture();
    const path = join(directory, 'tools.lock');
    await writeFile(path, serialiseLock(lock));
    const loaded = await loadVerifiedLock(path, config);
    expect(loaded.report.ok).toBe(true);
    expect(loaded.lock.sources).toHaveLength(2);

    (lock.sources[0] as OpenApiLockedSource).publications[0]!.operations[0]!.inputSchema = {
      type: 'object',
      properties: { x: { type: 'string' } },
    };
    await writeFile(path, serialiseLock(lock));
    try {
      await loadVerifiedLock(path, config);
      expect.unreachable('a tampered lock must not load');
    } catch (error) {
      expect(error).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).code).toBe('LOCK_VERIFICATION_FAILED');
      expect((error as GatewayError).category).toBe('verification');
      const problems = (error as GatewayError).details!.problems as Array<{ code: string; tool?: string }>;
      expect(problems.find((problem) => problem.code === 'LOCK_FINGERPRINT_MISMATCH')?.tool).toBe('list_orders');
    }
  });

  it('reports a lock that breaks the schema as a finding, and a missing lock as LOCK_NOT_FOUND', async () => {
    const { config, directory } = await fixture();
    const path = join(directory, 'tools.lock');
    await writeFile(path, 'lockVersion: 1\nlastPublication: 0\nsources: []\nextra: true\n');
    const { lock, report } = await verifyLockFile(path, config);
    expect(lock).toBeNull();
    expect(codes(report)).toEqual(['LOCK_SCHEMA_INVALID']);
    await expect(verifyLockFile(join(directory, 'absent.lock'), config)).rejects.toMatchObject({ code: 'LOCK_NOT_FOUND' });
  });

  it('a trust entry that is not a public key is a configuration error', async () => {
    const { directory, pair } = await fixture();
    await writeFile(join(directory, 'leaked.jwk'), keyFileText(pair.privateJwk));
    const text = 'gateway:\n  url: http://127.0.0.1:8080\nsources: {}\ntrust:\n  keys: [./leaked.jwk]\n';
    const config = parseConfig(text, join(directory, 'gateway.yaml'));
    await expect(loadTrustedKeys(config)).rejects.toMatchObject({ code: 'KEY_PRIVATE_PART_PRESENT', category: 'config' });
  });
});
