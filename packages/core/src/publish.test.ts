import { describe, expect, it } from 'vitest';
import { lockedOperation } from '../test/fixtures.js';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  applyImport,
  GatewayError,
  generatePublisherKeyPair,
  keyFileText,
  loadTrustedKeys,
  parseConfig,
  publishProposal,
  verifyLock,
  type LockedOperation,
  type LiveDescription,
  type Lockfile,
  type OpenApiLockedSource,
  type Operation,
  type PublishRequest,
} from './index.js';

const operation = lockedOperation;

const digest = `sha256:${'c'.repeat(64)}`;
const otherDigest = `sha256:${'d'.repeat(64)}`;

function withoutSelection(operations: LockedOperation[]): Operation[] {
  return operations.map(({ selected: _selected, ...rest }) => rest);
}

async function fixture() {
  const directory = await mkdtemp(join(tmpdir(), 'publish-test-'));
  const pair = await generatePublisherKeyPair();
  await writeFile(join(directory, 'demo.pub.jwk'), keyFileText(pair.publicJwk));
  const text =
    'gateway:\n  url: http://127.0.0.1:8080\nsources:\n  orders:\n    kind: openapi\n    document: ./orders.yaml\n' +
    'trust:\n  keys: [./demo.pub.jwk]\n';
  const config = parseConfig(text, join(directory, 'gateway.yaml'));
  const trustedKeys = await loadTrustedKeys(config);
  const operations = [
    operation('list_orders', 'GET', '/orders'),
    operation('get_order', 'GET', '/orders/{orderId}'),
    operation('delete_order', 'DELETE', '/orders/{orderId}', { selected: false }),
  ];
  const lock: Lockfile = {
    lockVersion: 1,
    lastPublication: 1,
    sources: [
      {
        name: 'orders',
        kind: 'openapi',
        document: './orders.yaml',
        documentDigest: digest,
        publications: [{ id: 'publication-1', status: 'proposed', toolCount: 2, documentDigest: digest, operations }],
      },
    ],
  };
  const request: PublishRequest = {
    lock,
    config,
    source: 'orders',
    privateJwk: pair.privateJwk,
    trustedKeys,
    publisher: 'ada@example.com',
    live: { documentDigest: digest, operations: withoutSelection(operations) },
    now: new Date('2026-02-03T04:05:06.000Z'),
  };
  return { request, pair, config, trustedKeys };
}

async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected a refusal');
}

