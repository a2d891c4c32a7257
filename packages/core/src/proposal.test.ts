import { describe, expect, it } from 'vitest';
import {
  GatewayError,
  applyImport,
  applySelection,
  canonicalDigest,
  describeSelectionChange,
  emptyLock,
  globExpression,
  parseLock,
  serialiseLock,
  setSelection,
  type Lockfile,
  type OpenApiLockedSource,
  type Operation,
} from './index.js';

const digestA = `sha256:${'a'.repeat(64)}`;
const digestB = `sha256:${'b'.repeat(64)}`;

function operation(tool: string, method: string, path: string, extra: Partial<Operation> = {}): Operation {
  const shape = {
    method,
    path,
    server: 'https://api.example.com',
    parameters: [],
    body: null,
    security: [],
    securitySchemes: {},
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    ...extra,
  };
  return {
    tool,
    operationId: tool,
    title: null,
    description: `${method} ${path}`,
    status: 'supported',
    reason: null,
    ...shape,
    fingerprint: canonicalDigest(shape),
  };
}

const listPets = operation('list_pets', 'GET', '/pets');
const createPet = operation('create_pet', 'POST', '/pets');
const showPet = operation('show_pet_by_id', 'GET', '/pets/{petId}');
const uploadPhoto = operation('upload_photo', 'POST', '/pets/{petId}/photo', {
  status: 'unsupported',
  reason: { code: 'MEDIA_TYPE_UNSUPPORTED', message: 'multipart/form-data bodies cannot be sent safely.' },
});

function imported(operations: Operation[], documentDigest = digestA) {
  return { documentDigest, operations };
}

/** Stands in for `gateway publish`: the proposal becomes in use, holding only its selected operations. */
function publish(lock: Lockfile, sourceName: string): Lockfile {
  const next = structuredClone(lock);
  const source = (next.sources as OpenApiLockedSource[]).find((candidate) => candidate.name === sourceName)!;
  const proposal = source.publications.find((publication) => publication.status === 'proposed')!;
  source.publications = [{ ...proposal, status: 'in use', operations: proposal.operations.filter((candidate) => candidate.selected) }];
  return next;
}

function proposalOf(lock: Lockfile, sourceName = 'pets') {
  return lock.sources.find((source) => source.name === sourceName)!.publications.find((p) => p.status === 'proposed')!;
}

function selectedTools(lock: Lockfile, sourceName = 'pets'): string[] {
  return proposalOf(lock, sourceName)
    .operations.filter((candidate) => candidate.selected)
    .map((candidate) => candidate.tool)
    .sort();
}

function codeOf(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (error instanceof GatewayError) return error.code;
    throw error;
  }
  throw new Error('expected a GatewayError');
}

