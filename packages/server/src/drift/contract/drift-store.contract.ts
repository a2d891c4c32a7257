import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Operation } from '@gateway/core';
import type { DriftState, DriftStore, NewDriftProposal } from '../ports.js';

/**
 * What the drift store suite runs against: fresh, empty stores of one adapter (one backing database per call), and
 * how to dispose of them. A PostgreSQL adapter passes a factory of its own; the suite does not change.
 */
export interface DriftStoreUnderTest {
  store: DriftStore;
  /** A second store over the same database (another process). */
  other: DriftStore;
  close(): Promise<void>;
}

export type DriftStoreFactory = () => Promise<DriftStoreUnderTest>;

function state(overrides: Partial<DriftState> = {}): DriftState {
  return {
    source: 'orders',
    document: 'https://api.example.com/openapi.yaml',
    etag: '"abc"',
    lastModified: 'Wed, 21 Oct 2026 07:28:00 GMT',
    documentDigest: 'sha256:1',
    checkedAt: '2026-11-27T08:00:00.000Z',
    status: 'drifted',
    error: null,
    publicationId: 'publication-1',
    blocked: [{ tool: 'get_order', reason: 'operation removed from the live description' }],
    ...overrides,
  };
}

function proposal(overrides: Partial<NewDriftProposal> = {}): NewDriftProposal {
  return {
    source: 'orders',
    digest: 'sha256:1',
    publicationId: 'publication-1',
    detectedAt: '2026-11-27T08:00:00.000Z',
    added: ['create_order'],
    changed: [],
    removed: ['get_order'],
    proposalId: 'publication-2',
    toolCount: 2,
    summary: ['removed get_order (GET /orders/{id})'],
    ...overrides,
  };
}

const operations = [{ tool: 'list_orders', fingerprint: 'sha256:f' }] as unknown as Operation[];

/** The rules of the `DriftStore` port (../ports.ts), for any adapter. */
export function driftStoreContract(adapter: string, factory: DriftStoreFactory): void {
  describe(`DriftStore (${adapter})`, () => {
    let underTest: DriftStoreUnderTest;
    let store: DriftStore;
    beforeEach(async () => {
      underTest = await factory();
      store = underTest.store;
    });
    afterEach(() => underTest.close());

    it('a saved state reads back whole, through another connection too; saving again replaces it', async () => {
      expect(await store.loadState('orders')).toBeUndefined();
      await store.saveState(state());
      expect(await underTest.other.loadState('orders')).toEqual(state());
      const failed = state({
        status: 'error',
        error: { code: 'DRIFT_DOCUMENT_UNAVAILABLE', message: 'HTTP 503' },
        etag: null,
        blocked: [],
      });
      await store.saveState(failed);
      expect(await store.loadState('orders')).toEqual(failed);
      expect(await store.loadState('billing')).toBeUndefined();
    });

    it('a state never checked (all unknowns null) reads back as saved', async () => {
      const pending = state({
        etag: null,
        lastModified: null,
        documentDigest: null,
        checkedAt: null,
        status: 'pending',
        publicationId: null,
        blocked: [],
      });
      await store.saveState(pending);
      expect(await store.loadState('orders')).toEqual(pending);
    });

    it('a proposal is recorded once per source and digest, with its operations; a later sighting keeps its first time', async () => {
      const first = await store.recordProposal(proposal(), operations);
      expect(first).toEqual({ ...proposal(), lastSeenAt: proposal().detectedAt });
      expect(await underTest.other.proposal('orders', 'sha256:1')).toEqual(first);
      expect(await store.proposalOperations('orders', 'sha256:1')).toEqual(operations);

      const later = proposal({ detectedAt: '2026-11-27T09:00:00.000Z', proposalId: 'publication-3', summary: ['moved'] });
      const seenAgain = await store.recordProposal(later, []);
      expect(seenAgain).toEqual({ ...later, detectedAt: first.detectedAt, lastSeenAt: later.detectedAt });
      expect(await store.proposal('orders', 'sha256:1')).toEqual(seenAgain);
      // The operations are those of the first sighting (the digest names the document they came from).
      expect(await store.proposalOperations('orders', 'sha256:1')).toEqual(operations);
    });

    it('proposals of other digests and sources are kept apart', async () => {
      await store.recordProposal(proposal(), operations);
      const other = await store.recordProposal(proposal({ digest: 'sha256:2', toolCount: null, proposalId: null }), []);
      expect(other).toMatchObject({ digest: 'sha256:2', toolCount: null, proposalId: null });
      expect(await store.proposal('orders', 'sha256:1')).toMatchObject({ digest: 'sha256:1', toolCount: 2 });
      expect(await store.proposal('billing', 'sha256:1')).toBeUndefined();
      expect(await store.proposalOperations('billing', 'sha256:1')).toBeUndefined();
    });

    it('of concurrent first sightings of one proposal, one is recorded and each answers it', async () => {
      const answers = await Promise.all(
        Array.from({ length: 4 }, (_, index) =>
          (index % 2 === 0 ? store : underTest.other).recordProposal(
            proposal({ detectedAt: `2026-11-27T08:00:0${index}.000Z` }),
            operations,
          ),
        ),
      );
      const firstSeen = new Set(answers.map((answer) => answer.detectedAt));
      expect(firstSeen.size).toBe(1);
      expect((await store.proposal('orders', 'sha256:1'))!.detectedAt).toBe([...firstSeen][0]);
    });
  });
}