describe('publishProposal', () => {
  it('turns the proposal into a signed in-use publication of only the selected operations', async () => {
    const { request, pair, config, trustedKeys } = await fixture();
    const result = await publishProposal(request);
    expect(result.retired).toBeNull();
    const publication = result.publication;
    expect(publication).toMatchObject({
      id: 'publication-1',
      status: 'in use',
      toolCount: 2,
      documentDigest: digest,
      publishedBy: 'ada@example.com',
      publishedAt: '2026-02-03T04:05:06.000Z',
      keyId: pair.keyId,
    });
    expect(publication).not.toHaveProperty('allowedStale');
    expect(publication.operations.map((entry) => entry.tool).sort()).toEqual(['get_order', 'list_orders']);
    expect(publication.operations.every((entry) => entry.selected)).toBe(true);
    expect((result.lock.sources[0] as OpenApiLockedSource).publications).toEqual([publication]);
    expect((await verifyLock(result.lock, config, trustedKeys)).problems).toEqual([]);
    // The input lock is left untouched (a pure function).
    expect((request.lock.sources[0] as OpenApiLockedSource).publications[0]!.status).toBe('proposed');
  });

  it('records, signed, every operation it does not offer with why; a re-import does not call them added', async () => {
    const { request, config, trustedKeys } = await fixture();
    const unsupported = operation('upload_photo', 'POST', '/photos', {
      selected: false,
      status: 'unsupported',
      reason: { code: 'MEDIA_TYPE_UNSUPPORTED', message: 'multipart bodies are not sent' },
    });
    const source = request.lock.sources[0] as OpenApiLockedSource;
    source.publications[0]!.operations.push(unsupported);
    const live = { documentDigest: digest, operations: withoutSelection(source.publications[0]!.operations) };
    const { lock, publication } = await publishProposal({ ...request, live });
    expect(publication.notOffered).toEqual([
      {
        tool: 'delete_order',
        operation: 'DELETE /orders/{orderId}',
        status: 'not selected',
        reason: null,
        fingerprint: expect.any(String),
      },
      {
        tool: 'upload_photo',
        operation: 'POST /photos',
        status: 'unsupported',
        reason: unsupported.reason,
        fingerprint: unsupported.fingerprint,
      },
    ]);
    expect((await verifyLock(lock, config, trustedKeys)).ok).toBe(true);

    for (const edit of [
      (entries: NonNullable<typeof publication.notOffered>) => {
        entries[1]!.reason = { code: 'HIDDEN', message: 'hidden' };
      },
      (entries: NonNullable<typeof publication.notOffered>) => {
        entries.splice(0, 1);
      },
    ]) {
      const tampered = structuredClone(lock);
      edit(tampered.sources[0]!.publications[0]!.notOffered!);
      const report = await verifyLock(tampered, config, trustedKeys);
      expect(report.problems.map((problem) => problem.code)).toEqual(['LOCK_SIGNATURE_INVALID']);
    }

    const { summary } = applyImport(lock, 'orders', './orders.yaml', live);
    expect(summary.versusInUse).toMatchObject({ added: [], changed: [], removed: [] });
  });

  it('retires the earlier in-use publication and numbers the new one higher', async () => {
    const { request } = await fixture();
    const first = await publishProposal(request);
    const lock = structuredClone(first.lock);
    lock.lastPublication = 2;
    (lock.sources[0] as OpenApiLockedSource).publications.push({
      id: 'publication-2',
      status: 'proposed',
      toolCount: 1,
      documentDigest: digest,
      operations: [operation('list_orders', 'GET', '/orders')],
    });
    const second = await publishProposal({ ...request, lock });
    expect(second.retired).toBe('publication-1');
    expect((second.lock.sources[0] as OpenApiLockedSource).publications.map((entry) => [entry.id, entry.status])).toEqual([
      ['publication-2', 'in use'],
    ]);
  });

  it('never publishes below the in-use number, even when the proposal carries a lower one', async () => {
    const { request } = await fixture();
    const first = await publishProposal(request);
    const lock = structuredClone(first.lock);
    lock.lastPublication = 4;
    (lock.sources[0] as OpenApiLockedSource).publications[0]!.id = 'publication-4';
    (lock.sources[0] as OpenApiLockedSource).publications.push({
      id: 'publication-3',
      status: 'proposed',
      toolCount: 1,
      documentDigest: digest,
      operations: [operation('list_orders', 'GET', '/orders')],
    });
    const second = await publishProposal({ ...request, lock });
    expect(second.publication.id).toBe('publication-5');
    expect(second.lock.lastPublication).toBe(5);
  });

  it('refuses without a proposal, with nothing selected, or with an untrusted key', async () => {
    const { request } = await fixture();
    const published = await publishProposal(request);
    expect((await refusal(publishProposal({ ...request, lock: published.lock }))).code).toBe('PROPOSAL_NOT_FOUND');

    const empty = structuredClone(request.lock);
    for (const entry of empty.sources[0]!.publications[0]!.operations) entry.selected = false;
    empty.sources[0]!.publications[0]!.toolCount = 0;
    expect((await refusal(publishProposal({ ...request, lock: empty }))).code).toBe('PUBLISH_NOTHING_SELECTED');

    const stranger = await generatePublisherKeyPair();
    const untrusted = await refusal(publishProposal({ ...request, privateJwk: stranger.privateJwk }));
    expect(untrusted.code).toBe('KEY_NOT_TRUSTED');
    expect(untrusted.category).toBe('refused');
    expect(untrusted.message).toContain(stranger.keyId);
  });

  it('refuses a stale proposal, naming what changed, unless allowed (then records allowedStale)', async () => {
    const { request, config, trustedKeys } = await fixture();
    const changed = withoutSelection([
      operation('list_orders', 'GET', '/orders', { server: 'https://api.example.com' }),
      operation('delete_order', 'DELETE', '/orders/{orderId}'),
    ]);
    const live = { documentDigest: otherDigest, operations: changed };
    const error = await refusal(publishProposal({ ...request, live }));
    expect(error.code).toBe('PUBLISH_STALE');
    const findings = (error.details!.findings as Array<{ kind: string; tool?: string }>).map((finding) => [
      finding.kind,
      finding.tool ?? null,
    ]);
    expect(findings).toEqual([
      ['document-changed', null],
      ['operation-changed', 'list_orders'],
      ['operation-removed', 'get_order'],
    ]);
    const allowed = await publishProposal({ ...request, live, allowStale: true });
    expect(allowed.publication.allowedStale).toBe(true);
    expect(allowed.stale).toHaveLength(3);
    expect((await verifyLock(allowed.lock, config, trustedKeys)).ok).toBe(true);
  });

  it('counts only the document digest as stale when the selected operations are unchanged', async () => {
    const { request } = await fixture();
    const live = request.live as LiveDescription;
    const error = await refusal(publishProposal({ ...request, live: { ...live, documentDigest: otherDigest } }));
    expect(error.code).toBe('PUBLISH_STALE');
    expect((error.details!.findings as Array<{ kind: string }>).map((finding) => finding.kind)).toEqual(['document-changed']);
  });

  it('imports the live description only after the cheap refusals passed', async () => {
    const { request } = await fixture();
    let imports = 0;
    const live = async () => {
      imports += 1;
      return request.live as LiveDescription;
    };
    const stranger = await generatePublisherKeyPair();
    expect((await refusal(publishProposal({ ...request, live, privateJwk: stranger.privateJwk }))).code).toBe('KEY_NOT_TRUSTED');
    expect(imports).toBe(0);
    expect((await publishProposal({ ...request, live })).publication.status).toBe('in use');
    expect(imports).toBe(1);
  });

  it('refuses to sign a hand-edited proposal or an unsupported selection', async () => {
    const { request } = await fixture();
    const edited = structuredClone(request.lock);
    (edited.sources[0] as OpenApiLockedSource).publications[0]!.operations[0]!.path = '/admin';
    expect((await refusal(publishProposal({ ...request, lock: edited }))).code).toBe('LOCK_FINGERPRINT_MISMATCH');

    const unsupported = structuredClone(request.lock);
    (unsupported.sources[0] as OpenApiLockedSource).publications[0]!.operations.push(
      operation('upload', 'POST', '/upload', { status: 'unsupported', reason: { code: 'MEDIA_TYPE_UNSUPPORTED', message: 'multipart' } }),
    );
    expect((await refusal(publishProposal({ ...request, lock: unsupported }))).code).toBe('PUBLISH_UNSUPPORTED_SELECTED');
  });

  it('refuses a tool name another source already offers', async () => {
    const { request } = await fixture();
    const published = await publishProposal(request);
    const lock = structuredClone(request.lock);
    lock.sources.push({ ...structuredClone(published.lock.sources[0]!), name: 'legacy', document: './legacy.yaml' });
    const config = structuredClone(request.config);
    config.config.sources.legacy = { kind: 'openapi', document: './legacy.yaml' };
    const error = await refusal(publishProposal({ ...request, lock, config }));
    expect(error.code).toBe('PUBLISH_TOOL_NAME_CONFLICT');
    expect(error.details).toMatchObject({ otherSource: 'legacy' });
  });
});