describe('applyImport', () => {
  it('allocates publication-1 on an empty lock and writes a schema-valid proposal with nothing selected', () => {
    const { lock, summary } = applyImport(emptyLock(), 'pets', './pets.yaml', imported([listPets, createPet, uploadPhoto]));
    expect(lock.lastPublication).toBe(1);
    expect(lock.sources).toHaveLength(1);
    expect(lock.sources[0]).toMatchObject({ name: 'pets', kind: 'openapi', document: './pets.yaml', documentDigest: digestA });
    expect(proposalOf(lock)).toMatchObject({ id: 'publication-1', status: 'proposed', toolCount: 0, documentDigest: digestA });
    expect(parseLock(serialiseLock(lock))).toEqual(parseLock(serialiseLock(lock)));
    expect(summary).toEqual({
      source: 'pets',
      publication: 'publication-1',
      documentDigest: digestA,
      operations: 3,
      supported: 2,
      unsupported: 1,
      unsupportedByReason: { MEDIA_TYPE_UNSUPPORTED: 1 },
      selected: 0,
      versusInUse: { publication: null, added: ['create_pet', 'list_pets', 'upload_photo'], changed: [], removed: [] },
    });
  });

  it('does not mutate the lock it is given', () => {
    const before = emptyLock();
    applyImport(before, 'pets', './pets.yaml', imported([listPets]));
    expect(before).toEqual(emptyLock());
  });

  it('a second identical import reuses the proposal id and gives byte-identical text', () => {
    const first = applyImport(emptyLock(), 'pets', './pets.yaml', imported([listPets, createPet])).lock;
    const selected = applySelection(first, 'pets', { select: ['list_pets'] });
    const second = applyImport(selected, 'pets', './pets.yaml', imported([listPets, createPet])).lock;
    expect(serialiseLock(second)).toBe(serialiseLock(selected));
    expect(second.lastPublication).toBe(1);
  });

  it('numbers publications globally and monotonically across sources', () => {
    let lock = applyImport(emptyLock(), 'pets', './pets.yaml', imported([listPets])).lock;
    lock = applyImport(lock, 'orders', './orders.yaml', imported([createPet])).lock;
    expect(proposalOf(lock, 'orders').id).toBe('publication-2');
    lock = publish(applySelection(lock, 'pets', { allSupported: true }), 'pets');
    lock = applyImport(lock, 'pets', './pets.yaml', imported([listPets])).lock;
    expect(proposalOf(lock, 'pets').id).toBe('publication-3');
    expect(lock.lastPublication).toBe(3);
  });

  it('carries forward the selection of operations unchanged since the in-use publication, and not of a changed one', () => {
    let lock = applyImport(emptyLock(), 'pets', './pets.yaml', imported([listPets, createPet, showPet])).lock;
    lock = publish(applySelection(lock, 'pets', { select: ['list_pets', 'show_pet_by_id'] }), 'pets');
    const changedShow = operation('show_pet_by_id', 'GET', '/pets/{petId}', { description: 'changed', server: 'https://v2.example.com' });
    expect(changedShow.fingerprint).not.toBe(showPet.fingerprint);
    const newOne = operation('delete_pet', 'DELETE', '/pets/{petId}');
    const { lock: next, summary } = applyImport(lock, 'pets', './pets.yaml', imported([listPets, createPet, changedShow, newOne], digestB));
    expect(selectedTools(next)).toEqual(['list_pets']);
    expect(proposalOf(next).toolCount).toBe(1);
    expect(summary.versusInUse).toEqual({
      publication: 'publication-1',
      added: ['create_pet', 'delete_pet'],
      changed: ['show_pet_by_id'],
      removed: [],
    });
    // The in-use publication stays untouched beside the new proposal.
    const source = next.sources[0]!;
    expect(source.publications.map((p) => [p.id, p.status])).toEqual([
      ['publication-1', 'in use'],
      ['publication-2', 'proposed'],
    ]);
    expect(source.documentDigest).toBe(digestB);
  });

  it('reports tools removed from the document versus in use', () => {
    let lock = applyImport(emptyLock(), 'pets', './pets.yaml', imported([listPets, createPet])).lock;
    lock = publish(applySelection(lock, 'pets', { allSupported: true }), 'pets');
    const { summary } = applyImport(lock, 'pets', './pets.yaml', imported([listPets]));
    expect(summary.versusInUse.removed).toEqual(['create_pet']);
    expect(summary.versusInUse.added).toEqual([]);
  });

  it('keeps a deliberate deselection in the proposal across a re-import, even of an in-use operation', () => {
    let lock = applyImport(emptyLock(), 'pets', './pets.yaml', imported([listPets, createPet])).lock;
    lock = publish(applySelection(lock, 'pets', { allSupported: true }), 'pets');
    lock = applyImport(lock, 'pets', './pets.yaml', imported([listPets, createPet])).lock;
    expect(selectedTools(lock)).toEqual(['create_pet', 'list_pets']);
    lock = applySelection(lock, 'pets', { deselect: ['create_pet'] });
    lock = applyImport(lock, 'pets', './pets.yaml', imported([listPets, createPet])).lock;
    expect(selectedTools(lock)).toEqual(['list_pets']);
  });

  it('drops the selection of a proposed operation whose fingerprint changed between imports', () => {
    let lock = applyImport(emptyLock(), 'pets', './pets.yaml', imported([listPets, createPet])).lock;
    lock = applySelection(lock, 'pets', { allSupported: true });
    const changedCreate = operation('create_pet', 'POST', '/pets', { description: 'changed', server: 'https://v2.example.com' });
    lock = applyImport(lock, 'pets', './pets.yaml', imported([listPets, changedCreate])).lock;
    expect(selectedTools(lock)).toEqual(['list_pets']);
  });

  it('never selects an unsupported operation, even when its fingerprint matches', () => {
    let lock = applyImport(emptyLock(), 'pets', './pets.yaml', imported([listPets])).lock;
    lock = publish(applySelection(lock, 'pets', { allSupported: true }), 'pets');
    const nowUnsupported = { ...listPets, status: 'unsupported' as const, reason: { code: 'SERVER_MISSING', message: 'no server.' } };
    lock = applyImport(lock, 'pets', './pets.yaml', imported([nowUnsupported])).lock;
    expect(selectedTools(lock)).toEqual([]);
  });
});

describe('applySelection', () => {
  const base = applyImport(emptyLock(), 'pets', './pets.yaml', imported([listPets, createPet, showPet, uploadPhoto])).lock;

  it('selects by exact name and by glob, and updates the tool count', () => {
    const lock = applySelection(base, 'pets', { select: ['create_pet', '*_by_?d'] });
    expect(selectedTools(lock)).toEqual(['create_pet', 'show_pet_by_id']);
    expect(proposalOf(lock).toolCount).toBe(2);
  });

  it('--all-supported selects every supported operation and deselect applies after it', () => {
    const lock = applySelection(base, 'pets', { allSupported: true, deselect: ['list_*'] });
    expect(selectedTools(lock)).toEqual(['create_pet', 'show_pet_by_id']);
  });

  it('a pattern that matches nothing is an error, so a typo never passes silently', () => {
    expect(codeOf(() => applySelection(base, 'pets', { select: ['list_pet'] }))).toBe('SELECTION_NO_MATCH');
    expect(codeOf(() => applySelection(base, 'pets', { deselect: ['nothing_*'] }))).toBe('SELECTION_NO_MATCH');
  });

  it('selecting an unsupported operation by name fails with its reason code and sentence', () => {
    try {
      applySelection(base, 'pets', { select: ['upload_photo'] });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(GatewayError);
      const gatewayError = error as GatewayError;
      expect(gatewayError.code).toBe('SELECTION_UNSUPPORTED');
      expect(gatewayError.category).toBe('refused');
      expect(gatewayError.message).toContain('upload_photo');
      expect(gatewayError.message).toContain('MEDIA_TYPE_UNSUPPORTED');
      expect(gatewayError.message).toContain('multipart/form-data bodies cannot be sent safely.');
    }
  });

  it('a glob selects the supported operations it matches and fails only when all it matches is unsupported', () => {
    expect(selectedTools(applySelection(base, 'pets', { select: ['*'] }))).toEqual(['create_pet', 'list_pets', 'show_pet_by_id']);
    expect(codeOf(() => applySelection(base, 'pets', { select: ['upload_*'] }))).toBe('SELECTION_UNSUPPORTED');
  });

  it('fails with PROPOSAL_NOT_FOUND for a source without a proposal', () => {
    expect(codeOf(() => applySelection(base, 'orders', { allSupported: true }))).toBe('PROPOSAL_NOT_FOUND');
    const published = publish(base, 'pets');
    expect(codeOf(() => applySelection(published, 'pets', { allSupported: true }))).toBe('PROPOSAL_NOT_FOUND');
  });

  it('does not mutate the lock it is given', () => {
    const copy = structuredClone(base);
    applySelection(base, 'pets', { allSupported: true });
    expect(base).toEqual(copy);
  });

  it('setSelection sets exactly the chosen tools and refuses unsupported ones', () => {
    const some = applySelection(base, 'pets', { select: ['list_pets'] });
    const lock = setSelection(some, 'pets', ['create_pet']);
    expect(selectedTools(lock)).toEqual(['create_pet']);
    expect(describeSelectionChange(some, lock, 'pets')).toEqual({
      selected: ['create_pet'],
      deselected: ['list_pets'],
      approvals: [],
      toolCount: 1,
    });
    expect(codeOf(() => setSelection(base, 'pets', ['upload_photo']))).toBe('SELECTION_UNSUPPORTED');
  });
});

describe('globExpression', () => {
  it('treats * and ? as wildcards and everything else literally', () => {
    expect(globExpression('get_*').test('get_pet')).toBe(true);
    expect(globExpression('get_*').test('list_get_pet')).toBe(false);
    expect(globExpression('pet?').test('pets')).toBe(true);
    expect(globExpression('pet?').test('pet')).toBe(false);
    expect(globExpression('a.b').test('axb')).toBe(false);
  });
});
